/**
 * The stream consumer's handling of DynamoDB TTL removals (T6, T7 backstop, T5, T8, D3),
 * with Lambda DynamoDBStreamEvent records built by hand in both shapes: AWS (REMOVE by the
 * DynamoDB service principal) and DynamoDB Local (UNKNOWN_TO_SDK_VERSION, OldImage only).
 *
 * To simulate DynamoDB's TTL, a test deletes the stored item itself and then hands the
 * consumer the removal record carrying the item as it was.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { isTtlRemoval } from '../../lib/broker/stream.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { readySortKey, type Key } from '../../lib/store/keys.js';
import { messageOfStored, type StoredMessageItem } from '../../lib/store/message-layout.js';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';
import { messageItem, messageItems, streamEvent, ttlRemovalRecord, ttlShapes, userRemoveRecord, type TtlShape } from '../support/stream.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
/** Creates queues in today's layout: the tests that remove and replay its `msg/` items by hand. */
let indexApi: ReturnType<typeof apiClient>;
let consume: ReturnType<typeof createStreamHandler>;

beforeAll(async () => {
  deps = await testDeps(clock, 'stream-ttl');
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
  consume = createStreamHandler(deps);
});

const { createQueue, send, receive, peek, dlq } = queueHelpers(() => api);
const { createQueue: createIndexQueue } = queueHelpers(() => indexApi);

/** Deletes the stored item, as DynamoDB's TTL (or the broker) would. */
async function removeStored(item: Key) {
  await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: item.pk, sk: item.sk } }));
}

/** A message of a queue with a 1-minute TTL, past its expiry, removed from the table by "TTL". */
async function ttlRemoved(queue: string, deadLettering: boolean): Promise<{ sent: Msg; item: StoredMessageItem }> {
  await createIndexQueue(queue, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: deadLettering });
  const sent = await send(queue, { body: { q: queue }, applicationProperties: { a: 1 } });
  const item = (await messageItem(deps, queue, 'active', sent.sequenceNumber))!;
  expect(item.ttl).toBeDefined();
  clock.advance(2 * MINUTE);
  await removeStored(item);
  return { sent, item };
}

describe('recognizing TTL removals', () => {
  const item = { pk: 'msg/e/a/0', sk: '0000000000000000001', eid: 'e', entity: 'queues/x' } as unknown as MessageItem;

  it('T7: AWS shape (REMOVE by the dynamodb.amazonaws.com service principal) is a TTL removal', () => {
    expect(isTtlRemoval(ttlRemovalRecord(item, 'aws', { at: clock.now() }))).toBe(true);
  });

  it('T7: DynamoDB Local shape (UNKNOWN_TO_SDK_VERSION, OldImage only, no userIdentity) is a TTL removal', () => {
    expect(isTtlRemoval(ttlRemovalRecord(item, 'local', { at: clock.now() }))).toBe(true);
  });

  it('T7: a user REMOVE (no service principal) is not a TTL removal', () => {
    expect(isTtlRemoval(userRemoveRecord(item, { at: clock.now() }))).toBe(false);
    const other = { ...userRemoveRecord(item, { at: clock.now() }), userIdentity: { type: 'Service', principalId: 'lambda.amazonaws.com' } };
    expect(isTtlRemoval(other)).toBe(false);
  });
});

