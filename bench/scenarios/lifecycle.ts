/**
 * "A message's life": the whole life (batch send of 10, peek-lock receive of 10, batch
 * complete of 10) of a realistic 1 KB JSON event and of a 1 KB incompressible body, per
 * message, with the handler time of each call (compressing a body is part of a send's time);
 * the JSON event's life one message per request; then the batched life at 100 B, 1 KB, 10 KB
 * and 64 KB of each, for the price table.
 *
 * Last, the rest of a life's units: the stream consumer's (its E6 count markers and count
 * updates), from the records of further JSON lives handed to the stream handler in Lambda's
 * batches of up to 1,000 records; and where every write unit of those lives landed, by
 * partition key, for the hottest key's ceiling of lives a second.
 *
 * On the product's default layout (ticketed positions) unless a layout is named: the stable
 * figures are what a default deploy runs; today's layout ('index') is measured beside it.
 */
import { loadavg } from 'node:os';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { itemBytes } from '../../lib/item-size.js';
import { localCredentials, localRegion } from '../../infra/local/dynamodb-local.js';
import { StreamPoller } from '../../infra/local/stream-poller.js';
import type { NewEntityLayout } from '../../lib/deps.js';
import { createEnv, median, type BenchEnv, type OpResult } from '../harness.js';
import { incompressibleBody, jsonEvent } from '../payloads.js';
import { perMessage, summarizeCalls, tallyOf, type CallRecord } from '../capacity.js';
import { messageItem, type ReceivedMessage } from './operations.js';

export type Payload = 'json' | 'incompressible';

/** Messages per request: batches of 10, or one at a time. */
export type Batch = 1 | 10;

export interface LifeRun {
  payload: Payload;
  bodyBytes: number;
  batch: Batch;
  op: OpResult;
  /** Handler time of each call of a life (a call carries `batch` messages), ms, median over the repetitions. */
  ms: { send: number; receive: number; complete: number };
  /** The stored item of one message, bytes: as sent and while locked (the largest it gets). */
  itemBytes: { sent: number; locked: number };
  /** Whether its body was stored compressed. */
  compressed: boolean;
}

/** The stream consumer over the records of JSON lives in batches of 10, per message. */
export interface LifeStream {
  messages: number;
  records: number;
  /** Invocations with at least one message record (AWS's event filter drops the rest). */
  invocations: number;
  invocationsPerMessage: number;
  readUnits: number;
  writeUnits: number;
  requests: number;
  /** Handler time per invocation, ms. */
  handlerMs: number;
  calls: string[];
}

export interface LifecycleResult {
  json: LifeRun;
  /** The 1 KB JSON event, one message per request. */
  single: LifeRun;
  incompressible: LifeRun;
  bySize: LifeRun[];
  stream: LifeStream;
  /** Write units per JSON life (batches of 10) by partition key, request path and stream consumer together. */
  writeUnitsByKey: Record<string, number>;
  /** 1-minute load average over the runs (a shared machine slows every handler). */
  loadAverage: number;
}

export const PRICE_SIZES = [100, 1024, 10 * 1024, 64 * 1024];

/** A JSON body of exactly `bytes`: the 1 KB-and-up event, or below that a compact one. */
export function jsonBodyOf(n: number, bytes: number): unknown {
  if (bytes >= 1024) return jsonEvent(n, bytes);
  const e = { type: 'order.paid', orderId: `ORD-2026-${100000 + n}`, total: 12.5 + n, note: '' };
  e.note = 'x'.repeat(Math.max(0, bytes - Buffer.byteLength(JSON.stringify(e))));
  return e;
}

const bodyOf = (payload: Payload, n: number, bytes: number): unknown => (payload === 'json' ? jsonBodyOf(n, bytes) : incompressibleBody(bytes));

let counter = 0;

interface Spec {
  queue: string;
  payload: Payload;
  bytes: number;
  batch: Batch;
}

const MESSAGES_PER_ROUND = 10;

/**
 * A batched life's queue locks for 5 s, and each batched round ends with the clock past that:
 * on today's layout its receive's lock reminder lapses, and the next round's receive deals with it (reads it and
 * its completed messages, deletes it), as a busy queue's receives do, so a life carries its
 * share of a reminder's whole cost, not only its write. The clock moving 5 s a round touches an
 * entity (I2) about once a minute, as on any busy entity.
 */
const BATCH_LOCK = { duration: 'PT5S', ms: 5_000 } as const;

