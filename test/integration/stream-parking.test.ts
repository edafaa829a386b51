/**
 * The stream consumer never drops a record (T6, E6). Load (throttling past the SDK's retries)
 * is reported for Lambda to retry, for as long as it lasts: nothing is parked, nothing lost.
 * A record that fails for another reason is reported twice, parked on its third failure (the
 * batch then goes on past it), and applied later by the sweeper exactly once: one dead-letter
 * copy, counts equal to what is stored, however often it is replayed or fails again.
 *
 * Records are built by hand (test/support/stream.ts); TTL is simulated by deleting the item
 * and handing the consumer its removal record. Failures come from the fault layers:
 * faults.ts (an error of our choosing at a chosen call) and dynamo-faults.ts (throttling
 * inside the SDK's retry loop).
 */
import { QueryCommand, PutCommand, TransactWriteCommand, DeleteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { PARK_AFTER_FAILURES } from '../../lib/broker/stream.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { countedMarkerKey, PARKED_PK, parseMessagePk, streamFailureKey } from '../../lib/store/keys.js';
import { countParkedRecords, getParkedRecord } from '../../lib/store/stream-failures.js';
import { apiClient } from '../support/api.js';
import { faultyStore, isWrite } from '../support/dynamo-faults.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { queueHelpers } from '../support/queue-helpers.js';
import { insertRecord, messageItem, messageItems, streamEvent, ttlRemovalRecord, userRemoveRecord } from '../support/stream.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

type Deps = Awaited<ReturnType<typeof testDeps>>;

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Deps;
let api: ReturnType<typeof apiClient>;
let consume: ReturnType<typeof createStreamHandler>;
let sweep: ReturnType<typeof createSweeperHandler>;

beforeAll(async () => {
  // Today's layout: the records are made from its msg/ items, removed by hand as TTL would.
  deps = { ...(await testDeps(clock, 'stream-parking')), ...indexLayout };
  api = apiClient(deps);
  consume = createStreamHandler(deps);
  sweep = createSweeperHandler(deps);
});

const { createQueue, send, peek, dlq } = queueHelpers(() => api);

/** An error DynamoDB would not take back on a retry: not load, so the consumer counts it. */
function invalid(): Error {
  const e = new Error('injected: Item size has exceeded the maximum allowed size');
  e.name = 'ValidationException';
  return e;
}

/** A consumer (or sweeper) whose calls matching `match` fail with `invalid()` while `on()` holds. */
function poisoned(match: (command: unknown) => boolean, on: () => boolean) {
  return faultyDeps(deps, {
    match: (c) => on() && match(c),
    times: Number.MAX_SAFE_INTEGER,
    interleave: async () => {
      throw invalid();
    },
  });
}

/** The put of a dead-letter copy: alone, or in the transaction with the handled marker. */
// Found by its key: a message item no longer repeats its subqueue (message-layout.ts).
const inDeadLetter = (item: { pk?: unknown } | undefined) => parseMessagePk(String(item?.pk ?? ''))?.subqueue === 'deadletter';
const deadLetterPut = (c: unknown) =>
  both(is(PutCommand), (p) => inDeadLetter(inputOf(p).Item))(c) ||
  both(is(TransactWriteCommand), (t) => ((inputOf(t).TransactItems ?? []) as { Put?: { Item?: { pk?: unknown } } }[]).some((i) => inDeadLetter(i.Put?.Item)))(
    c,
  );

/** A count transaction that marks records of `item`. */
const countsOf = (item: { pk: string; sk: string }) =>
  both(is(TransactWriteCommand), (t) =>
    ((inputOf(t).TransactItems ?? []) as { Update?: { Key?: { pk?: unknown } } }[]).some((i) => i.Update?.Key?.pk === countedMarkerKey(item).pk),
  );

async function runtime(queue: string) {
  const r = (await api('GET', `/queues/${queue}`)).body.runtime;
  return { active: r.activeMessageCount, deadLetter: r.deadLetterMessageCount, total: r.totalMessageCount, size: r.sizeInBytes };
}

/** The counts E6 should show, from what is stored. */
async function truth(queue: string) {
  const active = await messageItems(deps, queue, 'active');
  const dead = await messageItems(deps, queue, 'deadletter');
  const all = [...active, ...dead];
  return { active: active.length, deadLetter: dead.length, total: all.length, size: all.reduce((s, m) => s + m.size, 0) };
}

/** The failure counter of a record (undefined when it never failed for a reason other than load). */
async function failuresOf(record: DynamoDBRecord): Promise<number | undefined> {
  const key = streamFailureKey({ pk: record.dynamodb!.Keys!.pk!.S!, sk: record.dynamodb!.Keys!.sk!.S! }, record.eventID!);
  const out = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': key.pk }, ConsistentRead: true }),
  );
  return out.Items?.find((i) => i.sk === key.sk)?.attempts as number | undefined;
}

