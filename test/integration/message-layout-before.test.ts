/**
 * Message items stored by the layout before (lib/store/message-layout.ts): they carry `seq`,
 * `eid`, `subqueue` and `partition`, and a locked one the whole lock token that was handed out.
 * A deployed table holds such items, and receivers hold such tokens, when the new layout
 * arrives: they must still be peeked, received, settled (R4, R5, R9, N4), moved to the
 * dead-letter subqueue by a settlement and by the sweeper (D1, D2), and counted (E6), exactly
 * as items of the new layout are.
 *
 * Each test writes a message through the API, then puts its item back as the layout before
 * stored it (what `messageOfStored` reads from the new one: every key attribute carried, the
 * whole token), past the API, as DynamoDB would still hold it.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import type { MessageItem } from '../../lib/messages/item.js';
import type { Subqueue } from '../../lib/entities/kinds.js';
import { messageOfStored } from '../../lib/store/message-layout.js';
import { apiClient } from '../support/api.js';
import { createBroker, type Broker } from '../support/broker.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';
import { insertRecord, messageItem, messageItems, modifyRecord, streamEvent, userRemoveRecord } from '../support/stream.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';

const MINUTE = 60_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
let broker: Broker;

beforeAll(async () => {
  // Today's layout: the file puts its msg/ items back as the layout before it stored them.
  deps = { ...(await testDeps(clock, 'layout-before')), ...indexLayout };
  api = apiClient(deps);
  broker = createBroker(deps);
});

const { createQueue, send, receive, receiveOne, peek, settle, dlq } = queueHelpers(() => api);
const queue = (name: string): ReceiveTarget => ({ kind: 'queue', name, subqueue: 'active' });

/** Puts the message's item back as the layout before stored it, and checks that it now looks so. */
async function storedBefore(q: string, seq: string, subqueue: Subqueue = 'active'): Promise<MessageItem> {
  const before = messageOfStored((await messageItem(deps, q, subqueue, seq))!);
  await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: before }));
  const raw = (await messageItem(deps, q, subqueue, seq))!;
  expect(raw).toMatchObject({ seq, eid: before.eid, subqueue, partition: 0 });
  if (before.lockToken !== undefined) expect(raw.lockToken).toHaveLength(36);
  return before;
}

/** What a client sees of a message, lock aside. */
const shown = ({ lockToken: _t, lockedUntil: _u, ...rest }: Msg) => rest;

describe('an item stored before, never received', () => {
  it('R8/R3/R4: is peeked and received as the same message, and its new lock settles it', async () => {
    const q = 'before-fresh';
    await createQueue(q);
    const sent = await send(q, { body: { order: 1 }, applicationProperties: { tenant: 'eu-1' } });
    const [fresh] = await peek(`/queues/${q}`);
    await storedBefore(q, sent.sequenceNumber);
    const [peeked] = await peek(`/queues/${q}`);
    expect(peeked).toEqual(fresh);
    const got = await receiveOne(`/queues/${q}`);
    expect(shown(got)).toEqual({ ...fresh, deliveryCount: 1 });
    expect(got.sequenceNumber).toBe(sent.sequenceNumber);
    expect(BigInt(`0x${got.lockToken.replace(/-/g, '').slice(0, 16)}`).toString()).toBe(sent.sequenceNumber);
    expect((await settle(q, got, 'complete')).status).toBe(204);
    expect(await messageItems(deps, q, 'active')).toEqual([]);
  });
});

describe('an item locked before, under a token handed out before', () => {
  async function lockedBefore(q: string, props: Record<string, unknown> = {}) {
    await createQueue(q, { lockDuration: 'PT1M', ...props });
    const sent = await send(q, { body: 'held' });
    const got = await receiveOne(`/queues/${q}`);
    const before = await storedBefore(q, sent.sequenceNumber);
    expect(before.lockToken).toBe(got.lockToken);
    return { sent, got };
  }

  it('R4/R5: renew, abandon and complete with that token; a forged one is lost', async () => {
    const { got } = await lockedBefore('before-renew');
    const forged = `${got.lockToken.slice(0, 24)}${got.lockToken.slice(24, 25) === '0' ? '1' : '0'}${got.lockToken.slice(25)}`;
    expect((await settle('before-renew', { ...got, lockToken: forged }, 'complete')).status).toBe(410);
    clock.advance(30_000);
    const renewed = await api('POST', `/queues/before-renew/messages/${got.sequenceNumber}/renew-lock`, { lockToken: got.lockToken });
    expect(renewed.status).toBe(200);
    expect((await settle('before-renew', got, 'abandon')).status).toBe(204);
    const again = await receiveOne('/queues/before-renew');
    expect(again.deliveryCount).toBe(2);
    expect((await settle('before-renew', got, 'complete')).status).toBe(410);
    expect((await settle('before-renew', again, 'complete')).status).toBe(204);
  });

  it('R9: complete and abandon in a batch by tokens handed out before', async () => {
    const q = 'before-batch';
    await createQueue(q, { lockDuration: 'PT1M' });
    for (const body of [1, 2, 3]) await send(q, { body });
    const got = await receive(`/queues/${q}`, { maxMessages: 3 });
    for (const m of got) await storedBefore(q, m.sequenceNumber);
    const abandoned = await api('POST', `/queues/${q}/messages/abandon`, { lockTokens: [got[0].lockToken] });
    expect(abandoned.body.results).toEqual([{ lockToken: got[0].lockToken, ok: true }]);
    const completed = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: got.slice(1).map((m: Msg) => m.lockToken) });
    expect(completed.body.results.map((r: { ok?: boolean }) => r.ok)).toEqual([true, true]);
    expect((await peek(`/queues/${q}`)).map((m) => m.body)).toEqual([1]);
  });

  it('D1/D4: dead-lettered with that token, the copy keeps its sequence number as enqueuedSequenceNumber', async () => {
    const { sent, got } = await lockedBefore('before-dead');
    expect((await settle('before-dead', got, 'deadletter', { deadLetterReason: 'Broken' })).status).toBe(204);
    const [dead] = await peek(dlq('before-dead'));
    expect(dead).toMatchObject({ messageId: sent.messageId, body: 'held', deadLetterReason: 'Broken', enqueuedSequenceNumber: sent.sequenceNumber });
    expect(await messageItems(deps, 'before-dead', 'active')).toEqual([]);
  });

  it('D2: its last delivery lapsed, the sweeper moves it to the dead-letter subqueue', async () => {
    const { sent } = await lockedBefore('before-lapse', { maxDeliveryCount: 1 });
    clock.advance(2 * MINUTE);
    await createSweeperHandler(deps)();
    const [dead] = await peek(dlq('before-lapse'));
    expect(dead).toMatchObject({ messageId: sent.messageId, deadLetterReason: 'MaxDeliveryCountExceeded', enqueuedSequenceNumber: sent.sequenceNumber });
    expect(await messageItems(deps, 'before-lapse', 'active')).toEqual([]);
  });

  it('D2: abandoned with that token at the last delivery, it is dead-lettered', async () => {
    const { sent, got } = await lockedBefore('before-abandon', { maxDeliveryCount: 1 });
    expect((await settle('before-abandon', got, 'abandon')).status).toBe(204);
    const [dead] = await peek(dlq('before-abandon'));
    expect(dead).toMatchObject({ messageId: sent.messageId, deadLetterReason: 'MaxDeliveryCountExceeded', enqueuedSequenceNumber: sent.sequenceNumber });
  });
});

