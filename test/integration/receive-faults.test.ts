/**
 * R10 under DynamoDB's refusals: a receive that meets a throttle (past the SDK's retries) or a
 * conflicting transaction part-way answers with what it has taken, never discards it, and
 * leaves nothing locked behind a failed answer. The faults come from test/support/dynamo-faults.ts,
 * inside the SDK's retry loop of the handler's own client.
 */
import { describe, expect, it } from 'vitest';
import type { Deps } from '../../lib/deps.js';
import { apiClient, type Json } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { faultyStore, onOperations, seededRandom, type StoreCall, type StoreFaultPlan } from '../support/dynamo-faults.js';

/**
 * A fresh table with queue `q` (`props`) holding `n` messages m-0.., and an API whose store meets `plan` once armed.
 * `layout` pins the layout of the entities it makes (default-layout.ts).
 */
async function world(
  n: number,
  props: Record<string, unknown> = {},
  message: (i: number) => Record<string, unknown> = () => ({}),
  layout: Pick<Deps, 'newEntityLayout'> = {},
) {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  const deps = { ...(await testDeps(clock, 'receive-faults')), ...layout };
  const plan: StoreFaultPlan = {};
  const store = faultyStore(deps.db, plan, { fastRetries: true, random: seededRandom(7) });
  const api = apiClient({ ...deps, db: store.db });
  const healthy = apiClient(deps);
  expect((await healthy('PUT', '/queues/q', { lockDuration: 'PT5M', maxDeliveryCount: 10, ...props })).status).toBe(201);
  for (let i = 0; i < n; i += 100) {
    const messages = Array.from({ length: Math.min(100, n - i) }, (_, j) => ({ body: { id: `m-${i + j}` }, messageId: `m-${i + j}`, ...message(i + j) }));
    expect((await healthy('POST', '/queues/q/messages/batch', { messages })).status).toBe(201);
  }
  return { api, healthy, plan, log: store.log, clock };
}

/**
 * The world of a test whose faults strike today's receive calls (`indexLayout`): a lock or
 * delete of one message, an index row's expiry delete. A positioned receive takes its heads by
 * claims and tickets and never makes those calls.
 */
const indexWorld = (n: number, props: Record<string, unknown> = {}, message?: (i: number) => Record<string, unknown>) => world(n, props, message, indexLayout);

/** The nth call (1-based) of those `match` picks, and only it. */
const nthOf = (n: number, match: (c: StoreCall) => boolean) => {
  let seen = 0;
  return (c: StoreCall) => match(c) && ++seen === n;
};
/** A receive-and-delete's take: a session holder's plain delete, or another receiver's transaction of one delete. */
const deletesOfMessages = (c: StoreCall) =>
  (c.operation === 'DeleteItem' && c.input.ReturnValues === 'ALL_OLD' && /deliveryCount = :dc|sgen/.test(c.input.ConditionExpression)) ||
  (c.operation === 'TransactWriteItems' &&
    c.input.TransactItems.length === 1 &&
    /deliveryCount = :dc/.test(c.input.TransactItems[0].Delete?.ConditionExpression ?? ''));
const locksOfMessages = (c: StoreCall) => c.operation === 'UpdateItem' && /SET (lockToken|slk)/.test(c.input.UpdateExpression ?? '');

const ids = (messages: Json[]) => messages.map((m) => m.messageId as string);
const range = (n: number) => Array.from({ length: n }, (_, i) => `m-${i}`);

async function peekAll(api: ReturnType<typeof apiClient>): Promise<Json[]> {
  const res = await api('GET', '/queues/q/messages?maxMessages=100');
  expect(res.status).toBe(200);
  return res.body.messages;
}

