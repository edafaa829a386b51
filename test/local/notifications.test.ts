/**
 * Waiting consumers (H1): availability hints over the local runtime's WebSocket, with the
 * real handlers on DynamoDB Local. Jobs run on demand and the clock is moved, never slept on.
 * A hint is awaited with a generous bound that only detects a missing hint (the fallback
 * poll is set far beyond it), never measures speed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { WebSocket } from 'ws';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { signToken } from '../../lib/auth/index.js';
import { openAvailabilityHints, type AvailabilityHints } from '../../lib/client/notifications.js';
import { silentLogger, startTestRuntime } from '../support/runtime.js';
import { workerEndpoint } from '../support/emulator.js';

const NEVER = 120_000; // fallback polls far beyond any test's bound
const HINT_BOUND_MS = 10_000;

let runtime: LocalRuntime;

const tokenFor = (resource: string, keyName = 'RootManageSharedAccessKey', key = runtime.rootKey) =>
  signToken({ resourceUri: resource, keyName, key, expiresAt: Math.floor(Date.now() / 1000) + 3600 });

async function call(method: string, path: string, body?: unknown, token: string | null = tokenFor(`${runtime.url}/`)) {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const hintsClient = () =>
  openAvailabilityHints({ endpoint: runtime.url, token: async (audience) => tokenFor(audience), reconnectMinMs: 50, reconnectMaxMs: 500 });

/** Resolves 'hint' when `wait` returns before the bound (the fallback is NEVER), else 'none'. */
async function hinted(waiting: Promise<void>): Promise<'hint' | 'none'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<'none'>((r) => (timer = setTimeout(() => r('none'), HINT_BOUND_MS)));
  const outcome = await Promise.race([waiting.then(() => 'hint' as const), bound]);
  clearTimeout(timer);
  return outcome;
}

/** Subscribes (the first wait returns at once after the subscription) and returns the next wait. */
async function subscribed(hints: AvailabilityHints, path: string): Promise<void> {
  await hints.wait(path, NEVER);
}

beforeAll(async () => {
  runtime = await startTestRuntime('notify');
});

afterAll(async () => {
  await runtime?.stop();
});

const newQueue = async (extra: Record<string, unknown> = {}) => {
  const name = `q${randomUUID().slice(0, 8)}`;
  expect((await call('PUT', `/queues/${name}`, extra)).status).toBe(201);
  return name;
};
const receive = (path: string, maxMessages = 1) => call('POST', `/${path}/messages/receive`, { mode: 'peekLock', maxMessages });

describe('H1: discovery: GET {R}/messages/notifications', () => {
  it('answers the WebSocket URL to a token with Listen on the entity (A1-A3, B3)', async () => {
    const q = await newQueue();
    const ok = await call('GET', `/queues/${q}/messages/notifications`, undefined, tokenFor(`${runtime.url}/queues/${q}`));
    expect(ok).toEqual({ status: 200, body: { url: runtime.websocketUrl } });
    expect((await call('GET', `/queues/${q}/messages/notifications`, undefined, null)).status).toBe(401);
    const other = await newQueue();
    expect((await call('GET', `/queues/${q}/messages/notifications`, undefined, tokenFor(`${runtime.url}/queues/${other}`))).status).toBe(403);
    expect((await call('GET', `/queues/nosuch${q}/messages/notifications`)).status).toBe(404);
  });
});

