/**
 * N8: listing sessions shows only sessions with messages or state, and a session that was
 * only accepted leaves nothing behind once its lock ends (a Listen key cannot grow storage
 * with accepts of made-up names). Broker level, on DynamoDB Local with the test clock.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Broker } from '../support/broker.js';
import { SESSION_HINT_GRACE_MS } from '../../lib/broker/message-items.js';
import { sessionsPk } from '../../lib/store/keys.js';
import { sessionQueues, type Api, type Deps } from '../support/session-queues.js';

const SECOND = 1000;
const { clock, open, queue } = sessionQueues();
let deps: Deps;
let api: Api;
let broker: Broker;
let counter = 0;

beforeAll(async () => ({ deps, api, broker } = await open('sesslist')));

async function sessionQueue(props: Record<string, unknown> = {}): Promise<string> {
  const name = `ls${++counter}`;
  const res = await api('PUT', `/queues/${name}`, { requiresSession: true, lockDuration: 'PT30S', ...props });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return name;
}

async function send(q: string, sessionId: string, body: unknown) {
  const res = await api('POST', `/queues/${q}/messages`, { body, sessionId });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const listed = async (q: string) => (await broker.listSessions(queue(q), {})).items;

/** The session ids that have an item in the entity's sessions partition (state items aside). */
async function stored(q: string): Promise<string[]> {
  const eid = await broker.incarnation(queue(q));
  const out = await deps.db.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :s)',
      ExpressionAttributeValues: { ':pk': sessionsPk(eid), ':s': 's/' },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map((i) => i.sessionId as string);
}

describe('N8: sessions that hold nothing', () => {
  it('N8: a named accept of a made-up session is not listed, and once its lock lapses the sweeper removes its item', async () => {
    const q = await sessionQueue();
    await broker.acceptSession(queue(q), { sessionId: 'ghost' });
    expect(await listed(q)).toEqual([]);
    clock.advance(31 * SECOND);
    expect(await listed(q)).toEqual([]);
    expect(await stored(q)).toEqual(['ghost']);
    const report = await broker.sweep();
    expect(report.sessionsRemoved).toBe(1);
    expect(await stored(q)).toEqual([]);
  });

  it('N8: a session whose last message was dead-lettered is not listed, though its item waits for accept-next', async () => {
    const q = await sessionQueue();
    await send(q, 'dl', 'only');
    expect(await listed(q)).toEqual(['dl']);
    const lock = await broker.acceptSession(queue(q), {});
    expect(lock.sessionId).toBe('dl');
    const [m] = (await broker.receiveFromSession(queue(q), 'dl', { sessionLockToken: lock.sessionLockToken })) as {
      sequenceNumber: string;
      lockToken: string;
    }[];
    await broker.settle(queue(q), m!.sequenceNumber, 'deadletter', { lockToken: m!.lockToken });
    clock.advance(6 * SECOND); // past the index's lag after the send
    expect(await listed(q)).toEqual([]);
    clock.advance(31 * SECOND + SESSION_HINT_GRACE_MS);
    expect(await listed(q)).toEqual([]);
    expect(await stored(q)).toEqual(['dl']);
    await expect(broker.acceptSession(queue(q), {})).rejects.toMatchObject({ code: 'ServiceTimeout' });
    expect(await stored(q)).toEqual([]);
  });

  it('N8: a lock renewed past the first lock end keeps the item; it goes after the renewed lock lapses', async () => {
    const q = await sessionQueue();
    const lock = await broker.acceptSession(queue(q), { sessionId: 'held' });
    clock.advance(20 * SECOND);
    await broker.renewSessionLock(queue(q), 'held', { sessionLockToken: lock.sessionLockToken });
    clock.advance(20 * SECOND);
    await broker.sweep();
    expect(await stored(q)).toEqual(['held']);
    // Still held: its holder may go on.
    await broker.renewSessionLock(queue(q), 'held', { sessionLockToken: lock.sessionLockToken });
    clock.advance(31 * SECOND);
    await broker.sweep();
    expect(await stored(q)).toEqual([]);
  });

  it('N8: a session given state, or a message, under the named lock is kept and listed after the lock lapses and a sweep', async () => {
    const q = await sessionQueue();
    const a = await broker.acceptSession(queue(q), { sessionId: 'with-state' });
    await broker.setSessionState(queue(q), 'with-state', { sessionLockToken: a.sessionLockToken, state: Buffer.from('s').toString('base64') });
    await broker.acceptSession(queue(q), { sessionId: 'with-message' });
    await send(q, 'with-message', 'm');
    clock.advance(31 * SECOND + SESSION_HINT_GRACE_MS);
    await broker.sweep();
    expect((await listed(q)).sort()).toEqual(['with-message', 'with-state']);
    expect((await stored(q)).sort()).toEqual(['with-message', 'with-state']);
    const next = await broker.acceptSession(queue(q), {});
    expect(next.sessionId).toBe('with-message');
  });

  it('N8: pages skip sessions that hold nothing and still reach every session that holds something', async () => {
    const q = await sessionQueue();
    for (const id of ['a', 'c', 'e', 'g']) await send(q, id, id);
    for (const id of ['b', 'd', 'f', 'h']) await broker.acceptSession(queue(q), { sessionId: id });
    const seen: string[] = [];
    let next: string | undefined;
    let pages = 0;
    do {
      const page = await broker.listSessions(queue(q), { top: '2', ...(next ? { next } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items);
      next = page.next ?? undefined;
      pages++;
    } while (next && pages < 10);
    expect(seen).toEqual(['a', 'c', 'e', 'g']);
  });
});
