/**
 * Sessions at broker level (N1-N8), against DynamoDB Local with the test clock. Entities
 * and sends go through the API handler; the session operations call the broker directly
 * (their HTTP routes are the API's business).
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createBroker, type Broker } from '../support/broker.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { httpStatusOf } from '../../lib/api/errors.js';
import { BrokerError } from '../../lib/errors.js';
import { sessionKey, sessionsPk } from '../../lib/store/keys.js';
import { SESSION_HINT_GRACE_MS } from '../../lib/broker/message-items.js';
import { SESSION_HINT_LAG_MS } from '../../lib/broker/sessions.js';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { deliver as deliverStream, TableStreamReader } from '../support/stream.js';
import { both, faultyDeps, inputOf, InjectedCrash, is } from '../support/faults.js';
import { apiClient } from '../support/api.js';
import { sessionQueues, type Api, type Deps } from '../support/session-queues.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;

const { clock, open, queue } = sessionQueues();
let deps: Deps;
let api: Api;
let broker: Broker;
let counter = 0;

beforeAll(async () => ({ deps, api, broker } = await open('sessions', { stream: true })));

async function sessionQueue(props: Record<string, unknown> = {}): Promise<string> {
  const name = `sq${++counter}`;
  const res = await api('PUT', `/queues/${name}`, { requiresSession: true, ...props });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return name;
}

async function send(q: string, sessionId: string, body: unknown, extra: Record<string, unknown> = {}): Promise<Msg> {
  const res = await api('POST', `/queues/${q}/messages`, { body, sessionId, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function failure(p: Promise<unknown>): Promise<BrokerError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof BrokerError) return e;
    throw e;
  }
  throw new Error('expected a BrokerError');
}

const bodies = (ms: Msg[]) => ms.map((m) => m.body);

describe('N1: a session entity delivers only through a session receiver', () => {
  it('N1: a plain receive of the active subqueue is a 400 naming path; peek stays allowed', async () => {
    const q = await sessionQueue();
    await send(q, 's1', 'a');
    const e = await failure(broker.receive(queue(q), {}));
    expect(e.code).toBe('BadRequest');
    expect(e.options.field).toBe('path');
    expect(e.message).toContain('N1');
    expect((await broker.peek(queue(q), {})).map((m) => m.body)).toEqual(['a']);
  });

  it('N1: session operations on an entity without requiresSession are a 400 naming path', async () => {
    const name = `plain${++counter}`;
    expect((await api('PUT', `/queues/${name}`, {})).status).toBe(201);
    const e = await failure(broker.acceptSession(queue(name), { sessionId: 'x' }));
    expect(e.code).toBe('BadRequest');
    expect(e.options.field).toBe('path');
  });
});

describe('N2/N3: accept and receive', () => {
  it('N2/N3: accept a named session, receive its messages in sequence order, complete them, release', async () => {
    const q = await sessionQueue();
    for (const b of [1, 2, 3]) await send(q, 'A', b);
    await send(q, 'B', 'b1');
    const lock = await broker.acceptSession(queue(q), { sessionId: 'A' });
    expect(lock.sessionId).toBe('A');
    const got = (await broker.receiveFromSession(queue(q), 'A', { sessionLockToken: lock.sessionLockToken, maxMessages: 10 })) as Msg[];
    expect(bodies(got)).toEqual([1, 2, 3]);
    expect(got.every((m) => m.sessionId === 'A' && m.deliveryCount === 1 && m.lockedUntil === lock.lockedUntil)).toBe(true);
    for (const m of got) await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
    expect(await broker.receiveFromSession(queue(q), 'A', { sessionLockToken: lock.sessionLockToken })).toEqual([]);
    await broker.releaseSession(queue(q), 'A', { sessionLockToken: lock.sessionLockToken });
    const next = await broker.acceptSession(queue(q), {});
    expect(next.sessionId).toBe('B');
  });
});

/** Keeps a session held (renewing every 5 s) until the grace after its last send is over. */
async function holdThroughGrace(q: string, sessionId: string, sessionLockToken: string) {
  for (let waited = 0; waited <= SESSION_HINT_GRACE_MS; waited += 5 * SECOND) {
    clock.advance(5 * SECOND);
    await broker.renewSessionLock(queue(q), sessionId, { sessionLockToken });
  }
}

const accept = (q: string, body: Record<string, unknown> = {}) => broker.acceptSession(queue(q), body);
const receiveIn = (q: string, sessionId: string, sessionLockToken: string, extra: Record<string, unknown> = {}) =>
  broker.receiveFromSession(queue(q), sessionId, { sessionLockToken, ...extra }) as Promise<Msg[]>;
const complete = (q: string, m: Msg) => broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });

describe('N2: accepting a session', () => {
  it('N2: a named session is accepted with no messages yet; locked by another it is SessionCannotBeLocked (409) until its lock lapses', async () => {
    const q = await sessionQueue({ lockDuration: 'PT30S' });
    const first = await accept(q, { sessionId: 'empty' });
    expect(Date.parse(first.lockedUntil)).toBe(clock.now() + 30 * SECOND);
    const busy = await failure(accept(q, { sessionId: 'empty' }));
    expect(busy.code).toBe('SessionCannotBeLocked');
    expect(httpStatusOf(busy.code)).toBe(409);
    // A message sent to the held session reaches its holder.
    await send(q, 'empty', 'late');
    expect(bodies(await receiveIn(q, 'empty', first.sessionLockToken))).toEqual(['late']);
    clock.advance(31 * SECOND);
    const second = await accept(q, { sessionId: 'empty' });
    expect(second.sessionLockToken).not.toBe(first.sessionLockToken);
  });

  it('N2: accept-next with nothing available waits its maxWaitTime, then ServiceTimeout (408, not retryable)', async () => {
    const q = await sessionQueue();
    const before = clock.now();
    const e = await failure(accept(q, { maxWaitTime: 'PT3S' }));
    expect(e.code).toBe('ServiceTimeout');
    expect(httpStatusOf(e.code)).toBe(408);
    expect(e.retryable).toBe(false);
    expect(clock.now() - before).toBeGreaterThanOrEqual(3 * SECOND);
  });

  it('N2: accept-next skips sessions held by others and takes the one whose oldest available message is oldest', async () => {
    const q = await sessionQueue();
    await send(q, 'old', 1);
    clock.advance(SECOND);
    await send(q, 'mid', 2);
    clock.advance(SECOND);
    await send(q, 'new', 3);
    await send(q, 'old', 4);
    const held = await accept(q, { sessionId: 'old' });
    expect((await accept(q)).sessionId).toBe('mid');
    expect((await accept(q)).sessionId).toBe('new');
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    void held;
  });

  it('N2: a session whose only message is scheduled is not accepted before that time', async () => {
    const q = await sessionQueue();
    await send(q, 'later', 'x', { scheduledEnqueueTime: new Date(clock.now() + 5 * MINUTE).toISOString() });
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    clock.advance(5 * MINUTE + SECOND);
    const lock = await accept(q);
    expect(lock.sessionId).toBe('later');
    expect(bodies(await receiveIn(q, 'later', lock.sessionLockToken))).toEqual(['x']);
  });

  it('N2: a long-polling accept-next takes a session that gets a message during the wait', async () => {
    const q = await sessionQueue();
    let sent = false;
    const waiting = broker.acceptSession(queue(q), { maxWaitTime: 'PT10S' });
    // The manual clock's sleep returns at once; send from the side while the poll loops.
    const sending = (async () => {
      await new Promise((r) => setTimeout(r, 50));
      await send(q, 'arrives', 'hello');
      sent = true;
    })();
    const [lock] = await Promise.all([waiting.catch((e: unknown) => e), sending]);
    expect(sent).toBe(true);
    if (lock instanceof BrokerError)
      expect(lock.code).toBe('ServiceTimeout'); // the wait ran out on the fast clock first
    else expect((lock as { sessionId: string }).sessionId).toBe('arrives');
  });
});

describe('N3: order and exclusive delivery within a session', () => {
  it('N3: an abandoned message is the next one delivered again, its delivery count up by one', async () => {
    const q = await sessionQueue();
    for (const b of ['a', 'b', 'c']) await send(q, 'S', b);
    const lock = await accept(q, { sessionId: 'S' });
    const [a] = await receiveIn(q, 'S', lock.sessionLockToken);
    expect(a!.body).toBe('a');
    await broker.settle(queue(q), a!.sequenceNumber, 'abandon', { lockToken: a!.lockToken });
    const again = await receiveIn(q, 'S', lock.sessionLockToken, { maxMessages: 3 });
    expect(bodies(again)).toEqual(['a', 'b', 'c']);
    expect(again[0]!.deliveryCount).toBe(2);
    // Messages in flight under this lock are not handed out twice.
    expect(await receiveIn(q, 'S', lock.sessionLockToken, { maxMessages: 3 })).toEqual([]);
  });

  it('N3: a receiver that dies holding the session: once its lock lapses, the next acceptor gets the in-flight message first, delivery count + 1', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    for (const b of [1, 2, 3]) await send(q, 'D', b);
    const dying = await accept(q);
    expect(dying.sessionId).toBe('D');
    const [inFlight] = await receiveIn(q, 'D', dying.sessionLockToken);
    expect(inFlight!.body).toBe(1);
    // Nothing more for another acceptor while the lock holds.
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    clock.advance(11 * SECOND);
    const next = await accept(q);
    expect(next.sessionId).toBe('D');
    const got = await receiveIn(q, 'D', next.sessionLockToken, { maxMessages: 3 });
    expect(bodies(got)).toEqual([1, 2, 3]);
    expect(got.map((m) => m.deliveryCount)).toEqual([2, 1, 1]);
    // The dead receiver's token settles nothing (N4), the new one completes everything.
    expect((await failure(complete(q, inFlight!))).code).toMatch(/LockLost/);
    for (const m of got) await complete(q, m);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N3: receive-and-delete inside a session hands each message out once, in order', async () => {
    const q = await sessionQueue();
    for (const b of [1, 2, 3, 4]) await send(q, 'R', b);
    const lock = await accept(q);
    expect(bodies(await receiveIn(q, 'R', lock.sessionLockToken, { mode: 'receiveAndDelete', maxMessages: 2 }))).toEqual([1, 2]);
    expect(bodies(await receiveIn(q, 'R', lock.sessionLockToken, { mode: 'receiveAndDelete', maxMessages: 5 }))).toEqual([3, 4]);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N3: only the lock holder receives: a wrong or released token is SessionLockLost', async () => {
    const q = await sessionQueue();
    await send(q, 'H', 1);
    const lock = await accept(q);
    const other = '00000000-0000-0000-0000-000000000000';
    expect((await failure(receiveIn(q, 'H', other))).code).toBe('SessionLockLost');
    await broker.releaseSession(queue(q), 'H', { sessionLockToken: lock.sessionLockToken });
    expect((await failure(receiveIn(q, 'H', lock.sessionLockToken))).code).toBe('SessionLockLost');
    expect((await failure(broker.releaseSession(queue(q), 'H', { sessionLockToken: lock.sessionLockToken }))).code).toBe('SessionLockLost');
  });
});