describe('H2: subscribing over the WebSocket (A1-A3, B3)', () => {
  const frames = async (entity: string, token: string | undefined) => {
    const ws = new WebSocket(runtime.websocketUrl);
    await new Promise((r, j) => ws.once('open', r).once('error', j));
    const answer = new Promise<Record<string, unknown>>((r) => ws.once('message', (d) => r(JSON.parse(d.toString()) as Record<string, unknown>)));
    ws.send(JSON.stringify({ action: 'subscribe', entity, ...(token === undefined ? {} : { token }) }));
    const got = await answer;
    ws.close();
    return got;
  };

  it("refuses no token (401), another entity's token and a Send-only rule (403); accepts Listen", async () => {
    const q = await newQueue();
    const other = await newQueue();
    expect(await frames(`queues/${q}`, undefined)).toMatchObject({ type: 'refused', status: 401 });
    expect(await frames(`queues/${q}`, 'SharedAccessSignature sr=x&sig=y&se=1&skn=z')).toMatchObject({ type: 'refused', status: 401 });
    expect(await frames(`queues/${q}`, tokenFor(`${runtime.url}/queues/${other}`))).toMatchObject({ type: 'refused', status: 403 });
    const rule = await call('PUT', `/queues/${q}/authorization-rules/sender`, { rights: ['Send'] });
    expect(rule.status).toBe(201);
    expect(await frames(`queues/${q}`, tokenFor(`${runtime.url}/queues/${q}`, 'sender', rule.body.primaryKey))).toMatchObject({ type: 'refused', status: 403 });
    expect(await frames('topics/t', tokenFor(`${runtime.url}/`))).toMatchObject({ type: 'refused', status: 400 });
    expect(await frames(`Queues/${q.toUpperCase()}`, tokenFor(`${runtime.url}/queues/${q}`))).toEqual({ type: 'subscribed', entity: `queues/${q}` });
  });

  it('answers a ping with a pong and no handler', async () => {
    const ws = new WebSocket(runtime.websocketUrl);
    await new Promise((r) => ws.once('open', r));
    const answer = new Promise<string>((r) => ws.once('message', (d) => r(d.toString())));
    ws.send(JSON.stringify({ action: 'ping' }));
    expect(await answer).toBe('{"type":"pong"}');
    ws.close();
  });

  it('a refused subscriber gets no hints', async () => {
    const q = await newQueue();
    const other = await newQueue();
    const ws = new WebSocket(runtime.websocketUrl);
    await new Promise((r) => ws.once('open', r));
    const seen: string[] = [];
    ws.on('message', (d) => seen.push(d.toString()));
    ws.send(JSON.stringify({ action: 'subscribe', entity: `queues/${q}`, token: tokenFor(`${runtime.url}/queues/${other}`) }));
    await expect.poll(() => seen.length).toBe(1);
    await call('POST', `/queues/${q}/messages`, { body: 1 });
    await runtime.runJob('streams');
    ws.send(JSON.stringify({ action: 'ping' }));
    await expect.poll(() => seen.length).toBe(2);
    expect(seen[1]).toBe('{"type":"pong"}');
    ws.close();
  });
});

