/**
 * N4/N1/N5/N8: a release of a session that holds no message visible now writes without
 * reading the session item first. What it decides rests on the session's last send and state:
 * it guesses them (what its process saw under the lock, or else a quiet session without state),
 * states the guess in its write's condition, and on a refusal decides again from the item the
 * refusal returns. These tests pin that the decisions are those of a release that read first,
 * whether the guess was right or not: a send within the lag or the grace keeps the hint at its
 * look, a quiet session without state goes, one with state keeps only its state, a send racing
 * the release is not lost, a lapsed lock is SessionLockLost.
 */
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { SESSION_HINT_GRACE_MS, SESSION_HINT_LAG_MS } from '../../lib/broker/message-items.js';
import { readySortKey, sessionKey } from '../../lib/store/keys.js';
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

beforeAll(async () => ({ deps, api, broker } = await open('sessrelease')));

const onSession = (c: unknown) => String(inputOf(c).Key?.pk ?? '').startsWith('sess/');
const isSessionRead = both(is(GetCommand), onSession);
const isRelease = both(is(UpdateCommand, DeleteCommand), (c) => onSession(c) && String(inputOf(c).ConditionExpression).startsWith('lockToken = :slk'));

/** A broker of its own (another process: it remembers nothing of the session) whose calls matching `fault.match` are counted, or faulted. */
const another = (fault: Partial<Fault> & Pick<Fault, 'match'> = { match: isSessionRead }) => {
  const faulty = faultyDeps(deps, { nth: Number.MAX_SAFE_INTEGER, ...fault });
  return { b: createBroker(faulty), log: faulty.faults };
};

async function sessionItem(q: string) {
  const eid = await broker.incarnation(queue(q));
  return (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: sessionKey(eid, 'd'), ConsistentRead: true }))).Item;
}

/** What a send whose message is not in the index yet has written: its announcement of the session (N2). */
async function announceOnly(q: string): Promise<number> {
  const eid = await broker.incarnation(queue(q));
  const at = clock.now();
  await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: sessionKey(eid, 'd'),
      UpdateExpression: 'SET lastSendAt = :now',
      ExpressionAttributeValues: { ':now': at },
    }),
  );
  return at;
}

