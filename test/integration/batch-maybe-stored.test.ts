/**
 * S4: a batch's answer states, message by message, whether each was stored, and no message is
 * stored without the answer saying so. A put whose every answer was lost (DynamoDB applied it,
 * then answered 500 to each attempt) is read back; when that read is refused too, whether the
 * message is stored cannot be told, and its own answer could say neither. The batch is then
 * answered as a failed single send is: a retryable 500 (it may have been stored), never a 207
 * that calls the message not stored while it is delivered. Real DynamoDB Local; the faults
 * injected inside the SDK's retry loop (test/support/dynamo-faults.ts).
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { MESSAGE_PK_PREFIX, POSITIONED_PK_PREFIX } from '../../lib/store/keys.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const LOCK_MS = 30_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

const pkOf = (c: StoreCall): string => String((c.input.Item ?? c.input.Key)?.pk?.S ?? '');
/** A put of one message, in today's layout or at a drawn position. */
const messagePut = (c: StoreCall) =>
  c.operation === 'PutItem' && (pkOf(c).startsWith(MESSAGE_PK_PREFIX) || pkOf(c).startsWith(POSITIONED_PK_PREFIX)) && c.input.Item?.tomb === undefined;
const isRead = (c: StoreCall) => c.operation === 'GetItem' || c.operation === 'BatchGetItem' || c.operation === 'Query';

describe.each(['index', 'tickets', 'positions'] as NewEntityLayout[])('a batch whose put landed unseen, on the %s layout', (layout) => {
  it('S4, S1: its read-back refused too, the batch is answered 500, not "not stored"', async () => {
    const deps = { ...(await testDeps(clock, `bms${layout}`)), newEntityLayout: layout };
    const api = apiClient(deps);
    expect((await api('PUT', '/queues/q', { lockDuration: 'PT30S' })).status).toBe(201);

    // The first message's put lands and every answer is lost; from then on every read is throttled.
    let lost = false;
    const store = faultyStore(
      deps.db,
      { lostOut: { when: (c) => !lost && messagePut(c) && (lost = true) }, throttle: { when: (c) => lost && isRead(c) } },
      { fastRetries: true },
    );
    const sent = await apiClient({ ...deps, db: store.db })('POST', '/queues/q/messages/batch', {
      messages: ['b1', 'b2'].map((n) => ({ body: { n }, messageId: n })),
    });
    expect(store.log.lostOut).toBe(1);
    expect(sent.status, JSON.stringify(sent.body)).toBe(500);
    expect(sent.body.error.retryable).toBe(true);

    // What the answer could not say: the message whose put landed is stored.
    clock.advance(LOCK_MS);
    const got = await api('POST', '/queues/q/messages/receive', { maxMessages: 10, maxWaitTime: 'PT0S' });
    expect((got.body.messages as Json[]).map((m) => m.body.n)).toContain('b1');
  });
});
