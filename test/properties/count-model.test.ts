/**
 * A model-based property of E6: a random mix of sends (some scheduled), receives in both modes,
 * completes, abandons, deferrals, dead-letterings and clock moves writes the table's stream; the
 * stream consumer meets it as Lambda's event source mapping delivers it, now and then between
 * the operations: in batches of random sizes, through a store that throttles (past the SDK's
 * retries) and conflicts at random, each failed batch retried from the record the consumer
 * reports; and afterwards stretches of it come again, cut anywhere. Some message items' count
 * transactions may also be refused for good (an error that is not load) until the end: their
 * records are parked after failing 3 times, and the sweeper applies them once the cause is
 * gone. However the records are cut, refused, parked and repeated, once each has been
 * delivered (or parked and swept) the counts equal what is stored: they never drift.
 */
import fc from 'fast-check';
import type { DynamoDBRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, seededRandom, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { faultyDeps } from '../support/faults.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { countParkedRecords } from '../../lib/store/stream-failures.js';
import { COUNTED_PK_PREFIX } from '../../lib/store/keys.js';
import { messageItems, streamEvent, TableStreamReader } from '../support/stream.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';

type Deps = Awaited<ReturnType<typeof testDeps>>;

const clock = new ManualClock();
let deps: Deps;
let api: ReturnType<typeof apiClient>;
let reader: TableStreamReader;
let healthyConsumer: ReturnType<typeof createStreamHandler>;
let faultyConsumer: ReturnType<typeof createStreamHandler>;
let sweeper: ReturnType<typeof createSweeperHandler>;
const plan: StoreFaultPlan = {};
/** One in `poisonEvery` message items has its count transactions refused for good (0: none). */
let poisonEvery = 0;

/** Whether a call is a count transaction that marks a poisoned message item's records. */
function poisonedCount(command: unknown): boolean {
  if (poisonEvery === 0) return false;
  const parts = ((command as { input?: { TransactItems?: { Update?: { Key?: { pk?: unknown } } }[] } }).input?.TransactItems ?? []) as {
    Update?: { Key?: { pk?: unknown } };
  }[];
  return parts.some((p) => {
    const pk = p.Update?.Key?.pk;
    if (typeof pk !== 'string' || !pk.startsWith(COUNTED_PK_PREFIX)) return false;
    let h = 0;
    for (let i = 0; i < pk.length; i++) h = (h * 31 + pk.charCodeAt(i)) | 0;
    return Math.abs(h) % poisonEvery === 0;
  });
}
let reseed: (seed: number) => void;
let run = 0;

beforeAll(async () => {
  // Today's layout: the counts are held to its msg/ items.
  deps = { ...(await testDeps(clock, 'count-model', undefined, { stream: true })), ...indexLayout };
  let random = seededRandom(1);
  reseed = (seed) => {
    random = seededRandom(seed);
  };
  const store = faultyStore(deps.db, plan, { fastRetries: true, random: () => random() });
  api = apiClient(deps);
  reader = new TableStreamReader(deps);
  healthyConsumer = createStreamHandler(deps);
  const poisoned = faultyDeps(
    { ...deps, db: store.db },
    {
      match: poisonedCount,
      times: Number.MAX_SAFE_INTEGER,
      interleave: async () => {
        throw Object.assign(new Error('injected: refused for good'), { name: 'ValidationException' });
      },
    },
  );
  faultyConsumer = createStreamHandler(poisoned);
  sweeper = createSweeperHandler(deps);
});

type Action =
  | { kind: 'send'; n: number; scheduled: boolean }
  | { kind: 'receive'; mode: 'peekLock' | 'receiveAndDelete'; max: number }
  | { kind: 'settle'; action: 'complete' | 'abandon' | 'defer' | 'deadletter'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'drain'; batch: number };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ n: fc.integer({ min: 1, max: 5 }), scheduled: fc.nat(4).map((n) => n === 0) }).map((r) => ({ kind: 'send' as const, ...r })),
  },
  {
    weight: 4,
    arbitrary: fc
      .record({ mode: fc.constantFrom<'peekLock' | 'receiveAndDelete'>('peekLock', 'peekLock', 'receiveAndDelete'), max: fc.constantFrom(1, 3, 10) })
      .map((r) => ({ kind: 'receive' as const, ...r })),
  },
  {
    weight: 5,
    arbitrary: fc
      .record({
        action: fc.constantFrom<'complete' | 'abandon' | 'defer' | 'deadletter'>('complete', 'complete', 'abandon', 'defer', 'deadletter'),
        pick: fc.nat(),
      })
      .map((r) => ({ kind: 'settle' as const, ...r })),
  },
  { weight: 1, arbitrary: fc.constantFrom(30_000, 120_000).map((ms) => ({ kind: 'advance' as const, ms })) },
  { weight: 2, arbitrary: fc.constantFrom(1, 7, 50, 1000, 1000).map((batch) => ({ kind: 'drain' as const, batch })) },
);

const weatherArb = fc.record({
  seed: fc.integer(),
  throttleRate: fc.constantFrom(0, 0.05, 0.15),
  attempts: fc.constantFrom(1, 2, 3),
  conflictRate: fc.constantFrom(0, 0.05, 0.15),
  poisonEvery: fc.constantFrom(0, 0, 3),
  // A stretch, or everything after or before a cut: a cut between a message's insert and its
  // removal replays one without the other.
  replays: fc.array(
    fc.record({ cut: fc.nat(), length: fc.nat(40), part: fc.constantFrom('after', 'before', 'stretch'), batch: fc.constantFrom(1, 2, 5, 13, 1000) }),
    { minLength: 1, maxLength: 4 },
  ),
});