describe('N4: settlement needs the session lock', () => {
  it('N4: after the session lock is lost, complete/abandon/defer/dead-letter fail with SessionLockLost (410) and change nothing', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    for (const b of [1, 2, 3, 4]) await send(q, 'L', b);
    const lock = await accept(q);
    const got = await receiveIn(q, 'L', lock.sessionLockToken, { maxMessages: 4 });
    clock.advance(11 * SECOND);
    for (const [m, action] of [
      [got[0], 'complete'],
      [got[1], 'abandon'],
      [got[2], 'defer'],
      [got[3], 'deadletter'],
    ] as const) {
      const e = await failure(broker.settle(queue(q), m!.sequenceNumber, action, { lockToken: m!.lockToken }));
      expect(e.code, action).toBe('SessionLockLost');
      expect(httpStatusOf(e.code)).toBe(410);
    }
    const batch = await broker.settleBatch(queue(q), 'complete', { lockTokens: got.map((m) => m.lockToken) });
    expect(batch.map((r) => ('error' in r ? r.error.code : 'ok'))).toEqual(['SessionLockLost', 'SessionLockLost', 'SessionLockLost', 'SessionLockLost']);
    const left = await broker.peek(queue(q), {});
    expect(left.map((m) => [m.body, m.state, m.deliveryCount])).toEqual([
      [1, 'Active', 1],
      [2, 'Active', 1],
      [3, 'Active', 1],
      [4, 'Active', 1],
    ]);
    expect(await broker.peek(queue(q, 'deadletter'), {})).toEqual([]);
  });

  it('N4: a wrong message token under a held session lock is MessageLockLost; renew-lock on a session message is a 400', async () => {
    const q = await sessionQueue();
    await send(q, 'M', 1);
    const lock = await accept(q);
    const [m] = await receiveIn(q, 'M', lock.sessionLockToken);
    const wrong = `${m!.lockToken.slice(0, 24)}000000000000`;
    expect((await failure(broker.settle(queue(q), m!.sequenceNumber, 'complete', { lockToken: wrong }))).code).toBe('MessageLockLost');
    const renew = await failure(broker.renewLock(queue(q), m!.sequenceNumber, { lockToken: m!.lockToken }));
    expect(renew.code).toBe('BadRequest');
    await complete(q, m!);
    expect((await failure(complete(q, m!))).code).toBe('MessageLockLost');
  });

  it('N4: renewing the session lock extends it by lockDuration, and its messages stay settleable past the first lock end', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    await send(q, 'N', 1);
    const lock = await accept(q);
    const [m] = await receiveIn(q, 'N', lock.sessionLockToken);
    clock.advance(8 * SECOND);
    const renewed = await broker.renewSessionLock(queue(q), 'N', { sessionLockToken: lock.sessionLockToken });
    expect(Date.parse(renewed.lockedUntil)).toBe(clock.now() + 10 * SECOND);
    clock.advance(8 * SECOND);
    expect((await failure(accept(q, { sessionId: 'N' }))).code).toBe('SessionCannotBeLocked');
    // The sweeper leaves the message alone while the session lock lives (N4/T5).
    await broker.sweep();
    await complete(q, m!);
    clock.advance(3 * SECOND);
    expect((await failure(broker.renewSessionLock(queue(q), 'N', { sessionLockToken: lock.sessionLockToken }))).code).toBe('SessionLockLost');
  });

  it('N4: releasing lets the next receiver accept the session at once, with its unsettled messages first', async () => {
    const q = await sessionQueue();
    for (const b of [1, 2]) await send(q, 'P', b);
    const lock = await accept(q);
    const [m] = await receiveIn(q, 'P', lock.sessionLockToken);
    await broker.releaseSession(queue(q), 'P', { sessionLockToken: lock.sessionLockToken });
    const next = await accept(q);
    expect(next.sessionId).toBe('P');
    const got = await receiveIn(q, 'P', next.sessionLockToken, { maxMessages: 2 });
    expect(got.map((x) => [x.body, x.deliveryCount])).toEqual([
      [1, 2],
      [2, 1],
    ]);
    expect((await failure(complete(q, m!))).code).toMatch(/LockLost/);
  });

  it('N4/R9: batch settlement of session messages under the held lock', async () => {
    const q = await sessionQueue();
    for (const b of [1, 2, 3]) await send(q, 'B', b);
    const lock = await accept(q);
    const got = await receiveIn(q, 'B', lock.sessionLockToken, { maxMessages: 3 });
    const abandoned = await broker.settleBatch(queue(q), 'abandon', { lockTokens: [got[2]!.lockToken] });
    expect(abandoned).toEqual([{ lockToken: got[2]!.lockToken, ok: true }]);
    const done = await broker.settleBatch(queue(q), 'complete', { lockTokens: got.slice(0, 2).map((m) => m.lockToken) });
    expect(done.every((r) => 'ok' in r)).toBe(true);
    const again = await receiveIn(q, 'B', lock.sessionLockToken);
    expect(again.map((m) => [m.body, m.deliveryCount])).toEqual([[3, 2]]);
  });
});

