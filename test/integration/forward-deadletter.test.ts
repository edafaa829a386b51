/**
 * F3: with `forwardDeadLetteredMessagesTo` set, messages dead-lettered in a queue or
 * subscription go to the named entity instead of its own dead-letter subqueue, whatever
 * dead-lettered them: the application (R4), the delivery count (D2), expiry (T6), or the
 * broker at fan-out (F4, S8).
 */
import { describe, expect, it } from 'vitest';
import { apiOnTable } from '../support/api.js';
import { ManualClock } from '../support/table.js';
import { entityHelpers } from '../support/queue-helpers.js';

const clock = new ManualClock(Date.UTC(2030, 4, 1, 10, 0, 0));
let counter = 0;
const fresh = (stem = 'f3') => `${stem}${++counter}`;

const api = apiOnTable(clock, 'forward-dlq');

const { putOk: put, sendTo: send, receiveAt: receive, receiveAll, peekAll, dlq } = entityHelpers(() => api);

describe('F3: forwardDeadLetteredMessagesTo', () => {
  it("F3/R4: a message the application dead-letters in a queue goes to the named queue, not the queue's own dead-letter subqueue", async () => {
    const sink = fresh('sink');
    const source = fresh('src');
    await put(`/queues/${sink}`);
    await put(`/queues/${source}`, { forwardDeadLetteredMessagesTo: `queues/${sink}` });
    await send(`/queues/${source}`, { body: { n: 1 }, messageId: 'app-dl', applicationProperties: { k: 'v' } });
    const [locked] = await receive(`/queues/${source}`, { mode: 'peekLock' });
    const settled = await api('POST', `/queues/${source}/messages/${locked.sequenceNumber}/deadletter`, {
      lockToken: locked.lockToken,
      deadLetterReason: 'BadOrder',
      deadLetterErrorDescription: 'no such product',
    });
    expect(settled.status, JSON.stringify(settled.body)).toBe(204);
    expect(await peekAll(dlq(`/queues/${source}`))).toEqual([]);
    const arrived = await receiveAll(`/queues/${sink}`);
    expect(arrived).toHaveLength(1);
    expect(arrived[0]).toMatchObject({ messageId: 'app-dl', body: { n: 1 } });
    expect(arrived[0].applicationProperties).toMatchObject({ k: 'v' });
    expect(await peekAll(`/queues/${source}`)).toEqual([]);
  });

  it('F3/D2: a message over maxDeliveryCount in a queue goes to the named topic and fans out there', async () => {
    const topic = fresh('dltopic');
    const source = fresh('src');
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/ops`);
    await put(`/queues/${source}`, { maxDeliveryCount: 1, forwardDeadLetteredMessagesTo: `topics/${topic}` });
    await send(`/queues/${source}`, { body: 'poison', messageId: 'poison' });
    const [locked] = await receive(`/queues/${source}`, { mode: 'peekLock' });
    expect((await api('POST', `/queues/${source}/messages/${locked.sequenceNumber}/abandon`, { lockToken: locked.lockToken })).status).toBe(204);
    expect(await peekAll(dlq(`/queues/${source}`))).toEqual([]);
    expect((await receiveAll(`/topics/${topic}/subscriptions/ops`)).map((m) => m.messageId)).toEqual(['poison']);
  });

  it('F3/T6: an expired message of a subscription that dead-letters on expiration goes to the named queue', async () => {
    const sink = fresh('sink');
    const topic = fresh('topic');
    await put(`/queues/${sink}`);
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`, { deadLetteringOnMessageExpiration: true, forwardDeadLetteredMessagesTo: `queues/${sink}` });
    await send(`/topics/${topic}`, { body: 'stale', messageId: 'stale', timeToLive: 'PT1M' });
    clock.advance(2 * 60_000);
    expect(await receive(`/topics/${topic}/subscriptions/s`, { mode: 'receiveAndDelete' })).toEqual([]);
    expect(await peekAll(dlq(`/topics/${topic}/subscriptions/s`))).toEqual([]);
    expect((await receiveAll(`/queues/${sink}`)).map((m) => m.messageId)).toEqual(['stale']);
  });

  it("F3/F4: a copy dead-lettered at fan-out for a filter error goes to the subscription's named queue", async () => {
    const sink = fresh('sink');
    const topic = fresh('topic');
    await put(`/queues/${sink}`);
    await put(`/topics/${topic}`);
    const sub = `/topics/${topic}/subscriptions/s`;
    await put(sub, { deadLetteringOnFilterEvaluationExceptions: true, forwardDeadLetteredMessagesTo: `queues/${sink}` });
    await api('DELETE', `${sub}/rules/$Default`);
    await put(`${sub}/rules/broken`, { filter: { sql: 'color + 1 = 2' } });
    await send(`/topics/${topic}`, { body: 'x', messageId: 'filter-error', applicationProperties: { color: 'red' } });
    expect(await peekAll(dlq(sub))).toEqual([]);
    expect((await receiveAll(`/queues/${sink}`)).map((m) => m.messageId)).toEqual(['filter-error']);
  });

  it("F3: without forwardDeadLetteredMessagesTo, dead-lettered messages stay in the entity's own dead-letter subqueue (control)", async () => {
    const source = fresh('plain');
    await put(`/queues/${source}`);
    await send(`/queues/${source}`, { body: 1, messageId: 'stays' });
    const [locked] = await receive(`/queues/${source}`, { mode: 'peekLock' });
    await api('POST', `/queues/${source}/messages/${locked.sequenceNumber}/deadletter`, { lockToken: locked.lockToken });
    expect((await peekAll(dlq(`/queues/${source}`))).map((m) => m.messageId)).toEqual(['stays']);
  });

  it('F3/D1: the message arriving at the named entity still says why it was dead-lettered (reason and description)', async () => {
    const sink = fresh('sink');
    const source = fresh('src');
    await put(`/queues/${sink}`);
    await put(`/queues/${source}`, { forwardDeadLetteredMessagesTo: `queues/${sink}` });
    await send(`/queues/${source}`, { body: 1, messageId: 'why' });
    const [locked] = await receive(`/queues/${source}`, { mode: 'peekLock' });
    await api('POST', `/queues/${source}/messages/${locked.sequenceNumber}/deadletter`, {
      lockToken: locked.lockToken,
      deadLetterReason: 'BadOrder',
      deadLetterErrorDescription: 'no such product',
    });
    const [arrived] = await receiveAll(`/queues/${sink}`);
    expect(arrived).toBeDefined();
    // Service Bus carries them as application properties; Sluice may show them as fields.
    expect(arrived.deadLetterReason ?? arrived.applicationProperties.DeadLetterReason).toBe('BadOrder');
    expect(arrived.deadLetterErrorDescription ?? arrived.applicationProperties.DeadLetterErrorDescription).toBe('no such product');
  });

  it('F3: when the named entity is deleted or disabled, the message stays in its own dead-letter subqueue and is not lost', async () => {
    const gone = fresh('gone');
    const off = fresh('off');
    const a = fresh('src');
    const b = fresh('src');
    await put(`/queues/${gone}`);
    await put(`/queues/${off}`, { status: 'Disabled' });
    await put(`/queues/${a}`, { forwardDeadLetteredMessagesTo: `queues/${gone}` });
    await put(`/queues/${b}`, { forwardDeadLetteredMessagesTo: `queues/${off}` });
    expect((await api('DELETE', `/queues/${gone}`)).status).toBe(204);
    for (const q of [a, b]) {
      await send(`/queues/${q}`, { body: q, messageId: `kept-${q}` });
      const [locked] = await receive(`/queues/${q}`, { mode: 'peekLock' });
      const res = await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/deadletter`, { lockToken: locked.lockToken, deadLetterReason: 'R' });
      expect(res.status, JSON.stringify(res.body)).toBe(204);
      expect((await peekAll(dlq(`/queues/${q}`))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[`kept-${q}`, 'R']]);
    }
  });

  it('F3: forwardDeadLetteredMessagesTo written as a bare name (accepted by E2 validation) reaches the queue of that name', async () => {
    const sink = fresh('baresink');
    const source = fresh('src');
    await put(`/queues/${sink}`);
    await put(`/queues/${source}`, { forwardDeadLetteredMessagesTo: sink });
    await send(`/queues/${source}`, { body: 1, messageId: 'bare' });
    const [locked] = await receive(`/queues/${source}`, { mode: 'peekLock' });
    const res = await api('POST', `/queues/${source}/messages/${locked.sequenceNumber}/deadletter`, { lockToken: locked.lockToken });
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    expect((await receiveAll(`/queues/${sink}`)).map((m) => m.messageId)).toEqual(['bare']);
  });

  it("F3/S8: a fanned-out copy dead-lettered for a missing session id goes to the subscription's named queue", async () => {
    const sink = fresh('sink');
    const topic = fresh('topic');
    await put(`/queues/${sink}`);
    await put(`/topics/${topic}`);
    const sub = `/topics/${topic}/subscriptions/s`;
    await put(sub, { requiresSession: true, forwardDeadLetteredMessagesTo: `queues/${sink}` });
    await send(`/topics/${topic}`, { body: 'x', messageId: 'no-session' });
    expect(await peekAll(dlq(sub))).toEqual([]);
    expect((await receiveAll(`/queues/${sink}`)).map((m) => m.messageId)).toEqual(['no-session']);
  });
});