/** Removes every parked record (other tests' leftovers must not count in this one's). */
async function clearParked() {
  const out = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': PARKED_PK }, ConsistentRead: true }),
  );
  for (const i of out.Items ?? []) await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: i.pk, sk: i.sk } }));
}

/** A queue that dead-letters on expiry: `keep` lives a week, `gone` (1 minute) is past its expiry and removed by "TTL". */
async function expiredMessage(q: string) {
  await createQueue(q, { defaultMessageTimeToLive: 'P7D', deadLetteringOnMessageExpiration: true });
  const keep = await send(q, { body: 'keep' });
  // A body that compresses: stored as bytes, which the parked image must keep as they were.
  const gone = await send(q, { body: { gone: 'x'.repeat(4000) }, applicationProperties: { a: 1 }, timeToLive: 'PT1M' });
  const keepItem = (await messageItem(deps, q, 'active', keep.sequenceNumber))!;
  const goneItem = (await messageItem(deps, q, 'active', gone.sequenceNumber))!;
  clock.advance(2 * MINUTE);
  await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: goneItem.pk, sk: goneItem.sk } }));
  // In the order the stream has them: the inserts, then the removal.
  const inserts = [insertRecord(keepItem, { at: clock.now() }), insertRecord(goneItem, { at: clock.now() })];
  const removal = ttlRemovalRecord(goneItem, 'aws', { at: clock.now() });
  return { gone, goneItem, records: [...inserts, removal], removal };
}

/** The insert records of what the dead-letter subqueue holds, as the stream would bring them. */
async function deadLetterInserts(q: string): Promise<DynamoDBRecord[]> {
  return (await messageItems(deps, q, 'deadletter')).map((item) => insertRecord(item, { at: clock.now() }));
}

