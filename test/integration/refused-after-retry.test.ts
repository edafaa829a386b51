/**
 * A settlement whose write the SDK tried more than once, and whose attempts met different
 * refusals: the last answer alone does not say what happened to the write.
 *
 * - Throttled at its first attempts, then refused on its condition at the last: the throttles
 *   applied nothing, so the refusal is another writer's doing. A complete whose message was
 *   taken and removed meanwhile is MessageLockLost (R5), never taken for its own landed delete.
 * - Landed at its first attempt (the answer lost, a 500), then a conflict at the retry: the
 *   write may have been applied, so the answer is never the retryable Throttled that says
 *   nothing changed (a client that trusts it takes the message for still locked). The
 *   settlement reads its message back and answers as it finds it (R4, R10).
 *
 * Through the API on DynamoDB Local, on each layout, the faults injected inside the SDK's retry
 * loop (test/support/dynamo-faults.ts); time from the ManualClock.
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, isWrite, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const LOCK_MS = 30_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

/** True the `nth` time it is asked about a write (1-based), and at no other: one attempt of one write. */
const nthWrite = (nth: number) => {
  let seen = 0;
  return (c: Parameters<typeof isWrite>[0]) => isWrite(c) && ++seen === nth;
};

async function world(layout: NewEntityLayout, prefix: string) {
  const deps = { ...(await testDeps(clock, prefix)), newEntityLayout: layout };
  const api = apiClient(deps);
  const queue = `/queues/${prefix}`;
  expect((await api('PUT', queue, { lockDuration: 'PT30S' })).status).toBe(201);
  const through = (plan: StoreFaultPlan) => apiClient({ ...deps, db: faultyStore(deps.db, plan, { fastRetries: true }).db });
  const sendAndLock = async (n: string): Promise<Json> => {
    expect((await api('POST', `${queue}/messages`, { body: { n }, messageId: n })).status).toBe(201);
    const got = await api('POST', `${queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
    expect(got.body.messages.map((m: Json) => m.body.n)).toEqual([n]);
    return got.body.messages[0];
  };
  return { api, queue, through, sendAndLock };
}

describe.each(['index', 'tickets', 'positions'] as NewEntityLayout[])('a settlement refused after a retry, on the %s layout', (layout) => {
  it('R5: a complete throttled at first, whose message was received and deleted meanwhile, is MessageLockLost', async () => {
    const w = await world(layout, `rar${layout}5`);
    const held = await w.sendAndLock('taken');
    clock.advance(LOCK_MS + 1);
    const other = await w.api('POST', `${w.queue}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 1, maxWaitTime: 'PT0S' });
    expect(other.body.messages.map((m: Json) => m.body.n)).toEqual(['taken']);

    // Every write's first two attempts throttled: the SDK's third meets the message gone.
    const throttled = w.through({ throttle: { when: isWrite, attempts: 2 } });
    const late = await throttled('POST', `${w.queue}/messages/${held.sequenceNumber}/complete`, { lockToken: held.lockToken });
    expect(late.status, JSON.stringify(late.body)).toBe(410);
    expect(late.body.error.code).toBe('MessageLockLost');
  });

  it('R4, R10: a complete whose write landed, its answer lost, and whose retry met a conflict is answered completed', async () => {
    const w = await world(layout, `rar${layout}c`);
    const held = await w.sendAndLock('completed');

    // The complete's first write lands and its answer is lost; the SDK's second attempt meets a transaction in flight.
    const landedThenConflict = w.through({ retried: { when: nthWrite(1) }, conflict: { when: nthWrite(2) } });
    const done = await landedThenConflict('POST', `${w.queue}/messages/${held.sequenceNumber}/complete`, { lockToken: held.lockToken });
    expect(done.status, JSON.stringify(done.body)).toBe(204);

    // Whatever it answered, the message was completed: nothing comes back once the lock is over.
    clock.advance(LOCK_MS + 1);
    const after = await w.api('POST', `${w.queue}/messages/receive`, { maxMessages: 10, maxWaitTime: 'PT0S' });
    expect(after.body.messages).toEqual([]);
  });
});

describe('a session message settled under its session lock, refused after a retry', () => {
  async function sessionWorld(prefix: string) {
    const deps = await testDeps(clock, prefix);
    const api = apiClient(deps);
    const queue = `/queues/${prefix}`;
    expect((await api('PUT', queue, { requiresSession: true, lockDuration: 'PT30S' })).status).toBe(201);
    expect((await api('POST', `${queue}/messages`, { body: { n: 'held' }, messageId: 'held', sessionId: 's' })).status).toBe(201);
    const accepted = await api('POST', `${queue}/sessions/accept`, { sessionId: 's' });
    const sessionLockToken = accepted.body.sessionLockToken as string;
    const got = await api('POST', `${queue}/sessions/s/receive`, { sessionLockToken, maxMessages: 1, maxWaitTime: 'PT0S' });
    expect(got.body.messages.map((m: Json) => m.body.n)).toEqual(['held']);
    const through = (plan: StoreFaultPlan) => apiClient({ ...deps, db: faultyStore(deps.db, plan, { fastRetries: true }).db });
    return { api, queue, sessionLockToken, held: got.body.messages[0] as Json, through };
  }

  it.each([['complete'], ['abandon']])('N4, R4: %s, its write landed, its answer lost, and its retry met a conflict: answered as made', async (action) => {
    const w = await sessionWorld(`rars${action}`);
    const landedThenConflict = w.through({ retried: { when: nthWrite(1) }, conflict: { when: nthWrite(2) } });
    const made = await landedThenConflict('POST', `${w.queue}/messages/${w.held.sequenceNumber}/${action}`, {
      lockToken: w.held.lockToken,
    });
    expect(made.status, JSON.stringify(made.body)).toBe(204);
    // Completed, nothing is left to receive; abandoned, the message is there again at once.
    const after = await w.api('POST', `${w.queue}/sessions/s/receive`, { sessionLockToken: w.sessionLockToken, maxMessages: 10, maxWaitTime: 'PT0S' });
    expect(after.body.messages.map((m: Json) => m.body.n)).toEqual(action === 'complete' ? [] : ['held']);
  });
});
