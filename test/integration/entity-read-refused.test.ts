/**
 * A send or a settlement writes beside the read of its entity that decides its answer (E4): the
 * write may be made by the time the store refuses that read for load (throttled past the SDK's
 * retries). The request then reads once more; refused again, it never answers with the
 * retryable Throttled that says nothing was written (S1, S4, R4): a settlement that was made
 * answers a 500 (it may have been applied), and so does a send whose message stays because its
 * take-back was refused too. Real DynamoDB Local; the refusals injected inside the SDK's retry
 * loop (test/support/dynamo-faults.ts).
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { QUEUES_PK } from '../../lib/store/keys.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const LOCK_MS = 30_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

/** A read of a queue's entity item. */
const entityRead = (c: StoreCall) => c.operation === 'GetItem' && c.input.Key?.pk?.S === QUEUES_PK;
/** True, once `armed`, for the first `n` calls `when` chooses. */
const first = (n: number, when: (c: StoreCall) => boolean) => (armed: () => boolean) => {
  let seen = 0;
  return (c: StoreCall) => armed() && when(c) && ++seen <= n;
};
/** Every call `when` chooses, once `armed`. */
const every = (when: (c: StoreCall) => boolean) => (armed: () => boolean) => (c: StoreCall) => armed() && when(c);
type Choose = (armed: () => boolean) => (c: StoreCall) => boolean;

async function world(layout: NewEntityLayout, name: string) {
  const deps = { ...(await testDeps(clock, `erf${layout}`)), newEntityLayout: layout };
  const api = apiClient(deps);
  const queue = `/queues/${name}`;
  expect((await api('PUT', queue, { lockDuration: 'PT30S' })).status).toBe(201);
  /**
   * An API of a process of its own whose calls meet `plan` once `arm` is called: before, it reads
   * the entity as any request does, so its next request may act on what it saw (recentEntity).
   */
  const through = (plan: (armed: () => boolean) => StoreFaultPlan) => {
    let armed = false;
    const store = faultyStore(
      deps.db,
      plan(() => armed),
      { fastRetries: true },
    );
    return { api: apiClient({ ...deps, db: store.db }), arm: () => (armed = true) };
  };
  /** Every message the queue hands out once its locks are over, each completed. */
  const drain = async (): Promise<string[]> => {
    clock.advance(LOCK_MS + 10_000);
    const got = await api('POST', `${queue}/messages/receive`, { maxMessages: 10, maxWaitTime: 'PT0S' });
    for (const m of got.body.messages as Json[])
      expect((await api('POST', `${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    return (got.body.messages as Json[]).map((m) => m.body.n as string);
  };
  const sendOne = (using: typeof api, n: string) => using('POST', `${queue}/messages`, { body: { n }, messageId: n });
  return { api, queue, through, drain, sendOne };
}

describe.each(['index', 'tickets', 'positions'] as NewEntityLayout[])('a complete whose entity read is refused, on the %s layout', (layout) => {
  /** A complete, by the process that received the message, whose entity reads `refused` chooses are throttled. */
  const complete = async (name: string, refused: Choose) => {
    const w = await world(layout, name);
    expect((await w.sendOne(w.api, 'settled')).status).toBe(201);
    const { api, arm } = w.through((armed) => ({ throttle: { when: refused(armed) } }));
    const got = await api('POST', `${w.queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
    const [m] = got.body.messages as Json[];
    arm();
    const done = await api('POST', `${w.queue}/messages/${m!.sequenceNumber}/complete`, { lockToken: m!.lockToken });
    return { done, left: await w.drain() };
  };

  it('R4, E4: refused once, the entity is read again and the complete answered', async () => {
    const { done, left } = await complete(`once${layout}`, first(1, entityRead));
    expect(done.status, JSON.stringify(done.body)).toBe(204);
    expect(left).toEqual([]);
  });

  it('R4: refused every time, a complete that was made is not answered Throttled', async () => {
    const { done, left } = await complete(`always${layout}`, every(entityRead));
    expect(done.status, JSON.stringify(done.body)).toBe(500);
    expect(done.body.error.retryable).toBe(true);
    expect(left).toEqual([]);
  });
});

describe('a send written ahead of its entity read, the read refused', () => {
  /** A take-back of a message written ahead (store/messages.ts `takeBackNewMessage`). */
  const takeBack = (c: StoreCall) => c.operation === 'DeleteItem' && String(c.input.ConditionExpression).includes('deliveryCount');

  /** A send whose calls `refused` chooses are throttled, by a process that sent a moment ago: it writes before its own read answers. */
  const sendAhead = async (name: string, refused: Choose) => {
    const w = await world('index', name);
    const { api, arm } = w.through((armed) => ({ throttle: { when: refused(armed) } }));
    expect((await w.sendOne(api, 'before')).status).toBe(201);
    arm();
    const sent = await w.sendOne(api, 'ahead');
    return { sent, left: (await w.drain()).sort() };
  };

  it('S1, E4: refused once, the entity is read again and the message acknowledged', async () => {
    const { sent, left } = await sendAhead('aheadonce', first(1, entityRead));
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(left).toEqual(['ahead', 'before']);
  });

  it('S4, E4: refused every time, the message is taken back and the send answered Throttled', async () => {
    const { sent, left } = await sendAhead('aheadback', every(entityRead));
    expect(sent.status, JSON.stringify(sent.body)).toBe(503);
    expect(left).toEqual(['before']);
  });

  it('S1, S4: refused every time and its take-back refused, the message stays and the send is not answered Throttled', async () => {
    const { sent, left } = await sendAhead(
      'aheadstays',
      every((c) => entityRead(c) || takeBack(c)),
    );
    expect(sent.status, JSON.stringify(sent.body)).toBe(500);
    expect(sent.body.error.retryable).toBe(true);
    expect(left).toEqual(['ahead', 'before']);
  });

  it('S1, S4: a batch so refused, its take-backs refused too, is not answered Throttled', async () => {
    const w = await world('index', 'batchstays');
    const { api, arm } = w.through((armed) => ({ throttle: { when: every((c) => entityRead(c) || takeBack(c))(armed) } }));
    expect((await w.sendOne(api, 'before')).status).toBe(201);
    arm();
    const sent = await api('POST', `${w.queue}/messages/batch`, { messages: ['a1', 'a2'].map((n) => ({ body: { n }, messageId: n })) });
    expect(sent.status, JSON.stringify(sent.body)).toBe(500);
    expect((await w.drain()).sort()).toEqual(['a1', 'a2', 'before']);
  });
});
