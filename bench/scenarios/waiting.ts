/**
 * What one consumer waiting on an empty queue costs a month, and how fast a
 * message reaches it over the waiting path.
 *
 * Idle: a consumer runs the loop the SDK client's `subscribe` runs (receive over HTTP; when
 * nothing came, `wait` on availability hints with a fallback poll) against a local runtime
 * whose handlers use the metered client. Every timer is compressed COMPRESSION times (pings,
 * fallback polls, API Gateway's 2-hour connection limit, the sweeper's minute), so one
 * real minute holds COMPRESSION minutes of waiting. Counted: HTTP requests and their api
 * Lambda calls and time, WebSocket frames both ways and connection-minutes, the notify
 * function's calls and time, the sweeper's lock-lapse check time, and every DynamoDB unit.
 * Each count is scaled to a month; per-call Lambda time is real, not compressed.
 *
 * Latency: with the production timers, LATENCY_SENDS messages are sent one at a time at
 * random intervals to the waiting consumer: from the send's acknowledgement to the consumer's
 * callback, through the stream poller (250 ms, as Lambda's), the notify function and the socket.
 */
import type { APIGatewayProxyWebsocketEventV2, DynamoDBStreamEvent } from 'aws-lambda';
import { startLocalRuntime } from '../../infra/local/runtime.js';
import { createApiHandler } from '../../functions/api/handler.js';
import { createNotifyHandler, type NotifyHandler } from '../../functions/notify/handler.js';
import { brokerContext } from '../../lib/broker/context.js';
import { hintLapsedLocks } from '../../lib/notifications/hints.js';
import type { ConnectionPoster } from '../../lib/notifications/watchers.js';
import { MAX_CONNECTION_MS, IDLE_TIMEOUT_MS, PING_INTERVAL_MS } from '../../lib/notifications/protocol.js';
import { openAvailabilityHints } from '../../lib/client/notifications.js';
import { createEnv, median, percentile, token } from '../harness.js';
import { lambdaDurationDollars, prices } from '../prices.js';
import { DEFAULT_FALLBACK_POLL_MS } from '../../lib/client/waiting.js';

/** The fallback poll a waiting consumer runs: subscribe's own default (README "Waiting"). */
export const FALLBACK_POLL_MS = DEFAULT_FALLBACK_POLL_MS;
const COMPRESSION = 120;
const IDLE_REAL_MS = 60_000;
const LATENCY_SENDS = 60;
const MONTH_MS = 30 * 24 * 3600_000;

export interface WaitingResult {
  dollarsPerMonth: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Per month, by what is billed. */
  perMonth: Record<string, { count: number; dollars: number }>;
  measured: { realSeconds: number; compression: number; waitedHours: number; fallbackPollMs: number; pingIntervalMs: number; latencySends: number };
}