describe('N5: session state', () => {
  const bytes = (n: number) => Buffer.alloc(n, 7).toString('base64');

  it('N5: 256 KB of state round-trips; 256 KB + 1 byte is refused naming state and changes nothing', async () => {
    const q = await sessionQueue();
    const lock = await accept(q, { sessionId: 'big' });
    const token = lock.sessionLockToken;
    expect(await broker.getSessionState(queue(q), 'big', token)).toEqual({ sessionId: 'big', state: null });
    await broker.setSessionState(queue(q), 'big', { sessionLockToken: token, state: bytes(256 * 1024) });
    const got = await broker.getSessionState(queue(q), 'big', token);
    expect(Buffer.from(got.state!, 'base64').length).toBe(256 * 1024);
    expect(got.state).toBe(bytes(256 * 1024));
    const e = await failure(broker.setSessionState(queue(q), 'big', { sessionLockToken: token, state: Buffer.alloc(256 * 1024 + 1, 1).toString('base64') }));
    expect(e.code).toBe('MessageSizeExceeded');
    expect(e.options.field).toBe('state');
    expect((await broker.getSessionState(queue(q), 'big', token)).state).toBe(bytes(256 * 1024));
  });

  it('N5: only the lock holder reads and writes the state; it survives the messages and the lock, and null clears it', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    await send(q, 'st', 1);
    const lock = await accept(q);
    await broker.setSessionState(queue(q), 'st', { sessionLockToken: lock.sessionLockToken, state: Buffer.from('{"step":1}').toString('base64') });
    const [m] = await receiveIn(q, 'st', lock.sessionLockToken);
    await complete(q, m!);
    await broker.releaseSession(queue(q), 'st', { sessionLockToken: lock.sessionLockToken });
    const stranger = '11111111-1111-1111-1111-111111111111';
    expect((await failure(broker.getSessionState(queue(q), 'st', stranger))).code).toBe('SessionLockLost');
    expect((await failure(broker.setSessionState(queue(q), 'st', { sessionLockToken: lock.sessionLockToken, state: null }))).code).toBe('SessionLockLost');
    // N8: a session with state and no messages is still listed.
    expect((await broker.listSessions(queue(q), {})).items).toEqual(['st']);
    const again = await accept(q, { sessionId: 'st' });
    expect(Buffer.from((await broker.getSessionState(queue(q), 'st', again.sessionLockToken)).state!, 'base64').toString()).toBe('{"step":1}');
    await broker.setSessionState(queue(q), 'st', { sessionLockToken: again.sessionLockToken, state: null });
    expect((await broker.getSessionState(queue(q), 'st', again.sessionLockToken)).state).toBeNull();
    // Past the grace after the last send (a send's message may still be on its way until then).
    await holdThroughGrace(q, 'st', again.sessionLockToken);
    await broker.releaseSession(queue(q), 'st', { sessionLockToken: again.sessionLockToken });
    // N1: no messages and no state: the session is gone.
    expect((await broker.listSessions(queue(q), {})).items).toEqual([]);
  });

  it('N5/E4: the state goes with the entity (the reaper removes the sessions partition)', async () => {
    const q = await sessionQueue();
    const lock = await accept(q, { sessionId: 'gone' });
    await broker.setSessionState(queue(q), 'gone', { sessionLockToken: lock.sessionLockToken, state: bytes(10) });
    await send(q, 'gone', 1);
    const eid = await broker.incarnation(queue(q));
    await broker.deleteEntity(queue(q));
    await broker.reap();
    const left = await deps.db.send(
      new QueryCommand({
        TableName: deps.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': sessionsPk(eid) },
        ConsistentRead: true,
      }),
    );
    expect(left.Items).toEqual([]);
    // Re-created, the entity starts with no sessions (E4).
    await sessionQueueNamed(q);
    expect((await broker.listSessions(queue(q), {})).items).toEqual([]);
  });
});