/** Session `d` of a new queue got one message (at `sentAt`), accepted, received and completed by `broker`: its lock token. */
async function drained(): Promise<{ q: string; token: string; sentAt: number }> {
  const q = `rl${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { requiresSession: true, lockDuration: 'PT5M' })).status).toBe(201);
  const sentAt = clock.now();
  expect((await api('POST', `/queues/${q}/messages`, { body: 'only', sessionId: 'd' })).status).toBe(201);
  const { sessionLockToken } = await broker.acceptSession(queue(q), {});
  const [m] = (await broker.receiveFromSession(queue(q), 'd', { sessionLockToken })) as Msg[];
  await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
  return { q, token: sessionLockToken, sentAt };
}

const lagLook = (sentAt: number) => readySortKey(sentAt + SESSION_HINT_LAG_MS, 1n);
const graceLook = (sentAt: number) => readySortKey(sentAt + SESSION_HINT_GRACE_MS, 2n);
const state = Buffer.from('kept').toString('base64');

/** Where each case leaves the session: its hint at a look, gone, or only its state kept. */
const cases = [
  { name: 'a send within the lag: the hint stays at the first look', wait: SECOND, withState: false, expect: (sentAt: number) => ({ rsk: lagLook(sentAt) }) },
  {
    name: 'a send within the grace: the hint stays at the last look',
    wait: SESSION_HINT_LAG_MS + SECOND,
    withState: false,
    expect: (sentAt: number) => ({ rsk: graceLook(sentAt) }),
  },
  { name: 'quiet, no state: the session goes', wait: SESSION_HINT_GRACE_MS + SECOND, withState: false, expect: () => undefined },
  { name: 'quiet, with state: only the hint goes', wait: SESSION_HINT_GRACE_MS + SECOND, withState: true, expect: () => ({ hasState: true }) },
] as const;

describe('N4/N1/N5: a release of a session found empty decides without reading the session item it saw', () => {
  for (const remembered of [true, false]) {
    it.each(cases)(`N4/N8: $name (${remembered ? 'the process saw the session under the lock' : 'another process: one read'})`, async (c) => {
      // prepare
      const { q, token, sentAt } = await drained();
      if (c.withState) await broker.setSessionState(queue(q), 'd', { sessionLockToken: token, state });
      clock.advance(c.wait);
      const { b, log } = remembered ? { b: broker, log: undefined } : another();

      // act
      await b.releaseSession(queue(q), 'd', { sessionLockToken: token });

      // assess
      // Another process reads the session once rather than guess (a wrong guess costs a write unit).
      if (log) expect(log.seen).toBe(1);
      const item = await sessionItem(q);
      const expected = c.expect(sentAt);
      if (expected === undefined) expect(item).toBeUndefined();
      else expect(item).toMatchObject(expected);
      expect(item?.lockToken).toBeUndefined();
      if (c.withState) expect(item?.rpk).toBeUndefined();
      await expect(broker.acceptSession(queue(q), { sessionId: 'd' })).resolves.toMatchObject({ sessionId: 'd' });
    });
  }

  it("N4/N2: a send announced between the release and its write (its message not in the index yet) keeps the hint at that send's look", async () => {
    // prepare
    const { q, token } = await drained();
    clock.advance(SESSION_HINT_GRACE_MS + SECOND);
    let announced = 0;
    const { b } = another({ match: isRelease, nth: 1, interleave: async () => void (announced = await announceOnly(q)) });

    // act
    await b.releaseSession(queue(q), 'd', { sessionLockToken: token });

    // assess
    expect(await sessionItem(q)).toMatchObject({ lastSendAt: announced, rsk: lagLook(announced) });
    expect((await sessionItem(q))?.lockToken).toBeUndefined();
  });

  it('N4: what the process remembers is stale (a send came since): the write is refused and the release decides from the item as it is', async () => {
    // prepare
    const { q, token } = await drained();
    clock.advance(SESSION_HINT_LAG_MS + SECOND);
    const later = await announceOnly(q);

    // act
    await broker.releaseSession(queue(q), 'd', { sessionLockToken: token });

    // assess
    expect(await sessionItem(q)).toMatchObject({ lastSendAt: later, rsk: lagLook(later) });
  });

  it('N4: a lapsed lock is SessionLockLost, remembered or not, and the session is left to the next acceptor', async () => {
    const { q, token } = await drained();
    clock.advance(5 * 60 * SECOND + SECOND);
    await expect(another().b.releaseSession(queue(q), 'd', { sessionLockToken: token })).rejects.toMatchObject({ code: 'SessionLockLost' });
    await expect(broker.releaseSession(queue(q), 'd', { sessionLockToken: token })).rejects.toMatchObject({ code: 'SessionLockLost' });
    await expect(broker.acceptSession(queue(q), { sessionId: 'd' })).resolves.toMatchObject({ sessionId: 'd' });
  });
});

describe('N4: crashes and refusals around the release write', () => {
  it.each([['before'], ['after']] as const)(
    'N4: a crash %s the release write: the session is released once, or stays locked until its lock lapses',
    async (phase) => {
      // prepare
      const { q, token } = await drained();
      clock.advance(SESSION_HINT_GRACE_MS + SECOND);
      const { b } = another({ match: isRelease, nth: 1, phase });

      // act
      await expect(b.releaseSession(queue(q), 'd', { sessionLockToken: token })).rejects.toThrow(InjectedCrash);

      // assess
      if (phase === 'after') {
        expect(await sessionItem(q)).toBeUndefined();
        await expect(broker.releaseSession(queue(q), 'd', { sessionLockToken: token })).rejects.toMatchObject({ code: 'SessionLockLost' });
      } else {
        expect((await sessionItem(q))?.lockToken).toBe(token);
        await expect(broker.acceptSession(queue(q), { sessionId: 'd' })).rejects.toMatchObject({ code: 'SessionCannotBeLocked' });
        await broker.releaseSession(queue(q), 'd', { sessionLockToken: token });
        expect(await sessionItem(q)).toBeUndefined();
      }
    },
  );

  it('N4/B1: a throttled release write is passed on as retryable and changes nothing; the retry releases', async () => {
    // prepare
    const { q, token } = await drained();
    clock.advance(SESSION_HINT_GRACE_MS + SECOND);
    const throttled = () => new ProvisionedThroughputExceededException({ $metadata: { httpStatusCode: 400 }, message: 'throttled' });
    const { b } = another({ match: isRelease, nth: 1, interleave: async () => Promise.reject(throttled()) });

    // act
    const refused = await b.releaseSession(queue(q), 'd', { sessionLockToken: token }).catch((e: unknown) => e);

    // assess
    expect(refused).toBeInstanceOf(Error);
    expect((await sessionItem(q))?.lockToken).toBe(token);
    await broker.releaseSession(queue(q), 'd', { sessionLockToken: token });
    expect(await sessionItem(q)).toBeUndefined();
  });
});
