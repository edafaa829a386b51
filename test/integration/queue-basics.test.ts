import { describe, expect, it } from 'vitest';
import { apiOnTable } from '../support/api.js';
import { ManualClock } from '../support/table.js';

const clock = new ManualClock();

const api = apiOnTable(clock, 'basics');

describe('queues end to end through the API handler', () => {
  it('E1/E2: creates a queue with defaults, case-insensitive names', async () => {
    const created = await api('PUT', '/queues/Orders', {});
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Orders', lockDuration: 'PT1M', maxDeliveryCount: 10, defaultMessageTimeToLive: null, status: 'Active' });
    const again = await api('PUT', '/queues/orders', { maxDeliveryCount: 3 });
    expect(again.status).toBe(200);
    expect(again.body.name).toBe('Orders');
    expect(again.body.maxDeliveryCount).toBe(3);
  });

  it('S1-S3, R1, R3, R4: send, peek-lock, complete', async () => {
    await api('PUT', '/queues/q1', {});
    const sent = await api('POST', '/queues/q1/messages', { body: { hello: 'world' }, applicationProperties: { color: 'red' } });
    expect(sent.status).toBe(201);
    expect(sent.body.sequenceNumber).toMatch(/^\d+$/);
    const got = await api('POST', '/queues/q1/messages/receive', { mode: 'peekLock' });
    expect(got.status).toBe(200);
    expect(got.body.messages).toHaveLength(1);
    const m = got.body.messages[0];
    expect(m).toMatchObject({ body: { hello: 'world' }, deliveryCount: 1, state: 'Active', applicationProperties: { color: 'red' } });
    expect(m.lockToken).toBeTruthy();
    const none = await api('POST', '/queues/q1/messages/receive', {});
    expect(none.body.messages).toHaveLength(0);
    const done = await api('POST', `/queues/q1/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
    expect(done.status).toBe(204);
    const again = await api('POST', `/queues/q1/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
    expect(again.status).toBe(410);
    expect(again.body.error.code).toBe('MessageLockLost');
  });

  it('B1/B2: bad input names the field', async () => {
    const bad = await api('PUT', '/queues/q2', { lockDuration: 'PT10M' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'BadRequest', retryable: false });
    expect(bad.body.error.message).toContain('lockDuration');
    const unknown = await api('PUT', '/queues/q2', { bogus: 1 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain('bogus');
    const malformed = await api('PUT', '/queues/q2', undefined, '{not json');
    expect(malformed.status).toBe(400);
    expect((await api('GET', '/queues/q2')).status).toBe(404);
  });

  it('S7: a message id seen within the history window is acknowledged and dropped', async () => {
    await api('PUT', '/queues/dedup', { requiresDuplicateDetection: true, duplicateDetectionHistoryTimeWindow: 'PT1M' });
    const first = await api('POST', '/queues/dedup/messages', { body: 1, messageId: 'same' });
    const second = await api('POST', '/queues/dedup/messages', { body: 2, messageId: 'same' });
    expect(second.status).toBe(201);
    expect(second.body.sequenceNumber).toBe(first.body.sequenceNumber);
    clock.advance(61_000);
    const third = await api('POST', '/queues/dedup/messages', { body: 3, messageId: 'same' });
    expect(third.body.sequenceNumber).not.toBe(first.body.sequenceNumber);
    const got = await api('POST', '/queues/dedup/messages/receive', { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(got.body.messages.map((m: { body: number }) => m.body)).toEqual([1, 3]);
  });

  it('S8: a direct send without sessionId to a session queue is refused and stores nothing', async () => {
    await api('PUT', '/queues/sessions', { requiresSession: true });
    const refused = await api('POST', '/queues/sessions/messages', { body: 1 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('sessionId');
    expect((await api('POST', '/queues/sessions/messages', { body: 2, sessionId: 's1' })).status).toBe(201);
    expect((await api('GET', '/queues/sessions/messages')).body.messages).toHaveLength(1);
  });

  it('E4/R4: settlement right after the queue was deleted and re-created reaches the new queue', async () => {
    const settleFirst = async () => {
      await api('POST', '/queues/reborn/messages', { body: 'x' });
      const [m] = (await api('POST', '/queues/reborn/messages/receive', {})).body.messages;
      return api('POST', `/queues/reborn/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
    };
    await api('PUT', '/queues/reborn', {});
    expect((await settleFirst()).status).toBe(204);
    await api('DELETE', '/queues/reborn');
    await api('PUT', '/queues/reborn', {});
    expect((await settleFirst()).status).toBe(204);
  });

  it('R4/D1: a dead-letter without a reason leaves the reason and description unset, as Service Bus does', async () => {
    await api('PUT', '/queues/noreason', {});
    await api('POST', '/queues/noreason/messages', { body: 1 });
    const [m] = (await api('POST', '/queues/noreason/messages/receive', {})).body.messages;
    expect((await api('POST', `/queues/noreason/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken })).status).toBe(204);
    const [dead] = (await api('GET', '/queues/noreason/$deadletterqueue/messages')).body.messages;
    expect(dead).toMatchObject({ deadLetterReason: null, deadLetterErrorDescription: null, deadLetterSource: 'queues/noreason' });
  });
});
