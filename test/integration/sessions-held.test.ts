/**
 * A receive under a session lock holds what it hands out by one record in the session item,
 * not a lock write on each message (lib/broker/session-lock.ts). These tests pin what that
 * must keep: the next lock takes back what an earlier one left unsettled, each message once,
 * with its delivery count up by one (N3, R3), also when the take-back dies at any step or is
 * throttled; a token of the earlier lock settles nothing after it (N4, R5); peek shows the
 * count handed out (R8); bulk deletion never removes a message a live lock holds, also when a
 * receive comes between its read and its delete (R11).
 */
import { BatchGetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { messageKey, readySortKey } from '../../lib/store/keys.js';
import { isStoreBusy } from '../../lib/store/outcomes.js';
import { createBroker, type Broker } from '../support/broker.js';
import { faultyStore } from '../support/dynamo-faults.js';
import { both, faultyDeps, InjectedCrash, inputOf, is, type Fault } from '../support/faults.js';
import { sessionQueues, type Api, type Deps } from '../support/session-queues.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;

const { clock, open, queue } = sessionQueues();
const SECOND = 1000;
let deps: Deps;
let api: Api;
let broker: Broker;
let counter = 0;

beforeAll(async () => ({ deps, api, broker } = await open('sessheld')));

/** A session queue whose session `s` holds `count` messages, bodies 0.. in order. */
async function sessionQueue(count: number, props: Record<string, unknown> = {}): Promise<string> {
  const q = `held${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { requiresSession: true, ...props })).status).toBe(201);
  const messages = Array.from({ length: count }, (_, i) => ({ body: i, sessionId: 's' }));
  expect((await api('POST', `/queues/${q}/messages/batch`, { messages })).status).toBe(201);
  return q;
}

const accept = async (b: Broker, q: string) => (await b.acceptSession(queue(q), { sessionId: 's' })).sessionLockToken;
const receive = async (b: Broker, q: string, sessionLockToken: string, maxMessages = 10) =>
  (await b.receiveFromSession(queue(q), 's', { sessionLockToken, maxMessages })) as Msg[];
const counted = (messages: Msg[]) => messages.map((m) => [m.body, m.deliveryCount]);
const codes = (results: Awaited<ReturnType<Broker['settleBatch']>>) => results.map((r) => ('error' in r ? r.error.code : 'ok'));

const isTakeBackRead = is(BatchGetCommand);
const isTakeBack = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '').startsWith('SET deliveryCount = :count'));
const isRecordWrite = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '').includes('held = :held'));

/**
 * Session `s` of a fresh queue, 3 messages, received under a first lock (each handed out once),
 * the first completed, then the lock released with the other two unsettled; and a second lock.
 */
async function releasedWithTwoHeld() {
  const q = await sessionQueue(3);
  const first = await accept(broker, q);
  const got = await receive(broker, q, first);
  expect(counted(got)).toEqual([
    [0, 1],
    [1, 1],
    [2, 1],
  ]);
  await broker.settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken });
  await broker.releaseSession(queue(q), 's', { sessionLockToken: first });
  // R8: until taken back, a peek shows each message with the delivery handed out.
  expect(counted(await broker.peek(queue(q), {}))).toEqual([
    [1, 1],
    [2, 1],
  ]);
  return { q, got, second: await accept(broker, q) };
}

describe('N3/R3: the next lock takes back what a released one left unsettled', () => {
  it("N3/R3/N4: the next holder gets the two again, delivery count 2, in order; the first lock's tokens are SessionLockLost and change nothing", async () => {
    const { q, got, second } = await releasedWithTwoHeld();
    const again = await receive(broker, q, second);
    expect(counted(again)).toEqual([
      [1, 2],
      [2, 2],
    ]);
    // Delivered again under the next lock, the first lock's tokens are of a delivery that is over (R5), as they were when a take wrote each message.
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: got.slice(1).map((m) => m.lockToken) }))).toEqual([
      'MessageLockLost',
      'MessageLockLost',
    ]);
    await expect(broker.settle(queue(q), got[1].sequenceNumber, 'abandon', { lockToken: got[1].lockToken })).rejects.toMatchObject({
      code: 'MessageLockLost',
    });
    expect(counted(await broker.peek(queue(q), {}))).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: again.map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it.each<[string, Fault]>([
    ['before the read of what the old record holds', { match: isTakeBackRead }],
    ['after the first message is taken back', { match: isTakeBack, phase: 'after' }],
    ['after both are taken back, before the record is emptied', { match: isRecordWrite }],
    ['after the record is emptied', { match: isRecordWrite, phase: 'after' }],
  ])('N3/R3: a receive that dies %s: the next receive hands each out once, delivery count 2', async (_where, fault) => {
    const { q, second } = await releasedWithTwoHeld();
    const dying = createBroker(faultyDeps(deps, fault));
    await expect(receive(dying, q, second)).rejects.toThrow(InjectedCrash);
    const again = await receive(broker, q, second);
    expect(counted(again)).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(await receive(broker, q, second)).toEqual([]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: again.map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it("N3/R3: a take-back write throttled past the SDK's retries fails the receive; the next one hands each out once, delivery count 2", async () => {
    const { q, second } = await releasedWithTwoHeld();
    const store = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'UpdateItem' && String(c.input.UpdateExpression ?? '').startsWith('SET deliveryCount = :count') } },
      { fastRetries: true },
    );
    await expect(receive(createBroker({ ...deps, db: store.db }), q, second)).rejects.toThrow();
    expect(store.log.throttledOut).toBeGreaterThan(0);
    expect(counted(await receive(broker, q, second))).toEqual([
      [1, 2],
      [2, 2],
    ]);
  });

  it('N3/R3: a lock that lapses with its messages unsettled: the next holder gets them with delivery count + 1', async () => {
    const q = await sessionQueue(2, { lockDuration: 'PT10S' });
    const first = await accept(broker, q);
    const got = await receive(broker, q, first);
    clock.advance(11_000);
    // N4: before the next holder receives, the lapsed lock's tokens are SessionLockLost; after, of a delivery that is over (R5).
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) }))).toEqual(['SessionLockLost', 'SessionLockLost']);
    const second = await accept(broker, q);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) }))).toEqual(['SessionLockLost', 'SessionLockLost']);
    expect(counted(await receive(broker, q, second))).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) }))).toEqual(['MessageLockLost', 'MessageLockLost']);
  });
});

describe('R5/N4: a token of the record names one delivery', () => {
  it("R5: after an abandon, the first delivery's token is MessageLockLost; the second one, under the same lock, completes", async () => {
    const q = await sessionQueue(1);
    const lock = await accept(broker, q);
    const [m] = await receive(broker, q, lock);
    await broker.settle(queue(q), m.sequenceNumber, 'abandon', { lockToken: m.lockToken });
    const [again] = await receive(broker, q, lock);
    expect(again.deliveryCount).toBe(2);
    await expect(broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken })).rejects.toMatchObject({ code: 'MessageLockLost' });
    await expect(broker.settle(queue(q), m.sequenceNumber, 'defer', { lockToken: m.lockToken })).rejects.toMatchObject({ code: 'MessageLockLost' });
    await broker.settle(queue(q), again.sequenceNumber, 'complete', { lockToken: again.lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R5/N4: a token made up from a real one (its count changed) is MessageLockLost and changes nothing', async () => {
    const q = await sessionQueue(1);
    const lock = await accept(broker, q);
    const [m] = await receive(broker, q, lock);
    const hex = m.lockToken.replace(/-/g, '');
    const forged = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-0002-${hex.slice(20)}`;
    await expect(broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: forged })).rejects.toMatchObject({ code: 'MessageLockLost' });
    expect(counted(await broker.peek(queue(q), {}))).toEqual([[0, 1]]);
  });
});

