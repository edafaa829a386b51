/**
 * The positioned layout's store operations (lib/store/positions.ts, leases.ts; step 1a, not
 * yet behind the API) on DynamoDB Local, metered call by call:
 *
 * - units per life of the 1 KB JSON event (bench/payloads.ts `jsonEvent`), stored as today's
 *   message item of it is: the event is sent through today's API once, its stored item read
 *   back and put at positions with its key and index attributes left out. A life is the send's
 *   draw and puts, the claim, the complete, and its share of the later claim that finds the
 *   settled leases lapsed and deletes them (each lease's range read and delete); batches of 10
 *   and one message per request. The request path only: no entity read, no stream, no counts.
 * - claims a second on one partition: 16 concurrent receivers of one message, then of 10, each
 *   claiming and completing until a prefilled partition is drained, and the cursor writes lost
 *   to another receiver per claim. DynamoDB Local's own call latency is reported beside it,
 *   since a claim's rate is bounded by the round trips between its cursor read and write.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Tally } from '../capacity.js';
import { createEnv, type BenchEnv } from '../harness.js';
import { jsonEvent } from '../payloads.js';
import { entityKey, messagePk, positionedPk } from '../../lib/store/keys.js';
import { itemBytes } from '../../lib/item-size.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { claim, completeAtPosition } from '../../lib/store/leases.js';

const LOCK_MS = 5_000;
const LIVES = 100;
/** Attributes of today's message item a positioned item does not carry: its key, and the `ready` and `due` indexes' keys. */
const NOT_CARRIED = ['pk', 'sk', 'rpk', 'rsk', 'dpk', 'dsk'];

export interface PositionsLife {
  messagesPerRequest: number;
  lives: number;
  writeUnits: number;
  readUnits: number;
  /** Per life, by step. */
  steps: Record<'send' | 'claim' | 'complete' | 'cleanup', { writeUnits: number; readUnits: number; calls: number }>;
}

export interface ClaimRate {
  receivers: number;
  want: number;
  claims: number;
  messages: number;
  seconds: number;
  claimsPerSecond: number;
  messagesPerSecond: number;
  lostRacesPerClaim: number;
  /** Mean latency of one DynamoDB Local call during the run, ms. */
  meanCallMs: number;
  /** DynamoDB calls per claim (reads and writes, the lost attempts' included). */
  callsPerClaim: number;
}

export interface PositionsResult {
  /** DynamoDB's size of the stored 1 KB JSON event, as today's item (with its key) and as a positioned item. */
  itemBytes: { today: number; positioned: number };
  batch10: PositionsLife;
  single: PositionsLife;
  claimRates: ClaimRate[];
}

/** The 1 KB JSON events `n` of them, as today's send stores them, without what a positioned item does not carry. */
export async function storedEvents(env: BenchEnv, n: number): Promise<{ payloads: Record<string, unknown>[]; todayBytes: number }> {
  await env.api('PUT', '/queues/template', {}, 201);
  await env.api('POST', '/queues/template/messages/batch', { messages: Array.from({ length: n }, (_, i) => ({ body: jsonEvent(i) })) }, 201);
  const entity = await env.deps.db.send(new GetCommand({ TableName: env.tableName, Key: entityKey('queue', 'template'), ConsistentRead: true }));
  const out = await env.deps.db.send(
    new QueryCommand({
      TableName: env.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': messagePk(entity.Item!.eid as string, 'active', 0) },
      ConsistentRead: true,
    }),
  );
  const items = (out.Items ?? []) as Record<string, unknown>[];
  const payloads = items.map((item) => Object.fromEntries(Object.entries(item).filter(([k]) => !NOT_CARRIED.includes(k))));
  return { payloads, todayBytes: itemBytes(items[0]!) };
}

const per = (t: Tally, n: number) => ({ writeUnits: t.writeUnits / n, readUnits: t.readUnits / n, calls: t.requests / n });

