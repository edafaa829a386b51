/**
 * A complete of session messages, single or batch (R4, R9, N4): the session lock the messages
 * were taken under is read once, consistently, and each message is then deleted with a plain
 * conditional delete on its own lock; past the end of the lock the read saw, the rest go in a
 * transaction with the lock's check. Each token gets its own answer: a message settled
 * meanwhile fails alone, a lost session lock fails them all and changes nothing, a conflict or
 * a throttle on one message is a retryable answer for that one, and a crash at any step settles
 * each message exactly once. What may happen to the session between the read and the deletes
 * (a release, a lapse, a next holder on a clock ahead) never completes a message another holder
 * took. A complete reads one message per session lock, eventually consistently (the others go
 * along under that lock, unread); a read that lags the take is read again consistently.
 */
import { ProvisionedThroughputExceededException, TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createBroker, type Broker } from '../support/broker.js';
import { mayHaveLanded } from '../../lib/store/outcomes.js';
import { faultyStore, onOperations, type StoreCall } from '../support/dynamo-faults.js';
import { both, faultyDeps, InjectedCrash, inputOf, is, type Fault } from '../support/faults.js';
import { sessionQueues, type Api, type Deps } from '../support/session-queues.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;

const { clock, open, queue } = sessionQueues();
let deps: Deps;
let api: Api;
let broker: Broker;
let counter = 0;

beforeAll(async () => ({ deps, api, broker } = await open('sessbatchcomplete')));

/** A session queue whose sessions (`sessionId` -> count) hold that many messages, bodies 0.. in order. */
async function sessionQueue(sessions: Record<string, number>): Promise<string> {
  const q = `bc${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
  for (const [sessionId, count] of Object.entries(sessions)) {
    const messages = Array.from({ length: count }, (_, i) => ({ body: i, sessionId }));
    for (let i = 0; i < messages.length; i += 100)
      expect((await api('POST', `/queues/${q}/messages/batch`, { messages: messages.slice(i, i + 100) })).status).toBe(201);
  }
  return q;
}

/** Accepts `sessionId` and receives up to `max` of its messages. */
async function take(q: string, sessionId: string, max = 100): Promise<{ lock: string; got: Msg[] }> {
  const { sessionLockToken } = await broker.acceptSession(queue(q), { sessionId });
  const got = (await broker.receiveFromSession(queue(q), sessionId, { sessionLockToken, maxMessages: max })) as Msg[];
  return { lock: sessionLockToken, got };
}

const codes = (results: Awaited<ReturnType<Broker['settleBatch']>>) => results.map((r) => ('error' in r ? r.error.code : 'ok'));

/** Whether a call is a consistent read of a session item, a message's delete, or a transaction. */
const isSessionRead = both(is(GetCommand), (c) => inputOf(c).ConsistentRead === true && String(inputOf(c).Key?.pk ?? '').startsWith('sess/'));
const isMessageDelete = both(is(DeleteCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('msg/'));
/** The message `m`'s sort key (its sequence number, 19 digits). */
const skOf = (m: Msg) => String(m.sequenceNumber).padStart(19, '0');
/**
 * The delete of the message `m` holds, found by its key: a message its session's record holds
 * is deleted on its delivery count, not a stored token, so the condition need not name the token.
 */
const deleteOf = (m: Msg) => both(isMessageDelete, (c) => inputOf(c).Key?.sk === skOf(m));

/** A broker whose session reads, message deletes and transactions are counted, and whose calls `fault` picks are faulted. */
function countingBroker(fault?: Fault) {
  const log = { sessionReads: 0, deletes: 0, transactions: 0 };
  const faulty = fault ? faultyDeps(deps, fault) : deps;
  const send = faulty.db.send.bind(faulty.db) as (c: unknown) => Promise<unknown>;
  const db = new Proxy(faulty.db, {
    get(target, prop) {
      if (prop !== 'send') return Reflect.get(target, prop, target) as unknown;
      return async (command: unknown) => {
        if (isSessionRead(command)) log.sessionReads++;
        if (isMessageDelete(command)) log.deletes++;
        if (command instanceof TransactWriteCommand) log.transactions++;
        return send(command);
      };
    },
  });
  return { b: createBroker({ ...faulty, db }), log };
}

/** A cancelled TransactWriteItems with these reasons, one per part (the messages, then the session lock). */
const cancelled = (reasons: string[]) =>
  new TransactionCanceledException({
    $metadata: { httpStatusCode: 400 },
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.join(', ')}]`,
    CancellationReasons: reasons.map((Code) => ({ Code })),
  });

