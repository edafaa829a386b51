/**
 * E6 runtime counts kept by the stream consumer: fed hand-made INSERT/MODIFY/REMOVE records,
 * and the real stream of a DynamoDB Local table. Counts must match what is stored, and a
 * replayed batch (Lambda delivers at least once) must not move them: they never drift.
 */
import { PutCommand, DeleteCommand, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { countedMarkerKey, parseMessagePk } from '../../lib/store/keys.js';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { faultyStore } from '../support/dynamo-faults.js';
import {
  deliver,
  insertRecord,
  messageItem,
  messageItems,
  modifyRecord,
  streamEvent,
  TableStreamReader,
  ttlRemovalRecord,
  userRemoveRecord,
} from '../support/stream.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

type Deps = Awaited<ReturnType<typeof testDeps>>;

/** A message item put into a dead-letter subqueue: its key says so (a stored item does not repeat it). */
const inDeadLetter = (item: { pk?: unknown } | undefined) => parseMessagePk(String(item?.pk ?? ''))?.subqueue === 'deadletter';

function helpers(api: ReturnType<typeof apiClient>) {
  const { createQueue, send, receive } = queueHelpers(() => api);
  return {
    createQueue,
    send,
    receive,
    async settle(queue: string, m: Msg, action: string, extra: Record<string, unknown> = {}) {
      const res = await api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/${action}`, { lockToken: m.lockToken, ...extra });
      expect(res.status).toBe(204);
    },
    async runtime(queue: string): Promise<Record<string, unknown>> {
      const res = await api('GET', `/queues/${queue}`);
      expect(res.status).toBe(200);
      const r = res.body.runtime;
      return {
        activeMessageCount: r.activeMessageCount,
        scheduledMessageCount: r.scheduledMessageCount,
        deferredMessageCount: r.deferredMessageCount,
        deadLetterMessageCount: r.deadLetterMessageCount,
        transferDeadLetterMessageCount: r.transferDeadLetterMessageCount,
        totalMessageCount: r.totalMessageCount,
        sizeInBytes: r.sizeInBytes,
      };
    },
  };
}

/** The counts E6 should show, computed from what is actually stored. */
async function truth(deps: Deps, queue: string): Promise<Record<string, unknown>> {
  const active = await messageItems(deps, queue, 'active');
  const dead = await messageItems(deps, queue, 'deadletter');
  const transfer = await messageItems(deps, queue, 'transfer');
  const all = [...active, ...dead, ...transfer];
  return {
    activeMessageCount: active.filter((m) => m.state === 'Active').length,
    scheduledMessageCount: active.filter((m) => m.state === 'Scheduled').length,
    deferredMessageCount: active.filter((m) => m.state === 'Deferred').length,
    deadLetterMessageCount: dead.length,
    transferDeadLetterMessageCount: transfer.length,
    totalMessageCount: all.length,
    sizeInBytes: all.reduce((s, m) => s + m.size, 0),
  };
}

describe('E6: counts from hand-made stream records', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  let deps: Deps;
  let api: ReturnType<typeof apiClient>;
  let h: ReturnType<typeof helpers>;
  let consume: ReturnType<typeof createStreamHandler>;

  beforeAll(async () => {
    // Today's layout: the records are made from its msg/ items, and the truth counts them.
    deps = { ...(await testDeps(clock, 'stream-counts-hand')), ...indexLayout };
    api = apiClient(deps);
    h = helpers(api);
    consume = createStreamHandler(deps);
  });

  const get = async (q: string, seq: string, sub: 'active' | 'deadletter' = 'active') => (await messageItem(deps, q, sub, seq))!;

  it('E6: INSERT/MODIFY/REMOVE records move messages between active, scheduled, deferred and dead-letter; a replayed batch changes nothing', async () => {
    // prepare: real broker operations, each stored state captured as the stream would carry it
    const q = 'e6-hand';
    const at = () => ({ at: clock.now() });
    await h.createQueue(q);
    const m1 = await h.send(q, { body: 'one' });
    const m2 = await h.send(q, { body: 'two, later', scheduledEnqueueTime: new Date(clock.now() + 10 * MINUTE).toISOString() });
    const m3 = await h.send(q, { body: { three: [3, 3, 3] } });
    const [s1, s2, s3] = [await get(q, m1.sequenceNumber), await get(q, m2.sequenceNumber), await get(q, m3.sequenceNumber)];
    const locked = await h.receive(`/queues/${q}`, { maxMessages: 2 });
    expect(locked.map((m) => m.messageId)).toEqual([m1.messageId, m3.messageId]);
    const [l1, l3] = [await get(q, m1.sequenceNumber), await get(q, m3.sequenceNumber)];
    await h.settle(q, locked[1], 'defer');
    const d3 = await get(q, m3.sequenceNumber);
    await h.settle(q, locked[0], 'deadletter', { deadLetterReason: 'bad' });
    const [x1] = await messageItems(deps, q, 'deadletter');
    const batch: DynamoDBRecord[] = [
      insertRecord(s1!, at()),
      insertRecord(s2!, at()),
      insertRecord(s3!, at()),
      modifyRecord(s1!, l1!, at()),
      modifyRecord(s3!, l3!, at()),
      modifyRecord(l3!, d3!, at()),
      userRemoveRecord(l1!, at()),
      insertRecord(x1!, at()),
    ];
    const expected = {
      activeMessageCount: 0,
      scheduledMessageCount: 1,
      deferredMessageCount: 1,
      deadLetterMessageCount: 1,
      transferDeadLetterMessageCount: 0,
      totalMessageCount: 3,
      sizeInBytes: s2!.size + d3!.size + x1!.size,
    };
    // act
    const first = await consume(streamEvent(...batch));
    const afterFirst = await h.runtime(q);
    const replay = await consume(streamEvent(...batch));
    for (const r of batch) await consume(streamEvent(r)); // replayed again, one record at a time
    const afterReplays = await h.runtime(q);
    // assess
    expect(first.batchItemFailures).toEqual([]);
    expect(replay.batchItemFailures).toEqual([]);
    expect(afterFirst).toEqual(expected);
    expect(afterReplays).toEqual(expected);
    expect(afterFirst).toEqual(await truth(deps, q));

    // act: an overlapping batch, half old records and one new one (the scheduled message is cancelled)
    expect((await api('DELETE', `/queues/${q}/messages/scheduled/${m2.sequenceNumber}`)).status).toBe(204);
    const overlap = [...batch.slice(5), userRemoveRecord(s2!, at())];
    expect((await consume(streamEvent(...overlap))).batchItemFailures).toEqual([]);
    // assess
    const afterOverlap = await h.runtime(q);
    expect(afterOverlap).toEqual({ ...expected, scheduledMessageCount: 0, totalMessageCount: 2, sizeInBytes: d3!.size + x1!.size });
    expect(afterOverlap).toEqual(await truth(deps, q));
  });

  it('E6/T7: a TTL removal and its dead-letter copy move one message from active to dead-letter; replaying both changes nothing', async () => {
    // prepare
    const q = 'e6-ttl';
    await h.createQueue(q, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const sent = await h.send(q, { body: 'short' });
    const item = await get(q, sent.sequenceNumber);
    const inserted = insertRecord(item, { at: clock.now() });
    expect((await consume(streamEvent(inserted))).batchItemFailures).toEqual([]);
    expect((await h.runtime(q)).activeMessageCount).toBe(1);
    clock.advance(2 * MINUTE);
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: item.pk, sk: item.sk } }));
    const removal = ttlRemovalRecord(item, 'local', { at: clock.now() });
    // act
    expect((await consume(streamEvent(removal))).batchItemFailures).toEqual([]);
    const [copy] = await messageItems(deps, q, 'deadletter');
    const copied = insertRecord(copy!, { at: clock.now() });
    expect((await consume(streamEvent(copied))).batchItemFailures).toEqual([]);
    await consume(streamEvent(inserted, removal, copied));
    // assess
    expect(await h.runtime(q)).toEqual({
      activeMessageCount: 0,
      scheduledMessageCount: 0,
      deferredMessageCount: 0,
      deadLetterMessageCount: 1,
      transferDeadLetterMessageCount: 0,
      totalMessageCount: 1,
      sizeInBytes: copy!.size,
    });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
  });

  it('E6: a message life within one batch leaves one marker holding both records, written alone (no count moves); either record replayed alone, or twice in a batch, changes nothing', async () => {
    // prepare: a message sent and received-and-deleted; its insert and removal as the stream carries them
    const q = 'e6-one-marker';
    await h.createQueue(q);
    const sent = await h.send(q, { body: 'short life' });
    const stored = await get(q, sent.sequenceNumber);
    expect((await h.receive(`/queues/${q}`, { mode: 'receiveAndDelete' })).map((m) => m.messageId)).toEqual([sent.messageId]);
    const insert = insertRecord(stored, { at: clock.now() });
    const remove = userRemoveRecord(stored, { at: clock.now() });
    const writes: string[] = [];
    const metered = createStreamHandler({
      ...deps,
      db: {
        send: (command: { constructor: { name: string }; input: { Key?: { pk?: string }; TransactItems?: { Update?: { Key?: { pk?: string } } }[] } }) => {
          if (command.input.Key?.pk && command.constructor.name === 'UpdateCommand') writes.push(`alone ${command.input.Key.pk}`);
          for (const part of command.input.TransactItems ?? []) if (part.Update?.Key?.pk) writes.push(part.Update.Key.pk);
          return deps.db.send(command as never);
        },
      } as unknown as Deps['db'],
    });
    // act: the life in one batch, then each record alone, then the insert twice in one batch
    expect((await metered(streamEvent(insert, remove))).batchItemFailures).toEqual([]);
    const firstWrites = [...writes];
    const afterLife = await h.runtime(q);
    expect((await consume(streamEvent(remove))).batchItemFailures).toEqual([]);
    expect((await consume(streamEvent(insert))).batchItemFailures).toEqual([]);
    expect((await consume(streamEvent(insert, insert, remove))).batchItemFailures).toEqual([]);
    // assess: one marker, written outside any transaction, and no count update for the life; nothing counted twice
    expect(firstWrites).toEqual([`alone counted/${stored.pk}/${stored.sk}`]);
    expect(afterLife).toMatchObject({ activeMessageCount: 0, totalMessageCount: 0, sizeInBytes: 0 });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
    expect(await h.runtime(q)).toMatchObject({ activeMessageCount: 0, totalMessageCount: 0, sizeInBytes: 0 });
  });

  it('E6/R10: a throttled marker of a life that cancels out fails the batch from its first record; the retry counts it once', async () => {
    // prepare: one life that cancels out and one message that stays, in one batch
    const q = 'e6-alone-throttled';
    await h.createQueue(q);
    const short = await h.send(q, { body: 'short' });
    const stays = await h.send(q, { body: 'stays' });
    const [s0, k0] = [await get(q, short.sequenceNumber), await get(q, stays.sequenceNumber)];
    expect((await h.receive(`/queues/${q}`, { mode: 'receiveAndDelete' })).map((m) => m.messageId)).toEqual([short.messageId]);
    const batch = [insertRecord(s0, { at: clock.now() }), insertRecord(k0, { at: clock.now() }), userRemoveRecord(s0, { at: clock.now() })];
    const throttled = faultyStore(
      deps.db,
      {
        throttle: { when: (c) => c.operation === 'UpdateItem' && String(c.input.Key?.pk?.S ?? c.input.Key?.pk).startsWith('counted/') },
      },
      { fastRetries: true },
    );
    // act
    const first = await createStreamHandler({ ...deps, db: throttled.db })(streamEvent(...batch));
    const afterFirst = await h.runtime(q);
    const retry = await consume(streamEvent(...batch));
    // assess: the batch failed from its first record; the message that stays was counted once, the life never
    expect(throttled.log.throttledOut).toBeGreaterThan(0);
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: batch[0]!.dynamodb!.SequenceNumber }]);
    expect(afterFirst).toMatchObject({ activeMessageCount: 1, totalMessageCount: 1 });
    expect(retry.batchItemFailures).toEqual([]);
    expect(await h.runtime(q)).toMatchObject({ activeMessageCount: 1, totalMessageCount: 1 });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
  });

  it('E6: a batch whose removal is new but whose insert was counted before counts only the removal', async () => {
    // prepare: the insert counted alone (its batch ended there), then a batch that replays it with the removal
    const q = 'e6-half-known';
    await h.createQueue(q);
    const sent = await h.send(q, { body: 'counted in two batches' });
    const stored = await get(q, sent.sequenceNumber);
    const insert = insertRecord(stored, { at: clock.now() });
    expect((await consume(streamEvent(insert))).batchItemFailures).toEqual([]);
    const whileStored = await h.runtime(q);
    expect((await h.receive(`/queues/${q}`, { mode: 'receiveAndDelete' })).map((m) => m.messageId)).toEqual([sent.messageId]);
    // act
    const result = await consume(streamEvent(insert, userRemoveRecord(stored, { at: clock.now() })));
    // assess
    expect(result.batchItemFailures).toEqual([]);
    expect(whileStored).toMatchObject({ activeMessageCount: 1, totalMessageCount: 1 });
    expect(await h.runtime(q)).toMatchObject({ activeMessageCount: 0, totalMessageCount: 0, sizeInBytes: 0 });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
  });

  // Replays cut anywhere (E6): the stream may bring again a prefix of an item's records with
  // nothing after it. A marker-free way of counting a life that cancels out must still hold here.
  it('E6: a life within one batch, then a replay of only its insert that its removal never follows, leaves the counts exact', async () => {
    // prepare: a message sent and received-and-deleted; its life counted in one batch
    const q = 'e6-insert-replayed';
    await h.createQueue(q);
    const sent = await h.send(q, { body: 'short life' });
    const stored = await get(q, sent.sequenceNumber);
    expect((await h.receive(`/queues/${q}`, { mode: 'receiveAndDelete' })).map((m) => m.messageId)).toEqual([sent.messageId]);
    const insert = insertRecord(stored, { at: clock.now() });
    expect((await consume(streamEvent(insert, userRemoveRecord(stored, { at: clock.now() })))).batchItemFailures).toEqual([]);
    // act: only the insert comes again (a replay cut between the two records)
    expect((await consume(streamEvent(insert))).batchItemFailures).toEqual([]);
    // assess
    expect(await h.runtime(q)).toMatchObject({ activeMessageCount: 0, totalMessageCount: 0, sizeInBytes: 0 });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
  });

  it('E6: records of a long-lived message that cancel out within one batch (deferred, then active again), replayed one at a time, change nothing', async () => {
    // prepare: a message counted as active; later one batch takes it to deferred and back
    const q = 'e6-middle-netted';
    await h.createQueue(q);
    const sent = await h.send(q, { body: 'stays' });
    const active = await get(q, sent.sequenceNumber);
    const deferred = { ...active, state: 'Deferred' } as typeof active;
    expect((await consume(streamEvent(insertRecord(active, { at: clock.now() })))).batchItemFailures).toEqual([]);
    const there = modifyRecord(active, deferred, { at: clock.now() });
    const back = modifyRecord(deferred, active, { at: clock.now() });
    expect((await consume(streamEvent(there, back))).batchItemFailures).toEqual([]);
    // act: each record of the stretch alone, as a replay cut inside it brings them
    expect((await consume(streamEvent(there))).batchItemFailures).toEqual([]);
    const afterFirst = await h.runtime(q);
    expect((await consume(streamEvent(back))).batchItemFailures).toEqual([]);
    // assess
    expect(afterFirst).toMatchObject({ activeMessageCount: 1, deferredMessageCount: 0, totalMessageCount: 1 });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
  });

  it('E6: a message living past its marker (removed by TTL after 25 h) counts its removal exactly once, also when the removal comes again', async () => {
    // prepare: a message counted, then days pass and DynamoDB's TTL removes its marker
    const q = 'e6-marker-expired';
    await h.createQueue(q);
    const sent = await h.send(q, { body: 'waits for days' });
    const stored = await get(q, sent.sequenceNumber);
    expect((await consume(streamEvent(insertRecord(stored, { at: clock.now() })))).batchItemFailures).toEqual([]);
    const whileStored = await h.runtime(q);
    clock.advance(3 * 24 * 60 * MINUTE);
    const marker = countedMarkerKey(stored);
    const kept = (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: marker, ConsistentRead: true }))).Item;
    expect(kept?.ttl).toBeLessThan(clock.now() / 1000); // TTL may remove it now
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: marker }));
    expect((await h.receive(`/queues/${q}`, { mode: 'receiveAndDelete' })).map((m) => m.messageId)).toEqual([sent.messageId]);
    const remove = userRemoveRecord(stored, { at: clock.now() });
    // act: the removal, then the removal again (a replay)
    expect((await consume(streamEvent(remove))).batchItemFailures).toEqual([]);
    const afterRemoval = await h.runtime(q);
    expect((await consume(streamEvent(remove))).batchItemFailures).toEqual([]);
    // assess
    expect(whileStored).toMatchObject({ activeMessageCount: 1, totalMessageCount: 1 });
    expect(afterRemoval).toMatchObject({ activeMessageCount: 0, totalMessageCount: 0, sizeInBytes: 0 });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
  });

  it('E6/T5: a message put back after a TTL removal lives again at the same key; that second life within one batch, then a replay of only its removal, changes nothing', async () => {
    // prepare: the first life counted (its insert alone), locked, then removed by TTL and put back
    const q = 'e6-put-back';
    const at = () => ({ at: clock.now() });
    await h.createQueue(q, { defaultMessageTimeToLive: 'PT1M', lockDuration: 'PT5M' });
    const sent = await h.send(q, { body: 'held' });
    const first = await get(q, sent.sequenceNumber);
    expect((await consume(streamEvent(insertRecord(first, at())))).batchItemFailures).toEqual([]);
    const [locked] = await h.receive(`/queues/${q}`);
    const held = await get(q, sent.sequenceNumber);
    // a message that stays, so that a count taken below zero would show (counts read as at least 0)
    const stays = await get(q, (await h.send(q, { body: 'stays', timeToLive: 'P1D' })).sequenceNumber);
    expect((await consume(streamEvent(insertRecord(stays, at())))).batchItemFailures).toEqual([]);
    clock.advance(2 * MINUTE); // past its expiry, lock still held (T5)
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: held.pk, sk: held.sk } }));
    expect((await consume(streamEvent(modifyRecord(first, held, at()), ttlRemovalRecord(held, 'aws', at())))).batchItemFailures).toEqual([]);
    const putBack = await get(q, sent.sequenceNumber);
    expect(putBack).toBeDefined();
    await h.settle(q, locked!, 'complete');
    const remove = userRemoveRecord(putBack, at());
    // act: the second life (put back, completed) in one batch, then its removal alone
    expect((await consume(streamEvent(insertRecord(putBack, at()), remove))).batchItemFailures).toEqual([]);
    expect((await consume(streamEvent(remove))).batchItemFailures).toEqual([]);
    // assess
    expect(await h.runtime(q)).toMatchObject({ activeMessageCount: 1, totalMessageCount: 1, sizeInBytes: stays.size });
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
  });

  it('E6: a TTL removal that fails mid-batch and is retried by Lambda (from that record on) leaves no permanent drift', async () => {
    // prepare: B (no TTL) and A (1-minute TTL); A is removed by TTL; then B is received-and-deleted
    const q = 'e6-drift';
    await h.createQueue(q, { deadLetteringOnMessageExpiration: true });
    const b = await h.send(q, { body: 'b' });
    const a = await h.send(q, { body: 'a', timeToLive: 'PT1M' });
    const [b0, a0] = [await get(q, b.sequenceNumber), await get(q, a.sequenceNumber)];
    clock.advance(2 * MINUTE);
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: a0.pk, sk: a0.sk } }));
    expect((await h.receive(`/queues/${q}`, { mode: 'receiveAndDelete' })).map((m) => m.messageId)).toEqual([b.messageId]);
    const records = [
      insertRecord(b0, { at: clock.now() }),
      insertRecord(a0, { at: clock.now() }),
      ttlRemovalRecord(a0, 'aws', { at: clock.now() }),
      userRemoveRecord(b0, { at: clock.now() }),
    ];
    // the consumer's put of A's dead-letter copy is refused (e.g. throttled): that record fails
    const flaky = createStreamHandler(
      faultyDeps(deps, {
        afterwards: 'lives',
        match: (c) =>
          both(is(PutCommand), (p) => inDeadLetter(inputOf(p).Item))(c) ||
          both(is(TransactWriteCommand), (t) =>
            ((inputOf(t).TransactItems ?? []) as { Put?: { Item?: { pk?: unknown } } }[]).some((i) => inDeadLetter(i.Put?.Item)),
          )(c),
      }),
    );
    // act
    const first = await flaky(streamEvent(...records));
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: records[2]!.dynamodb!.SequenceNumber }]);
    // Lambda retries from the failed record on (ReportBatchItemFailures)
    const retry = await consume(streamEvent(...records.slice(2)));
    expect(retry.batchItemFailures).toEqual([]);
    const [copy] = await messageItems(deps, q, 'deadletter');
    expect(copy).toBeDefined();
    expect((await consume(streamEvent(insertRecord(copy!, { at: clock.now() })))).batchItemFailures).toEqual([]);
    // assess: A is in the DLQ, B is gone, nothing is active
    const stored = await truth(deps, q);
    expect(stored).toMatchObject({ activeMessageCount: 0, deadLetterMessageCount: 1, totalMessageCount: 1 });
    expect(await h.runtime(q)).toEqual(stored);
  });
});

describe('E6: counts from the real stream of DynamoDB Local', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  let deps: Deps;
  let api: ReturnType<typeof apiClient>;
  let h: ReturnType<typeof helpers>;
  let consume: ReturnType<typeof createStreamHandler>;
  let reader: TableStreamReader;

  beforeAll(async () => {
    // Today's layout: the truth the counts are held to is its msg/ items.
    deps = { ...(await testDeps(clock, 'stream-counts-real', undefined, { stream: true })), ...indexLayout };
    api = apiClient(deps);
    h = helpers(api);
    consume = createStreamHandler(deps);
    reader = new TableStreamReader(deps);
  });

  it('E6: after sends, schedules, settlements, dead-letters, expiry, resubmit and cancel, the counts equal what is stored; replays in any batching change nothing', async () => {
    // prepare: phase 1
    const q = 'e6-real';
    const qx = 'e6-real-expiry';
    await h.createQueue(q, { lockDuration: 'PT30S' });
    await h.createQueue(qx, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const batch = await api('POST', `/queues/${q}/messages/batch`, {
      messages: Array.from({ length: 6 }, (_, i) => ({ body: { i, pad: 'x'.repeat(i * 10) }, applicationProperties: { i } })),
    });
    expect(batch.status).toBe(201);
    const scheduled = await h.send(q, { body: 'later', scheduledEnqueueTime: new Date(clock.now() + 30 * MINUTE).toISOString() });
    await h.send(qx, { body: 'expires-1' });
    await h.send(qx, { body: 'expires-2' });
    const locked = await h.receive(`/queues/${q}`, { maxMessages: 4 });
    expect(locked).toHaveLength(4);
    await h.settle(q, locked[0], 'complete');
    await h.settle(q, locked[1], 'abandon');
    await h.settle(q, locked[2], 'defer');
    await h.settle(q, locked[3], 'deadletter', { deadLetterReason: 'bad' });
    expect(await h.receive(`/queues/${q}`, { mode: 'receiveAndDelete' })).toHaveLength(1);
    clock.advance(2 * MINUTE);
    expect(await h.receive(`/queues/${qx}`, { maxMessages: 5 })).toEqual([]); // moves both to the DLQ
    // act
    const phase1 = await reader.read();
    await deliver(consume, phase1);
    // assess
    expect(phase1.length).toBeGreaterThan(10);
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
    expect(await h.runtime(qx)).toEqual(await truth(deps, qx));
    expect(await h.runtime(q)).toMatchObject({ scheduledMessageCount: 1, deferredMessageCount: 1, deadLetterMessageCount: 1, activeMessageCount: 2 });
    expect(await h.runtime(qx)).toMatchObject({ activeMessageCount: 0, deadLetterMessageCount: 2 });

    // act: replay phase 1 whole, then in small batches
    await deliver(consume, phase1);
    await deliver(consume, phase1, 7);
    // assess
    expect(await h.runtime(q)).toEqual(await truth(deps, q));
    expect(await h.runtime(qx)).toEqual(await truth(deps, qx));

    // prepare: phase 2
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).status).toBe(200);
    expect((await api('DELETE', `/queues/${q}/messages/scheduled/${scheduled.sequenceNumber}`)).status).toBe(204);
    expect((await api('DELETE', `/queues/${qx}/$deadletterqueue/messages`)).body).toEqual({ purged: 2 });
    const phase2 = await reader.read();
    // act: phase 2 delivered, with the tail of phase 1 replayed in front of it
    await deliver(consume, [...phase1.slice(-5), ...phase2], 4);
    // assess
    expect(phase2.length).toBeGreaterThan(0);
    const q2 = await h.runtime(q);
    expect(q2).toEqual(await truth(deps, q));
    expect(q2).toMatchObject({ scheduledMessageCount: 0, deadLetterMessageCount: 0 });
    expect(await h.runtime(qx)).toEqual(await truth(deps, qx));
    expect(await h.runtime(qx)).toMatchObject({ totalMessageCount: 0, sizeInBytes: 0 });

    // act: everything replayed from the start
    await deliver(consume, [...phase1, ...phase2], 100);
    // assess
    expect(await h.runtime(q)).toEqual(q2);
  });
});
