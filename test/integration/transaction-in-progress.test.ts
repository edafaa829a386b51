/**
 * R10 with a transaction DynamoDB is still applying. A receive-and-delete among several takers
 * deletes in a transaction under its own ClientRequestToken and, when no answer came, sends it
 * again under that token (store/transact-once.ts). On AWS a token sent again while the first is
 * still being applied is answered TransactionInProgressException, a refusal given before
 * anything is applied, but one that says the first may yet land: the resend goes on until the
 * token's own answer comes, so a delete that landed is handed out, not lost. DynamoDB Local never
 * answers so; the fault is injected inside the SDK's retry loop (test/support/dynamo-faults.ts).
 */
import { expect, it } from 'vitest';
import { MESSAGE_PK_PREFIX } from '../../lib/store/keys.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

/** The take's delete of a message: a transaction of one Delete in the messages' partition. */
const takeOfMessage = (c: StoreCall) =>
  c.operation === 'TransactWriteItems' && String(c.input.TransactItems?.[0]?.Delete?.Key?.pk?.S ?? '').startsWith(MESSAGE_PK_PREFIX);

it.each([2, 3])('R10: a take whose transaction is in progress for %i calls is sent again under its token and hands the message out', async (calls) => {
  const deps = { ...(await testDeps(clock, `tip${calls}`)), newEntityLayout: 'index' as const };
  const api = apiClient(deps);
  expect((await api('PUT', '/queues/q', {})).status).toBe(201);
  expect((await api('POST', '/queues/q/messages', { body: 'kept', messageId: 'kept' })).status).toBe(201);
  let chosen = false;
  const store = faultyStore(deps.db, { inProgress: { when: (c) => !chosen && takeOfMessage(c) && (chosen = true), calls } }, { fastRetries: true });
  const got = await apiClient({ ...deps, db: store.db })('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 1 });
  expect(store.log.inProgress).toBeGreaterThan(0);
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  expect((got.body.messages as Json[]).map((m) => m.messageId)).toEqual(['kept']);
});
