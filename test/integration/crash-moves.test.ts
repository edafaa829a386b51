/**
 * D3 crash safety: a mover (sweeper, API handler, stream consumer) dies half-way, simulated by
 * a `db` that throws on the Nth call of a chosen command, before or after DynamoDB carried
 * it out. After running the job again with a healthy client, every message is in exactly
 * one place, once. Also: movers racing each other over the same due messages.
 *
 * Every test gets its own table, so the sweeper's agenda and the fault counters see only
 * that test's messages.
 */
import { GetCommand, PutCommand, TransactWriteCommand, DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { createStreamHandler } from '../../functions/stream/handler.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { entityKey } from '../../lib/store/keys.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { indexLayout } from '../support/default-layout.js';
import type { Msg } from '../support/queue-helpers.js';
import { both, faultyDeps, inputOf, is, transactionConflict, type Fault } from '../support/faults.js';
import { messageItem, messageItems, streamEvent, ttlRemovalRecord } from '../support/stream.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

type Deps = Awaited<ReturnType<typeof testDeps>>;

const Q = 'crash';
const dlqPath = `/queues/${Q}/$deadletterqueue`;

/**
 * A fresh table with queue `crash` holding `n` messages (ids m-0..), `props` on the queue.
 * `layout` pins the layout of its entities (default-layout.ts).
 */
async function world(n: number, props: Record<string, unknown>, message: Record<string, unknown> = {}, layout: Pick<Deps, 'newEntityLayout'> = {}) {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  const deps = { ...(await testDeps(clock, 'crash')), ...layout };
  const api = apiClient(deps);
  expect((await api('PUT', `/queues/${Q}`, props)).status).toBe(201);
  const ids = Array.from({ length: n }, (_, i) => `m-${i}`);
  for (let i = 0; i < n; i += 100) {
    const res = await api('POST', `/queues/${Q}/messages/batch`, {
      messages: ids.slice(i, i + 100).map((id) => ({ body: { id }, messageId: id, ...message })),
    });
    expect(res.status).toBe(201);
  }
  return { clock, deps, api, ids };
}

/**
 * The world of a test of today's moves (`indexLayout`): its crashes and faults strike moves of
 * `msg/` items (the sweeper's, the stream consumer's, a resubmit's, a receive's expiry move) and
 * its checks count `msg/` items (`places`). A positioned queue's expired messages wait for the
 * quarter-hourly pass (T7) and move by other calls.
 */
const indexWorld = (n: number, props: Record<string, unknown>) => world(n, props, {}, indexLayout);

/** n messages that expired a minute ago in a queue that dead-letters on expiration. */
const expiredWorld = (n: number, layout: Pick<Deps, 'newEntityLayout'> = {}) =>
  world(n, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true }, {}, layout).then((w) => {
    w.clock.advance(2 * MINUTE);
    return w;
  });

/** Where each message is: how many stored copies in the queue and in its DLQ, by messageId. */
async function places(deps: Deps): Promise<Map<string, { main: number; dlq: number }>> {
  const out = new Map<string, { main: number; dlq: number }>();
  const at = (id: string) => out.get(id) ?? out.set(id, { main: 0, dlq: 0 }).get(id)!;
  for (const m of await messageItems(deps, Q, 'active')) at(m.messageId).main++;
  for (const m of await messageItems(deps, Q, 'deadletter')) at(m.messageId).dlq++;
  return out;
}

/** Every id is stored exactly once, in the DLQ, and nothing else is stored. */
async function expectAllOnceInDlq(deps: Deps, ids: string[]) {
  const where = await places(deps);
  expect([...where.keys()].sort()).toEqual([...ids].sort());
  const wrong = [...where].filter(([, p]) => p.main !== 0 || p.dlq !== 1);
  expect(wrong).toEqual([]);
}