/** The lives of 10 messages of `spec`, `batch` to a request; the handler time of each call goes into `ms`. */
async function round({ queue, payload, bytes, batch }: Spec, env: BenchEnv, ms?: Record<keyof LifeRun['ms'], number[]>): Promise<void> {
  const path = `/queues/${queue}`;
  for (let n = 0; n < MESSAGES_PER_ROUND; n += batch) {
    const bodies = Array.from({ length: batch }, () => bodyOf(payload, counter++, bytes));
    const sent =
      batch === 1
        ? await env.api('POST', `${path}/messages`, { body: bodies[0] }, 201)
        : await env.api('POST', `${path}/messages/batch`, { messages: bodies.map((body) => ({ body })) }, 201);
    const got = await env.api('POST', `${path}/messages/receive`, { mode: 'peekLock', maxMessages: batch }, 200);
    const taken = got.body.messages as ReceivedMessage[];
    if (taken.length !== batch) throw new Error(`${queue}: expected ${batch} messages, got ${taken.length}`);
    let done;
    if (batch === 1) {
      done = await env.api('POST', `${path}/messages/${taken[0]!.sequenceNumber}/complete`, { lockToken: taken[0]!.lockToken }, 204);
    } else {
      done = await env.api('POST', `${path}/messages/complete`, { lockTokens: taken.map((m) => m.lockToken) }, 200);
      if ((done.body.results as { ok?: boolean }[]).some((r) => !r.ok)) throw new Error(`${queue}: a complete failed`);
    }
    ms?.send.push(sent.ms);
    ms?.receive.push(got.ms);
    ms?.complete.push(done.ms);
  }
  if (batch > 1) env.clock.advance(BATCH_LOCK.ms + 1);
}

/**
 * The batched lives of each spec, `reps` times, the specs taking turns in every repetition,
 * so a shared machine's load and DynamoDB Local's warming weigh on each alike.
 */
/** `lives` with one message of each spec sized outside the meter (`sized`). */
async function lives(env: BenchEnv, specs: Spec[], reps: number, warmRounds: number): Promise<LifeRun[]> {
  const runs = await unsizedLives(env, specs, reps, warmRounds);
  const out: LifeRun[] = [];
  for (const [i, run] of runs.entries()) out.push({ ...run, ...(await sized(env, specs[i]!)) });
  return out;
}

export type UnsizedLifeRun = Omit<LifeRun, 'itemBytes' | 'compressed'>;

async function unsizedLives(env: BenchEnv, specs: Spec[], reps: number, warmRounds: number): Promise<UnsizedLifeRun[]> {
  // Warm: the entities and the code paths, as on a busy Lambda (and DynamoDB Local's JIT).
  for (let i = 0; i < warmRounds; i++) for (const spec of specs) await round(spec, env);
  const state = specs.map(() => ({
    calls: [] as CallRecord[],
    first: undefined as CallRecord[] | undefined,
    repTotals: [] as OpResult['repTotals'],
    wall: [] as number[],
    ms: { send: [] as number[], receive: [] as number[], complete: [] as number[] },
  }));
  for (let rep = 0; rep < reps; rep++) {
    for (const [i, spec] of specs.entries()) {
      const st = state[i]!;
      const { tally, ms } = await env.meter.measure(() => round(spec, env, st.ms));
      st.calls.push(...tally.calls);
      st.first ??= tally.calls;
      st.repTotals.push({ readUnits: tally.readUnits / MESSAGES_PER_ROUND, writeUnits: tally.writeUnits / MESSAGES_PER_ROUND });
      st.wall.push(ms / ((3 * MESSAGES_PER_ROUND) / spec.batch));
    }
  }
  const out: UnsizedLifeRun[] = [];
  for (const [i, spec] of specs.entries()) {
    const st = state[i]!;
    const op: OpResult = {
      perMessages: spec.batch,
      reps,
      tally: perMessage(tallyOf(st.calls), reps * MESSAGES_PER_ROUND),
      repTotals: st.repTotals,
      handlerMs: median(st.wall),
      httpRequests: 3 / spec.batch,
      calls: summarizeCalls(st.first ?? []),
      note:
        spec.batch === 1
          ? `${spec.payload} body of ${spec.bytes} B: send + peek-lock receive + complete of one message`
          : `${spec.payload} body of ${spec.bytes} B: batch send of 10 + peek-lock receive of 10 + batch complete of 10, per message`,
    };
    out.push({
      payload: spec.payload,
      bodyBytes: spec.bytes,
      batch: spec.batch,
      op,
      ms: { send: median(st.ms.send), receive: median(st.ms.receive), complete: median(st.ms.complete) },
    });
  }
  return out;
}

