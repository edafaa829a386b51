/**
 * How a lapsed lock reminder reads its batch's messages (R6 for batches): by one consistent
 * Query of the range between the batch's lowest and highest sequence numbers, never reading
 * more items than the batch has messages, and by key for those past where it stopped. Only the
 * batch's own messages are brought back, whatever else sits in the range; a page refused for
 * throttling is asked again on the broker clock, and one refused throughout leaves the reminder
 * for the next receive (R10). Items stored in the layout before are read as theirs. Real
 * DynamoDB Local; throttles and call records through test/support/faults.ts.
 */
import { BatchGetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { messageOfStored } from '../../lib/store/message-layout.js';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { messageItem } from '../support/stream.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import type { Msg } from '../support/queue-helpers.js';
import { countsOf, idsOf, isRangeQuery, LOCK, reminderQueues, SECOND, type Api, type Deps } from '../support/reminder-queues.js';

const { clock, open, queueWith, receiveWith, got, settle, reminders, ids, recorded } = reminderQueues();
let deps: Deps;
let api: Api;

beforeAll(async () => ({ deps, api } = await open('reminder-reads', indexLayout)));

const settleAll = async (queue: string, ms: Msg[], action: string) => {
  for (const m of ms) expect((await settle(queue, m, action)).status, `${action} ${m.messageId as string}`).toBe(action === 'renew-lock' ? 200 : 204);
};
const named = (ms: Msg[], ...names: string[]) => names.map((n) => ms.find((m) => m.messageId === n)!);

/** Puts a message's item back as the layout before stored it (message-layout.ts): key attributes carried, the whole token. */
async function storedBefore(queue: string, m: Msg): Promise<void> {
  const before = messageOfStored((await messageItem(deps, queue, 'active', m.sequenceNumber as string))!);
  await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: before }));
  const raw = (await messageItem(deps, queue, 'active', m.sequenceNumber as string))!;
  expect(raw).toMatchObject({ seq: m.sequenceNumber, partition: 0 });
}

const isMessageBatchGet = both(is(BatchGetCommand), (c) => JSON.stringify(inputOf(c)).includes('"msg/'));

const sksOf = (batchGet: unknown): string[] =>
  (Object.values(inputOf(batchGet).RequestItems as Record<string, { Keys: { sk: string }[] }>)[0]!.Keys ?? []).map((k) => k.sk).sort();

describe('R6: a lapsed batch reads its messages by one Query of their range', () => {
  it("R6: a completed batch's lapse reads with one consistent Query, and nothing by key", async () => {
    const q = await queueWith('done-read', 10);
    const batch = await got(q, 10);
    expect(batch).toHaveLength(10);
    // One at a time: a batch complete of the whole batch deletes the reminder itself (lock-reminder-complete.test.ts).
    await settleAll(q, batch, 'complete');
    clock.advance(LOCK + 1);
    const { api: watched, calls } = recorded();
    expect(await receiveWith(watched, q)).toEqual([]);
    const queries = calls.filter(isRangeQuery);
    expect(queries).toHaveLength(1);
    expect(inputOf(queries[0])).toMatchObject({ ConsistentRead: true, Limit: 10 });
    const { ':lowest': lowest, ':highest': highest } = inputOf(queries[0]).ExpressionAttributeValues as Record<string, string>;
    expect([BigInt(lowest!), BigInt(highest!)]).toEqual([BigInt(batch[0]!.sequenceNumber as string), BigInt(batch[9]!.sequenceNumber as string)]);
    expect(calls.filter(is(BatchGetCommand))).toEqual([]);
    expect(await reminders(q)).toEqual([]);
  });

  it("R6: a range interleaved with another batch's live messages restores only this batch's (one stored before among them)", async () => {
    const q = await queueWith('interleaved', 10);
    const a = await got(q, 10);
    // Every other message back to the queue, and taken by a second batch 10 s later: the first
    // batch's range now holds the second's live messages, locked past the first's lock end.
    await settleAll(q, named(a, 'm-0', 'm-2', 'm-4', 'm-6', 'm-8'), 'abandon');
    clock.advance(10 * SECOND);
    const b = await got(q, 10);
    expect(idsOf(b)).toEqual(['m-0', 'm-2', 'm-4', 'm-6', 'm-8']);
    await storedBefore(q, named(a, 'm-3')[0]!);
    clock.advance(LOCK - 10 * SECOND + 1);
    const { api: watched, calls } = recorded();
    const back = await receiveWith(watched, q);
    expect(idsOf(back)).toEqual(['m-1', 'm-3', 'm-5', 'm-7', 'm-9']);
    expect(countsOf(back)).toEqual([2, 2, 2, 2, 2]);
    // One Query of ten items read the first batch; nothing by key.
    expect(calls.filter(isRangeQuery).map((c) => inputOf(c).Limit)).toEqual([10]);
    expect(calls.filter(isMessageBatchGet)).toEqual([]);
    // The second batch's locks are untouched: its tokens still settle.
    await settleAll(q, b, 'complete');
    await settleAll(q, back, 'complete');
    expect(await ids(q)).toEqual([]);
  });

  it('R6: a range holding many more items than the batch reads what its Query did not reach by key (one stored before)', async () => {
    const q = await queueWith('wide', 13);
    const a = await got(q, 13);
    // Ten deferred in the range of a batch of three that take the ends and the middle.
    await settleAll(
      q,
      a.filter((m) => !['m-0', 'm-6', 'm-12'].includes(m.messageId as string)),
      'defer',
    );
    await settleAll(q, named(a, 'm-0', 'm-6', 'm-12'), 'abandon');
    clock.advance(10 * SECOND);
    const b = await got(q, 10);
    expect(idsOf(b)).toEqual(['m-0', 'm-6', 'm-12']);
    await storedBefore(q, named(b, 'm-12')[0]!);
    clock.advance(LOCK + 1);
    const { api: watched, calls } = recorded();
    const back = await receiveWith(watched, q);
    expect(idsOf(back)).toEqual(['m-0', 'm-6', 'm-12']);
    expect(countsOf(back)).toEqual([3, 3, 3]);
    // The first batch's Query read its range whole (13 items); the second's stopped after 3
    // (m-0, m-1, m-2) and read the two past that by key.
    expect(calls.filter(isRangeQuery).map((c) => inputOf(c).Limit)).toEqual([13, 3]);
    const byKey = calls.filter(isMessageBatchGet);
    expect(byKey).toHaveLength(1);
    expect(inputOf(byKey[0])).toMatchObject({ RequestItems: { [deps.tableName]: { ConsistentRead: true } } });
    expect(sksOf(byKey[0])).toEqual(named(b, 'm-6', 'm-12').map((m) => (m.sequenceNumber as string).padStart(19, '0')));
    expect(await reminders(q)).toHaveLength(1); // the batch just taken
    // The deferred ones stayed deferred.
    const deferredSeqs = a.filter((m) => !['m-0', 'm-6', 'm-12'].includes(m.messageId as string)).map((m) => m.sequenceNumber);
    const deferred = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: deferredSeqs });
    expect(deferred.status).toBe(200);
    expect(idsOf(deferred.body.messages as Msg[]).sort()).toEqual(
      a
        .map((m) => m.messageId as string)
        .filter((id) => !['m-0', 'm-6', 'm-12'].includes(id))
        .sort(),
    );
    await settleAll(q, [...back, ...(deferred.body.messages as Msg[])], 'complete');
    expect(await ids(q)).toEqual([]);
  });
});