describe('a TTL removal whose dead-lettering keeps failing', () => {
  it(`T6/E6: is retried by Lambda twice, parked on failure ${PARK_AFTER_FAILURES}, and applied once by the sweeper: one dead-letter copy, exact counts`, async () => {
    // prepare
    await clearParked();
    const q = 'park-ttl';
    const { gone, records, removal } = await expiredMessage(q);
    let failing = true;
    const flaky = createStreamHandler(poisoned(deadLetterPut, () => failing));

    // act: the first delivery, and Lambda's retries from the record the consumer names
    const answers = [await flaky(streamEvent(...records))];
    for (let i = 1; i < PARK_AFTER_FAILURES; i++) answers.push(await flaky(streamEvent(removal)));

    // assess: reported failed until the third failure, then parked and passed
    const seq = removal.dynamodb!.SequenceNumber!;
    expect(answers.map((a) => a.batchItemFailures)).toEqual([[{ itemIdentifier: seq }], [{ itemIdentifier: seq }], []]);
    expect(await countParkedRecords(deps)).toBe(1);
    const parked = (await getParkedRecord(deps, removal.eventID!))!;
    expect(parked).toMatchObject({ item: { pk: removal.dynamodb!.Keys!.pk!.S, sk: removal.dynamodb!.Keys!.sk!.S }, attempts: PARK_AFTER_FAILURES });
    expect(parked.lastError).toContain('ValidationException');
    expect((parked.record as { oldImage: MessageItem }).oldImage).toMatchObject({ messageId: gone.messageId }); // the whole message
    expect(await messageItems(deps, q, 'deadletter')).toEqual([]);

    // act: replays of the parked record while it still fails park nothing more
    expect((await flaky(streamEvent(...records))).batchItemFailures).toEqual([]);
    expect(await countParkedRecords(deps)).toBe(1);

    // act: the sweeper meets the same failure, and tries again later
    const failingSweep = createSweeperHandler(poisoned(deadLetterPut, () => failing));
    expect(await failingSweep()).toMatchObject({ unparked: 0, stillParked: 1 });
    const postponed = (await getParkedRecord(deps, removal.eventID!))!;
    expect(postponed.attempts).toBe(PARK_AFTER_FAILURES + 1);
    expect(postponed.dsk).toBeGreaterThan(clock.now());
    expect(await sweep()).toMatchObject({ unparked: 0, stillParked: 0 }); // not due yet

    // act: the cause is fixed; once due, the sweeper applies it
    failing = false;
    clock.advance(HOUR);
    expect(await sweep()).toMatchObject({ unparked: 1, stillParked: 0 });
    expect(await sweep()).toMatchObject({ unparked: 0, stillParked: 0 });

    // act: the stream brings the copy's insert, and Lambda replays the removal once more
    expect((await consume(streamEvent(...(await deadLetterInserts(q)), removal))).batchItemFailures).toEqual([]);

    // assess: exactly one copy, nothing parked, counts equal to what is stored
    const dead = await peek(dlq(q));
    expect(dead.map((m) => m.messageId)).toEqual([gone.messageId]);
    expect(dead[0]).toMatchObject({ deadLetterReason: 'TTLExpiredException', body: { gone: 'x'.repeat(4000) }, applicationProperties: { a: 1 } });
    expect(await countParkedRecords(deps)).toBe(0);
    expect(await runtime(q)).toEqual(await truth(q));
    expect(await runtime(q)).toMatchObject({ active: 1, deadLetter: 1, total: 2 });
  });

  it('T6/E6: a parked record the stream replays successfully before the sweeper runs is not applied twice', async () => {
    // prepare: parked after three failures
    await clearParked();
    const q = 'park-replayed';
    const { gone, records, removal } = await expiredMessage(q);
    let failing = true;
    const flaky = createStreamHandler(poisoned(deadLetterPut, () => failing));
    await flaky(streamEvent(...records));
    for (let i = 1; i < PARK_AFTER_FAILURES; i++) await flaky(streamEvent(removal));
    expect(await countParkedRecords(deps)).toBe(1);

    // act: the cause goes away; Lambda replays the record (an earlier one failed), then the sweeper runs
    failing = false;
    expect((await consume(streamEvent(removal))).batchItemFailures).toEqual([]);
    expect(await sweep()).toMatchObject({ unparked: 1 });
    expect((await consume(streamEvent(...(await deadLetterInserts(q))))).batchItemFailures).toEqual([]);

    // assess
    expect((await peek(dlq(q))).map((m) => m.messageId)).toEqual([gone.messageId]);
    expect(await runtime(q)).toEqual(await truth(q));
  });

  it('E4: a parked removal of a message whose entity was deleted meanwhile is dropped by the sweeper, with nothing written', async () => {
    await clearParked();
    const q = 'park-deleted';
    const { records, removal } = await expiredMessage(q);
    const flaky = createStreamHandler(poisoned(deadLetterPut, () => true));
    await flaky(streamEvent(...records));
    for (let i = 1; i < PARK_AFTER_FAILURES; i++) await flaky(streamEvent(removal));
    expect(await countParkedRecords(deps)).toBe(1);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    expect(await sweep()).toMatchObject({ unparked: 1 });
    expect(await countParkedRecords(deps)).toBe(0);
  });
});