async function sessionQueueNamed(name: string, props: Record<string, unknown> = {}) {
  const res = await api('PUT', `/queues/${name}`, { requiresSession: true, ...props });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

describe('N8: listing sessions', () => {
  it('N8: the ids of sessions with messages or state, in pages', async () => {
    const q = await sessionQueue();
    const ids = Array.from({ length: 7 }, (_, i) => `s-${i}`);
    for (const id of ids) await send(q, id, id);
    const seen: string[] = [];
    let next: string | undefined;
    do {
      const page = await broker.listSessions(queue(q), { top: '3', ...(next ? { next } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items);
      next = page.next ?? undefined;
    } while (next);
    expect(seen.sort()).toEqual(ids);
    expect((await failure(broker.listSessions(queue(q), { next: 'bm9wZQ' }))).options.field).toBe('next');
  });
});

describe('N6: expiry, max delivery count, deferral, scheduling inside sessions; the dead-letter subqueue without one', () => {
  it('N6/T4/T6: expired session messages are never delivered; they go to the dead-letter subqueue, which is read without a session', async () => {
    const q = await sessionQueue({ defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    await send(q, 'E', 'old-1');
    await send(q, 'E', 'old-2');
    clock.advance(2 * MINUTE);
    await send(q, 'E', 'fresh');
    const lock = await accept(q);
    expect(bodies(await receiveIn(q, 'E', lock.sessionLockToken, { maxMessages: 5 }))).toEqual(['fresh']);
    const dead = (await broker.receive(queue(q, 'deadletter'), { maxMessages: 5 })) as Msg[];
    expect(dead.map((m) => [m.body, m.deadLetterReason, m.sessionId])).toEqual([
      ['old-1', 'TTLExpiredException', 'E'],
      ['old-2', 'TTLExpiredException', 'E'],
    ]);
    for (const m of dead) await broker.settle(queue(q, 'deadletter'), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
  });

  it('N6/T5: a session message past its expiry stays settleable while the session lock lives; the sweeper leaves it alone', async () => {
    const q = await sessionQueue({ defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true, lockDuration: 'PT1M' });
    await send(q, 'T', 1);
    const lock = await accept(q);
    const [m] = await receiveIn(q, 'T', lock.sessionLockToken);
    clock.advance(50 * SECOND);
    await broker.renewSessionLock(queue(q), 'T', { sessionLockToken: lock.sessionLockToken });
    clock.advance(50 * SECOND); // past expiry and past the message's recorded lockedUntil, inside the renewed session lock
    await broker.sweep();
    expect((await broker.peek(queue(q), {})).map((x) => x.body)).toEqual([1]);
    await complete(q, m!);
    expect(await broker.peek(queue(q, 'deadletter'), {})).toEqual([]);
  });

  it('N6/D2: abandoned maxDeliveryCount times, a session message is dead-lettered with MaxDeliveryCountExceeded', async () => {
    const q = await sessionQueue({ maxDeliveryCount: 2 });
    await send(q, 'X', 'poison');
    await send(q, 'X', 'next');
    const lock = await accept(q);
    for (let i = 0; i < 2; i++) {
      const [m] = await receiveIn(q, 'X', lock.sessionLockToken);
      expect(m!.body).toBe('poison');
      await broker.settle(queue(q), m!.sequenceNumber, 'abandon', { lockToken: m!.lockToken });
    }
    expect(bodies(await receiveIn(q, 'X', lock.sessionLockToken))).toEqual(['next']);
    const dead = await broker.peek(queue(q, 'deadletter'), {});
    expect(dead.map((m) => [m.body, m.deadLetterReason, m.deliveryCount])).toEqual([['poison', 'MaxDeliveryCountExceeded', 2]]);
  });

  it('N6/D2: when the session lock runs out on a last delivery, the next holder does not get it: it is dead-lettered', async () => {
    const q = await sessionQueue({ maxDeliveryCount: 2, lockDuration: 'PT10S' });
    await send(q, 'Y', 'poison');
    await send(q, 'Y', 'next');
    for (let i = 0; i < 2; i++) {
      const lock = await accept(q);
      const [m] = await receiveIn(q, 'Y', lock.sessionLockToken);
      expect([m!.body, m!.deliveryCount]).toEqual(['poison', i + 1]);
      clock.advance(11 * SECOND);
    }
    const lock = await accept(q);
    expect(bodies(await receiveIn(q, 'Y', lock.sessionLockToken, { maxMessages: 5 }))).toEqual(['next']);
    expect((await broker.peek(queue(q, 'deadletter'), {})).map((m) => [m.body, m.deadLetterReason])).toEqual([['poison', 'MaxDeliveryCountExceeded']]);
  });

  it('N6/R7: a deferred session message is skipped by receive, received by number under the session lock, and keeps the session listed', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    await send(q, 'F', 'later');
    await send(q, 'F', 'now');
    const lock = await accept(q);
    const [m] = await receiveIn(q, 'F', lock.sessionLockToken);
    await broker.settle(queue(q), m!.sequenceNumber, 'defer', { lockToken: m!.lockToken });
    const [n] = await receiveIn(q, 'F', lock.sessionLockToken, { maxMessages: 5 });
    expect(n!.body).toBe('now');
    await complete(q, n!);
    expect(await receiveIn(q, 'F', lock.sessionLockToken)).toEqual([]);
    // Not from a plain deferred receive (N1), nor as another session's.
    expect((await failure(broker.receiveDeferred(queue(q), { sequenceNumbers: [m!.sequenceNumber] }))).code).toBe('BadRequest');
    const other = await accept(q, { sessionId: 'other' });
    expect(
      (await failure(broker.receiveDeferredFromSession(queue(q), 'other', { sessionLockToken: other.sessionLockToken, sequenceNumbers: [m!.sequenceNumber] })))
        .code,
    ).toBe('MessageNotFound');
    // Released with only a deferred message: still listed, never offered to accept-next.
    await broker.releaseSession(queue(q), 'F', { sessionLockToken: lock.sessionLockToken });
    expect((await broker.listSessions(queue(q), {})).items).toContain('F');
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    const again = await accept(q, { sessionId: 'F' });
    const [d] = (await broker.receiveDeferredFromSession(queue(q), 'F', {
      sessionLockToken: again.sessionLockToken,
      sequenceNumbers: [m!.sequenceNumber],
    })) as Msg[];
    expect([d.body, d.state, d.deliveryCount]).toEqual(['later', 'Deferred', 2]);
    await complete(q, d);
    // Past the grace after the last send, the drained session's release removes it (N1, N8).
    await holdThroughGrace(q, 'F', again.sessionLockToken);
    await broker.releaseSession(queue(q), 'F', { sessionLockToken: again.sessionLockToken });
    expect((await broker.listSessions(queue(q), {})).items).not.toContain('F');
  });

  it('N6/S6: a scheduled message in a held session is received only when its time comes', async () => {
    const q = await sessionQueue({ lockDuration: 'PT5M' });
    await send(q, 'Z', 'first');
    await send(q, 'Z', 'scheduled', { scheduledEnqueueTime: new Date(clock.now() + 2 * MINUTE).toISOString() });
    const lock = await accept(q);
    expect(bodies(await receiveIn(q, 'Z', lock.sessionLockToken, { maxMessages: 5 }))).toEqual(['first']);
    clock.advance(2 * MINUTE + SECOND);
    expect(bodies(await receiveIn(q, 'Z', lock.sessionLockToken, { maxMessages: 5 }))).toEqual(['scheduled']);
  });

  it('N6/S8: forwarding and topic fan-out into session entities put the accept-next hint too', async () => {
    const target = await sessionQueue();
    const source = `fwd${++counter}`;
    expect((await api('PUT', `/queues/${source}`, { forwardTo: target })).status).toBe(201);
    await api('POST', `/queues/${source}/messages`, { body: 'via forward', sessionId: 'fw' });
    const lock = await accept(target);
    expect(lock.sessionId).toBe('fw');
    expect(bodies(await receiveIn(target, 'fw', lock.sessionLockToken))).toEqual(['via forward']);

    const topic = `t${++counter}`;
    expect((await api('PUT', `/topics/${topic}`, {})).status).toBe(201);
    expect((await api('PUT', `/topics/${topic}/subscriptions/s`, { requiresSession: true })).status).toBe(201);
    // One at a time: a batch to a topic fans its messages out concurrently, in no set order.
    for (const body of [1, 2]) expect((await api('POST', `/topics/${topic}/messages`, { body, sessionId: 'k' })).status).toBe(201);
    const sub: ReceiveTarget = { kind: 'subscription', topic, name: 's', subqueue: 'active' };
    const got = await broker.acceptSession(sub, {});
    expect(got.sessionId).toBe('k');
    expect(((await broker.receiveFromSession(sub, 'k', { sessionLockToken: got.sessionLockToken, maxMessages: 5 })) as Msg[]).map((m) => m.body)).toEqual([
      1, 2,
    ]);
  });
});

describe('N2/N3 with partitions', () => {
  it('N2/N3: an entity with partitions > 1: every session is accepted once and delivers its messages in order', async () => {
    const q = await sessionQueue({ enablePartitioning: true });
    const ids = Array.from({ length: 12 }, (_, i) => `p${i}`);
    for (const id of ids) {
      const res = await api('POST', `/queues/${q}/messages/batch`, { messages: [1, 2, 3].map((n) => ({ body: `${id}:${n}`, sessionId: id })) });
      expect(res.status).toBe(201);
    }
    const seen: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const lock = await accept(q);
      seen.push(lock.sessionId);
      const got = await receiveIn(q, lock.sessionId, lock.sessionLockToken, { maxMessages: 10 });
      expect(bodies(got)).toEqual([1, 2, 3].map((n) => `${lock.sessionId}:${n}`));
      for (const m of got) await complete(q, m);
      await broker.releaseSession(queue(q), lock.sessionId, { sessionLockToken: lock.sessionLockToken });
    }
    expect(seen.sort()).toEqual([...ids].sort());
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
  });
});

describe('crash injection: accepting a session (hint, lock, check, release) and settling its messages', () => {
  const sessionItem = async (q: string, sessionId: string) => {
    const eid = await broker.incarnation(queue(q));
    const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: sessionKey(eid, sessionId), ConsistentRead: true }));
    return out.Item;
  };
  const isMessagePut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('msg/'));
  const isSessionLock = both(
    is(UpdateCommand),
    (c) => String(inputOf(c).Key?.pk ?? '').startsWith('sess/') && String(inputOf(c).UpdateExpression).includes('lockToken = :token'),
  );
  const isSessionRelease = both(
    is(DeleteCommand, UpdateCommand),
    (c) => String(inputOf(c).Key?.pk ?? '').startsWith('sess/') && !String(inputOf(c).UpdateExpression ?? '').includes('lockToken = :token'),
  );
  // A complete deletes its message on its own after reading the session lock; the other settlements write in a transaction.
  const isSettlementWrite = (c: unknown) => is(TransactWriteCommand)(c) || (is(DeleteCommand)(c) && String(inputOf(c).Key?.pk ?? '').startsWith('msg/'));

  it('N2: crash between the hint and the message put: the stale hint is never delivered and is dropped after the grace period', async () => {
    const q = await sessionQueue();
    const crashing = apiClient(faultyDeps(deps, { match: isMessagePut }));
    const res = await crashing('POST', `/queues/${q}/messages`, { body: 'lost', sessionId: 'ghost' });
    expect(res.status).toBe(500);
    expect(await sessionItem(q, 'ghost')).toBeDefined();
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    clock.advance(SESSION_HINT_GRACE_MS);
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    expect(await sessionItem(q, 'ghost')).toBeUndefined();
    expect((await broker.listSessions(queue(q), {})).items).toEqual([]);
    // The sender's retry lands normally.
    await send(q, 'ghost', 'retried');
    const lock = await accept(q);
    expect(bodies(await receiveIn(q, 'ghost', lock.sessionLockToken))).toEqual(['retried']);
  });

  it('N2: crash right after the lock (or before the check): the session is held by nobody until the lock lapses, then accepted with its messages intact', async () => {
    for (const fault of [
      { match: isSessionLock, phase: 'after' as const },
      { match: both(is(QueryCommand), (c) => String(inputOf(c).ExpressionAttributeValues?.[':pk'] ?? '').includes('/s/')), phase: 'before' as const },
    ]) {
      const q = await sessionQueue({ lockDuration: 'PT10S' });
      await send(q, 'C', 1);
      await send(q, 'C', 2);
      const dying = createBroker(faultyDeps(deps, fault));
      await expect(dying.acceptSession(queue(q), {})).rejects.toThrow(InjectedCrash);
      expect((await failure(accept(q))).code).toBe('ServiceTimeout');
      clock.advance(11 * SECOND);
      const lock = await accept(q);
      expect(lock.sessionId).toBe('C');
      const got = await receiveIn(q, 'C', lock.sessionLockToken, { maxMessages: 5 });
      expect(got.map((m) => [m.body, m.deliveryCount])).toEqual([
        [1, 1],
        [2, 1],
      ]);
    }
  });

  it('N2: crash before the release of a session found empty: it is looked at again once its lock lapses, and dropped', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    await send(q, 'E', 1);
    const lock = await accept(q);
    const [m] = await receiveIn(q, 'E', lock.sessionLockToken);
    await complete(q, m!);
    clock.advance(2 * MINUTE); // past the grace after the send
    await broker.releaseSession(queue(q), 'E', { sessionLockToken: lock.sessionLockToken }).catch(() => undefined);
    // The hint is already gone (release found no message). Put a stale one back as a crashed send would.
    await apiClient(faultyDeps(deps, { match: isMessagePut }))('POST', `/queues/${q}/messages`, { body: 'x', sessionId: 'E' });
    clock.advance(2 * MINUTE);
    const dying = createBroker(faultyDeps(deps, { match: isSessionRelease }));
    await expect(dying.acceptSession(queue(q), {})).rejects.toThrow(InjectedCrash);
    expect((await sessionItem(q, 'E'))?.lockToken).toBeDefined();
    clock.advance(11 * SECOND);
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    expect(await sessionItem(q, 'E')).toBeUndefined();
  });

  it('N4: crash before or after the settlement write of a session message: settled exactly once', async () => {
    for (const phase of ['before', 'after'] as const) {
      for (const action of ['complete', 'deadletter', 'abandon'] as const) {
        const q = await sessionQueue();
        await send(q, 'K', action);
        const lock = await accept(q);
        const [m] = await receiveIn(q, 'K', lock.sessionLockToken);
        const dying = createBroker(faultyDeps(deps, { match: isSettlementWrite, phase }));
        await expect(dying.settle(queue(q), m!.sequenceNumber, action, { lockToken: m!.lockToken })).rejects.toThrow(InjectedCrash);
        const retry = broker.settle(queue(q), m!.sequenceNumber, action, { lockToken: m!.lockToken });
        if (phase === 'before') await retry;
        else expect((await failure(retry)).code).toBe('MessageLockLost');
        const active = await broker.peek(queue(q), {});
        const dead = await broker.peek(queue(q, 'deadletter'), {});
        const where = `${phase} ${action}`;
        if (action === 'complete') expect([active.length, dead.length], where).toEqual([0, 0]);
        if (action === 'deadletter') expect([active.length, dead.length], where).toEqual([0, 1]);
        if (action === 'abandon') {
          expect([active.length, dead.length], where).toEqual([1, 0]);
          const again = await receiveIn(q, 'K', lock.sessionLockToken);
          expect(
            again.map((x) => x.deliveryCount),
            where,
          ).toEqual([2]);
        }
      }
    }
  });
});

