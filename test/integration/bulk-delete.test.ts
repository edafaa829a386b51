/**
 * R11: bulk deletion (the operator's purge, the SDK's `deleteMessages` / `purgeMessages`)
 * leaves locked messages to their holder, and deferred ones where they are, as Service Bus
 * does. Through the API handler, on DynamoDB Local with the test clock.
 */
import { describe, expect, it } from 'vitest';
import { apiOnTable } from '../support/api.js';
import { queueHelpers, queueMaker } from '../support/queue-helpers.js';
import { ManualClock } from '../support/table.js';

const SECOND = 1000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
const api = apiOnTable(clock, 'bulkdel');
const { send, receive, receiveOne, peek, settle } = queueHelpers(() => api);
const newQueue = queueMaker(() => api, 'bulk');

/** The two ways to delete in bulk: the SDK's delete (count, before now) and the operator's purge. */
const bulkDeletes = {
  deleteMessages: async (q: string) => {
    const res = await api('POST', `/queues/${q}/messages/delete`, { maxMessageCount: 100 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.deleted as number;
  },
  purge: async (q: string) => {
    const res = await api('DELETE', `/queues/${q}/messages`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.purged as number;
  },
};

describe.each(Object.entries(bulkDeletes))('R11: %s', (_, bulkDelete) => {
  it('R11: a locked message survives, and its holder completes it', async () => {
    const q = await newQueue();
    await send(q, { body: 'm0' });
    const m0 = await receiveOne(`/queues/${q}`);
    await send(q, { body: 'm1' });
    await send(q, { body: 'm2' });
    clock.advance(SECOND);
    expect(await bulkDelete(q)).toBe(2);
    expect((await peek(`/queues/${q}`)).map((m) => m.body)).toEqual(['m0']);
    expect((await settle(q, m0, 'complete')).status).toBe(204);
    expect(await peek(`/queues/${q}`)).toEqual([]);
  });

  it('R11: once its lock lapses, the message is deleted like any other', async () => {
    const q = await newQueue({ lockDuration: 'PT10S' });
    await send(q, { body: 'm0' });
    const m0 = await receiveOne(`/queues/${q}`);
    clock.advance(11 * SECOND);
    expect(await bulkDelete(q)).toBe(1);
    expect((await settle(q, m0, 'complete')).status).toBe(410);
  });

  it('R11: a deferred message stays, to be received by its sequence number', async () => {
    const q = await newQueue();
    const sent = await send(q, { body: 'kept' });
    await send(q, { body: 'gone' });
    const [first] = await receive(`/queues/${q}`, { maxMessages: 1 });
    expect((await settle(q, first, 'defer')).status).toBe(204);
    clock.advance(SECOND);
    expect(await bulkDelete(q)).toBe(1);
    const deferred = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [sent.sequenceNumber] });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(200);
    expect(deferred.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['kept']);
  });

  it('R11: a session message stays while its session lock lives, renewed past the message lock it was taken with', async () => {
    const q = await newQueue({ requiresSession: true, lockDuration: 'PT30S' });
    await send(q, { body: 's0', sessionId: 'a' });
    const accepted = await api('POST', `/queues/${q}/sessions/accept`, { sessionId: 'a' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const token = accepted.body.sessionLockToken;
    const got = await api('POST', `/queues/${q}/sessions/a/receive`, { sessionLockToken: token });
    expect(got.body.messages).toHaveLength(1);
    clock.advance(20 * SECOND);
    expect((await api('POST', `/queues/${q}/sessions/a/renew-lock`, { sessionLockToken: token })).status).toBe(200);
    clock.advance(20 * SECOND); // past the lock the message was taken with, within the renewed one
    expect(await bulkDelete(q)).toBe(0);
    expect((await settle(q, got.body.messages[0], 'complete')).status).toBe(204);
  });
});