const sweeperWith = (deps: Deps, fault: Fault) => createSweeperHandler(faultyDeps(deps, fault));
const isMessageGet = both(is(GetCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('msg/'));
const isMessagePut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('msg/'));
/** A TransactWriteItems that moves a message (not one the API makes for other bookkeeping). */
const isMessageMove = both(is(TransactWriteCommand), (c) =>
  ((inputOf(c).TransactItems ?? []) as Record<string, { Key?: { pk?: unknown }; Item?: { pk?: unknown } }>[]).some((t) =>
    Object.values(t).some((op) => String(op.Key?.pk ?? op.Item?.pk ?? '').startsWith('msg/')),
  ),
);

/** The write that stores a message copy, as a single put or inside a transaction. */
const isMessageWrite = (c: unknown) => isMessagePut(c as never) || isMessageMove(c as never);

describe('D3: the sweeper dies half-way', () => {
  it('D3: sweeper dies before the dead-letter TransactWriteItems: nothing moved; a healthy run moves each message once', async () => {
    // prepare
    const { deps, ids } = await expiredWorld(3, indexLayout);
    const crashing = sweeperWith(deps, { match: isMessageMove, nth: 2, phase: 'before' });
    // act
    await expect(crashing()).rejects.toThrow(/injected crash/);
    const between = await places(deps);
    await createSweeperHandler(deps)();
    // assess
    expect([...between.values()].every((p) => p.main + p.dlq === 1)).toBe(true);
    // The first move went through and the crashed one did not. The sweeper moves several
    // messages at once, so the third may have gone through beside them or not.
    const moved = [...between.values()].filter((p) => p.dlq === 1).length;
    expect(moved).toBeGreaterThanOrEqual(1);
    expect(moved).toBeLessThanOrEqual(2);
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3: sweeper dies right after its dead-letter TransactWriteItems committed: a healthy run moves the rest, no duplicate', async () => {
    const { deps, ids } = await expiredWorld(3, indexLayout);
    const crashing = sweeperWith(deps, { match: isMessageMove, nth: 2, phase: 'after' });
    await expect(crashing()).rejects.toThrow(/injected crash/);
    const between = await places(deps);
    // Both first moves committed (the second one crashed after); the third, moved at the same
    // time, may have committed too.
    expect([...between.values()].filter((p) => p.dlq === 1).length).toBeGreaterThanOrEqual(2);
    expect([...between.values()].every((p) => p.main + p.dlq === 1)).toBe(true);
    await createSweeperHandler(deps)();
    await createSweeperHandler(deps)();
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3: sweeper dies right after the GetItem of a due message: a healthy run moves each message once', async () => {
    const { deps, ids } = await expiredWorld(3, indexLayout);
    const crashing = sweeperWith(deps, { match: isMessageGet, nth: 2, phase: 'after' });
    await expect(crashing()).rejects.toThrow(/injected crash/);
    await createSweeperHandler(deps)();
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3/T6: sweeper dies right after deleting an expired message (no dead-lettering): a healthy run deletes the rest; nothing in the DLQ', async () => {
    const { deps, clock } = await indexWorld(3, { defaultMessageTimeToLive: 'PT1M' });
    clock.advance(2 * MINUTE);
    const crashing = sweeperWith(deps, { match: both(is(DeleteCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('msg/')), nth: 1, phase: 'after' });
    await expect(crashing()).rejects.toThrow(/injected crash/);
    await createSweeperHandler(deps)();
    expect(await places(deps)).toEqual(new Map());
  });

  it('D3/D2: sweeper dies in the MaxDeliveryCountExceeded move of a lapsed last lock: a healthy run moves it once', async () => {
    // Today's sweeper step (its ticketed twins: ticket-sweep-d2.test.ts).
    const { deps, api, clock, ids } = await indexWorld(1, { maxDeliveryCount: 1, lockDuration: 'PT5S' });
    const got = await api('POST', `/queues/${Q}/messages/receive`, {});
    expect(got.body.messages).toHaveLength(1);
    clock.advance(6 * SECOND);
    await expect(sweeperWith(deps, { match: isMessageMove, phase: 'before' })()).rejects.toThrow(/injected crash/);
    expect(await places(deps)).toEqual(new Map([['m-0', { main: 1, dlq: 0 }]]));
    await createSweeperHandler(deps)();
    await expectAllOnceInDlq(deps, ids);
    const [dead] = await messageItems(deps, Q, 'deadletter');
    expect(dead?.deadLetterReason).toBe('MaxDeliveryCountExceeded');
  });
});

describe('D3: an API call dies half-way', () => {
  it('D3/D2: abandon dies before its MaxDeliveryCountExceeded move: the message stays locked in the queue, and the sweeper moves it once when the lock runs out', async () => {
    // prepare
    // `places` reads today's items (a ticketed lapse's move in place: ticket-sweep-d2.test.ts).
    const { deps, clock, ids } = await indexWorld(1, { maxDeliveryCount: 1, lockDuration: 'PT30S' });
    const healthy = apiClient(deps);
    const crashing = apiClient(faultyDeps(deps, { match: isMessageMove, phase: 'before' }));
    const [m] = (await healthy('POST', `/queues/${Q}/messages/receive`, {})).body.messages as Msg[];
    // act
    const res = await crashing('POST', `/queues/${Q}/messages/${m.sequenceNumber}/abandon`, { lockToken: m.lockToken });
    // assess
    expect(res.status).toBe(500);
    expect(await places(deps)).toEqual(new Map([['m-0', { main: 1, dlq: 0 }]]));
    expect((await healthy('POST', `/queues/${Q}/messages/receive`, {})).body.messages).toEqual([]); // still locked
    clock.current = Date.parse(m.lockedUntil) + SECOND;
    await createSweeperHandler(deps)();
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3/D1: dead-letter dies right after its move committed: the client sees 500, a retry sees 410, the message is in the DLQ once', async () => {
    const { deps, ids } = await world(1, {});
    const healthy = apiClient(deps);
    const crashing = apiClient(faultyDeps(deps, { match: isMessageMove, phase: 'after' }));
    const [m] = (await healthy('POST', `/queues/${Q}/messages/receive`, {})).body.messages as Msg[];
    const first = await crashing('POST', `/queues/${Q}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken, deadLetterReason: 'r' });
    const retry = await healthy('POST', `/queues/${Q}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken, deadLetterReason: 'r' });
    expect(first.status).toBe(500);
    expect(retry.status).toBe(410);
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3/D7: resubmit dies half-way (before and after a move): calling again resubmits the rest; every message is in the queue once, the DLQ is empty', async () => {
    // prepare: 6 dead-lettered messages
    const { deps, ids } = await indexWorld(6, {});
    const healthy = apiClient(deps);
    const locked = (await healthy('POST', `/queues/${Q}/messages/receive`, { maxMessages: 6 })).body.messages as Msg[];
    for (const m of locked) {
      expect((await healthy('POST', `/queues/${Q}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken })).status).toBe(204);
    }
    // act
    const before = await apiClient(faultyDeps(deps, { match: isMessageMove, nth: 3, phase: 'before' }))('POST', `${dlqPath}/resubmit`, {});
    const after = await apiClient(faultyDeps(deps, { match: isMessageMove, nth: 2, phase: 'after' }))('POST', `${dlqPath}/resubmit`, {});
    const between = await places(deps);
    const rest = await healthy('POST', `${dlqPath}/resubmit`, {});
    // assess
    expect(before.status).toBe(500);
    expect(after.status).toBe(500);
    expect([...between.values()].every((p) => p.main + p.dlq === 1)).toBe(true);
    expect(rest.status).toBe(200);
    expect(rest.body.resubmitted).toBe(2); // 2 before the first crash, 2 in the second call, 2 left
    const where = await places(deps);
    expect([...where.keys()].sort()).toEqual([...ids].sort());
    expect([...where.values()].every((p) => p.main === 1 && p.dlq === 0)).toBe(true);
  });
});

describe('D3: the stream consumer dies half-way', () => {
  it('D3/T6: the consumer dies right after putting the dead-letter copy of a TTL removal: the record fails, its retry adds no second copy', async () => {
    // prepare
    const { deps, clock, ids } = await indexWorld(1, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const [item] = await messageItems(deps, Q, 'active');
    clock.advance(2 * MINUTE);
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: item!.pk, sk: item!.sk } }));
    const record = ttlRemovalRecord(item as MessageItem, 'aws', { at: clock.now() });
    const crashing = createStreamHandler(faultyDeps(deps, { match: isMessageWrite, phase: 'after' }));
    // act
    const first = await crashing(streamEvent(record));
    const retry = await createStreamHandler(deps)(streamEvent(record));
    // assess
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: record.dynamodb!.SequenceNumber }]);
    expect(retry.batchItemFailures).toEqual([]);
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3/T6: the consumer dies before putting the dead-letter copy: the record fails, its retry puts exactly one copy', async () => {
    const { deps, clock, ids } = await indexWorld(1, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const [item] = await messageItems(deps, Q, 'active');
    clock.advance(2 * MINUTE);
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: item!.pk, sk: item!.sk } }));
    const record = ttlRemovalRecord(item as MessageItem, 'local', { at: clock.now() });
    const first = await createStreamHandler(faultyDeps(deps, { match: isMessageWrite, phase: 'before' }))(streamEvent(record));
    expect(first.batchItemFailures).toHaveLength(1);
    expect(await places(deps)).toEqual(new Map()); // between: the message is nowhere yet, but the record is kept for the retry
    const retry = await createStreamHandler(deps)(streamEvent(record));
    expect(retry.batchItemFailures).toEqual([]);
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3: a TTL removal racing the sweeper on the same expired message: exactly one DLQ copy', async () => {
    // the sweeper read the item, then DynamoDB's TTL removed it before the sweeper's move
    const { deps, clock, ids } = await indexWorld(1, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    clock.advance(2 * MINUTE);
    const item = (await messageItems(deps, Q, 'active'))[0]!;
    let removal: ReturnType<typeof ttlRemovalRecord> | undefined;
    const sweeperDeps = faultyDeps(deps, {
      match: isMessageGet,
      phase: 'after',
      interleave: async () => {
        await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: item.pk, sk: item.sk } }));
        removal = ttlRemovalRecord(item, 'aws', { at: clock.now() });
      },
    });
    // act
    await createSweeperHandler(sweeperDeps)();
    expect(removal).toBeDefined();
    const out = await createStreamHandler(deps)(streamEvent(removal!));
    // assess
    expect(out.batchItemFailures).toEqual([]);
    await expectAllOnceInDlq(deps, ids);
    expect(await messageItem(deps, Q, 'active', item.sk)).toBeUndefined();
  });
});

describe('D3: movers racing', () => {
  it('D3/T7: two sweepers racing over 50 expired messages: every message ends in the DLQ exactly once, and both runs finish without error', async () => {
    // prepare
    const { deps, ids } = await expiredWorld(50, indexLayout);
    // act
    const results = await Promise.allSettled([createSweeperHandler(deps)(), createSweeperHandler(deps)()]);
    await createSweeperHandler(deps)(); // whatever a failed racer left is due again
    // assess
    await expectAllOnceInDlq(deps, ids);
    const errors = results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error)?.message ?? r.reason)] : []));
    expect(errors).toEqual([]);
  });

  it('D3/T4: receives (peek-lock and receive-and-delete) racing the sweeper on 20 expired messages return none of them; each ends in the DLQ once', async () => {
    // prepare
    const { deps, api, ids } = await expiredWorld(20);
    const api2 = apiClient(deps);
    // act
    const [swept, peekLock, receiveAndDelete] = await Promise.allSettled([
      createSweeperHandler(deps)(),
      api('POST', `/queues/${Q}/messages/receive`, { mode: 'peekLock', maxMessages: 20 }),
      api2('POST', `/queues/${Q}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 20 }),
    ]);
    await createSweeperHandler(deps)(); // finishes whatever a failed racer left
    // assess
    await expectAllOnceInDlq(deps, ids);
    expect(swept.status).toBe('fulfilled');
    for (const r of [peekLock, receiveAndDelete]) {
      expect(r.status).toBe('fulfilled');
      if (r.status === 'fulfilled') {
        expect(r.value.status).toBe(200);
        expect(r.value.body.messages).toEqual([]);
      }
    }
  });

  it('D3/T4: two receivers racing on expired messages (no sweeper): none is delivered, each ends in the DLQ once', async () => {
    const { deps, ids } = await expiredWorld(10);
    const [a, b] = await Promise.all([
      apiClient(deps)('POST', `/queues/${Q}/messages/receive`, { maxMessages: 10 }),
      apiClient(deps)('POST', `/queues/${Q}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 10 }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([...a.body.messages, ...b.body.messages]).toEqual([]);
    await expectAllOnceInDlq(deps, ids);
  });

  it('D3/B1/T4: a receive whose expiry move loses a TransactionConflict to a concurrent mover answers without the message, and not with a 500', async () => {
    // prepare: on AWS, two transactions on one item in flight at once: one wins, the other is
    // cancelled with TransactionConflict. Here the competing mover (another receive) wins.
    const { deps, ids } = await expiredWorld(1, indexLayout);
    const rival = apiClient(deps);
    const loser = apiClient(
      faultyDeps(deps, {
        match: isMessageMove,
        phase: 'before',
        interleave: async () => {
          const won = await rival('POST', `/queues/${Q}/messages/receive`, {});
          expect(won.status).toBe(200);
          throw transactionConflict();
        },
      }),
    );
    // act
    const res = await loser('POST', `/queues/${Q}/messages/receive`, { maxMessages: 5 });
    // assess
    await expectAllOnceInDlq(deps, ids);
    expect([200, 503]).toContain(res.status); // nothing to deliver, or "busy, retry" (B1); never an internal error
    if (res.status === 200) expect(res.body.messages).toEqual([]);
    else expect(res.headers['retry-after']).toBeDefined();
  });
});

describe('D3: movers racing on a ticketed queue', () => {
  it('D3/B1/T4: on a ticketed queue, a receive whose expiry move meets a TransactionConflict answers without the message, and not with a 500; it is moved once', async () => {
    // prepare: the twin of the test above on a ticketed queue (positioned-expiry.test.ts has
    // the move refused for load). The rival receive runs while the loser's move is in flight,
    // then the move is cancelled with TransactionConflict, as when two transactions meet.
    const { deps, ids, clock } = await expiredWorld(1, { newEntityLayout: 'tickets' });
    const entity = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', Q) }));
    expect(entity.Item).toMatchObject({ layout: 'positions', ticketed: true });
    const rival = apiClient(deps);
    let rivalGot: Msg[] | undefined;
    const loser = apiClient(
      faultyDeps(deps, {
        match: isMessageMove,
        phase: 'before',
        interleave: async () => {
          const res = await rival('POST', `/queues/${Q}/messages/receive`, {});
          expect(res.status).toBe(200);
          rivalGot = res.body.messages;
          throw transactionConflict();
        },
      }),
    );
    // act
    const res = await loser('POST', `/queues/${Q}/messages/receive`, { maxMessages: 5 });
    // assess: neither answer hands the expired message out, and the loser's is no internal
    // error (B1): the rival finds it held by the loser, and the loser answers nothing.
    expect(rivalGot).toEqual([]);
    expect(res.status).toBe(200);
    expect(res.body.messages).toEqual([]);
    expect((await rival('GET', `${dlqPath}/messages?maxMessages=10`)).body.messages).toEqual([]);
    // The message the conflict left under the loser's hold is moved once its lock runs out (T6).
    clock.advance(5 * MINUTE);
    expect((await rival('POST', `/queues/${Q}/messages/receive`, {})).body.messages).toEqual([]);
    const dlq = await rival('GET', `${dlqPath}/messages?maxMessages=10`);
    expect(dlq.body.messages.map((m: Msg) => m.messageId)).toEqual(ids);
    await expectAllOnceInDlq(deps, ids);
  });
});