describe('N7: the cost of accept-next does not grow with locked sessions', () => {
  /** Requests, items read and capacity units of what `run` asks of DynamoDB. */
  async function metered(run: (b: Broker) => Promise<unknown>) {
    const tally = { requests: 0, itemsRead: 0, readUnits: 0, writeUnits: 0 };
    const real = deps.db;
    const send = real.send.bind(real) as (c: unknown) => Promise<Record<string, unknown>>;
    const db = new Proxy(real, {
      get(target, prop) {
        if (prop !== 'send') return Reflect.get(target, prop, target) as unknown;
        return async (command: { input: Record<string, unknown> }) => {
          command.input.ReturnConsumedCapacity = 'TOTAL';
          const out = await send(command);
          tally.requests++;
          tally.itemsRead += (out.ScannedCount as number | undefined) ?? (out.Item ? 1 : 0);
          const used = out.ConsumedCapacity as { ReadCapacityUnits?: number; WriteCapacityUnits?: number; CapacityUnits?: number } | undefined;
          if (command.constructor.name.startsWith('Get') || command.constructor.name.startsWith('Query')) tally.readUnits += used?.CapacityUnits ?? 0;
          else tally.writeUnits += used?.CapacityUnits ?? 0;
          return out;
        };
      },
    });
    await run(createBroker({ ...deps, db }));
    return tally;
  }

  it('N7: accept-next with 60 locked sessions ahead of the available one costs what it costs with none', async () => {
    const alone = await sessionQueue();
    await send(alone, 'free', 1);
    const crowded = await sessionQueue();
    for (let i = 0; i < 60; i++) await send(crowded, `busy-${i}`, i);
    for (let i = 0; i < 60; i++) await accept(crowded);
    clock.advance(SECOND);
    await send(crowded, 'free', 1);
    // Both entities were touched just now, so neither accept writes accessedAt.
    const a = await metered((b) => b.acceptSession(queue(alone), {}));
    const b = await metered(async (x) => expect((await x.acceptSession(queue(crowded), {})).sessionId).toBe('free'));
    expect(b).toEqual(a);
    expect(a.itemsRead).toBeLessThanOrEqual(4); // entity, one hint, the session's first message, the lock's answer
  });
});