const conflict = () => new TransactionConflictException({ $metadata: { httpStatusCode: 400 }, message: 'injected: transaction is ongoing for the item' });

describe('R9/N4: a complete reads each session lock once and deletes its messages without a transaction', () => {
  it('R9/N4: ten messages of one session: one read of the session lock, ten deletes; malformed, unknown and repeated tokens get their own answers', async () => {
    const q = await sessionQueue({ a: 10 });
    const { got } = await take(q, 'a');
    expect(got).toHaveLength(10);
    const unknown = `${got[0].lockToken.slice(0, 24)}000000000000`;
    const { b, log } = countingBroker();
    const results = await b.settleBatch(queue(q), 'complete', { lockTokens: [...got.map((m) => m.lockToken), 'not-a-token', unknown, got[4].lockToken] });
    expect(codes(results)).toEqual([...Array(10).fill('ok'), 'BadRequest', 'MessageLockLost', 'MessageLockLost']);
    expect(log).toEqual({ sessionReads: 1, deletes: 10, transactions: 0 });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R9/N4: messages of two sessions in one batch: one read per session lock, all completed; messages of the other session go along once, refused', async () => {
    const q = await sessionQueue({ a: 3, b: 2 });
    const a = await take(q, 'a');
    const other = await take(q, 'b');
    const { b, log } = countingBroker();
    const tokens = [a.got[0], other.got[0], a.got[1], other.got[1], a.got[2]].map((m) => m.lockToken);
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(Array(5).fill('ok'));
    // Under a's lock (read from a's first message) all five are tried; b's two are refused, then read and completed under b's.
    expect(log).toEqual({ sessionReads: 2, deletes: 7, transactions: 0 });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N4: a batch mixing a held and a released session lock: tokens under the released one are SessionLockLost and change nothing, those under the held one complete', async () => {
    const q = await sessionQueue({ a: 2, b: 1 });
    const released = await take(q, 'a');
    await broker.releaseSession(queue(q), 'a', { sessionLockToken: released.lock });
    const held = await take(q, 'b');
    const { b, log } = countingBroker();
    const tokens = [held.got[0], ...released.got].map((m) => m.lockToken);
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(['ok', 'SessionLockLost', 'SessionLockLost']);
    // a's two go along under b's lock and are refused; a's lock is read once and found released.
    expect(log).toEqual({ sessionReads: 2, deletes: 3, transactions: 0 });
    expect((await broker.peek(queue(q), {})).map((m) => [m.body, m.sessionId, m.deliveryCount])).toEqual([
      [0, 'a', 1],
      [1, 'a', 1],
    ]);
  });

  it('R9: a hundred messages of one session: one read of the lock, a hundred deletes', async () => {
    const q = await sessionQueue({ big: 100 });
    const { got } = await take(q, 'big');
    expect(got).toHaveLength(100);
    const { b, log } = countingBroker();
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) }))).toEqual(Array(100).fill('ok'));
    expect(log).toEqual({ sessionReads: 1, deletes: 100, transactions: 0 });
    expect(await broker.peek(queue(q), { maxMessages: '100' })).toEqual([]);
  });

  it('R4/N4: a single complete: one read of the session lock and one delete, no transaction', async () => {
    const q = await sessionQueue({ a: 1 });
    const { got } = await take(q, 'a');
    const { b, log } = countingBroker();
    await b.settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken });
    expect(log).toEqual({ sessionReads: 1, deletes: 1, transactions: 0 });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N4: a message settled while the batch was under way fails alone (MessageLockLost); the others are completed', async () => {
    const q = await sessionQueue({ a: 4 });
    const { got } = await take(q, 'a');
    // Between the batch's reads and its deletes, message 2 is completed on its own.
    const { b, log } = countingBroker({
      match: isSessionRead,
      phase: 'after',
      interleave: async () => void (await broker.settle(queue(q), got[2].sequenceNumber, 'complete', { lockToken: got[2].lockToken })),
    });
    const results = await b.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) });
    expect(codes(results)).toEqual(['ok', 'ok', 'MessageLockLost', 'ok']);
    expect(log).toEqual({ sessionReads: 1, deletes: 4, transactions: 0 });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N4: the session lock released before the batch read it: every token is SessionLockLost and nothing changes', async () => {
    const q = await sessionQueue({ a: 3 });
    const { lock, got } = await take(q, 'a');
    const { b, log } = countingBroker({ match: isSessionRead, interleave: async () => broker.releaseSession(queue(q), 'a', { sessionLockToken: lock }) });
    const results = await b.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) });
    expect(codes(results)).toEqual(Array(3).fill('SessionLockLost'));
    expect(log.deletes).toBe(0);
    expect((await broker.peek(queue(q), {})).map((m) => [m.body, m.state, m.deliveryCount])).toEqual([
      [0, 'Active', 1],
      [1, 'Active', 1],
      [2, 'Active', 1],
    ]);
  });

  it('N4: after the session lock lapsed, a batch of its messages is SessionLockLost for every token', async () => {
    const q = await sessionQueue({ a: 2 });
    const { got } = await take(q, 'a');
    clock.advance(61_000);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) }))).toEqual(['SessionLockLost', 'SessionLockLost']);
    expect(await broker.peek(queue(q), {})).toHaveLength(2);
  });
});