describe('a count that keeps failing', () => {
  it(`E6: one message item's counts failing for another reason than load hold back only that item; parked on failure ${PARK_AFTER_FAILURES}, the sweeper counts them once`, async () => {
    // prepare: two messages; the count transaction of x's marker is refused as invalid
    await clearParked();
    const q = 'park-counts';
    await createQueue(q);
    const [x, y] = [await send(q, { body: 'x' }), await send(q, { body: 'y' })];
    const xItem = (await messageItem(deps, q, 'active', x.sequenceNumber))!;
    const yItem = (await messageItem(deps, q, 'active', y.sequenceNumber))!;
    const records = [insertRecord(xItem, { at: clock.now() }), insertRecord(yItem, { at: clock.now() })];
    let failing = true;
    const flaky = createStreamHandler(poisoned(countsOf(xItem), () => failing));

    // act
    const answers = [];
    for (let i = 0; i < PARK_AFTER_FAILURES; i++) answers.push((await flaky(streamEvent(...records))).batchItemFailures);

    // assess: x reported until parked; y counted at the first delivery, once
    const xSeq = records[0]!.dynamodb!.SequenceNumber!;
    expect(answers).toEqual([[{ itemIdentifier: xSeq }], [{ itemIdentifier: xSeq }], []]);
    expect(await failuresOf(records[0]!)).toBe(PARK_AFTER_FAILURES);
    expect(await failuresOf(records[1]!)).toBeUndefined();
    expect(await runtime(q)).toMatchObject({ active: 1, total: 1 });

    // act: the sweeper applies x's insert once the cause is gone
    failing = false;
    expect(await sweep()).toMatchObject({ unparked: 1 });
    expect((await consume(streamEvent(...records))).batchItemFailures).toEqual([]); // a replay adds nothing

    // assess
    expect(await runtime(q)).toEqual(await truth(q));
    expect(await runtime(q)).toMatchObject({ active: 2, total: 2 });
  });
});

describe('a parked insert whose removal comes first', () => {
  it(`E6: an insert parked on failure ${PARK_AFTER_FAILURES}, then its message's removal counted by the stream, then the insert applied by the sweeper: counts exact, and replays add nothing`, async () => {
    // prepare: one message whose count transactions are refused as invalid until parked
    await clearParked();
    const q = 'park-insert-then-remove';
    await createQueue(q);
    const x = await send(q, { body: 'x' });
    const xItem = (await messageItem(deps, q, 'active', x.sequenceNumber))!;
    const insert = insertRecord(xItem, { at: clock.now() });
    let failing = true;
    const flaky = createStreamHandler(poisoned(countsOf(xItem), () => failing));
    for (let i = 0; i < PARK_AFTER_FAILURES; i++) await flaky(streamEvent(insert));
    expect(await countParkedRecords(deps)).toBe(1);
    failing = false;
    // act: the message is received-and-deleted; its removal reaches the stream before the sweeper runs
    expect((await api('POST', `/queues/${q}/messages/receive`, { mode: 'receiveAndDelete' })).body.messages).toHaveLength(1);
    const remove = userRemoveRecord(xItem, { at: clock.now() });
    expect((await consume(streamEvent(remove))).batchItemFailures).toEqual([]);
    expect(await sweep()).toMatchObject({ unparked: 1 });
    const afterSweep = await runtime(q);
    expect((await consume(streamEvent(insert, remove))).batchItemFailures).toEqual([]);
    expect((await consume(streamEvent(insert))).batchItemFailures).toEqual([]);
    // assess
    expect(afterSweep).toEqual(await truth(q));
    expect(await runtime(q)).toEqual(await truth(q));
    expect(await runtime(q)).toMatchObject({ active: 0, total: 0, size: 0 });
  });
});

describe('a throttle episode longer than any retry budget', () => {
  it('T6/E6: throttling through 25 deliveries (the old budget was 10 retries) is never counted as a failure and never parks; the retry after it loses nothing', async () => {
    // prepare: every write throttled on every attempt, past the SDK's retries
    await clearParked();
    const q = 'park-throttled';
    const { gone, records, removal } = await expiredMessage(q);
    const plan = { throttle: { when: isWrite } };
    const throttled = faultyStore(deps.db, plan, { fastRetries: true });
    const busy = createStreamHandler({ ...deps, db: throttled.db });

    // act: Lambda retries from the record the consumer names, without limit
    let from = 0;
    for (let delivery = 0; delivery < 25; delivery++) {
      const failed = (await busy(streamEvent(...records.slice(from)))).batchItemFailures;
      expect(failed).toHaveLength(1);
      from = records.findIndex((r) => r.dynamodb!.SequenceNumber === failed[0]!.itemIdentifier);
      clock.advance(MINUTE);
    }
    expect(throttled.log.throttledOut).toBeGreaterThan(25);
    expect(await failuresOf(removal)).toBeUndefined();
    expect(await countParkedRecords(deps)).toBe(0);

    // act: the episode ends
    plan.throttle = undefined as never;
    expect((await busy(streamEvent(...records.slice(from)))).batchItemFailures).toEqual([]);
    expect((await consume(streamEvent(...(await deadLetterInserts(q))))).batchItemFailures).toEqual([]);

    // assess
    expect((await peek(dlq(q))).map((m) => m.messageId)).toEqual([gone.messageId]);
    expect(await runtime(q)).toEqual(await truth(q));
    expect(await runtime(q)).toMatchObject({ active: 1, deadLetter: 1, total: 2 });
  });
});

