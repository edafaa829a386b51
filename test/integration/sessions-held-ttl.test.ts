/**
 * Session messages with an expiry held by their session's record (lib/broker/session-lock.ts):
 * one whose expiry lies past the lock's end plus the margin (60 s) joins the record with no
 * write of its own, and the session item's `hx` (the earliest expiry still carrying its `ttl`)
 * stays that far past the lock's end after every write. These tests pin what that must keep:
 * DynamoDB's TTL never deletes a held message while its lock lives (T5: a renewal past its
 * expiry removes its `ttl` first, also when it dies or is throttled at any step, and a receive
 * racing it never holds a message the renewal did not see); the sweeper and the stream's TTL
 * routing leave a held message with its holder (T5, T6, T7); an expired message is never
 * handed out (T4); the holder's token completes it (N4, R5) and the next lock takes back what
 * an earlier one left (N3, R3).
 */
import { DeleteCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { sessionKey } from '../../lib/store/keys.js';
import type { StoredMessageItem } from '../../lib/store/message-layout.js';
import { readSession, type SessionItem } from '../../lib/store/sessions.js';
import { createBroker, type Broker } from '../support/broker.js';
import { faultyStore } from '../support/dynamo-faults.js';
import { both, faultyDeps, InjectedCrash, inputOf, is, type Fault } from '../support/faults.js';
import { sessionQueues, type Api, type Deps } from '../support/session-queues.js';
import { messageItem, queueItem, streamEvent, ttlRemovalRecord } from '../support/stream.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;

const { clock, open, queue } = sessionQueues();
const SECOND = 1000;
let deps: Deps;
let api: Api;
let broker: Broker;
let counter = 0;

beforeAll(async () => ({ deps, api, broker } = await open('sessttl')));

/**
 * A session queue (lock PT1M) whose session `s` holds `count` messages sent now, each living
 * `ttl` (PT2M30S by default: past the lock's end plus the margin, so held by the record).
 */
async function sessionQueue(count: number, ttl = 'PT2M30S', props: Record<string, unknown> = {}): Promise<string> {
  const q = `ttl${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { requiresSession: true, lockDuration: 'PT1M', ...props })).status).toBe(201);
  const messages = Array.from({ length: count }, (_, i) => ({ body: i, sessionId: 's', timeToLive: ttl }));
  expect((await api('POST', `/queues/${q}/messages/batch`, { messages })).status).toBe(201);
  return q;
}

const accept = async (b: Broker, q: string) => (await b.acceptSession(queue(q), { sessionId: 's' })).sessionLockToken;
const receive = async (b: Broker, q: string, sessionLockToken: string, maxMessages = 10) =>
  (await b.receiveFromSession(queue(q), 's', { sessionLockToken, maxMessages })) as Msg[];
const renew = (b: Broker, q: string, sessionLockToken: string) => b.renewSessionLock(queue(q), 's', { sessionLockToken });
const counted = (messages: Msg[]) => messages.map((m) => [m.body, m.deliveryCount]);
const stored = async (q: string, m: Msg): Promise<StoredMessageItem | undefined> => messageItem(deps, q, 'active', m.sequenceNumber ?? m);
async function session(q: string): Promise<SessionItem> {
  const entity = (await queueItem(deps, q))!;
  return (await readSession(deps, sessionKey(entity.eid, 's')))!;
}

/** T5's invariant: no held message still carrying its `ttl` expires within the margin after the lock's end. */
async function expectHxPastLock(q: string) {
  const s = await session(q);
  if (s.hx !== undefined && s.lockedUntil !== undefined) expect(s.lockedUntil + 60 * SECOND).toBeLessThan(s.hx);
}

const isProtect = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '') === 'REMOVE #ttl');
const isFastRenewal = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '') === 'SET lockedUntil = :until, rsk = :locked');
const isProtectingRenewal = both(is(UpdateCommand), (c) =>
  /^SET lockedUntil = :until, rsk = :locked, held = :held/.test(String(inputOf(c).UpdateExpression ?? '')),
);
const isRecordWrite = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '').startsWith('SET held = :held'));
const writesMessage = (c: unknown) => {
  const input = inputOf(c);
  if (is(TransactWriteCommand)(c)) return true;
  if (!is(UpdateCommand, PutCommand, DeleteCommand)(c)) return false;
  const pk = String(input.Key?.pk ?? input.Item?.pk ?? '');
  return pk.startsWith('msg/');
};

describe('T5/N3: a message expiring past the lock plus the margin is held by the record', () => {
  it('T5/N3/N4: taken and completed with no write of the message at the take; its ttl stays, hx is its expiry', async () => {
    const q = await sessionQueue(2);
    const token = await accept(broker, q);
    const writes: unknown[] = [];
    const watching = createBroker(faultyDeps(deps, { match: (c) => (writesMessage(c) && writes.push(c), false) }));
    const before = await stored(q, (await broker.peek(queue(q), {}))[0]);
    const got = await receive(watching, q, token);
    expect(counted(got)).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(writes).toEqual([]);
    const after = await stored(q, got[0]);
    expect(after).toEqual(before);
    expect(after!.ttl).toBeDefined();
    const s = await session(q);
    expect(s.hx).toBe(after!.expiresAt);
    await expectHxPastLock(q);
    for (const m of got) await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('T5: a message whose expiry falls inside the lock plus the margin keeps the lock write: its ttl goes at the take', async () => {
    const q = await sessionQueue(1, 'PT1M30S');
    const token = await accept(broker, q);
    const [m] = await receive(broker, q, token);
    const item = await stored(q, m);
    expect(item!.ttl).toBeUndefined();
    expect(item!.slk).toBe(token);
    expect((await session(q)).hx).toBeUndefined();
    await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
  });
});

/**
 * A queue whose two held messages (expiry at +150 s) a lock accepted now holds, renewed at +30 s
 * (its new end +90 s, plus the margin past the expiry): the renewal the tests below make.
 */
async function heldNearRenewal() {
  const q = await sessionQueue(2);
  const token = await accept(broker, q);
  const got = await receive(broker, q, token);
  expect(counted(got)).toEqual([
    [0, 1],
    [1, 1],
  ]);
  for (const m of got) expect((await stored(q, m))!.ttl).toBeDefined();
  clock.advance(30 * SECOND);
  return { q, token, got };
}

/** After a renewal past their expiry: both messages without their ttl, the lock extended, hx gone; the holder completes both. */
async function expectProtectedAndCompleted(q: string, token: string, got: Msg[]) {
  for (const m of got) {
    const item = await stored(q, m);
    expect(item!.ttl).toBeUndefined();
    expect(item!.deliveryCount).toBe(0);
  }
  const s = await session(q);
  expect(s.lockToken).toBe(token);
  expect(s.hx).toBeUndefined();
  for (const entry of Object.values(s.held!.m)) expect(entry).toHaveLength(3);
  // Past their expiry (+150 s), the lock still held: they are settled, not removed (T5).
  clock.advance(50 * SECOND);
  await renew(broker, q, token);
  clock.advance(50 * SECOND);
  await renew(broker, q, token);
  clock.advance(30 * SECOND);
  expect(Date.parse(got[0].expiresAt)).toBeLessThan(clock.now());
  const results = await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) });
  expect(results.map((r) => ('ok' in r ? 'ok' : r.error.code))).toEqual(got.map(() => 'ok'));
  expect(await broker.peek(queue(q), {})).toEqual([]);
}

describe('T5: a renewal that reaches a held expiry', () => {
  it('T5/N4: a renewal whose new end stays clear of the expiry is one write; one that reaches it removes the ttl first, and the message lives on with its lock', async () => {
    const q = await sessionQueue(1);
    const token = await accept(broker, q);
    const [m] = await receive(broker, q, token);
    clock.advance(10 * SECOND);
    const calls: unknown[] = [];
    const watching = createBroker(faultyDeps(deps, { match: (c) => (calls.push(c), false) }));
    await renew(watching, q, token);
    expect(calls.filter(is(UpdateCommand)).map((c) => inputOf(c).UpdateExpression)).toEqual(['SET lockedUntil = :until, rsk = :locked']);
    expect((await stored(q, m))!.ttl).toBeDefined();
    await expectHxPastLock(q);
    clock.advance(20 * SECOND);
    const { lockedUntil } = await renew(broker, q, token);
    expect(Date.parse(lockedUntil)).toBe(clock.now() + 60 * SECOND);
    await expectHxPastLock(q);
    await expectProtectedAndCompleted(q, token, [m]);
  });

  it.each<[string, Fault]>([
    ['at the first removal of a ttl', { match: isProtect }],
    ['after the first removal of a ttl', { match: isProtect, phase: 'after' }],
    ['after every removal, before the lock is extended', { match: isProtectingRenewal }],
    ['after the lock is extended (its answer lost)', { match: isProtectingRenewal, phase: 'after' }],
    ['at the first, fast write', { match: isFastRenewal }],
  ])('T5/N4: a renewal that dies %s: the lock lives as it was or extended, the messages keep their lock, the retry extends it', async (_where, fault) => {
    const { q, token, got } = await heldNearRenewal();
    const dying = createBroker(faultyDeps(deps, fault));
    await expect(renew(dying, q, token)).rejects.toThrow(InjectedCrash);
    await expectHxPastLock(q);
    expect((await session(q)).lockToken).toBe(token);
    await renew(broker, q, token);
    await expectHxPastLock(q);
    await expectProtectedAndCompleted(q, token, got);
  });

  it.each([
    ['the removal of a ttl', (expr: string) => expr === 'REMOVE #ttl'],
    ['the extension of the lock', (expr: string) => expr.startsWith('SET lockedUntil = :until, rsk = :locked, held = :held')],
  ])("T5/N4: a renewal whose %s is throttled past the SDK's retries fails, changing nothing unsafe; the retry extends it", async (_what, when) => {
    const { q, token, got } = await heldNearRenewal();
    const store = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'UpdateItem' && when(String(c.input.UpdateExpression ?? '')) } },
      { fastRetries: true },
    );
    await expect(renew(createBroker({ ...deps, db: store.db }), q, token)).rejects.toThrow();
    expect(store.log.throttledOut).toBeGreaterThan(0);
    await expectHxPastLock(q);
    await renew(broker, q, token);
    await expectProtectedAndCompleted(q, token, got);
  });
});

describe('T5: a renewal and a receive exclude each other on the session item', () => {
  it("T5/N3: a renewal between a receive's read of the lock and its record write: the record write fails, the message is taken with a lock write next", async () => {
    const q = await sessionQueue(1);
    const token = await accept(broker, q);
    const racing = createBroker(
      faultyDeps(deps, {
        match: isRecordWrite,
        interleave: async () => {
          // The receive chose the message against the lock's end it read (+60 s); a renewal now takes it to +90 s.
          clock.advance(30 * SECOND);
          await renew(broker, q, token);
        },
      }),
    );
    // The pass whose record write failed hands out nothing; a later pass (or receive) takes it.
    const first = await receive(racing, q, token);
    await expectHxPastLock(q);
    const got = first.length > 0 ? first : await receive(broker, q, token);
    expect(counted(got)).toEqual([[0, 1]]);
    const [m] = got;
    // Its expiry now within the lock's end plus the margin: taken the old way, its ttl removed at the take (T5).
    const item = await stored(q, m);
    expect(item!.ttl).toBeUndefined();
    expect(item!.slk).toBe(token);
    await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it("T5/N3: a receive between a slow renewal's read and its write: the renewal reads again and protects what the receive held too", async () => {
    const q = await sessionQueue(2);
    const token = await accept(broker, q);
    const [a] = await receive(broker, q, token, 1);
    clock.advance(30 * SECOND);
    let b: Msg;
    const racing = createBroker(
      faultyDeps(deps, {
        match: isProtectingRenewal,
        interleave: async () => {
          // Held against the lock's end as stored (+60 s): allowed, and it changes the record's version.
          [b] = await receive(broker, q, token, 1);
        },
      }),
    );
    await renew(racing, q, token);
    expect(b).toBeDefined();
    await expectHxPastLock(q);
    await expectProtectedAndCompleted(q, token, [a, b]);
  });
});

describe('T5/T6/T7: the sweeper and the stream meet a held message at its expiry', () => {
  it('T5/T7: past its expiry under a live lock, the sweeper leaves it and the stream puts back a TTL removal; the holder completes it', async () => {
    const q = await sessionQueue(1);
    const token = await accept(broker, q);
    const [m] = await receive(broker, q, token);
    const withTtl = (await stored(q, m))!;
    clock.advance(30 * SECOND);
    await renew(broker, q, token); // +90 s: its ttl removed
    clock.advance(50 * SECOND);
    await renew(broker, q, token); // +140 s
    clock.advance(50 * SECOND);
    await renew(broker, q, token); // +190 s
    clock.advance(30 * SECOND); // +160 s: past its expiry (+150 s), the lock still held
    const sweep = createSweeperHandler(deps);
    await sweep();
    const after = await stored(q, m);
    expect(after).toMatchObject({ deliveryCount: 0, dsk: (await session(q)).lockedUntil });
    // A TTL removal all the same (a clock off by more than the margin, the ttl read before its removal): put back.
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: withTtl.pk, sk: withTtl.sk } }));
    const consume = createStreamHandler(deps);
    expect((await consume(streamEvent(ttlRemovalRecord(withTtl, 'aws', { at: clock.now() })))).batchItemFailures).toEqual([]);
    const back = await stored(q, m);
    expect(back).toMatchObject({ deliveryCount: 0 });
    expect(back!.ttl).toBeUndefined();
    await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('T5/T6: once the lock has lapsed, the sweeper expires it at the due entry the lock moved it to; its old token is MessageLockLost', async () => {
    const q = await sessionQueue(1, 'PT2M30S', { deadLetteringOnMessageExpiration: true });
    const token = await accept(broker, q);
    const [m] = await receive(broker, q, token);
    clock.advance(30 * SECOND);
    await renew(broker, q, token); // +90 s, its ttl removed
    clock.advance(50 * SECOND);
    await renew(broker, q, token); // +140 s
    clock.advance(50 * SECOND);
    await renew(broker, q, token); // +190 s
    clock.advance(25 * SECOND); // +155 s: expired, the lock still held
    const sweep = createSweeperHandler(deps);
    await sweep();
    expect(await stored(q, m)).toBeDefined();
    clock.advance(60 * SECOND); // the lock lapsed
    await sweep();
    expect(await stored(q, m)).toBeUndefined();
    const dead = await broker.peek(queue(q, 'deadletter'), {});
    expect(dead.map((d: Msg) => [d.body, d.deadLetterReason])).toEqual([[0, 'TTLExpiredException']]);
    // R5: the delivery is over, the message gone from the subqueue.
    await expect(broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken })).rejects.toMatchObject({ code: 'MessageLockLost' });
  });
});

describe('T4: an expired message is not handed out', () => {
  it('T4/N3: expired between the record write and the read of the message: not handed out, let go from the record, expired by the next receive', async () => {
    const q = await sessionQueue(1);
    const token = await accept(broker, q);
    const racing = createBroker(
      faultyDeps(deps, {
        match: isRecordWrite,
        phase: 'after',
        interleave: async () => {
          // The lock renewed past the expiry (its ttl removed), then the clock past it: the read comes after.
          clock.advance(30 * SECOND);
          await renew(broker, q, token);
          clock.advance(50 * SECOND);
          await renew(broker, q, token);
          clock.advance(50 * SECOND);
          await renew(broker, q, token);
          clock.advance(25 * SECOND);
        },
      }),
    );
    expect(await receive(racing, q, token)).toEqual([]);
    const s = await session(q);
    expect(s.held!.m).toEqual({});
    expect(s.hx).toBeUndefined();
    expect(await receive(broker, q, token)).toEqual([]);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });
});

describe('T5/N3: an hx left by an earlier lock', () => {
  it("T5/N3/R3: sends the next lock's first renewal down the slow path once, which protects nothing of its own and removes it; the take-back counts the delivery", async () => {
    const q = await sessionQueue(1);
    const first = await accept(broker, q);
    const [m] = await receive(broker, q, first);
    await broker.releaseSession(queue(q), 's', { sessionLockToken: first });
    clock.advance(40 * SECOND);
    const second = await accept(broker, q);
    expect((await session(q)).hx).toBe(m.expiresAt === undefined ? undefined : Date.parse(m.expiresAt));
    const calls: unknown[] = [];
    const watching = createBroker(faultyDeps(deps, { match: (c) => (calls.push(c), false) }));
    await renew(watching, q, second);
    expect(calls.filter(isProtect)).toEqual([]);
    expect((await session(q)).hx).toBeUndefined();
    expect((await stored(q, m))!.ttl).toBeDefined();
    calls.length = 0;
    await renew(watching, q, second);
    expect(calls.filter(is(UpdateCommand)).map((c) => inputOf(c).UpdateExpression)).toEqual(['SET lockedUntil = :until, rsk = :locked']);
    const [again] = await receive(broker, q, second);
    expect(counted([again])).toEqual([[0, 2]]);
    await expect(broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken })).rejects.toMatchObject({ code: 'MessageLockLost' });
    await broker.settle(queue(q), again.sequenceNumber, 'complete', { lockToken: again.lockToken });
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });
});