describe('N4: what may happen to the session between the read of its lock and the deletes', () => {
  /** Session `a` of a fresh queue with `n` messages, taken by a first holder, and a broker whose read of the session lock is followed by `then`. */
  async function heldThen(n: number, then: (q: string, first: { lock: string; got: Msg[] }) => Promise<void>) {
    const q = await sessionQueue({ a: n });
    const first = await take(q, 'a');
    const { b, log } = countingBroker({ match: isSessionRead, phase: 'after', interleave: async () => then(q, first) });
    return { q, first, b, log };
  }

  it('N4: the holder releases the lock while its own complete is under way: the complete is ordered first; the next holder gets none of those messages', async () => {
    const { q, first, b } = await heldThen(3, async (q, first) => broker.releaseSession(queue(q), 'a', { sessionLockToken: first.lock }));
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: first.got.map((m) => m.lockToken) }))).toEqual(['ok', 'ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
    await expect(broker.acceptSession(queue(q), { maxWaitTime: 'PT0S' })).rejects.toMatchObject({ code: 'ServiceTimeout' });
  });

  it('N4: the lock lapses and another receiver accepts the session: past the lock end the read saw, the check goes in a transaction, SessionLockLost, nothing changes', async () => {
    let next = '';
    const { q, first, b, log } = await heldThen(2, async (q) => {
      clock.advance(61_000);
      next = (await broker.acceptSession(queue(q), { sessionId: 'a' })).sessionLockToken;
    });
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: first.got.map((m) => m.lockToken) }))).toEqual(['SessionLockLost', 'SessionLockLost']);
    expect(log).toEqual({ sessionReads: 1, deletes: 0, transactions: 1 });
    const again = (await broker.receiveFromSession(queue(q), 'a', { sessionLockToken: next, maxMessages: 5 })) as Msg[];
    expect(again.map((m) => [m.body, m.deliveryCount])).toEqual([
      [0, 2],
      [1, 2],
    ]);
  });

  it('N4: the holder renews past the lock end the read saw: the late deletes go in a transaction under the renewed lock and complete', async () => {
    const { q, first, b, log } = await heldThen(2, async (q, first) => {
      clock.advance(50_000);
      await broker.renewSessionLock(queue(q), 'a', { sessionLockToken: first.lock });
      clock.advance(20_000);
    });
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: first.got.map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    expect(log).toEqual({ sessionReads: 1, deletes: 0, transactions: 1 });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N4, R4: the late transaction lands unanswered and its retry meets a conflict: not Throttled, which says nothing changed', async () => {
    const q = await sessionQueue({ a: 2 });
    const first = await take(q, 'a');
    let attempts = 0;
    let landed = false;
    const isLate = (c: StoreCall) => c.operation === 'TransactWriteItems';
    // The transaction's first attempt lands and loses its answer; the SDK's retry meets a conflict.
    const store = faultyStore(
      deps.db,
      { retried: { when: (c) => isLate(c) && !landed && (landed = true) }, conflict: { when: (c) => isLate(c) && ++attempts === 2 } },
      { fastRetries: true },
    );
    const renewing = faultyDeps(
      { ...deps, db: store.db },
      {
        match: isSessionRead,
        phase: 'after',
        afterwards: 'lives',
        interleave: async () => {
          clock.advance(50_000);
          await broker.renewSessionLock(queue(q), 'a', { sessionLockToken: first.lock });
          clock.advance(20_000);
        },
      },
    );
    const answered = await createBroker(renewing)
      .settleBatch(queue(q), 'complete', { lockTokens: first.got.map((m) => m.lockToken) })
      .then(codes, (e: unknown) => e);
    expect(store.log.retried).toBe(1);
    expect(store.log.conflicted).toBe(1);
    // Applied: a failure that may have landed (the API's retryable 500), never a Throttled answer.
    expect(mayHaveLanded(answered)).toBe(true);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  /** This broker's clock behind the other receiver's: the lock has lapsed for the other, not yet for this one. */
  async function behind(ms: number, other: () => Promise<void>) {
    clock.advance(ms);
    await other();
    clock.advance(-ms);
  }

  it('N3/N4: a clock behind the next holder, which accepted and took the messages again meanwhile: the deletes fail (MessageLockLost); the next holder completes them', async () => {
    let next = { lock: '', got: [] as Msg[] };
    const { q, first, b } = await heldThen(2, async (q) => behind(61_000, async () => void (next = await take(q, 'a'))));
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: first.got.map((m) => m.lockToken) }))).toEqual(['MessageLockLost', 'MessageLockLost']);
    expect(next.got.map((m) => [m.body, m.deliveryCount])).toEqual([
      [0, 2],
      [1, 2],
    ]);
    clock.advance(61_000);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: next.got.map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N3/N4: a clock behind the next holder, which accepted but has not taken them yet: the complete is ordered first, each message completed once', async () => {
    let next = '';
    const { q, first, b } = await heldThen(2, async (q) =>
      behind(61_000, async () => void (next = (await broker.acceptSession(queue(q), { sessionId: 'a' })).sessionLockToken)),
    );
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: first.got.map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    clock.advance(61_000);
    expect(await broker.receiveFromSession(queue(q), 'a', { sessionLockToken: next, maxMessages: 5 })).toEqual([]);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });
});