describe('a crash at each step of parking and of applying a parked record', () => {
  /** The removal of a fresh queue's expired message, delivered `failures` times while its dead-lettering fails. */
  async function failedRemoval(q: string, failures: number) {
    const setup = await expiredMessage(q);
    const flaky = createStreamHandler(poisoned(deadLetterPut, () => true));
    await flaky(streamEvent(...setup.records));
    for (let i = 1; i < failures; i++) await flaky(streamEvent(setup.removal));
    return setup;
  }

  it('T6/D3: the consumer dies after the park is written, before it answers: the retry parks nothing more and the sweeper applies it once', async () => {
    await clearParked();
    const q = 'park-crash-park';
    const { gone, removal } = await failedRemoval(q, PARK_AFTER_FAILURES - 1);
    // the third failure: the park is written, then the consumer dies
    const dying = createStreamHandler(
      faultyDeps(
        poisoned(deadLetterPut, () => true),
        { match: both(is(PutCommand), (c) => inputOf(c).Item?.pk === PARKED_PK), phase: 'after' },
      ),
    );
    expect((await dying(streamEvent(removal))).batchItemFailures).toEqual([{ itemIdentifier: removal.dynamodb!.SequenceNumber }]);
    expect(await countParkedRecords(deps)).toBe(1);
    // Lambda retries; the failure is still there; then the sweeper runs without it
    expect((await createStreamHandler(poisoned(deadLetterPut, () => true))(streamEvent(removal))).batchItemFailures).toEqual([]);
    expect(await countParkedRecords(deps)).toBe(1);
    expect(await sweep()).toMatchObject({ unparked: 1 });
    expect((await consume(streamEvent(...(await deadLetterInserts(q))))).batchItemFailures).toEqual([]);
    expect((await peek(dlq(q))).map((m) => m.messageId)).toEqual([gone.messageId]);
    expect(await runtime(q)).toEqual(await truth(q));
  });

  for (const [step, match] of [
    ['after the dead-letter copy is written', { match: deadLetterPut, phase: 'after' as const }],
    ['before the parked record is removed', { match: both(is(DeleteCommand), (c) => inputOf(c).Key?.pk === PARKED_PK), phase: 'before' as const }],
  ] as const) {
    it(`T6/D3: the sweeper dies ${step}: the next run applies nothing twice and removes it`, async () => {
      await clearParked();
      const q = `park-crash-${step.split(' ')[0]}-${step.split(' ').at(-1)}`;
      const { gone } = await failedRemoval(q, PARK_AFTER_FAILURES);
      const dyingSweep = createSweeperHandler(faultyDeps(deps, match));
      // A death inside the apply is an error the sweeper meets (the record waits for its next
      // try); one at the removal ends the run. Either way the record stays parked.
      await dyingSweep().catch((e: Error) => expect(e.message).toMatch(/injected crash/));
      expect(await countParkedRecords(deps)).toBe(1);
      clock.advance(HOUR);
      expect(await sweep()).toMatchObject({ unparked: 1 });
      expect(await countParkedRecords(deps)).toBe(0);
      expect((await consume(streamEvent(...(await deadLetterInserts(q))))).batchItemFailures).toEqual([]);
      expect((await peek(dlq(q))).map((m) => m.messageId)).toEqual([gone.messageId]);
      expect(await runtime(q)).toEqual(await truth(q));
    });
  }
});