describe('R6/R10: a page of the range refused for throttling', () => {
  const throttle = async () => {
    const e = new Error('Rate of requests exceeds the allowed throughput.');
    e.name = 'ProvisionedThroughputExceededException';
    throw e;
  };
  const all = Array.from({ length: 10 }, (_, i) => `m-${i}`);
  /** The Query's pages after the first. */
  const isLaterPage = both(isRangeQuery, (c) => inputOf(c).ExclusiveStartKey !== undefined);
  /**
   * Through `fault` on a client whose range Query's first page stops after 4 items, as
   * DynamoDB stops a page at 1 MB read (DynamoDB Local does too, but a batch of large messages
   * is cut to what its answer holds, about 1 MB of items, so the cut falls on its last item).
   */
  const cutAfterFour = (fault: Parameters<typeof faultyDeps>[1]) => {
    const cut = faultyDeps(deps, {
      match: both(isRangeQuery, (c) => inputOf(c).ExclusiveStartKey === undefined),
      interleave: async (command) => {
        (command as QueryCommand).input.Limit = 4;
      },
    });
    return faultyDeps(cut, fault);
  };
  /** Ten messages taken in one batch, lapsed. */
  const lapsedBatch = async (name: string): Promise<string> => {
    const q = await queueWith(name, 10);
    expect(idsOf(await got(q, 10))).toEqual(all);
    clock.advance(LOCK + 1);
    return q;
  };

  it('R6/R10: a second page refused once is asked again after the backoff on the broker clock, and the batch comes back whole', async () => {
    const q = await lapsedBatch('second-page');
    const faulty = cutAfterFour({ match: isLaterPage, interleave: throttle });
    const before = clock.now();
    const back = await receiveWith(apiClient(faulty), q);
    expect(faulty.faults.tripped).toBe(1);
    // The wait before asking again (50-100 ms) passed on the broker clock.
    expect(clock.now() - before).toBeGreaterThanOrEqual(50);
    expect(idsOf(back)).toEqual(all);
    expect(countsOf(back)).toEqual(all.map(() => 2));
    expect(await reminders(q)).toHaveLength(1); // the batch just taken
    await settleAll(q, back, 'complete');
    expect(await ids(q)).toEqual([]);
  });

  it('R6/R10: a second page refused throughout brings back what the first page read; the reminder stays, and the next receive brings the rest', async () => {
    const q = await lapsedBatch('second-page-refused');
    const faulty = cutAfterFour({ match: isLaterPage, times: Infinity, interleave: throttle });
    const first = await receiveWith(apiClient(faulty), q);
    // Every attempt refused, each after its wait on the broker clock.
    expect(faulty.faults.tripped).toBe(4);
    expect(idsOf(first)).toEqual(all.slice(0, 4));
    expect(countsOf(first)).toEqual([2, 2, 2, 2]);
    // The lapsed reminder stays (its later keys unread) beside the one of the batch just taken.
    expect(await reminders(q)).toHaveLength(2);
    const rest = await got(q);
    expect(idsOf(rest)).toEqual(all.slice(4));
    expect(countsOf(rest)).toEqual(rest.map(() => 2));
    await settleAll(q, [...first, ...rest], 'complete');
    expect(await ids(q)).toEqual([]);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
  });
});