describe('R9/N4: a complete under storage faults and crashes', () => {
  it('R10/B1: a conflict on one message answers that one Throttled (retryable) and completes the rest; a retry completes it', async () => {
    const q = await sessionQueue({ a: 3 });
    const { got } = await take(q, 'a');
    const { b } = countingBroker({ match: deleteOf(got[1]), interleave: async () => Promise.reject(conflict()) });
    const results = await b.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) });
    expect(codes(results)).toEqual(['ok', 'Throttled', 'ok']);
    expect(results[1]).toMatchObject({ error: { retryable: true } });
    expect((await broker.peek(queue(q), {})).map((m) => m.body)).toEqual([1]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: [got[1].lockToken] }))).toEqual(['ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R10/B1: throttling on one delete (the SDK retries run out) answers that one Throttled (retryable), the rest complete; a retry completes it', async () => {
    const q = await sessionQueue({ a: 3 });
    const { got } = await take(q, 'a');
    const onDeleteOf = (m: Msg) => (c: StoreCall) => c.operation === 'DeleteItem' && (c.input.Key as { sk?: { S?: string } } | undefined)?.sk?.S === skOf(m);
    const store = faultyStore(deps.db, { throttle: { when: onDeleteOf(got[2]) } }, { fastRetries: true });
    const results = await createBroker({ ...deps, db: store.db }).settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) });
    expect(codes(results)).toEqual(['ok', 'ok', 'Throttled']);
    expect(results[2]).toMatchObject({ error: { retryable: true } });
    expect(store.log.throttledOut).toBe(1);
    expect((await broker.peek(queue(q), {})).map((m) => m.body)).toEqual([2]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) }))).toEqual([
      'MessageLockLost',
      'MessageLockLost',
      'ok',
    ]);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it("B1: a single complete whose delete is throttled fails with the store's error and writes nothing; a retry completes it", async () => {
    const q = await sessionQueue({ a: 1 });
    const { got } = await take(q, 'a');
    const store = faultyStore(deps.db, { throttle: { when: onOperations('DeleteItem') } }, { fastRetries: true });
    const failed = await createBroker({ ...deps, db: store.db })
      .settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(await broker.peek(queue(q), {})).toHaveLength(1);
    await broker.settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R10/B1: the read of the session lock throttled: every token Throttled (retryable), nothing written; a retry completes them', async () => {
    const q = await sessionQueue({ a: 2 });
    const { got } = await take(q, 'a');
    const store = faultyStore(deps.db, { throttle: { when: (c) => c.operation === 'GetItem' && c.input.ConsistentRead === true } }, { fastRetries: true });
    const tokens = got.map((m) => m.lockToken);
    expect(codes(await createBroker({ ...deps, db: store.db }).settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(['Throttled', 'Throttled']);
    expect(await broker.peek(queue(q), {})).toHaveLength(2);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(['ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R10/B1: the late transaction meets a conflict on the session item: every late token Throttled (retryable), nothing written', async () => {
    const q = await sessionQueue({ a: 2 });
    const { lock, got } = await take(q, 'a');
    const late = async () => {
      clock.advance(50_000);
      await broker.renewSessionLock(queue(q), 'a', { sessionLockToken: lock });
      clock.advance(20_000);
    };
    const dying = createBroker(
      faultyDeps(faultyDeps(deps, { match: isSessionRead, phase: 'after', interleave: late }), {
        match: is(TransactWriteCommand),
        interleave: async () => Promise.reject(cancelled(['None', 'None', 'TransactionConflict'])),
      }),
    );
    const tokens = got.map((m) => m.lockToken);
    expect(codes(await dying.settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(['Throttled', 'Throttled']);
    expect(await broker.peek(queue(q), {})).toHaveLength(2);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(['ok', 'ok']);
  });

  it('R9/N4: two session locks in one batch, a crash after the first delete: each message is completed once, a retry completes the rest', async () => {
    const q = await sessionQueue({ a: 2, b: 2 });
    const a = await take(q, 'a');
    const other = await take(q, 'b');
    const tokens = [...a.got, ...other.got].map((m) => m.lockToken);
    // The deletes under a's lock are under way together (b's refused); the first one's answer is lost, and b's lock is never reached.
    const { b } = countingBroker({ match: isMessageDelete, phase: 'after' });
    await expect(b.settleBatch(queue(q), 'complete', { lockTokens: tokens })).rejects.toThrow(InjectedCrash);
    expect((await broker.peek(queue(q), {})).map((m) => m.body)).toEqual([0, 1]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(['MessageLockLost', 'MessageLockLost', 'ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N4: a crash before one delete, the others made: a retry completes that one and finds the others done', async () => {
    const q = await sessionQueue({ a: 3 });
    const { got } = await take(q, 'a');
    const tokens = got.map((m) => m.lockToken);
    // The three deletes go out together: the third was on its way when the second died.
    const { b } = countingBroker({ match: deleteOf(got[1]), afterwards: 'lives' });
    await expect(b.settleBatch(queue(q), 'complete', { lockTokens: tokens })).rejects.toThrow(InjectedCrash);
    expect((await broker.peek(queue(q), {})).map((m) => m.body)).toEqual([1]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: tokens }))).toEqual(['MessageLockLost', 'ok', 'MessageLockLost']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N4: a crash at the read of the session lock, or before or after a late transaction: each message settled exactly once', async () => {
    const late = (lock: string, q: string) => async () => {
      clock.advance(50_000);
      await broker.renewSessionLock(queue(q), 'a', { sessionLockToken: lock });
      clock.advance(20_000);
    };
    for (const where of ['read', 'before', 'after'] as const) {
      const q = await sessionQueue({ a: 3 });
      const { lock, got } = await take(q, 'a');
      const tokens = got.map((m) => m.lockToken);
      const dying =
        where === 'read'
          ? createBroker(faultyDeps(deps, { match: isSessionRead }))
          : createBroker(
              faultyDeps(faultyDeps(deps, { match: isSessionRead, phase: 'after', interleave: late(lock, q) }), {
                match: is(TransactWriteCommand),
                phase: where,
              }),
            );
      await expect(dying.settleBatch(queue(q), 'complete', { lockTokens: tokens }), where).rejects.toThrow(InjectedCrash);
      const retry = await broker.settleBatch(queue(q), 'complete', { lockTokens: tokens });
      expect(codes(retry), where).toEqual(Array(3).fill(where === 'after' ? 'MessageLockLost' : 'ok'));
      expect(await broker.peek(queue(q), {}), where).toEqual([]);
    }
  });
});

describe('N4: a complete reads its message eventually consistently, and again when that read lags', () => {
  /**
   * A broker whose eventually consistent reads of message items answer `lagged` (as a replica
   * behind the take would), and whose transactions are refused, as AWS refuses them and DynamoDB
   * Local does not, when two parts name one item.
   */
  function laggingBroker(lagged: (item: Record<string, unknown>) => Record<string, unknown> | undefined) {
    const real = deps.db;
    const send = real.send.bind(real) as (c: unknown) => Promise<Record<string, unknown>>;
    const log = { lagged: 0 };
    const db = new Proxy(real, {
      get(target, prop) {
        if (prop !== 'send') return Reflect.get(target, prop, target) as unknown;
        return async (command: unknown) => {
          if (command instanceof TransactWriteCommand) {
            const keys = (command.input.TransactItems ?? []).map((part) => {
              const op = Object.values(part)[0] as { Key?: { pk: string; sk: string }; Item?: { pk: string; sk: string } };
              const key = op.Key ?? op.Item!;
              return `${key.pk}|${key.sk}`;
            });
            if (new Set(keys).size < keys.length) {
              throw Object.assign(new Error('Transaction request cannot include multiple operations on one item'), { name: 'ValidationException' });
            }
          }
          const out = await send(command);
          const input = (command as { input: { Key?: { pk?: string }; ConsistentRead?: boolean } }).input;
          if (!(command instanceof GetCommand) || input.ConsistentRead || !String(input.Key?.pk).startsWith('msg/') || !out.Item) return out;
          log.lagged++;
          return { ...out, Item: lagged(out.Item as Record<string, unknown>) };
        };
      },
    });
    return { b: createBroker({ ...deps, db }), log };
  }
  /** The item as it was before the take: no lock yet. */
  const beforeTake = ({ lockToken: _t, lockedUntil: _u, slk: _s, sgen: _g, ...rest }: Record<string, unknown>) => rest;

  it.each([
    ['the item as it was before the take', beforeTake],
    ['no item yet', () => undefined],
  ])('N4: a lagging read (%s) is read again consistently; complete and batch complete succeed', async (_what, lag) => {
    const q = await sessionQueue({ a: 3 });
    const { got } = await take(q, 'a');
    const { b, log } = laggingBroker(lag);
    await b.settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken });
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: got.slice(1).map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    // One read for the complete, one for the batch: the batch's second message goes along under the lock its first was read under.
    expect(log.lagged).toBe(2);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R9/N4: an old and the current token of one message in one batch, the old one read from a lagging replica: the current one completes it', async () => {
    const q = await sessionQueue({ a: 2 });
    const { lock, got } = await take(q, 'a', 1);
    const old = got[0].lockToken;
    expect(codes(await broker.settleBatch(queue(q), 'abandon', { lockTokens: [old] }))).toEqual(['ok']);
    const [again] = (await broker.receiveFromSession(queue(q), 'a', { sessionLockToken: lock, maxMessages: 1 })) as Msg[];
    expect(again.sequenceNumber).toBe(got[0].sequenceNumber);
    // Every eventually consistent read still shows the old token: the old token's read passes, the current one's is read again.
    const { b } = laggingBroker((item) => ({ ...item, lockToken: old }));
    expect(codes(await b.settleBatch(queue(q), 'complete', { lockTokens: [old, again.lockToken] }))).toEqual(['MessageLockLost', 'ok']);
    expect((await broker.peek(queue(q), {})).map((m) => m.body)).toEqual([1]);
  });

  it('N4: a read that shows the token (current, or stale but after the take) is enough; a token already used is still MessageLockLost', async () => {
    const q = await sessionQueue({ a: 2 });
    const { got } = await take(q, 'a');
    const { b } = laggingBroker((item) => item);
    await b.settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken });
    const again = await b.settleBatch(queue(q), 'complete', { lockTokens: [got[0].lockToken, got[1].lockToken] });
    expect(codes(again)).toEqual(['MessageLockLost', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });
});

describe('N4: releasing a session that still has a message visible', () => {
  it('N4: the next acceptor gets it at once, first message first; a wrong or released token is SessionLockLost and changes nothing', async () => {
    const q = await sessionQueue({ r: 3 });
    const first = await take(q, 'r', 1);
    const wrong = '00000000-0000-0000-0000-000000000000';
    const refused = await broker.releaseSession(queue(q), 'r', { sessionLockToken: wrong }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'SessionLockLost' });
    // Still held by the first holder: a named accept is refused.
    await expect(broker.acceptSession(queue(q), { sessionId: 'r' })).rejects.toMatchObject({ code: 'SessionCannotBeLocked' });
    await broker.releaseSession(queue(q), 'r', { sessionLockToken: first.lock });
    await expect(broker.releaseSession(queue(q), 'r', { sessionLockToken: first.lock })).rejects.toMatchObject({ code: 'SessionLockLost' });
    const next = await broker.acceptSession(queue(q), {});
    expect(next.sessionId).toBe('r');
    const got = (await broker.receiveFromSession(queue(q), 'r', { sessionLockToken: next.sessionLockToken, maxMessages: 5 })) as Msg[];
    expect(got.map((m) => [m.body, m.deliveryCount])).toEqual([
      [0, 2],
      [1, 1],
      [2, 1],
    ]);
  });
});
