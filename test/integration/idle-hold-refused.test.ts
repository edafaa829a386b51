/**
 * I2 with S4: a message scheduled on an entity that is deleted when idle holds the entity until
 * it is due, one write of the entity item. That hold is made before the message is written, so
 * a hold the store refuses for load refuses the send, which then stored nothing: the retryable
 * answer is true, and the client's resend is the only copy. Real DynamoDB Local; the refusal
 * injected inside the SDK's retry loop (test/support/dynamo-faults.ts).
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { QUEUES_PK } from '../../lib/store/keys.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const MINUTE = 60_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

/** The hold of a queue's entity item until a scheduled message is due (store/entities.ts `holdEntityUntil`). */
const hold = (c: StoreCall) => c.operation === 'UpdateItem' && c.input.Key?.pk?.S === QUEUES_PK && String(c.input.UpdateExpression).includes('scheduledUntil');

describe.each(['index', 'tickets'] as NewEntityLayout[])('a scheduled send whose hold is refused, on the %s layout', (layout) => {
  const world = async (name: string) => {
    const deps = { ...(await testDeps(clock, `ihr${layout}`)), newEntityLayout: layout };
    const api = apiClient(deps);
    expect((await api('PUT', `/queues/${name}`, { autoDeleteOnIdle: 'PT10M' })).status).toBe(201);
    const throttled = apiClient({ ...deps, db: faultyStore(deps.db, { throttle: { when: hold } }, { fastRetries: true }).db });
    const peeked = async () =>
      ((await api('GET', `/queues/${name}/messages?fromSequenceNumber=0&maxMessages=10`)).body.messages as Json[]).map((m) => m.messageId);
    const at = new Date(clock.now() + 5 * MINUTE).toISOString();
    return { api, throttled, peeked, at };
  };

  it('S4, I2: a single send is answered Throttled and stores nothing', async () => {
    const w = await world('single');
    const sent = await w.throttled('POST', '/queues/single/messages', { body: 's', messageId: 's', scheduledEnqueueTime: w.at });
    expect(sent.status, JSON.stringify(sent.body)).toBe(503);
    expect(await w.peeked()).toEqual([]);
  });

  it('S4, I2: a batch answers each scheduled message not stored, and stores none of them', async () => {
    const w = await world('batch');
    const sent = await w.throttled('POST', '/queues/batch/messages/batch', {
      messages: ['b1', 'b2'].map((id) => ({ body: id, messageId: id, scheduledEnqueueTime: w.at })),
    });
    expect([207, 503], JSON.stringify(sent.body)).toContain(sent.status);
    const answeredStored = sent.status === 207 ? (sent.body.results as Json[]).filter((r) => !('error' in r)).map((r) => r.messageId) : [];
    expect(await w.peeked()).toEqual(answeredStored);
    expect(answeredStored).toEqual([]);
  });
});