async function lives(env: BenchEnv, pk: string, payloads: Record<string, unknown>[], perRequest: number): Promise<PositionsLife> {
  const sum = { send: [] as Tally[], claim: [] as Tally[], complete: [] as Tally[], cleanup: [] as Tally[] };
  for (let done = 0; done < LIVES; done += perRequest) {
    const bodies = Array.from({ length: perRequest }, (_, i) => payloads[(done + i) % payloads.length]!);
    sum.send.push(
      (
        await env.meter.measure(async () => {
          const draw = await drawPositions(env.deps, pk, perRequest);
          if ((await putAtPositions(env.deps, pk, draw, bodies)) !== 'written') throw new Error('positions: a put failed');
        })
      ).tally,
    );
    const got = await env.meter.measure(() => claim(env.deps, pk, perRequest, { lockMs: LOCK_MS }));
    if (got.result.messages.length !== perRequest) throw new Error(`positions: claimed ${got.result.messages.length} of ${perRequest}`);
    sum.claim.push(got.tally);
    sum.complete.push(
      (
        await env.meter.measure(async () => {
          const outcomes = await Promise.all(got.result.messages.map((m) => completeAtPosition(env.deps, pk, m.token)));
          if (outcomes.some((o) => o !== 'completed')) throw new Error('positions: a complete failed');
        })
      ).tally,
    );
  }
  // Every lease lapses settled: the next claim reads each one's range and deletes it.
  env.clock.advance(LOCK_MS + 1);
  sum.cleanup.push((await env.meter.measure(() => claim(env.deps, pk, 1, { lockMs: LOCK_MS }))).tally);
  const total = (ts: Tally[]) =>
    ts.reduce((a, t) => ({ ...a, writeUnits: a.writeUnits + t.writeUnits, readUnits: a.readUnits + t.readUnits, requests: a.requests + t.requests }));
  const steps = Object.fromEntries(Object.entries(sum).map(([k, ts]) => [k, per(total(ts), LIVES)])) as PositionsLife['steps'];
  const all = Object.values(steps);
  return {
    messagesPerRequest: perRequest,
    lives: LIVES,
    writeUnits: all.reduce((a, s) => a + s.writeUnits, 0),
    readUnits: all.reduce((a, s) => a + s.readUnits, 0),
    steps,
  };
}

/** `receivers` concurrent receivers of `want` messages draining `messages` prefilled in requests of 10. */
async function claimRate(env: BenchEnv, pk: string, payload: Record<string, unknown>, receivers: number, want: number, messages: number): Promise<ClaimRate> {
  env.meter.paused = true;
  for (let i = 0; i < messages; i += 10) {
    const draw = await drawPositions(env.deps, pk, 10);
    await putAtPositions(
      env.deps,
      pk,
      draw,
      Array.from({ length: 10 }, () => payload),
    );
  }
  env.meter.paused = false;
  let claims = 0;
  let taken = 0;
  let lost = 0;
  const started = performance.now();
  const window = await env.meter.measure(() =>
    Promise.all(
      Array.from({ length: receivers }, async () => {
        for (;;) {
          const got = await claim(env.deps, pk, want, { lockMs: 60_000, attempts: 1_000 });
          lost += got.lostRaces;
          if (got.messages.length === 0) return;
          claims++;
          taken += got.messages.length;
          await Promise.all(got.messages.map((m) => completeAtPosition(env.deps, pk, m.token)));
        }
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const calls = window.tally.calls;
  return {
    receivers,
    want,
    claims,
    messages: taken,
    seconds,
    claimsPerSecond: claims / seconds,
    messagesPerSecond: taken / seconds,
    lostRacesPerClaim: lost / claims,
    meanCallMs: calls.reduce((a, c) => a + c.ms, 0) / calls.length,
    callsPerClaim: calls.filter((c) => !(c.type === 'DeleteItem' && c.label === 'item(pos)')).length / claims,
  };
}

export async function runPositions(endpoint: string, rootKey: string, log: (line: string) => void): Promise<PositionsResult> {
  const env = await createEnv({ name: 'positions', endpoint, tableName: 'bench_positions', rootKey });
  try {
    const { payloads, todayBytes } = await storedEvents(env, 10);
    log(`positions: the stored 1 KB JSON event is ${todayBytes} bytes as today's item`);
    const batch10 = await lives(env, positionedPk('bench', 'active', 0), payloads, 10);
    const single = await lives(env, positionedPk('bench', 'active', 1), payloads, 1);
    log('positions: lives measured; claim rates next');
    const claimRates = [
      await claimRate(env, positionedPk('bench', 'active', 2), payloads[0]!, 16, 1, 800),
      await claimRate(env, positionedPk('bench', 'active', 3), payloads[0]!, 16, 10, 3_000),
    ];
    const positioned = itemBytes({ ...payloads[0]!, pk: positionedPk('bench', 'active', 0), sk: '0000000000000000001', at: 0, rf: 1, rn: 10 });
    return { itemBytes: { today: todayBytes, positioned }, batch10, single, claimRates };
  } finally {
    env.destroy();
  }
}