export async function runWaiting(endpoint: string, rootKey: string, log: (line: string) => void): Promise<WaitingResult> {
  // The default layout (ticketed positions), what a default deploy's waiting consumer waits on:
  // its hints come from a positioned put as from a `ready` entry (lib/store/stream-filter.ts),
  // and its lapse checks and fallback polls run on the ticketed queue.
  const env = await createEnv({ name: 'waiting', endpoint, tableName: 'bench_waiting', rootKey });
  let posterOf: ConnectionPoster | undefined = undefined; // the runtime below makes it
  const poster: ConnectionPoster = { post: (id, frame) => posterOf!.post(id, frame) };
  let notifyUrl = '';
  const deps = { ...env.deps, notificationsUrl: () => notifyUrl };
  const calls = { api: { n: 0, ms: 0 }, notify: { n: 0, ms: 0 }, lapse: { n: 0, ms: 0 } };
  const api = createApiHandler(deps, { rootKey });
  const notify = createNotifyHandler(deps, { poster });
  const timedNotify = (async (event: APIGatewayProxyWebsocketEventV2 | DynamoDBStreamEvent) => {
    const t = performance.now();
    try {
      return await (notify as (e: typeof event) => Promise<unknown>)(event);
    } finally {
      // Stream batches are the busy path (priced per message elsewhere); the idle path is routes.
      if (!('Records' in event)) {
        calls.notify.n++;
        calls.notify.ms += performance.now() - t;
      }
    }
  }) as NotifyHandler;
  const runtime = await startLocalRuntime({
    port: 0,
    inMemory: true,
    dynamoEndpoint: endpoint,
    tableName: 'bench_waiting',
    timers: false,
    rootKey,
    clock: env.clock,
    websocket: { maxConnectionMs: MAX_CONNECTION_MS / COMPRESSION, idleTimeoutMs: IDLE_TIMEOUT_MS / COMPRESSION },
    handlers: {
      api: async (event, context) => {
        const t = performance.now();
        try {
          return await api(event, context);
        } finally {
          calls.api.n++;
          calls.api.ms += performance.now() - t;
        }
      },
      notify: timedNotify,
    },
    logger: { info: () => {}, error: (m, e) => console.error(`[waiting] ${m}`, e ?? '') },
  });
  posterOf = runtime.websocket.poster;
  notifyUrl = runtime.websocketUrl;
  const ctx = brokerContext(deps);
  const auth = token(`${runtime.url}/`, rootKey);
  const http = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${runtime.url}${path}`, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
  try {
    await http('PUT', '/queues/waiting', {});
    const path = 'queues/waiting';
    let fallbackMs = FALLBACK_POLL_MS / COMPRESSION;
    let pingMs = PING_INTERVAL_MS / COMPRESSION;
    const makeHints = () => openAvailabilityHints({ endpoint: runtime.url, token: async (audience) => token(audience, rootKey), pingIntervalMs: pingMs });
    const arrivals = new Map<string, number>();
    const stop = new AbortController();
    const consume = async (hints: ReturnType<typeof makeHints>, signal: AbortSignal) => {
      while (!signal.aborted) {
        const got = (await http('POST', `/${path}/messages/receive`, { mode: 'peekLock', maxMessages: 10 })) as {
          messages: { messageId: string; sequenceNumber: string; lockToken: string }[];
        };
        for (const m of got.messages) {
          arrivals.set(m.messageId, performance.now());
          await http('POST', `/${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
        }
        if (got.messages.length === 0) await hints.wait(path, fallbackMs, signal);
      }
    };

    // --- idle ------------------------------------------------------------------------------
    log(`waiting consumer: ${IDLE_REAL_MS / 1000} s idle at ${COMPRESSION}× compressed timers`);
    const idleHints = makeHints();
    const idleStop = new AbortController();
    const before = { api: { ...calls.api }, notify: { ...calls.notify }, ws: runtime.websocket.stats() };
    let lastLapse = env.clock.now();
    const { tally } = await env.meter.measure(async () => {
      const loop = consume(idleHints, idleStop.signal);
      const sweeperTick = setInterval(() => {
        const t = performance.now();
        const since = lastLapse;
        lastLapse = env.clock.now();
        void hintLapsedLocks(ctx, poster, since).then(() => {
          calls.lapse.n++;
          calls.lapse.ms += performance.now() - t;
        });
      }, 60_000 / COMPRESSION);
      await new Promise((r) => setTimeout(r, IDLE_REAL_MS));
      clearInterval(sweeperTick);
      idleStop.abort();
      idleHints.close();
      await loop;
      await new Promise((r) => setTimeout(r, 200)); // the last $disconnect
    });
    const ws = runtime.websocket.stats();
    const waitedMs = IDLE_REAL_MS * COMPRESSION;
    const toMonth = MONTH_MS / waitedMs;
    const httpCalls = calls.api.n - before.api.n;
    const apiMs = (calls.api.ms - before.api.ms) / Math.max(1, httpCalls);
    const notifyCalls = calls.notify.n - before.notify.n;
    const notifyMs = (calls.notify.ms - before.notify.ms) / Math.max(1, notifyCalls);
    const lapseMs = calls.lapse.ms / Math.max(1, calls.lapse.n);
    const frames = ws.framesIn - before.ws.framesIn + ws.framesOut - before.ws.framesOut;
    const connectionMinutes = ((ws.connectedMs - before.ws.connectedMs) * COMPRESSION) / 60_000;
    const perMonth: WaitingResult['perMonth'] = {
      httpRequests: { count: httpCalls * toMonth, dollars: httpCalls * toMonth * (prices.httpRequest + prices.lambdaCall + lambdaDurationDollars(apiMs)) },
      webSocketMessages: { count: frames * toMonth, dollars: frames * toMonth * webSocket.perMessage },
      connectionMinutes: { count: connectionMinutes * toMonth, dollars: connectionMinutes * toMonth * webSocket.perConnectionMinute },
      notifyCalls: { count: notifyCalls * toMonth, dollars: notifyCalls * toMonth * (prices.lambdaCall + lambdaDurationDollars(notifyMs)) },
      lapseChecks: { count: calls.lapse.n * toMonth, dollars: calls.lapse.n * toMonth * lambdaDurationDollars(lapseMs) },
      dynamodbReadUnits: { count: tally.readUnits * toMonth, dollars: tally.readUnits * toMonth * prices.readUnit },
      dynamodbWriteUnits: { count: tally.writeUnits * toMonth, dollars: tally.writeUnits * toMonth * prices.writeUnit },
    };
    const dollarsPerMonth = Object.values(perMonth).reduce((n, x) => n + x.dollars, 0);

    // --- latency ---------------------------------------------------------------------------
    log(`waiting consumer: ${LATENCY_SENDS} sends, send acknowledgement to consumer callback`);
    fallbackMs = FALLBACK_POLL_MS;
    pingMs = PING_INTERVAL_MS;
    const hints = makeHints();
    const loop = consume(hints, stop.signal);
    await new Promise((r) => setTimeout(r, 1000)); // subscribed and waiting
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_SENDS; i++) {
      await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
      const id = `latency-${i}`;
      await http('POST', `/${path}/messages`, { body: { i }, messageId: id });
      const acked = performance.now();
      const deadline = acked + 30_000;
      while (!arrivals.has(id) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      latencies.push((arrivals.get(id) ?? Infinity) - acked);
    }
    stop.abort();
    hints.close();
    await loop;
    return {
      dollarsPerMonth,
      p50Ms: median(latencies),
      p99Ms: percentile(latencies, 99),
      maxMs: Math.max(...latencies),
      perMonth,
      measured: {
        realSeconds: IDLE_REAL_MS / 1000,
        compression: COMPRESSION,
        waitedHours: waitedMs / 3600_000,
        fallbackPollMs: FALLBACK_POLL_MS,
        pingIntervalMs: PING_INTERVAL_MS,
        latencySends: LATENCY_SENDS,
      },
    };
  } finally {
    await runtime.stop();
    env.destroy();
  }
}

/** API Gateway WebSocket API list prices (us-east-1, first billion): per message (32 KB each) and per connection-minute. */
export const webSocket = { perMessage: 1.0 / 1e6, perConnectionMinute: 0.25 / 1e6 } as const;
