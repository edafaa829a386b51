/**
 * R10: a receive-and-delete hands out every message it removes. A removal whose every answer was
 * lost (DynamoDB applied it, then answered 500 to each attempt) is read back to learn whether it
 * landed; the store refusing that read for load is brief, so the read is asked again
 * (lib/store/read-back.ts), and the message the removal took is handed out rather than lost.
 * Real DynamoDB Local; the faults injected inside the SDK's retry loop
 * (test/support/dynamo-faults.ts).
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { MESSAGE_PK_PREFIX, POSITIONED_PK_PREFIX } from '../../lib/store/keys.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

const pkOf = (c: StoreCall): string => String((c.input.Item ?? c.input.Key)?.pk?.S ?? '');
const inMessages = (c: StoreCall) => pkOf(c).startsWith(MESSAGE_PK_PREFIX) || pkOf(c).startsWith(POSITIONED_PK_PREFIX);
/** A message's removal: its delete, or on a ticketed queue the `done` marker put in its place. */
const removal = (c: StoreCall) => inMessages(c) && (c.operation === 'DeleteItem' || (c.operation === 'PutItem' && c.input.Item?.done !== undefined));

/**
 * Today's layout deletes a plain queue's message in a transaction of its own, sent again under
 * its token when every answer is lost (messages.ts `deleteMessageOnce`): no read. A session's
 * holder, the only taker, deletes on its own and reads back (`deleteMessage`).
 */
describe.each([
  ['tickets', false],
  ['positions', false],
  ['index', true],
] as [NewEntityLayout, boolean][])('a receive-and-delete whose removal landed unseen, on the %s layout (sessions: %s)', (layout, sessions) => {
  it('R10: its first read-back refused for load, the read is asked again and the message handed out', async () => {
    const deps = { ...(await testDeps(clock, `rbr${layout}`)), newEntityLayout: layout };
    const api = apiClient(deps);
    expect((await api('PUT', '/queues/q', { requiresSession: sessions })).status).toBe(201);
    expect((await api('POST', '/queues/q/messages', { body: 'kept', messageId: 'kept', ...(sessions ? { sessionId: 's' } : {}) })).status).toBe(201);
    const accepted = sessions ? await api('POST', '/queues/q/sessions/accept', { sessionId: 's' }) : undefined;
    const path = accepted ? '/queues/q/sessions/s/receive' : '/queues/q/messages/receive';
    const lock = accepted ? { sessionLockToken: accepted.body.sessionLockToken } : {};

    let lost = false;
    let refused = 0;
    const store = faultyStore(
      deps.db,
      {
        lostOut: { when: (c) => !lost && removal(c) && (lost = true) },
        throttle: { when: (c) => lost && c.operation === 'GetItem' && inMessages(c) && ++refused === 1 },
      },
      { fastRetries: true },
    );
    const got = await apiClient({ ...deps, db: store.db })('POST', path, { mode: 'receiveAndDelete', maxMessages: 1, ...lock });
    expect(store.log.lostOut).toBe(1);
    expect(refused).toBeGreaterThan(0);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect((got.body.messages as Json[]).map((m) => m.messageId)).toEqual(['kept']);
  });
});