describe('H1: a hint for every way a message becomes available', () => {
  let hints: AvailabilityHints;
  beforeAll(() => {
    hints = hintsClient();
  });
  afterAll(() => hints.close());

  it('a send', async () => {
    const q = await newQueue();
    await subscribed(hints, `queues/${q}`);
    const waiting = hints.wait(`queues/${q}`, NEVER);
    expect((await call('POST', `/queues/${q}/messages`, { body: { n: 1 } })).status).toBe(201);
    await runtime.runJob('streams');
    expect(await hinted(waiting)).toBe('hint');
  });

  it('a scheduled message coming due (S6), after the sweeper activates it', async () => {
    const q = await newQueue();
    await subscribed(hints, `queues/${q}`);
    const at = new Date(runtime.clock.now() + 5 * 60_000).toISOString();
    await call('POST', `/queues/${q}/messages`, { body: 1, scheduledEnqueueTime: at });
    await runtime.runJob('streams');
    const waiting = hints.wait(`queues/${q}`, NEVER);
    await call('POST', '/_local/clock', { advance: 'PT6M' });
    await runtime.runJob('sweeper');
    await runtime.runJob('streams');
    expect(await hinted(waiting)).toBe('hint');
    expect((await receive(`queues/${q}`)).body.messages).toHaveLength(1);
  });

  it('a lock lapsing (R3), found by the sweeper', async () => {
    const q = await newQueue({ lockDuration: 'PT30S' });
    await subscribed(hints, `queues/${q}`);
    await call('POST', `/queues/${q}/messages`, { body: 1 });
    await runtime.runJob('streams');
    await hints.wait(`queues/${q}`, NEVER); // the send's hint
    expect((await receive(`queues/${q}`)).body.messages).toHaveLength(1);
    await runtime.runJob('sweeper');
    await runtime.runJob('streams');
    const waiting = hints.wait(`queues/${q}`, NEVER);
    await call('POST', '/_local/clock', { advance: 'PT1M' });
    await runtime.runJob('sweeper');
    expect(await hinted(waiting)).toBe('hint');
    expect((await receive(`queues/${q}`)).body.messages[0].deliveryCount).toBe(2);
  });

  it('an abandon (R4)', async () => {
    const q = await newQueue();
    await subscribed(hints, `queues/${q}`);
    await call('POST', `/queues/${q}/messages`, { body: 1 });
    await runtime.runJob('streams');
    await hints.wait(`queues/${q}`, NEVER);
    const [m] = (await receive(`queues/${q}`)).body.messages;
    await runtime.runJob('streams');
    const waiting = hints.wait(`queues/${q}`, NEVER);
    expect((await call('POST', `/queues/${q}/messages/${m.sequenceNumber}/abandon`, { lockToken: m.lockToken })).status).toBe(204);
    await runtime.runJob('streams');
    expect(await hinted(waiting)).toBe('hint');
  });

  it('a dead-lettering (to $deadletterqueue) and a resubmit (back to the queue, D7)', async () => {
    const q = await newQueue();
    await subscribed(hints, `queues/${q}`);
    await subscribed(hints, `queues/${q}/$deadletterqueue`);
    await call('POST', `/queues/${q}/messages`, { body: 1 });
    await runtime.runJob('streams');
    await hints.wait(`queues/${q}`, NEVER);
    const [m] = (await receive(`queues/${q}`)).body.messages;
    const dead = hints.wait(`queues/${q}/$deadletterqueue`, NEVER);
    await call('POST', `/queues/${q}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken });
    await runtime.runJob('streams');
    expect(await hinted(dead)).toBe('hint');
    const back = hints.wait(`queues/${q}`, NEVER);
    expect((await call('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 1 });
    await runtime.runJob('streams');
    expect(await hinted(back)).toBe('hint');
  });

  it('a forwarded copy (F2) and a topic fan-out copy (F1)', async () => {
    const target = await newQueue();
    const source = await newQueue({ forwardTo: `queues/${target}` });
    const topic = `t${randomUUID().slice(0, 8)}`;
    await call('PUT', `/topics/${topic}`, {});
    await call('PUT', `/topics/${topic}/subscriptions/s1`, {});
    await subscribed(hints, `queues/${target}`);
    await subscribed(hints, `topics/${topic}/subscriptions/s1`);
    const forwarded = hints.wait(`queues/${target}`, NEVER);
    const fanned = hints.wait(`topics/${topic}/subscriptions/s1`, NEVER);
    await call('POST', `/queues/${source}/messages`, { body: 1 });
    await call('POST', `/topics/${topic}/messages`, { body: 2 });
    await runtime.runJob('streams');
    expect(await hinted(forwarded)).toBe('hint');
    expect(await hinted(fanned)).toBe('hint');
  });
});

/** A consumer loop as the SDK client's `subscribe` runs it: receive, and wait when empty. */
function consumer(hints: AvailabilityHints, path: string, onMessage: (m: { messageId: string }) => void, signal: AbortSignal, fallbackMs = NEVER) {
  return (async () => {
    while (!signal.aborted) {
      const got = await call('POST', `/${path}/messages/receive`, { mode: 'peekLock', maxMessages: 10 }).catch((e: unknown) => {
        if (signal.aborted) return { status: 0, body: { messages: [] } }; // the runtime stopped under us
        throw e;
      });
      const messages = (got.body?.messages ?? []) as { messageId: string; sequenceNumber: string; lockToken: string }[];
      for (const m of messages) {
        onMessage(m);
        await call('POST', `/${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken }).catch((e: unknown) => {
          if (!signal.aborted) throw e;
        });
      }
      if (messages.length === 0) await hints.wait(path, fallbackMs, signal);
    }
  })();
}

describe('waiting where there is nothing to subscribe to', () => {
  it('a missing entity: wait returns after its fallback, nothing thrown', async () => {
    const hints = hintsClient();
    const started = performance.now();
    await hints.wait(`queues/missing${randomUUID().slice(0, 8)}`, 300);
    await hints.wait('not/an/entity', 300);
    // Node's timers count whole milliseconds of the event loop's cached time, so each 300 ms
    // fallback may end up to a millisecond early on a finer clock.
    expect(performance.now() - started).toBeGreaterThanOrEqual(598);
    hints.close();
  });
});