describe('E6/D7 with sessions', () => {
  it('E6: counts keep working for session messages (active, deferred, dead-letter)', { timeout: 120_000 }, async () => {
    const q = await sessionQueue();
    for (const b of [1, 2, 3, 4]) await send(q, 'cnt', b);
    const lock = await accept(q);
    const [a, b, c] = await receiveIn(q, 'cnt', lock.sessionLockToken, { maxMessages: 3 });
    await complete(q, a);
    await broker.settle(queue(q), b.sequenceNumber, 'defer', { lockToken: b.lockToken });
    await broker.settle(queue(q), c.sequenceNumber, 'deadletter', { lockToken: c.lockToken });
    await deliverStream(createStreamHandler(deps), await new TableStreamReader(deps).read());
    const runtime = ((await broker.describeEntity(queue(q))) as { runtime: Record<string, number> }).runtime;
    expect([runtime.activeMessageCount, runtime.deferredMessageCount, runtime.deadLetterMessageCount]).toEqual([1, 1, 1]);
  });

  it('D7/N1: resubmitting a session message from the dead-letter subqueue puts it back in its session, where accept-next finds it', async () => {
    const q = await sessionQueue();
    await send(q, 'rs', 'again');
    const lock = await accept(q);
    const [m] = await receiveIn(q, 'rs', lock.sessionLockToken);
    await broker.settle(queue(q), m.sequenceNumber, 'deadletter', { lockToken: m.lockToken });
    await broker.releaseSession(queue(q), 'rs', { sessionLockToken: lock.sessionLockToken });
    clock.advance(2 * MINUTE);
    expect((await failure(accept(q))).code).toBe('ServiceTimeout');
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 1 });
    const again = await accept(q);
    expect(again.sessionId).toBe('rs');
    expect(bodies(await receiveIn(q, 'rs', again.sessionLockToken))).toEqual(['again']);
  });
});