describe.each(ttlShapes.map((shape) => [shape]))('TTL removal records, %s shape', (shape: TtlShape) => {
  it(`T6/T7/D3 (${shape}): a TTL removal of an expired message of a dead-lettering queue puts exactly one copy in the DLQ, also when the record is delivered twice`, async () => {
    // prepare
    const q = `st-dl-${shape}`;
    const { sent, item } = await ttlRemoved(q, true);
    const record = ttlRemovalRecord(item, shape, { at: clock.now() });
    // act
    const first = await consume(streamEvent(record));
    const second = await consume(streamEvent(record));
    // assess
    expect(first.batchItemFailures).toEqual([]);
    expect(second.batchItemFailures).toEqual([]);
    const dead = await peek(dlq(q));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      messageId: sent.messageId,
      body: { q },
      applicationProperties: { a: 1 },
      deadLetterReason: 'TTLExpiredException',
      deadLetterSource: `queues/${q}`,
      enqueuedSequenceNumber: sent.sequenceNumber,
      expiresAt: null,
    });
    const stored = await messageItems(deps, q, 'deadletter');
    expect(stored).toHaveLength(1);
    expect(stored[0]!.ttl).toBeUndefined(); // T9
    expect(stored[0]!.dpk).toBeUndefined();
    expect(await peek(`/queues/${q}`)).toEqual([]);
  });

  it(`D3 (${shape}): the same TTL removal in one batch twice still gives one copy`, async () => {
    const q = `st-dup-${shape}`;
    const { item } = await ttlRemoved(q, true);
    const record = ttlRemovalRecord(item, shape, { at: clock.now() });
    const out = await consume(streamEvent(record, record));
    expect(out.batchItemFailures).toEqual([]);
    expect(await messageItems(deps, q, 'deadletter')).toHaveLength(1);
  });

  it(`T6 (${shape}): without deadLetteringOnMessageExpiration a TTL removal adds nothing anywhere`, async () => {
    // prepare
    const q = `st-nodl-${shape}`;
    const { item } = await ttlRemoved(q, false);
    // act
    const out = await consume(streamEvent(ttlRemovalRecord(item, shape, { at: clock.now() })));
    // assess
    expect(out.batchItemFailures).toEqual([]);
    expect(await messageItems(deps, q, 'deadletter')).toEqual([]);
    expect(await messageItems(deps, q, 'active')).toEqual([]);
  });

  it(`T5 (${shape}): a TTL removal of a locked message puts it back, and its holder can still complete it`, async () => {
    // prepare
    const q = `st-locked-${shape}`;
    await createIndexQueue(q, { defaultMessageTimeToLive: 'PT1M', lockDuration: 'PT5M', deadLetteringOnMessageExpiration: true });
    const sent = await send(q, { body: 'held' });
    const [locked] = await receive(`/queues/${q}`);
    clock.advance(2 * MINUTE); // past expiresAt, lock still held
    const item = (await messageItem(deps, q, 'active', sent.sequenceNumber))!;
    await removeStored(item);
    // act
    const out = await consume(streamEvent(ttlRemovalRecord(item, shape, { at: clock.now() })));
    // assess
    expect(out.batchItemFailures).toEqual([]);
    const restored = await messageItem(deps, q, 'active', sent.sequenceNumber);
    expect(messageOfStored(restored!)).toMatchObject({ messageId: sent.messageId, lockToken: locked.lockToken, state: 'Active' });
    expect(restored!.ttl).toBeUndefined();
    expect(await messageItems(deps, q, 'deadletter')).toEqual([]);
    const done = await api('POST', `/queues/${q}/messages/${sent.sequenceNumber}/complete`, { lockToken: locked.lockToken });
    expect(done.status).toBe(204);
    expect(await messageItems(deps, q, 'active')).toEqual([]);
  });

  it(`T8 (${shape}): a TTL removal of a deferred message puts it back, still retrievable by sequence number`, async () => {
    // prepare
    const q = `st-deferred-${shape}`;
    await createQueue(q, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const sent = await send(q, { body: 'later' });
    const [locked] = await receive(`/queues/${q}`);
    expect((await api('POST', `/queues/${q}/messages/${sent.sequenceNumber}/defer`, { lockToken: locked.lockToken })).status).toBe(204);
    clock.advance(10 * MINUTE);
    const item = (await messageItem(deps, q, 'active', sent.sequenceNumber))!;
    await removeStored(item);
    // act
    const out = await consume(streamEvent(ttlRemovalRecord(item, shape, { at: clock.now() })));
    // assess
    expect(out.batchItemFailures).toEqual([]);
    expect(await messageItems(deps, q, 'deadletter')).toEqual([]);
    const restored = await messageItem(deps, q, 'active', sent.sequenceNumber);
    expect(restored).toMatchObject({ state: 'Deferred', messageId: sent.messageId });
    expect(restored!.ttl).toBeUndefined();
    const got = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [sent.sequenceNumber] });
    expect(got.status).toBe(200);
    expect(got.body.messages.map((m: Msg) => m.messageId)).toEqual([sent.messageId]);
  });

  it(`T9/D6 (${shape}): a TTL removal of a dead-lettered message puts it back`, async () => {
    const q = `st-dlq-${shape}`;
    await createQueue(q);
    await send(q, { body: 'dead' });
    const [locked] = await receive(`/queues/${q}`);
    expect((await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/deadletter`, { lockToken: locked.lockToken })).status).toBe(204);
    const [item] = await messageItems(deps, q, 'deadletter');
    await removeStored(item!);
    const out = await consume(streamEvent(ttlRemovalRecord(item!, shape, { at: clock.now() })));
    expect(out.batchItemFailures).toEqual([]);
    const back = await messageItems(deps, q, 'deadletter');
    expect(back.map((i) => i.messageId)).toEqual([item!.messageId]);
    expect(back[0]!.sk).toBe(item!.sk);
  });
});

describe('user removals are not TTL removals', () => {
  it('T6/T7: a user REMOVE (receive-and-delete of a message with a TTL) of a dead-lettering queue adds nothing to the DLQ', async () => {
    // prepare
    const q = 'st-user-remove';
    await createIndexQueue(q, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const sent = await send(q, { body: 'taken' });
    const item = (await messageItem(deps, q, 'active', sent.sequenceNumber))!;
    const got = await receive(`/queues/${q}`, { mode: 'receiveAndDelete' });
    expect(got).toHaveLength(1);
    clock.advance(2 * MINUTE); // the record arrives after the nominal expiry
    // act
    const out = await consume(streamEvent(userRemoveRecord(item, { at: clock.now() })));
    // assess
    expect(out.batchItemFailures).toEqual([]);
    expect(await messageItems(deps, q, 'deadletter')).toEqual([]);
    expect(await messageItems(deps, q, 'active')).toEqual([]);
  });
});

describe('TTL removals and forwardDeadLetteredMessagesTo', () => {
  it('T6/T7/F3: an expired message removed by TTL goes where forwardDeadLetteredMessagesTo points, as it does when a receive expires it', async () => {
    // prepare
    const q = 'st-f3';
    await createQueue('st-f3-target');
    await createIndexQueue(q, {
      defaultMessageTimeToLive: 'PT1M',
      deadLetteringOnMessageExpiration: true,
      forwardDeadLetteredMessagesTo: 'queues/st-f3-target',
    });
    const byReceive = await send(q, { body: 'expired, found by a receive' });
    const byTtl = await send(q, { body: 'expired, removed by TTL' });
    const item = (await messageItem(deps, q, 'active', byTtl.sequenceNumber))!;
    clock.advance(2 * MINUTE);
    await removeStored(item);
    // act
    expect(await receive(`/queues/${q}`)).toEqual([]); // expires `byReceive` on the spot
    const out = await consume(streamEvent(ttlRemovalRecord(item, 'aws', { at: clock.now() })));
    // assess
    expect(out.batchItemFailures).toEqual([]);
    const arrived = (await peek('/queues/st-f3-target')).map((m) => m.messageId);
    expect(arrived).toContain(byReceive.messageId); // the receive path forwards (control)
    expect((await messageItems(deps, q, 'deadletter')).map((m) => m.messageId)).toEqual([]);
    expect(arrived).toContain(byTtl.messageId);
  });

  it('T6/T7/F3/R2: a copy the TTL backstop forwards into a partitioned queue is received there (its partition is marked ready first)', async () => {
    // prepare: the target has never been sent to, so none of its partitions is marked
    const q = 'st-f3-parted';
    expect((await api('PUT', '/queues/st-f3-parted-target', { enablePartitioning: true })).status).toBe(201);
    await createIndexQueue(q, {
      defaultMessageTimeToLive: 'PT1M',
      deadLetteringOnMessageExpiration: true,
      forwardDeadLetteredMessagesTo: 'queues/st-f3-parted-target',
    });
    const byTtl = await send(q, { body: 'expired, removed by TTL' });
    const item = (await messageItem(deps, q, 'active', byTtl.sequenceNumber))!;
    clock.advance(2 * MINUTE);
    await removeStored(item);
    // act
    const out = await consume(streamEvent(ttlRemovalRecord(item, 'aws', { at: clock.now() })));
    // assess: a receive reads only marked partitions
    expect(out.batchItemFailures).toEqual([]);
    expect((await receive('/queues/st-f3-parted-target', { mode: 'receiveAndDelete' })).map((m) => m.messageId)).toEqual([byTtl.messageId]);
  });
});

describe('replays of TTL removals (Lambda delivers stream records at least once)', () => {
  it('D3: a TTL removal replayed after its dead-letter copy was consumed does not bring the copy back', async () => {
    // prepare: the removal is handled once, and the copy is received-and-deleted from the DLQ
    const q = 'st-replay-consumed';
    const { sent, item } = await ttlRemoved(q, true);
    const record = ttlRemovalRecord(item, 'aws', { at: clock.now() });
    expect((await consume(streamEvent(record))).batchItemFailures).toEqual([]);
    const taken = await receive(dlq(q), { mode: 'receiveAndDelete' });
    expect(taken.map((m) => m.messageId)).toEqual([sent.messageId]);
    // act: Lambda retries the batch (e.g. after a later record of it failed)
    await consume(streamEvent(record));
    // assess: the message was handed out once; it must not be there to be handed out again
    expect(await messageItems(deps, q, 'deadletter')).toEqual([]);
    expect(await messageItems(deps, q, 'active')).toEqual([]);
  });
});

/** Deps whose first transaction is refused as if its second part's sequence number were taken. */
function collidingOnce(real: typeof deps) {
  let collided = 0;
  const db = {
    send: (command: unknown) => {
      if (command instanceof TransactWriteCommand && collided === 0) {
        collided++;
        return Promise.reject(
          new TransactionCanceledException({
            $metadata: { httpStatusCode: 400 },
            message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]',
            CancellationReasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed' }],
          }),
        );
      }
      return real.db.send(command as never);
    },
  } as unknown as typeof real.db;
  return { ...real, db, collided: () => collided };
}

describe('a sequence collision while dead-lettering a TTL removal', () => {
  it('S2/D4: the renumbered copy keeps its place in the dead-letter order (the time it was dead-lettered, not its enqueue time)', async () => {
    // prepare: b is dead-lettered first; a, sent earlier, after it, and its first put collides
    const q = 'st-collide';
    await createIndexQueue(q, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const a = await send(q, { body: 'a' });
    clock.advance(10 * SECOND);
    const b = await send(q, { body: 'b' });
    clock.advance(2 * MINUTE);
    const itemA = (await messageItem(deps, q, 'active', a.sequenceNumber))!;
    const itemB = (await messageItem(deps, q, 'active', b.sequenceNumber))!;
    await removeStored(itemB);
    expect((await consume(streamEvent(ttlRemovalRecord(itemB, 'aws', { at: clock.now() })))).batchItemFailures).toEqual([]);
    clock.advance(SECOND);
    await removeStored(itemA);
    const colliding = collidingOnce(deps);
    // act
    const out = await createStreamHandler(colliding)(streamEvent(ttlRemovalRecord(itemA, 'aws', { at: clock.now() })));
    // assess: received in the order they were dead-lettered, which is also their order by number
    expect(out.batchItemFailures).toEqual([]);
    expect(colliding.collided()).toBe(1);
    expect((await peek(dlq(q))).map((m) => m.messageId)).toEqual([b.messageId, a.messageId]);
    const received = await api('POST', `${dlq(q)}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(received.status).toBe(200);
    expect((received.body.messages as Msg[]).map((m) => m.messageId)).toEqual([b.messageId, a.messageId]);
  });

  it('S2/D4: a renumbered dead-letter copy stays in the ready index where it arrived, not at its enqueue time', async () => {
    // The receive above sorts each page by number, which hides a copy filed at its enqueue
    // time; the index entry itself shows where the copy is.
    const q = 'st-collide-index';
    await createIndexQueue(q, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const a = await send(q, { body: 'a' });
    clock.advance(2 * MINUTE);
    const itemA = (await messageItem(deps, q, 'active', a.sequenceNumber))!;
    await removeStored(itemA);
    const out = await createStreamHandler(collidingOnce(deps))(streamEvent(ttlRemovalRecord(itemA, 'aws', { at: clock.now() })));
    expect(out.batchItemFailures).toEqual([]);
    const [copy] = await messageItems(deps, q, 'deadletter');
    expect(copy!.rsk).toBe(readySortKey(clock.now(), copy!.sk));
  });
});