/** One message of `spec` sized outside the meter: as sent, and locked (the largest it gets). */
async function sized(env: BenchEnv, { queue, payload, bytes }: Spec): Promise<Pick<LifeRun, 'itemBytes' | 'compressed'>> {
  const path = `/queues/${queue}`;
  const sent = await env.api('POST', `${path}/messages`, { body: bodyOf(payload, counter++, bytes) }, 201);
  const stored = await messageItem(env, queue, sent.body.sequenceNumber as string);
  const got = await env.api('POST', `${path}/messages/receive`, { maxMessages: 1 }, 200);
  const m = (got.body.messages as ReceivedMessage[])[0]!;
  const locked = await messageItem(env, queue, m.sequenceNumber);
  await env.api('POST', `${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken }, 204);
  return { itemBytes: { sent: itemBytes(stored), locked: itemBytes(locked) }, compressed: stored.body instanceof Uint8Array };
}

/**
 * `layout`: none for the product's default (ticketed positions, what a default deploy's queues
 * run: the stable figures, `lifecycleJson` and the rest), 'index' for today's layout (its own
 * figures beside them, `lifecycleJsonIndex` and the rest), each in a table of its own.
 * `sizes`: the body sizes of the price table (1 KB, the life's own, is always measured).
 */
export async function runLifecycle(
  endpoint: string,
  rootKey: string,
  log: (line: string) => void = () => {},
  options: { layout?: NewEntityLayout; sizes?: readonly number[] } = {},
): Promise<LifecycleResult> {
  const sizes = options.sizes ?? PRICE_SIZES;
  const env = await createEnv({
    name: options.layout ? `lifecycle-${options.layout}` : 'lifecycle',
    endpoint,
    tableName: options.layout ? `bench_life_${options.layout}` : 'bench_life',
    rootKey,
    ...(options.layout ? { newEntityLayout: options.layout } : {}),
  });
  const loads: number[] = [];
  const sampler = setInterval(() => loads.push(loadavg()[0]!), 1000);
  try {
    // A realistic name: the entity's path is stored in every message item.
    const specOf = async (payload: Payload, bytes: number, batch: Batch = 10): Promise<Spec> => {
      const queue = `orders-${payload === 'json' ? 'json' : 'blob'}-${bytes}${batch === 1 ? '-single' : ''}`;
      await env.api('PUT', `/queues/${queue}`, { lockDuration: batch > 1 ? BATCH_LOCK.duration : 'PT5M' }, 201);
      return { queue, payload, bytes, batch };
    };
    log('  1 KB JSON event and 1 KB incompressible body, taking turns: 6 batched lives of 10 each; the JSON event one at a time');
    const jsonSpec = await specOf('json', 1024);
    const [json, incompressible, single] = await lives(env, [jsonSpec, await specOf('incompressible', 1024), await specOf('json', 1024, 1)], 6, 3);
    const bySize: LifeRun[] = [];
    for (const bytes of sizes.includes(1024) ? sizes : [1024, ...sizes]) {
      if (bytes === 1024) {
        bySize.push(json!, incompressible!);
        continue;
      }
      log(`  price by size: ${bytes} B`);
      bySize.push(...(await lives(env, [await specOf('json', bytes), await specOf('incompressible', bytes)], 2, 1)));
    }
    log('  the stream consumer and the units by partition key: 10 batched lives of the JSON event');
    const { stream, writeUnitsByKey } = await streamAndKeys(env, endpoint, jsonSpec, 10);
    return { json: json!, single: single!, incompressible: incompressible!, bySize, stream, writeUnitsByKey, loadAverage: median(loads) };
  } finally {
    clearInterval(sampler);
    env.destroy();
  }
}

/**
 * The request path's lives of `runLifecycle` (the 1 KB JSON event in batches of 10 and one at a
 * time, the 1 KB incompressible body in batches of 10) on queues of the positioned layout whose
 * heads are claimed by cursor (`newEntityLayout: 'positions'`, design.md "Which way out"), a
 * deployment's choice beside the default's ticketed heads.
 */
export interface PositionedLifecycleResult {
  json: UnsizedLifeRun;
  single: UnsizedLifeRun;
  incompressible: UnsizedLifeRun;
  /** Write units a life puts on each partition key (10 batched lives of the JSON event). */
  writeUnitsByKey: Record<string, number>;
}

/** `layout`: 'tickets' for queues whose heads are taken by ticket (lib/store/tickets.ts), each in a table of its own. */
export async function runPositionedLifecycle(
  endpoint: string,
  rootKey: string,
  log: (line: string) => void = () => {},
  layout: 'positions' | 'tickets' = 'positions',
): Promise<PositionedLifecycleResult> {
  const tableName = layout === 'tickets' ? 'bench_life_tix' : 'bench_life_pos';
  const env = await createEnv({ name: `lifecycle-${layout}`, endpoint, tableName, rootKey, newEntityLayout: layout });
  try {
    const specOf = async (payload: Payload, batch: Batch = 10): Promise<Spec> => {
      const queue = `orders-${payload === 'json' ? 'json' : 'blob'}-1024${batch === 1 ? '-single' : ''}`;
      await env.api('PUT', `/queues/${queue}`, { lockDuration: batch > 1 ? BATCH_LOCK.duration : 'PT5M' }, 201);
      return { queue, payload, bytes: 1024, batch };
    };
    log('  positioned layout: the 1 KB JSON event and 1 KB incompressible body in batches of 10, the JSON event one at a time');
    const jsonSpec = await specOf('json');
    const [json, incompressible, single] = await unsizedLives(env, [jsonSpec, await specOf('incompressible'), await specOf('json', 1)], 6, 3);
    // The units by partition key of 10 batched lives of the JSON event (the hottest key's share).
    env.meter.trackKeys = true;
    const keyed = await env.meter.measure(async () => {
      for (let i = 0; i < 10; i++) await round(jsonSpec, env);
    });
    env.meter.trackKeys = false;
    const writeUnitsByKey = Object.fromEntries(Object.entries(keyed.tally.writeUnitsByKey).map(([k, u]) => [k, u / (10 * MESSAGES_PER_ROUND)]));
    return { json: json!, single: single!, incompressible: incompressible!, writeUnitsByKey };
  } finally {
    env.destroy();
  }
}

/**
 * `rounds` lives of 10 messages of `spec` with the meter tracking keys, then the stream
 * consumer over their records, as Lambda would run it (batches of up to 1,000 records); the
 * records of everything before are handed over first, outside the meter.
 */
async function streamAndKeys(env: BenchEnv, endpoint: string, spec: Spec, rounds: number): Promise<Pick<LifecycleResult, 'stream' | 'writeUnitsByKey'>> {
  const config = { endpoint, region: localRegion, credentials: localCredentials };
  const ddb = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const timer = { ms: 0, invocations: 0 };
  const poller = new StreamPoller({
    ddb,
    streams,
    tableName: env.tableName,
    handler: async (event) => {
      const started = performance.now();
      const keyReads = env.meter.keyReadMs;
      try {
        return await env.stream(event);
      } finally {
        if ((event.Records ?? []).some((r) => r.dynamodb?.Keys?.pk?.S?.startsWith('msg/'))) {
          timer.invocations++;
          timer.ms += performance.now() - started - (env.meter.keyReadMs - keyReads);
        }
      }
    },
  });
  try {
    env.meter.paused = true;
    try {
      await poller.drain();
    } finally {
      env.meter.paused = false;
    }
    env.meter.trackKeys = true;
    const messages = rounds * MESSAGES_PER_ROUND;
    const path = await env.meter.measure(async () => {
      for (let i = 0; i < rounds; i++) await round(spec, env);
    });
    const before = { ...timer };
    const drained = await env.meter.measure(() => poller.drain());
    const invocations = timer.invocations - before.invocations;
    const per = perMessage(drained.tally, messages);
    const writeUnitsByKey: Record<string, number> = {};
    for (const t of [path.tally, drained.tally]) {
      for (const [key, units] of Object.entries(t.writeUnitsByKey)) writeUnitsByKey[key] = (writeUnitsByKey[key] ?? 0) + units / messages;
    }
    return {
      stream: {
        messages,
        records: drained.result.records,
        invocations,
        invocationsPerMessage: invocations / messages,
        readUnits: per.readUnits,
        writeUnits: per.writeUnits,
        requests: per.requests,
        handlerMs: invocations > 0 ? (timer.ms - before.ms) / invocations : 0,
        calls: summarizeCalls(drained.tally.calls),
      },
      writeUnitsByKey,
    };
  } finally {
    env.meter.trackKeys = false;
    await poller.stop();
    ddb.destroy();
    streams.destroy();
  }
}
