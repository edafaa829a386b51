/**
 * The looks a release leaves at a session it found empty moments after a send (N2, N8): its
 * hint comes back SESSION_HINT_LAG_MS after that send and at the end of the grace, in case
 * the send's message was not in the index yet. Accept-next takes such a look without locking
 * a session that holds no message: the first moves the hint on, the last removes the session.
 * A send, a lock or state arriving meanwhile sends the look the way of any hint (locked,
 * looked at, released), and a crash around either write leaves the look to be taken again.
 */
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { SESSION_HINT_GRACE_MS, SESSION_HINT_LAG_MS } from '../../lib/broker/message-items.js';
import { sessionKey } from '../../lib/store/keys.js';
import { createBroker, type Broker } from '../support/broker.js';
import { both, faultyDeps, inputOf, InjectedCrash, is, type Fault } from '../support/faults.js';
import { sessionQueues, type Api, type Deps } from '../support/session-queues.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;

const SECOND = 1000;
const { clock, open, queue } = sessionQueues();
let deps: Deps;
let api: Api;
let broker: Broker;
let counter = 0;

beforeAll(async () => ({ deps, api, broker } = await open('sesslooks')));

async function send(q: string, sessionId: string, body: unknown): Promise<void> {
  const res = await api('POST', `/queues/${q}/messages`, { body, sessionId });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

/** A session queue whose session `d` got one message, drained and released at once: its hint is the first look. */
async function drainedAtOnce(beforeRelease?: (q: string, lock: string) => Promise<void>): Promise<string> {
  const q = `lk${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
  await send(q, 'd', 'only');
  const { sessionId, sessionLockToken } = await broker.acceptSession(queue(q), {});
  expect(sessionId).toBe('d');
  const [m] = (await broker.receiveFromSession(queue(q), 'd', { sessionLockToken })) as Msg[];
  await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
  await beforeRelease?.(q, sessionLockToken);
  await broker.releaseSession(queue(q), 'd', { sessionLockToken });
  return q;
}

async function sessionItem(q: string, sessionId = 'd') {
  const eid = await broker.incarnation(queue(q));
  return (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: sessionKey(eid, sessionId), ConsistentRead: true }))).Item;
}

async function acceptsNothing(b: Broker, q: string): Promise<void> {
  await expect(b.acceptSession(queue(q), {})).rejects.toMatchObject({ code: 'ServiceTimeout' });
}

const onSession = (c: unknown) => String(inputOf(c).Key?.pk ?? '').startsWith('sess/');
const isLock = both(is(UpdateCommand), (c) => onSession(c) && String(inputOf(c).UpdateExpression).includes('lockToken = :token'));
const isLookMove = both(is(UpdateCommand), (c) => onSession(c) && inputOf(c).UpdateExpression === 'SET rsk = :next');
const isLookRemoval = both(is(DeleteCommand), (c) => onSession(c) && String(inputOf(c).ConditionExpression).includes('rsk = :seen'));

/** A broker whose calls matching `fault.match` are counted (and faulted if `fault` says so). */
const watching = (fault: Partial<Fault> & Pick<Fault, 'match'>) => {
  const faulty = faultyDeps(deps, { nth: Number.MAX_SAFE_INTEGER, ...fault });
  return { b: createBroker(faulty), log: faulty.faults };
};

describe('N2/N8: the looks at a session drained at once', () => {
  it('N2/N8: both looks are taken without locking the session; the first moves its hint on, the last removes it', async () => {
    const q = await drainedAtOnce();
    const { b, log } = watching({ match: isLock });
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    await acceptsNothing(b, q);
    expect(await sessionItem(q)).toMatchObject({ sessionId: 'd' });
    expect((await sessionItem(q))?.lockToken).toBeUndefined();
    clock.advance(SESSION_HINT_GRACE_MS);
    await acceptsNothing(b, q);
    expect(await sessionItem(q)).toBeUndefined();
    expect(log.seen).toBe(0);
    expect((await broker.listSessions(queue(q), {})).items).toEqual([]);
    // The session comes back with its next message.
    await send(q, 'd', 'next');
    expect((await broker.acceptSession(queue(q), {})).sessionId).toBe('d');
  });

  it('N2: a message sent after the hint was due, without bringing it forward, is found: the look locks the session and hands it over', async () => {
    const q = await drainedAtOnce();
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    await send(q, 'd', 'late');
    const lock = await broker.acceptSession(queue(q), {});
    expect(lock.sessionId).toBe('d');
    const got = (await broker.receiveFromSession(queue(q), 'd', { sessionLockToken: lock.sessionLockToken })) as Msg[];
    expect(got.map((m) => m.body)).toEqual(['late']);
  });

  it('N2: a send landing between the look and its move fails the move; the session is locked, looked at and handed over', async () => {
    const q = await drainedAtOnce();
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    const { b } = watching({ match: isLookMove, nth: 1, interleave: async () => send(q, 'd', 'meanwhile') });
    const lock = await b.acceptSession(queue(q), {});
    expect(lock.sessionId).toBe('d');
    const got = (await broker.receiveFromSession(queue(q), 'd', { sessionLockToken: lock.sessionLockToken })) as Msg[];
    expect(got.map((m) => m.body)).toEqual(['meanwhile']);
  });

  it('N2: a named accept landing between the look and its move keeps its lock; accept-next finds nothing', async () => {
    const q = await drainedAtOnce();
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    let named: { sessionLockToken: string } | undefined;
    const { b } = watching({
      match: isLookMove,
      nth: 1,
      interleave: async () => {
        named = await broker.acceptSession(queue(q), { sessionId: 'd' });
      },
    });
    await acceptsNothing(b, q);
    expect((await sessionItem(q))?.lockToken).toBe(named!.sessionLockToken);
    await expect(broker.acceptSession(queue(q), { sessionId: 'd' })).rejects.toMatchObject({ code: 'SessionCannotBeLocked' });
  });

  it('N5/N8: a session given state keeps it at the last look: only its hint goes, and it stays listed', async () => {
    const state = Buffer.from('kept').toString('base64');
    const q = await drainedAtOnce(async (name, lock) => broker.setSessionState(queue(name), 'd', { sessionLockToken: lock, state }));
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    await acceptsNothing(broker, q);
    clock.advance(SESSION_HINT_GRACE_MS);
    await acceptsNothing(broker, q);
    expect(await sessionItem(q)).toMatchObject({ hasState: true });
    expect((await sessionItem(q))?.rpk).toBeUndefined();
    expect((await broker.listSessions(queue(q), {})).items).toEqual(['d']);
    const lock = await broker.acceptSession(queue(q), { sessionId: 'd' });
    expect((await broker.getSessionState(queue(q), 'd', lock.sessionLockToken)).state).toBe(state);
  });
});

describe('N2/N8: crashes around a look taken without a lock', () => {
  it.each([['before'], ['after']] as const)(
    'N2: a crash %s the first look moves the hint: the look is taken (again), and the last one removes the session',
    async (phase) => {
      const q = await drainedAtOnce();
      clock.advance(SESSION_HINT_LAG_MS + SECOND);
      const { b } = watching({ match: isLookMove, nth: 1, phase });
      await expect(b.acceptSession(queue(q), {})).rejects.toThrow(InjectedCrash);
      await acceptsNothing(broker, q);
      expect(await sessionItem(q)).toBeDefined();
      clock.advance(SESSION_HINT_GRACE_MS);
      await acceptsNothing(broker, q);
      expect(await sessionItem(q)).toBeUndefined();
    },
  );

  it.each([['before'], ['after']] as const)('N8: a crash %s the last look removes the session: it is removed, once', async (phase) => {
    const q = await drainedAtOnce();
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    await acceptsNothing(broker, q);
    clock.advance(SESSION_HINT_GRACE_MS);
    const { b } = watching({ match: isLookRemoval, nth: 1, phase });
    await expect(b.acceptSession(queue(q), {})).rejects.toThrow(InjectedCrash);
    expect(await sessionItem(q)).toEqual(phase === 'before' ? expect.objectContaining({ sessionId: 'd' }) : undefined);
    await acceptsNothing(broker, q);
    expect(await sessionItem(q)).toBeUndefined();
    await send(q, 'd', 'again');
    expect((await broker.acceptSession(queue(q), {})).sessionId).toBe('d');
  });
});