describe('N3/N4: a holder whose lock lapses mid-receive', () => {
  // The take: the write of the session's record of what it hands out (a message with no expiry), or of the message's own lock.
  const isTake = both(is(UpdateCommand), (c) => /sgen = :gen|held = :held/.test(String(inputOf(c).UpdateExpression ?? '')));

  it('N3: its take, landing after the next holder took the message, takes nothing: the next holder keeps it and settles it', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    await send(q, 'race', 'only');
    const first = await accept(q);
    let second: Awaited<ReturnType<Broker['acceptSession']>> | undefined;
    let theirs: Msg[] = [];
    const slow = createBroker(
      faultyDeps(deps, {
        match: isTake,
        // Between the slow holder's lock check and its write: its lock lapses, another takes over.
        interleave: async () => {
          clock.advance(11 * SECOND);
          second = await accept(q);
          theirs = await receiveIn(q, 'race', second.sessionLockToken);
        },
      }),
    );
    const mine = await slow.receiveFromSession(queue(q), 'race', { sessionLockToken: first.sessionLockToken });
    expect(mine).toEqual([]);
    expect(theirs.map((m) => [m.body, m.deliveryCount])).toEqual([['only', 1]]);
    await complete(q, theirs[0]);
    expect(await broker.peek(queue(q), {})).toEqual([]);
  });

  it('N3: a receiver that dies after its take was written: the message stays in flight under that lock, then goes to the next holder with delivery count + 1', async () => {
    const q = await sessionQueue({ lockDuration: 'PT10S' });
    await send(q, 'lost', 'm');
    const lock = await accept(q);
    const dying = createBroker(faultyDeps(deps, { match: isTake, phase: 'after' }));
    await expect(dying.receiveFromSession(queue(q), 'lost', { sessionLockToken: lock.sessionLockToken })).rejects.toThrow(InjectedCrash);
    expect(await receiveIn(q, 'lost', lock.sessionLockToken)).toEqual([]);
    clock.advance(11 * SECOND);
    const next = await accept(q);
    expect((await receiveIn(q, 'lost', next.sessionLockToken)).map((m) => [m.body, m.deliveryCount])).toEqual([['m', 2]]);
  });
});

describe('B2: bad input to the session operations', () => {
  it('B2: bad input is a 400 naming the field and changes nothing', async () => {
    const q = await sessionQueue();
    const lock = await accept(q, { sessionId: 'bi' });
    const cases: [Promise<unknown>, string][] = [
      [accept(q, { sessionId: 'x'.repeat(129) }), 'sessionId'],
      [accept(q, { sessionId: '' }), 'sessionId'],
      [accept(q, { maxWaitTime: 'PT21S' }), 'maxWaitTime'],
      [accept(q, { other: 1 }), 'other'],
      [broker.receiveFromSession(queue(q), 'x'.repeat(129), { sessionLockToken: lock.sessionLockToken }), 'sessionId'],
      [broker.receiveFromSession(queue(q), 'bi', { sessionLockToken: 'nope' }), 'sessionLockToken'],
      [broker.receiveFromSession(queue(q), 'bi', { sessionLockToken: lock.sessionLockToken, maxMessages: 101 }), 'maxMessages'],
      [broker.setSessionState(queue(q), 'bi', { sessionLockToken: lock.sessionLockToken, state: 'not base64!' }), 'state'],
      [broker.setSessionState(queue(q), 'bi', { sessionLockToken: lock.sessionLockToken }), 'state'],
      [broker.receiveDeferredFromSession(queue(q), 'bi', { sessionLockToken: lock.sessionLockToken, sequenceNumbers: ['x'] }), 'sequenceNumbers.0'],
      [broker.listSessions(queue(q), { top: '0' }), 'top'],
      [broker.acceptSession(queue(q, 'deadletter'), {}), 'path'],
    ];
    for (const [call, field] of cases) {
      const e = await failure(call);
      expect([e.code, e.options.field], field).toEqual(['BadRequest', field]);
    }
    expect((await broker.getSessionState(queue(q), 'bi', lock.sessionLockToken)).state).toBeNull();
  });
});

describe('I2 with sessions', () => {
  it('I2: session operations count as receives: they keep an idle-deleting entity alive', async () => {
    const q = await sessionQueue({ autoDeleteOnIdle: 'PT5M' });
    clock.advance(4 * MINUTE);
    await accept(q, { sessionId: 'idle' });
    clock.advance(4 * MINUTE);
    await accept(q, { sessionId: 'idle' }); // the first lock has lapsed
    // Without that use the queue would be past its deadline now.
    clock.advance(4 * MINUTE);
    await broker.reap();
    expect((await api('GET', `/queues/${q}`)).status).toBe(200);
    clock.advance(8 * MINUTE);
    await broker.reap();
    expect((await api('GET', `/queues/${q}`)).status).toBe(404);
  });
});