/**
 * Delivers `records` as the event source mapping does: `batch` records at a time, a batch the
 * consumer reports failed retried from the record it names (ReportBatchItemFailures), a batch
 * whose invocation threw retried in halves (BisectBatchOnFunctionError). Gives up (failing the
 * test) if the consumer never gets through.
 */
async function deliverAsLambda(consumer: ReturnType<typeof createStreamHandler>, records: DynamoDBRecord[], batch: number): Promise<void> {
  let at = 0;
  let size = batch;
  for (let attempts = 0; at < records.length; attempts++) {
    if (attempts > 20 * records.length + 100) throw new Error('the consumer never got through the stream');
    const slice = records.slice(at, at + size);
    let answer: Awaited<ReturnType<typeof consumer>>;
    try {
      answer = await consumer(streamEvent(...slice));
    } catch {
      size = Math.max(1, Math.floor(slice.length / 2));
      continue;
    }
    size = batch;
    const { batchItemFailures } = answer;
    const failed = batchItemFailures[0]?.itemIdentifier;
    if (failed === undefined) {
      at += slice.length;
      continue;
    }
    const index = slice.findIndex((r) => r.dynamodb?.SequenceNumber === failed);
    expect(index, 'the consumer names a record of its batch').toBeGreaterThanOrEqual(0);
    at += index;
  }
}

/** The counts E6 should show, from what is stored. */
async function truth(queue: string): Promise<Json> {
  const active = await messageItems(deps, queue, 'active');
  const dead = await messageItems(deps, queue, 'deadletter');
  return {
    activeMessageCount: active.filter((m) => m.state === 'Active').length,
    scheduledMessageCount: active.filter((m) => m.state === 'Scheduled').length,
    deferredMessageCount: active.filter((m) => m.state === 'Deferred').length,
    deadLetterMessageCount: dead.length,
    totalMessageCount: active.length + dead.length,
    sizeInBytes: [...active, ...dead].reduce((s, m) => s + m.size, 0),
  };
}

async function counts(queue: string): Promise<Json> {
  const r = (await api('GET', `/queues/${queue}`)).body.runtime as Json;
  const { activeMessageCount, scheduledMessageCount, deferredMessageCount, deadLetterMessageCount, totalMessageCount, sizeInBytes } = r;
  return { activeMessageCount, scheduledMessageCount, deferredMessageCount, deadLetterMessageCount, totalMessageCount, sizeInBytes };
}

describe('E6 model: counts under any delivery of the stream', () => {
  it(
    'E6: random sends, receives, settlements and clock moves, counted from a stream cut, refused and replayed at random, leave counts equal to what is stored',
    { timeout: 180_000 },
    async () => {
      await fc.assert(
        fc.asyncProperty(weatherArb, fc.array(actionArb, { minLength: 5, maxLength: 20 }), async (weather, actions) => {
          // prepare: a queue of this run's own, the stream read up to now (other runs' records delivered healthily)
          const q = `cm${++run}`;
          expect((await api('PUT', `/queues/${q}`, { lockDuration: 'PT1M' })).status).toBe(201);
          await deliverAsLambda(healthyConsumer, await reader.read(), 1000);
          reseed(weather.seed);
          plan.throttle = { rate: weather.throttleRate, when: () => true, attempts: weather.attempts };
          plan.conflict = { rate: weather.conflictRate, when: () => true };
          poisonEvery = weather.poisonEvery;
          const held: Json[] = [];
          const seen: DynamoDBRecord[] = [];
          const drain = async (batch: number) => {
            const records = await reader.read();
            seen.push(...records);
            await deliverAsLambda(faultyConsumer, records, batch);
          };
          // act
          for (const a of actions) {
            if (a.kind === 'send') {
              const at = a.scheduled ? { scheduledEnqueueTime: new Date(clock.now() + 60_000).toISOString() } : {};
              const messages = Array.from({ length: a.n }, (_, i) => ({ body: { i, pad: 'x'.repeat(i * 40) }, ...at }));
              expect((await api('POST', `/queues/${q}/messages/batch`, { messages })).status).toBe(201);
            } else if (a.kind === 'receive') {
              const got = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: a.max, mode: a.mode });
              expect(got.status).toBe(200);
              if (a.mode === 'peekLock') held.push(...(got.body.messages as Json[]));
            } else if (a.kind === 'settle') {
              if (held.length === 0) continue;
              const [m] = held.splice(a.pick % held.length, 1);
              const extra = a.action === 'deadletter' ? { deadLetterReason: 'model' } : {};
              const res = await api('POST', `/queues/${q}/messages/${m!.sequenceNumber}/${a.action}`, { lockToken: m!.lockToken, ...extra });
              expect([204, 410]).toContain(res.status); // 410: its lock lapsed after a clock move
            } else if (a.kind === 'advance') {
              clock.advance(a.ms);
            } else {
              await drain(a.batch);
            }
          }
          await drain(1000);
          for (const replay of weather.replays) {
            const cut = seen.length ? replay.cut % seen.length : 0;
            const again = { after: seen.slice(cut), before: seen.slice(0, cut), stretch: seen.slice(cut, cut + replay.length) }[replay.part];
            await deliverAsLambda(faultyConsumer, again, replay.batch);
          }
          plan.throttle = undefined;
          plan.conflict = undefined;
          // the cause of the refusals is gone: the sweeper applies what was parked, and its own
          // moves (expiries, activations) reach the consumer as the stream brings them
          poisonEvery = 0;
          const swept = await sweeper();
          expect(swept.stillParked).toBe(0);
          expect(await countParkedRecords(deps)).toBe(0);
          await deliverAsLambda(healthyConsumer, await reader.read(), 1000);
          // assess
          expect(await counts(q)).toEqual(await truth(q));
        }),
        { numRuns: 8, seed: 22 },
      );
    },
  );
});