describe('R10: a receive that meets a storage fault part-way', () => {
  it("R10: receive-and-delete of 20 whose 12th delete is throttled past the SDK's retries answers with the 11 taken, and the rest arrive later", async () => {
    const { api, plan, log } = await indexWorld(20);
    plan.throttle = { when: nthOf(12, deletesOfMessages) };
    const first = await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 20 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(log.throttledOut).toBe(1);
    expect(ids(first.body.messages)).toEqual(range(11));
    const second = await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 20 });
    expect(ids([...first.body.messages, ...second.body.messages])).toEqual(range(20));
  });

  it('R10: peek-lock of 20 whose 12th lock is throttled answers with the 11 locked and leaves the other 9 unlocked', async () => {
    const { api, healthy, plan } = await indexWorld(20);
    plan.throttle = { when: nthOf(12, locksOfMessages) };
    const first = await api('POST', '/queues/q/messages/receive', { maxMessages: 20 });
    expect(first.status).toBe(200);
    expect(ids(first.body.messages)).toEqual(range(11));
    const peeked = await peekAll(healthy);
    expect(peeked.map((m) => m.deliveryCount)).toEqual([...Array(11).fill(1), ...Array(9).fill(0)]);
    const second = await api('POST', '/queues/q/messages/receive', { maxMessages: 20 });
    expect(ids(second.body.messages)).toEqual(range(20).slice(11));
  });

  it('R10: a throttle before anything was taken answers 503 and changes nothing', async () => {
    const { api, healthy, plan } = await indexWorld(5);
    plan.throttle = { when: nthOf(1, deletesOfMessages) };
    const res = await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 5 });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'Throttled', retryable: true });
    expect(ids(await peekAll(healthy))).toEqual(range(5));
  });

  it('R10: a TransactionConflict on a candidate skips it, and the request answers with the others', async () => {
    const { api, plan, log } = await indexWorld(10);
    plan.conflict = { when: nthOf(3, deletesOfMessages) };
    const first = await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(first.status).toBe(200);
    expect(log.conflicted).toBe(1);
    expect(ids(first.body.messages)).toEqual(range(10).filter((id) => id !== 'm-2'));
    const second = await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(ids(second.body.messages)).toEqual(['m-2']);
  });

  it('R10: 200 messages received and deleted 20 at a time while a tenth of the deletes are throttled out all arrive, once', async () => {
    const { api, plan } = await world(200);
    plan.throttle = { when: deletesOfMessages, rate: 0.1 };
    const got: string[] = [];
    for (let calls = 0; calls < 100 && got.length < 200; calls++) {
      const res = await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 20 });
      expect([200, 503]).toContain(res.status);
      if (res.status === 200) got.push(...ids(res.body.messages));
    }
    expect(got.sort()).toEqual(range(200).sort());
  }, 60_000);

  it('R10: a session receive that meets a throttle part-way answers with what it took; the rest stays with the session', async () => {
    // Messages whose expiry falls within the session lock's end plus the record's margin are
    // taken one lock write each (T5), so a throttle can come part-way (PT5M: the lock's own length).
    const { api, healthy, plan } = await world(10, { requiresSession: true }, () => ({ sessionId: 's', timeToLive: 'PT5M' }));
    const accepted = await healthy('POST', '/queues/q/sessions/accept', { sessionId: 's' });
    const sessionLockToken = accepted.body.sessionLockToken;
    plan.throttle = { when: nthOf(4, locksOfMessages) };
    const first = await api('POST', '/queues/q/sessions/s/receive', { sessionLockToken, maxMessages: 10 });
    expect(first.status).toBe(200);
    expect(ids(first.body.messages)).toEqual(range(3));
    plan.throttle = undefined;
    plan.conflict = { when: nthOf(1, locksOfMessages) };
    const second = await api('POST', '/queues/q/sessions/s/receive', { sessionLockToken, maxMessages: 10 });
    expect(ids(second.body.messages)).toEqual(range(10).slice(4));
    const third = await api('POST', '/queues/q/sessions/s/receive', { sessionLockToken, maxMessages: 10 });
    expect(ids(third.body.messages)).toEqual(['m-3']);
  });

  it.each([
    ['the write of its record', (c: StoreCall) => c.operation === 'UpdateItem' && /held = :held/.test(c.input.UpdateExpression ?? '')],
    ['the read of the messages its record holds', onOperations('BatchGetItem')],
  ])(
    'R10/N3: a session receive by its record whose %s is throttled takes nothing: the next receive gets every message, delivered once',
    async (_what, when) => {
      const { api, healthy, plan, log } = await world(10, { requiresSession: true }, () => ({ sessionId: 's' }));
      const sessionLockToken = (await healthy('POST', '/queues/q/sessions/accept', { sessionId: 's' })).body.sessionLockToken;
      plan.throttle = { when: nthOf(1, when) };
      const first = await api('POST', '/queues/q/sessions/s/receive', { sessionLockToken, maxMessages: 10 });
      expect(first.status).not.toBe(200);
      expect(log.throttledOut).toBe(1);
      plan.throttle = undefined;
      const second = await api('POST', '/queues/q/sessions/s/receive', { sessionLockToken, maxMessages: 10 });
      expect(ids(second.body.messages)).toEqual(range(10));
      expect(second.body.messages.map((m: Json) => m.deliveryCount)).toEqual(Array(10).fill(1));
    },
  );

  it('R10: a deferred receive that meets a throttle part-way answers with what it locked; the rest stays deferred', async () => {
    const { api, healthy, plan } = await world(6);
    const taken = (await healthy('POST', '/queues/q/messages/receive', { maxMessages: 6 })).body.messages as Json[];
    for (const m of taken) expect((await healthy('POST', `/queues/q/messages/${m.sequenceNumber}/defer`, { lockToken: m.lockToken })).status).toBe(204);
    const seqs = taken.map((m) => m.sequenceNumber);
    plan.throttle = { when: nthOf(3, onOperations('UpdateItem')) };
    const first = await api('POST', '/queues/q/messages/deferred', { sequenceNumbers: seqs });
    expect(first.status).toBe(200);
    expect(ids(first.body.messages)).toEqual(range(2));
    const peeked = await peekAll(healthy);
    expect(peeked.map((m) => [m.state, m.deliveryCount])).toEqual([...Array(2).fill(['Deferred', 2]), ...Array(4).fill(['Deferred', 1])]);
    const second = await api('POST', '/queues/q/messages/deferred', { sequenceNumbers: seqs.slice(2) });
    expect(ids(second.body.messages)).toEqual(range(6).slice(2));
  });

  it('T4/R10: expired messages deleted on their index rows meet a throttle and a conflict: each live one arrives once, no expired one ever', async () => {
    const { api, plan, log, clock } = await indexWorld(15, {}, (i) => (i < 10 ? { timeToLive: 'PT1M' } : {}));
    clock.advance(2 * 60_000);
    const expiryDeletes = (c: StoreCall) => c.operation === 'DeleteItem' && /expiresAt <= :now/.test(c.input.ConditionExpression ?? '');
    plan.conflict = { when: nthOf(2, expiryDeletes) };
    plan.throttle = { when: nthOf(5, expiryDeletes) };

    // The page's expired rows are cleared before any take: the throttle fails the request with nothing taken.
    const first = await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 5 });
    expect(first.status, JSON.stringify(first.body)).toBe(503);
    expect(log.throttledOut).toBe(1);
    expect(log.conflicted).toBe(1);

    const got: Json[] = [];
    for (let i = 0; i < 3; i++) got.push(...(await api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 5 })).body.messages);
    expect(ids(got).sort()).toEqual(range(15).slice(10).sort());
    expect(await peekAll(api)).toEqual([]);
  });
});
