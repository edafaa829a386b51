/**
 * R10 for a take whose transaction's fate DynamoDB did not tell at once. A receive-and-delete
 * among several takers deletes in a transaction under its own ClientRequestToken and, when no
 * answer came, sends it again under that token (store/transact-once.ts), until the token's own
 * answer comes: a delete that landed is handed out, never lost. Two refusals are no answer:
 *
 * - TransactionInProgressException: on AWS, a token sent again while the first is still being
 *   applied; given before anything is applied, but the first may yet land.
 * - A refusal for load or a conflict at a resend, after a send that may have landed: it applied
 *   nothing, and says nothing of the first.
 *
 * DynamoDB Local answers neither; the faults are injected inside the SDK's retry loop
 * (test/support/dynamo-faults.ts).
 */
import { describe, expect, it } from 'vitest';
import { MESSAGE_PK_PREFIX } from '../../lib/store/keys.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

/** The take's delete of a message: a transaction of one Delete in the messages' partition. */
const takeOfMessage = (c: StoreCall) =>
  c.operation === 'TransactWriteItems' && String(c.input.TransactItems?.[0]?.Delete?.Key?.pk?.S ?? '').startsWith(MESSAGE_PK_PREFIX);

/** A queue of today's layout holding one message, received and deleted through `plan`'s faults. */
async function takeThrough(name: string, plan: (take: (c: StoreCall) => boolean) => StoreFaultPlan) {
  const deps = { ...(await testDeps(clock, name)), newEntityLayout: 'index' as const };
  const api = apiClient(deps);
  expect((await api('PUT', '/queues/q', {})).status).toBe(201);
  expect((await api('POST', '/queues/q/messages', { body: 'kept', messageId: 'kept' })).status).toBe(201);
  const store = faultyStore(deps.db, plan(takeOfMessage), { fastRetries: true });
  const got = await apiClient({ ...deps, db: store.db })('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 1 });
  return { got, log: store.log };
}

describe('a take sent again under its token', () => {
  it.each([2, 3])('R10: in progress for %i calls, it is sent again and hands the message out', async (calls) => {
    let chosen = false;
    const { got, log } = await takeThrough(`tip${calls}`, (take) => ({ inProgress: { when: (c) => !chosen && take(c) && (chosen = true), calls } }));
    expect(log.inProgress).toBeGreaterThan(0);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect((got.body.messages as Json[]).map((m) => m.messageId)).toEqual(['kept']);
  });

  it('R10: landed unanswered, then met a conflict at the retry and at the resend, it is sent again and hands the message out', async () => {
    let attempts = 0;
    let landed = false;
    const { got, log } = await takeThrough('trc', (take) => ({
      // The first attempt lands and loses its answer; the SDK's retry and the first resend meet conflicts.
      retried: { when: (c) => !landed && take(c) && (landed = true) },
      conflict: { when: (c) => take(c) && [2, 3].includes(++attempts) },
    }));
    expect(log.retried).toBe(1);
    expect(log.conflicted).toBe(2);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect((got.body.messages as Json[]).map((m) => m.messageId)).toEqual(['kept']);
  });
});