describe('R11/N3: bulk deletion and the record', () => {
  it('R11: a purge leaves what a live lock holds and removes the rest; once released and taken back, a purge removes it', async () => {
    const q = await sessionQueue(3);
    const lock = await accept(broker, q);
    const got = await receive(broker, q, lock, 2);
    expect(await broker.purge(queue(q))).toEqual({ purged: 1 });
    expect(counted(await broker.peek(queue(q), {}))).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it("R11/N3: a receive between the purge's read and its delete: the message stays with its holder, who completes it", async () => {
    const q = await sessionQueue(1);
    const lock = await accept(broker, q);
    let taken: Msg[] = [];
    const purging = createBroker(
      faultyDeps(deps, {
        match: is(TransactWriteCommand),
        interleave: async () => {
          taken = await receive(broker, q, lock);
        },
      }),
    );
    expect(await purging.purge(queue(q))).toEqual({ purged: 0 });
    expect(counted(taken)).toEqual([[0, 1]]);
    await broker.settle(queue(q), taken[0].sequenceNumber, 'complete', { lockToken: taken[0].lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it("R11/N3: a purge between a receive's record and its read of the message leaves it: the receive hands it out", async () => {
    const q = await sessionQueue(1);
    const lock = await accept(broker, q);
    let purged: unknown;
    const receiving = createBroker(
      faultyDeps(deps, {
        match: isTakeBackRead,
        interleave: async () => {
          purged = await broker.purge(queue(q));
        },
      }),
    );
    const got = await receive(receiving, q, lock);
    // The record came first: the purge's check of it fails, and the message is its holder's.
    expect(purged).toEqual({ purged: 0 });
    expect(counted(got)).toEqual([[0, 1]]);
    await broker.settle(queue(q), got[0].sequenceNumber, 'complete', { lockToken: got[0].lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });
});

describe('N3: messages a process running the previous code took with a lock write', () => {
  /** What the previous code's take wrote on message `seq` under session lock `slk` of generation `gen` (one delivery more, its row marked in flight). */
  async function takenByPreviousCode(q: string, seq: string, slk: string, gen: number) {
    const eid = await broker.incarnation(queue(q));
    const rsk = `${readySortKey(clock.now(), BigInt(seq))}/${gen}`;
    await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: messageKey(eid, 'active', 0, BigInt(seq)), // the queue's one partition
        UpdateExpression:
          'SET slk = :slk, sgen = :gen, lockToken = :t, lockedUntil = :u, deliveryCount = deliveryCount + :one, rsk = :rsk, v = if_not_exists(v, :zero) + :one',
        ExpressionAttributeValues: { ':slk': slk, ':gen': gen, ':t': '0123456789abcdef', ':u': clock.now() + 10 * SECOND, ':one': 1, ':zero': 0, ':rsk': rsk },
      }),
    );
  }

  it('N3/R3: passed over while their lock holds; after it lapses the next holder gets them by its record, delivery count + 1, and completes them', async () => {
    const q = await sessionQueue(2, { lockDuration: 'PT10S' });
    const first = await accept(broker, q);
    const [peeked] = await broker.peek(queue(q), {});
    await takenByPreviousCode(q, peeked!.sequenceNumber, first, 1);
    // The message the previous code took is in flight under this lock: only the other is handed out.
    expect(counted(await receive(broker, q, first))).toEqual([[1, 1]]);
    clock.advance(11 * SECOND);
    const second = await accept(broker, q);
    const again = await receive(broker, q, second);
    expect(counted(again)).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: again.map((m) => m.lockToken) }))).toEqual(['ok', 'ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });
});

/** A session queue whose session `s` holds `count` messages, sent in batches of 50. */
async function bigSessionQueue(count: number): Promise<string> {
  const q = `held${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
  for (let i = 0; i < count; i += 50) {
    const messages = Array.from({ length: Math.min(50, count - i) }, (_, j) => ({ body: i + j, sessionId: 's' }));
    expect((await api('POST', `/queues/${q}/messages/batch`, { messages })).status).toBe(201);
  }
  return q;
}

const isGroupDelete = both(is(TransactWriteCommand), (c) => ((inputOf(c).TransactItems as unknown[] | undefined) ?? []).length > 2);

describe("R11/N3: a session's messages deleted in groups with one check of its record", () => {
  it('R11/N3: the session lock taken and one message of the group received meanwhile: that one stays with its holder, the rest go', async () => {
    const q = await sessionQueue(5);
    let taken: Msg[] = [];
    const purging = createBroker(
      faultyDeps(deps, {
        match: isGroupDelete,
        interleave: async () => {
          taken = await receive(broker, q, await accept(broker, q), 1);
        },
      }),
    );
    expect(await purging.purge(queue(q))).toEqual({ purged: 4 });
    expect(counted(taken)).toEqual([[0, 1]]);
    expect(counted(await broker.peek(queue(q), {}))).toEqual([[0, 1]]);
    await broker.settle(queue(q), taken[0].sequenceNumber, 'complete', { lockToken: taken[0].lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R11/N3: a group with one message held by the live record: the group is refused whole, then the others are deleted one by one', async () => {
    const q = await sessionQueue(4);
    const lock = await accept(broker, q);
    const got = await receive(broker, q, lock, 1);
    expect(await broker.purge(queue(q))).toEqual({ purged: 3 });
    expect(counted(await broker.peek(queue(q), {}))).toEqual([[0, 1]]);
    expect(codes(await broker.settleBatch(queue(q), 'complete', { lockTokens: [got[0].lockToken] }))).toEqual(['ok']);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it("R11: a group delete throttled past the SDK's retries fails the purge and deletes nothing of it; the next purge takes all", async () => {
    const q = await sessionQueue(6);
    const store = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'TransactWriteItems' && c.input.TransactItems.length > 2 } },
      { fastRetries: true },
    );
    await expect(createBroker({ ...deps, db: store.db }).purge(queue(q))).rejects.toThrow();
    expect(store.log.throttledOut).toBeGreaterThan(0);
    expect((await broker.peek(queue(q), { maxMessages: '10' })).length).toBe(6);
    expect(await broker.purge(queue(q))).toEqual({ purged: 6 });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R11: a lone session message whose delete meets a transaction in flight fails the purge (retryable), not skipped as held; the next purge deletes it', async () => {
    const q = await sessionQueue(1);
    const store = faultyStore(deps.db, { conflict: { when: (c) => c.operation === 'TransactWriteItems' } });
    await expect(createBroker({ ...deps, db: store.db }).purge(queue(q))).rejects.toSatisfy(isStoreBusy);
    expect(store.log.conflicted).toBeGreaterThan(0);
    expect(counted(await broker.peek(queue(q), {}))).toEqual([[0, 0]]);
    expect(await broker.purge(queue(q))).toEqual({ purged: 1 });
  });

  it('R11: a group delete that meets a transaction in flight is taken again one message at a time, and every message goes', async () => {
    const q = await sessionQueue(5);
    const store = faultyStore(deps.db, { conflict: { when: (c) => c.operation === 'TransactWriteItems' && c.input.TransactItems.length > 2 } });
    expect(await createBroker({ ...deps, db: store.db }).purge(queue(q))).toEqual({ purged: 5 });
    expect(store.log.conflicted).toBe(1);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('R11: a purge that dies between two groups of a session leaves whole groups; the next purge deletes the rest, each once', async () => {
    const q = await bigSessionQueue(60);
    const crashing = createBroker(faultyDeps(deps, { match: isGroupDelete, nth: 2 }));
    await expect(crashing.purge(queue(q))).rejects.toThrow(InjectedCrash);
    const left = await broker.peek(queue(q), { maxMessages: '100' });
    // The groups (40 and 20) go in parallel: whichever was sent second died whole.
    expect([20, 40]).toContain(left.length);
    expect(await broker.purge(queue(q))).toEqual({ purged: left.length });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it("R11: a session of more than 100 messages is deleted in several groups, each within a transaction's limits", async () => {
    const q = await bigSessionQueue(130);
    const sizes: number[] = [];
    const counting = createBroker(
      faultyDeps(deps, {
        match: (c) => {
          if (is(TransactWriteCommand)(c)) sizes.push(((inputOf(c).TransactItems as unknown[] | undefined) ?? []).length);
          return false;
        },
      }),
    );
    expect(await counting.purge(queue(q))).toEqual({ purged: 130 });
    expect(sizes.every((n) => n <= 100)).toBe(true);
    expect(sizes.reduce((a, n) => a + n - 1, 0)).toBe(130);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });
});