describe('H1: a consumer that misses hints still gets every message', () => {
  it('after a dropped socket: the resubscription makes it look again', async () => {
    const hints = hintsClient();
    const q = await newQueue();
    const got: string[] = [];
    const stop = new AbortController();
    await subscribed(hints, `queues/${q}`);
    const loop = consumer(hints, `queues/${q}`, (m) => got.push(m.messageId), stop.signal);
    runtime.websocket.dropAll();
    await call('POST', `/queues/${q}/messages`, { body: 1, messageId: 'while-dropped' });
    await runtime.runJob('streams'); // the hint goes nowhere
    await expect.poll(() => got, { timeout: HINT_BOUND_MS }).toEqual(['while-dropped']);
    stop.abort();
    hints.close();
    await loop;
  });

  it('across a server restart on the same port (a redeploy)', async () => {
    const first = await startLocalRuntime({
      dynamoEndpoint: workerEndpoint(),
      tableName: `restart-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 0,
      logger: silentLogger,
    });
    const port = first.port;
    const tableOf = first.deps.tableName;
    const saved = runtime;
    runtime = first;
    try {
      const hints = hintsClient();
      const q = await newQueue();
      const got: string[] = [];
      const stop = new AbortController();
      await subscribed(hints, `queues/${q}`);
      const loop = consumer(hints, `queues/${q}`, (m) => got.push(m.messageId), stop.signal);
      await first.stop();
      runtime = await startLocalRuntime({
        dynamoEndpoint: workerEndpoint(),
        tableName: tableOf,
        port,
        timers: false,
        streamPollMs: 0,
        logger: silentLogger,
        rootKey: first.rootKey,
      });
      await call('POST', `/queues/${q}/messages`, { body: 1, messageId: 'after-restart' });
      await runtime.runJob('streams');
      await expect.poll(() => got, { timeout: HINT_BOUND_MS }).toEqual(['after-restart']);
      stop.abort();
      hints.close();
      await loop.catch(() => {});
      await runtime.stop();
    } finally {
      runtime = saved;
    }
  });
});

describe('100 consumers on 20 entities', () => {
  it('delivers each message once, through hints', async () => {
    const local = await startLocalRuntime({
      dynamoEndpoint: workerEndpoint(),
      tableName: `many-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 50,
      logger: silentLogger,
    });
    const saved = runtime;
    runtime = local;
    try {
      const queues = await Promise.all(Array.from({ length: 20 }, () => newQueue()));
      const deliveries = new Map<string, number>();
      const stop = new AbortController();
      const clients = Array.from({ length: 100 }, () => hintsClient());
      await Promise.all(clients.map((h, i) => subscribed(h, `queues/${queues[i % 20]}`)));
      const loops = clients.map((h, i) =>
        consumer(h, `queues/${queues[i % 20]}`, (m) => deliveries.set(m.messageId, (deliveries.get(m.messageId) ?? 0) + 1), stop.signal),
      );
      const sent: string[] = [];
      for (let round = 0; round < 5; round++) {
        await Promise.all(
          queues.map(async (q) => {
            const id = `${q}-${round}`;
            sent.push(id);
            expect((await call('POST', `/queues/${q}/messages`, { body: { round }, messageId: id })).status).toBe(201);
          }),
        );
      }
      // Generous: seven helpers share two cores; this bounds a lost hint (fallback NEVER), not speed.
      await expect.poll(() => deliveries.size, { timeout: 240_000, interval: 200 }).toBe(100);
      stop.abort();
      for (const h of clients) h.close();
      await Promise.all(loops);
      expect([...deliveries.keys()].sort()).toEqual(sent.sort());
      expect([...deliveries.values()].every((n) => n === 1)).toBe(true);
    } finally {
      runtime = saved;
      await local.stop();
    }
  }, 300_000);
});

describe('the client never keeps a Node process alive on its own', () => {
  it('exits while a wait with a long fallback is pending on an open socket', async () => {
    const { spawn } = await import('node:child_process');
    const q = await newQueue();
    const script = `
      import { openAvailabilityHints } from ${JSON.stringify(new URL('../../lib/client/notifications.ts', import.meta.url).href)};
      const tokens = ${JSON.stringify({ [`${runtime.url}/queues/${q}`]: tokenFor(`${runtime.url}/queues/${q}`) })};
      const hints = openAvailabilityHints({ endpoint: ${JSON.stringify(runtime.url)}, token: async (a) => tokens[a] });
      const keep = setInterval(() => {}, 1000); // this script's own reason to live, until subscribed
      await hints.wait('queues/${q}', 600000); // returns once subscribed: the socket is open
      clearInterval(keep);
      console.log('subscribed');
      void hints.wait('queues/${q}', 600000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const kill = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(-1);
      }, 60_000);
      child.on('exit', (c) => {
        clearTimeout(kill);
        resolve(c);
      });
    });
    expect(out.trim()).toBe('subscribed');
    expect(code).toBe(0);
  }, 90_000);
});
