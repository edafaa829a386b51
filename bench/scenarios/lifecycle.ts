/**
 * "A message's life": the whole life (batch send of 10, peek-lock receive of 10, batch
 * complete of 10) of a realistic 1 KB JSON event and of a 1 KB incompressible body, per
 * message, with the handler time of each call (compressing a body is part of a send's time);
 * then the same life at 100 B, 1 KB, 10 KB and 64 KB of each, for the price table.
 */
import { loadavg } from 'node:os';
import { itemBytes } from '../../lib/store/item-size.js';
import { createEnv, median, type BenchEnv, type OpResult } from '../harness.js';
import { incompressibleBody, jsonEvent } from '../payloads.js';
import { perMessage, summarizeCalls, tallyOf, type CallRecord } from '../capacity.js';
import { messageItem, type ReceivedMessage } from './operations.js';

export type Payload = 'json' | 'incompressible';

export interface LifeRun {
  payload: Payload;
  bodyBytes: number;
  op: OpResult;
  /** Handler time of each call of a batched life, ms, median over the repetitions. */
  ms: { sendBatch10: number; receive10: number; completeBatch10: number };
  /** The stored item of one message, bytes: as sent and while locked (the largest it gets). */
  itemBytes: { sent: number; locked: number };
  /** Whether its body was stored compressed. */
  compressed: boolean;
}

export interface LifecycleResult {
  json: LifeRun;
  incompressible: LifeRun;
  bySize: LifeRun[];
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
}

/**
 * The batched lives of each spec, `reps` times, the specs taking turns in every repetition,
 * so a shared machine's load and DynamoDB Local's warming weigh on each alike.
 */
async function lives(env: BenchEnv, specs: Spec[], reps: number, warmRounds: number): Promise<LifeRun[]> {
  const round = async ({ queue, payload, bytes }: Spec, ms?: Record<keyof LifeRun['ms'], number[]>) => {
    const path = `/queues/${queue}`;
    const messages = Array.from({ length: 10 }, () => ({ body: bodyOf(payload, counter++, bytes) }));
    const sent = await env.api('POST', `${path}/messages/batch`, { messages }, 201);
    const got = await env.api('POST', `${path}/messages/receive`, { mode: 'peekLock', maxMessages: 10 }, 200);
    const taken = got.body.messages as ReceivedMessage[];
    if (taken.length !== 10) throw new Error(`${queue}: expected 10 messages, got ${taken.length}`);
    const done = await env.api('POST', `${path}/messages/complete`, { lockTokens: taken.map((m) => m.lockToken) }, 200);
    if ((done.body.results as { ok?: boolean }[]).some((r) => !r.ok)) throw new Error(`${queue}: a complete failed`);
    ms?.sendBatch10.push(sent.ms);
    ms?.receive10.push(got.ms);
    ms?.completeBatch10.push(done.ms);
  };
  // Warm: the entities and the code paths, as on a busy Lambda (and DynamoDB Local's JIT).
  for (let i = 0; i < warmRounds; i++) for (const spec of specs) await round(spec);
  const state = specs.map(() => ({
    calls: [] as CallRecord[],
    first: undefined as CallRecord[] | undefined,
    repTotals: [] as OpResult['repTotals'],
    wall: [] as number[],
    ms: { sendBatch10: [] as number[], receive10: [] as number[], completeBatch10: [] as number[] },
  }));
  for (let rep = 0; rep < reps; rep++) {
    for (const [i, spec] of specs.entries()) {
      const st = state[i]!;
      const { tally, ms } = await env.meter.measure(() => round(spec, st.ms));
      st.calls.push(...tally.calls);
      st.first ??= tally.calls;
      st.repTotals.push({ readUnits: tally.readUnits / 10, writeUnits: tally.writeUnits / 10 });
      st.wall.push(ms / 3);
    }
  }
  const out: LifeRun[] = [];
  for (const [i, spec] of specs.entries()) {
    const st = state[i]!;
    const op: OpResult = {
      perMessages: 10,
      reps,
      tally: perMessage(tallyOf(st.calls), reps * 10),
      repTotals: st.repTotals,
      handlerMs: median(st.wall),
      httpRequests: 0.3,
      calls: summarizeCalls(st.first ?? []),
      note: `${spec.payload} body of ${spec.bytes} B: batch send of 10 + peek-lock receive of 10 + batch complete of 10, per message`,
    };
    out.push({
      payload: spec.payload,
      bodyBytes: spec.bytes,
      op,
      ms: { sendBatch10: median(st.ms.sendBatch10), receive10: median(st.ms.receive10), completeBatch10: median(st.ms.completeBatch10) },
      ...(await sized(env, spec)),
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

export async function runLifecycle(endpoint: string, rootKey: string, log: (line: string) => void = () => {}): Promise<LifecycleResult> {
  const env = await createEnv({ name: 'lifecycle', endpoint, tableName: 'bench_life', rootKey });
  const loads: number[] = [];
  const sampler = setInterval(() => loads.push(loadavg()[0]!), 1000);
  try {
    // A realistic name: the entity's path is stored in every message item.
    const specOf = async (payload: Payload, bytes: number): Promise<Spec> => {
      const queue = `orders-${payload === 'json' ? 'json' : 'blob'}-${bytes}`;
      await env.api('PUT', `/queues/${queue}`, { lockDuration: 'PT5M' }, 201);
      return { queue, payload, bytes };
    };
    log('  1 KB JSON event and 1 KB incompressible body, taking turns: 6 batched lives of 10 each');
    const [json, incompressible] = await lives(env, [await specOf('json', 1024), await specOf('incompressible', 1024)], 6, 3);
    const bySize: LifeRun[] = [];
    for (const bytes of PRICE_SIZES) {
      if (bytes === 1024) {
        bySize.push(json!, incompressible!);
        continue;
      }
      log(`  price by size: ${bytes} B`);
      bySize.push(...(await lives(env, [await specOf('json', bytes), await specOf('incompressible', bytes)], 2, 1)));
    }
    return { json: json!, incompressible: incompressible!, bySize, loadAverage: median(loads) };
  } finally {
    clearInterval(sampler);
    env.destroy();
  }
}
