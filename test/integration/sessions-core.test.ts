/**
 * Sessions at broker level (#13, N1-N8), against DynamoDB Local with the test clock. Entities
 * and sends go through the API handler; the session operations call the broker directly
 * (their HTTP routes are the API's business).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createBroker, type Broker } from '../../lib/broker/index.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { BrokerError } from '../../lib/errors.js';
import { sessionsPk } from '../../lib/store/keys.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = Record<string, any>;

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
let broker: Broker;
let counter = 0;

beforeAll(async () => {
  deps = await testDeps(clock, 'sessions');
  api = apiClient(deps);
  broker = createBroker(deps);
});

const queue = (name: string, subqueue: ReceiveTarget['subqueue'] = 'active'): ReceiveTarget => ({ kind: 'queue', name, subqueue });

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
    const got = await broker.receiveFromSession(queue(q), 'A', { sessionLockToken: lock.sessionLockToken, maxMessages: 10 });
    expect(bodies(got)).toEqual([1, 2, 3]);
    expect(got.every((m) => m.sessionId === 'A' && m.deliveryCount === 1 && m.lockedUntil === lock.lockedUntil)).toBe(true);
    for (const m of got) await broker.settle(queue(q), m.sequenceNumber, 'complete', { lockToken: m.lockToken });
    expect(await broker.receiveFromSession(queue(q), 'A', { sessionLockToken: lock.sessionLockToken })).toEqual([]);
    await broker.releaseSession(queue(q), 'A', { sessionLockToken: lock.sessionLockToken });
    const next = await broker.acceptSession(queue(q), {});
    expect(next.sessionId).toBe('B');
  });
});
