/**
 * Sessions and batches (N1-N8): a batch fanned out by a topic keeps each session's messages in
 * batch order (N3), and `requiresSession` is fixed at creation, as in Service Bus.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createBroker, type Broker } from '../support/broker.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { apiClient } from '../support/api.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let api: ReturnType<typeof apiClient>;
let broker: Broker;
let deps: Awaited<ReturnType<typeof testDeps>>;
let counter = 0;

beforeAll(async () => {
  deps = await testDeps(clock, 'sessbatch');
  api = apiClient(deps);
  broker = createBroker(deps);
});

describe('N3: batches into sessions', () => {
  it('N3: a topic batch of two sessions, interleaved, reaches a session subscription in batch order per session', async () => {
    const topic = `t${++counter}`;
    expect((await api('PUT', `/topics/${topic}`, {})).status).toBe(201);
    // Each message's fan-out waits on reads of the subscriptions, which is where batch order used to slip.
    expect((await api('PUT', `/topics/${topic}/subscriptions/s`, { requiresSession: true })).status).toBe(201);
    expect((await api('PUT', `/topics/${topic}/subscriptions/plain`, {})).status).toBe(201);
    const messages = Array.from({ length: 40 }, (_, i) => ({ body: i, sessionId: i % 2 === 0 ? 'even' : 'odd' }));
    expect((await api('POST', `/topics/${topic}/messages/batch`, { messages })).status).toBe(201);
    const sub: ReceiveTarget = { kind: 'subscription', topic, name: 's', subqueue: 'active' };
    for (const sessionId of ['even', 'odd']) {
      const lock = await broker.acceptSession(sub, { sessionId });
      const got = (await broker.receiveFromSession(sub, sessionId, { sessionLockToken: lock.sessionLockToken, maxMessages: 100 })) as { body: number }[];
      const expected = messages.filter((m) => m.sessionId === sessionId).map((m) => m.body);
      expect(got.map((m) => m.body)).toEqual(expected);
    }
  });

  it('N3: a queue batch keeps batch order per session', async () => {
    const q = `q${++counter}`;
    expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
    const messages = Array.from({ length: 30 }, (_, i) => ({ body: i, sessionId: 'one' }));
    expect((await api('POST', `/queues/${q}/messages/batch`, { messages })).status).toBe(201);
    const target: ReceiveTarget = { kind: 'queue', name: q, subqueue: 'active' };
    const lock = await broker.acceptSession(target, { sessionId: 'one' });
    const got = (await broker.receiveFromSession(target, 'one', { sessionLockToken: lock.sessionLockToken, maxMessages: 100 })) as { body: number }[];
    expect(got.map((m) => m.body)).toEqual(messages.map((m) => m.body));
  });
});

describe('N1: requiresSession is fixed at creation', () => {
  it('N1: changing requiresSession on an existing queue or subscription is a 400 naming it, and changes nothing', async () => {
    const q = `q${++counter}`;
    expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
    const res = await api('PUT', `/queues/${q}`, { requiresSession: false });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('requiresSession');
    expect(((await api('GET', `/queues/${q}`)).body as { requiresSession: boolean }).requiresSession).toBe(true);
    // Restating the same value is an ordinary update.
    expect((await api('PUT', `/queues/${q}`, { requiresSession: true, maxDeliveryCount: 3 })).status).toBe(200);

    const topic = `t${++counter}`;
    expect((await api('PUT', `/topics/${topic}`, {})).status).toBe(201);
    expect((await api('PUT', `/topics/${topic}/subscriptions/s`, {})).status).toBe(201);
    const sub = await api('PUT', `/topics/${topic}/subscriptions/s`, { requiresSession: true });
    expect(sub.status).toBe(400);
    expect(JSON.stringify(sub.body)).toContain('requiresSession');
  });
});

describe("a batch writes each session's entry once", () => {
  // Counts the sends' entry writes (`lastSendAt`), never failing one.
  const entryWrites = () =>
    faultyDeps(deps, { match: both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression).includes('lastSendAt')), nth: Number.MAX_SAFE_INTEGER });

  it('N2: a batch of 10 into one session writes its entry once, 20 into two sessions twice, and accept-next finds them all', async () => {
    const q = `q${++counter}`;
    expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
    const counted = entryWrites();
    const send = apiClient(counted);
    const one = Array.from({ length: 10 }, (_, i) => ({ body: i, sessionId: 'a' }));
    expect((await send('POST', `/queues/${q}/messages/batch`, { messages: one })).status).toBe(201);
    expect(counted.faults.seen).toBe(1);
    const two = Array.from({ length: 20 }, (_, i) => ({ body: 10 + i, sessionId: i % 2 === 0 ? 'b' : 'c' }));
    expect((await send('POST', `/queues/${q}/messages/batch`, { messages: two })).status).toBe(201);
    expect(counted.faults.seen).toBe(3);
    const target: ReceiveTarget = { kind: 'queue', name: q, subqueue: 'active' };
    const seen: Record<string, number[]> = {};
    for (let i = 0; i < 3; i++) {
      const lock = await broker.acceptSession(target, {});
      const got = (await broker.receiveFromSession(target, lock.sessionId, { sessionLockToken: lock.sessionLockToken, maxMessages: 100 })) as {
        body: number;
      }[];
      seen[lock.sessionId] = got.map((m) => m.body);
    }
    expect(seen).toEqual({
      a: one.map((m) => m.body),
      b: two.filter((m) => m.sessionId === 'b').map((m) => m.body),
      c: two.filter((m) => m.sessionId === 'c').map((m) => m.body),
    });
  });

  it('N2: a later batch, or a single send, writes the entry again', async () => {
    const q = `q${++counter}`;
    expect((await api('PUT', `/queues/${q}`, { requiresSession: true })).status).toBe(201);
    const counted = entryWrites();
    const send = apiClient(counted);
    const batch = Array.from({ length: 3 }, (_, i) => ({ body: i, sessionId: 'a' }));
    expect((await send('POST', `/queues/${q}/messages/batch`, { messages: batch })).status).toBe(201);
    expect((await send('POST', `/queues/${q}/messages/batch`, { messages: batch })).status).toBe(201);
    expect((await send('POST', `/queues/${q}/messages`, { body: 'x', sessionId: 'a' })).status).toBe(201);
    expect(counted.faults.seen).toBe(3);
  });
});