describe('a session message locked before (N3, N4)', () => {
  async function takenBefore(q: string, count: number) {
    expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
    // With an expiry within the session lock's end (PT1M, the queue's) plus the record's margin,
    // so that the take writes its lock on the message (T5): a message without, or expiring
    // later, is held by its session's record, which writes nothing on it.
    const messages = Array.from({ length: count }, (_, i) => ({ body: i, sessionId: 's', timeToLive: 'PT1M' }));
    expect((await api('POST', `/queues/${q}/messages/batch`, { messages })).status).toBe(201);
    const { sessionLockToken } = await broker.acceptSession(queue(q), { sessionId: 's' });
    const got = (await broker.receiveFromSession(queue(q), 's', { sessionLockToken, maxMessages: count })) as Msg[];
    expect(got).toHaveLength(count);
    for (const m of got) {
      const before = await storedBefore(q, m.sequenceNumber);
      expect(before).toMatchObject({ slk: sessionLockToken, lockToken: m.lockToken });
    }
    return { sessionLockToken, got };
  }

  it('N4: completed alone and in a batch (one transaction under the session lock) with tokens handed out before', async () => {
    const q = 'before-session';
    const { got } = await takenBefore(q, 3);
    await broker.settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken });
    const results = await broker.settleBatch(queue(q), 'complete', { lockTokens: got.slice(1).map((m) => m.lockToken) });
    expect(results.map((r) => ('ok' in r ? 'ok' : r.error.code))).toEqual(['ok', 'ok']);
    expect(await messageItems(deps, q, 'active')).toEqual([]);
  });

  it('N4: abandoned with a token handed out before, it is taken again under the same session lock', async () => {
    const q = 'before-session-abandon';
    const { sessionLockToken, got } = await takenBefore(q, 1);
    await broker.settle(queue(q), got[0].sequenceNumber, 'abandon', { lockToken: got[0].lockToken });
    const again = (await broker.receiveFromSession(queue(q), 's', { sessionLockToken, maxMessages: 1 })) as Msg[];
    expect(again.map((m) => [m.sequenceNumber, m.deliveryCount])).toEqual([[got[0].sequenceNumber, 2]]);
  });
});

describe('E6: stream records of items stored before', () => {
  it('E6: count a message sent, locked and dead-lettered the same as items of the new layout', async () => {
    const q = 'before-counts';
    await createQueue(q, { lockDuration: 'PT1M' });
    const consume = createStreamHandler(deps);
    const at = { at: clock.now() };
    const sent = await send(q, { body: 'counted' });
    const fresh = await storedBefore(q, sent.sequenceNumber);
    const got = await receiveOne(`/queues/${q}`);
    const locked = await storedBefore(q, sent.sequenceNumber);
    expect((await settle(q, got, 'deadletter')).status).toBe(204);
    const [copy] = await messageItems(deps, q, 'deadletter');
    const records = [insertRecord(fresh, at), modifyRecord(fresh, locked, at), userRemoveRecord(locked, at), insertRecord(copy!, at)];
    expect((await consume(streamEvent(...records.slice(0, 2)))).batchItemFailures).toEqual([]);
    const runtime = async () => (await api('GET', `/queues/${q}`)).body.runtime;
    expect(await runtime()).toMatchObject({ activeMessageCount: 1, deadLetterMessageCount: 0, sizeInBytes: fresh.size });
    expect((await consume(streamEvent(...records.slice(2)))).batchItemFailures).toEqual([]);
    expect(await runtime()).toMatchObject({ activeMessageCount: 0, deadLetterMessageCount: 1, totalMessageCount: 1, sizeInBytes: copy!.size });
  });
});
