/**
 * Scheduled messages of a positioned queue (lib/broker/positioned-send.ts `numberedAtSend`):
 * numbered from the partition's position counter at send (S2) without taking a position
 * (store/positions.ts `numberScheduled`), kept in today's layout until due (S6); only when the
 * numbers after one position run out do they draw positions, which get tombstones receivers
 * pass over at once. Runs on the layout SLUICE_TEST_LAYOUT names (cursor-claimed by default,
 * ticketed under `npm run test:tickets`). Crashes at each step (the numbering, the fallback's
 * tombstone, the message's put) through faults.ts, throttles through dynamo-faults.ts. A due
 * one is received ahead of a backlog once the sweeper has activated it (broker/today-first.ts).
 */
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { positionedSeq, SCHEDULED_LOW_MAX, scheduledSeq } from '../../lib/store/sequence.js';
import { apiClient, type Json } from '../support/api.js';
import { createBroker } from '../support/broker.js';
import { entityKey, positionCounterKey, positionedPk } from '../../lib/store/keys.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { both, faultyClient, InjectedCrash, inputOf, is } from '../support/faults.js';
import { eidOf, positionedIds, positionedIn, positionedWorld, todaysIn, type Api, type PositionedDeps } from '../support/positioned-queues.js';

const world = positionedWorld('possched');
let deps: PositionedDeps;
let api: Api;

beforeAll(async () => {
  ({ deps, api } = await world.open());
});

const MINUTE = 60_000;
const send = (a: Api, queue: string, messageId: string, inMs?: number) =>
  a('POST', `/queues/${queue}/messages`, {
    body: messageId,
    messageId,
    ...(inMs !== undefined ? { scheduledEnqueueTime: new Date(world.clock.now() + inMs).toISOString() } : {}),
  });
const receive = async (queue: string, maxMessages = 10): Promise<Json[]> => {
  const got = await api('POST', `/queues/${queue}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages });
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  return got.body.messages as Json[];
};
const ids = (messages: Json[]) => messages.map((m) => m.messageId as string);
const isDraw = both(is(UpdateCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('posnext/'));
const isTombstonePut = both(is(PutCommand), (c) => inputOf(c).Item?.tomb === 1);
const isScheduledPut = both(is(PutCommand), (c) => inputOf(c).Item?.state === 'Scheduled');

/** The active partition's counter item of queue incarnation `eid`. */
const counterOf = async (eid: string) =>
  (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionCounterKey(positionedPk(eid, 'active', 0)), ConsistentRead: true }))).Item ?? {};

/** Uses up the numbers after the last position drawn, as 4,095 scheduled messages in a row would: the next scheduled send draws a position. */
const useUpNumbers = (eid: string) =>
  deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: positionCounterKey(positionedPk(eid, 'active', 0)),
      UpdateExpression: 'SET sl = :max',
      ExpressionAttributeValues: { ':max': SCHEDULED_LOW_MAX },
    }),
  );

describe('S2, S6: a scheduled message of a positioned queue', () => {
  it('R2, S6: a receive of one with no wait finds the message sent after a run of scheduled messages', async () => {
    const q = await world.newQueue();
    for (let i = 0; i < 5; i++) expect((await send(api, q, `s${i}`, 60 * MINUTE)).status).toBe(201);
    expect((await send(api, q, 'live')).status).toBe(201);
    expect(ids(await receive(q, 1))).toEqual(['live']);
  });

  it('R2, S6: a receive of one with no wait finds the message sent after a thousand scheduled messages, and the next ones come in order', async () => {
    const q = await world.newQueue();
    const at = new Date(world.clock.now() + 60 * MINUTE).toISOString();
    for (let n = 0; n < 1000; n += 100) {
      const batch = Array.from({ length: 100 }, (_, i) => ({ body: `s${n + i}`, messageId: `s${n + i}`, scheduledEnqueueTime: at }));
      expect((await api('POST', `/queues/${q}/messages/batch`, { messages: batch })).status).toBe(201);
    }
    for (let i = 0; i < 5; i++) expect((await send(api, q, `live${i}`)).status).toBe(201);
    // The thousand took no position: the five live messages are the partition's first five, nothing to pass.
    const eid = await eidOf(deps, q);
    expect(await positionedIn(deps, eid)).toHaveLength(5);
    expect((await positionedIn(deps, eid)).filter((i) => i.tomb)).toEqual([]);
    const got: Json[] = [];
    for (let i = 0; i < 5; i++) got.push(...(await receive(q, 1)));
    expect(ids(got)).toEqual(['live0', 'live1', 'live2', 'live3', 'live4']);
    expect(got.map((m) => m.deliveryCount)).toEqual([1, 1, 1, 1, 1]);
  });

  it('S2, S6, R8: numbered between the messages sent before and after it, taking no position, never received before due, found by its number', async () => {
    const q = await world.newQueue();
    const before = await send(api, q, 'before');
    const scheduled = await send(api, q, 's', MINUTE);
    const after = await send(api, q, 'after');
    const numbers = [before, scheduled, after].map((r) => BigInt(r.body.sequenceNumber as string));
    expect(numbers).toEqual([positionedSeq(1, 0), scheduledSeq(1, 0, 1), positionedSeq(2, 0)]);
    expect(numbers[0]! < numbers[1]! && numbers[1]! < numbers[2]!).toBe(true);
    // No clock move: the scheduled message took no position, so nothing holds 'after' back.
    const first = await receive(q);
    expect(ids(first)).toEqual(['before', 'after']);
    const from = await api('GET', `/queues/${q}/messages?fromSequenceNumber=${numbers[1]!.toString()}&maxMessages=10`);
    expect((from.body.messages as Json[]).map((m) => [m.messageId, m.state])).toEqual([
      ['s', 'Scheduled'],
      ['after', 'Active'],
    ]);
    world.clock.advance(MINUTE);
    const due = await receive(q);
    expect(due.map((m) => [m.messageId, m.sequenceNumber])).toEqual([['s', numbers[1]!.toString()]]);
    expect((await api('POST', `/queues/${q}/messages/${due[0]!.sequenceNumber as string}/defer`, { lockToken: due[0]!.lockToken })).status).toBe(204);
    const deferred = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [numbers[1]!.toString()] });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(200);
    expect(ids(deferred.body.messages as Json[])).toEqual(['s']);
  });

  it('S6, S8: cancelled by its number; nothing is ever delivered from it', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const scheduled = await send(api, q, 's', MINUTE);
    expect((await api('DELETE', `/queues/${q}/messages/scheduled/${scheduled.body.sequenceNumber as string}`)).status).toBe(204);
    await send(api, q, 'after');
    world.clock.advance(2 * MINUTE);
    expect(ids(await receive(q))).toEqual(['after']);
    expect(await todaysIn(deps, eid)).toEqual([]);
  });

  it('S2: scheduled messages numbered after one position keep the order they were sent in, between the messages around them, and take no position', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const sent: bigint[] = [];
    for (const [id, inMs] of [
      ['a', undefined],
      ['s1', MINUTE],
      ['s2', MINUTE],
      ['b', undefined],
      ['s3', MINUTE],
    ] as const) {
      const r = await send(api, q, id, inMs);
      expect(r.status).toBe(201);
      sent.push(BigInt(r.body.sequenceNumber as string));
    }
    const at = new Date(world.clock.now() + MINUTE).toISOString();
    const batch = await api('POST', `/queues/${q}/messages/batch`, {
      messages: ['s4', 's5'].map((id) => ({ body: id, messageId: id, scheduledEnqueueTime: at })),
    });
    expect(batch.status).toBe(201);
    const c = await send(api, q, 'c');
    const all = [...sent, c.body.sequenceNumber].map((n) => BigInt(n as string));
    expect(all).toEqual([positionedSeq(1, 0), scheduledSeq(1, 0, 1), scheduledSeq(1, 0, 2), positionedSeq(2, 0), scheduledSeq(2, 0, 1), positionedSeq(3, 0)]);
    const peeked = await api('GET', `/queues/${q}/messages?maxMessages=20`);
    const order = (peeked.body.messages as Json[]).map((m) => [m.messageId, BigInt(m.sequenceNumber as string)] as const);
    expect(order.map(([id]) => id)).toEqual(['a', 's1', 's2', 'b', 's3', 's4', 's5', 'c']);
    expect(order.every(([, n], i) => i === 0 || n > order[i - 1]![1])).toBe(true);
    expect(await positionedIds(deps, eid)).toEqual(['a', 'b', 'c']);
    expect((await positionedIn(deps, eid)).filter((i) => i.tomb)).toEqual([]);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q, 20))).toEqual(['a', 'b', 'c', 's1', 's2', 's3', 's4', 's5']);
  });

  it("S2, S4: a batch mixing scheduled and plain messages is numbered in batch order, as in today's layout: before the first, between, after the last", async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    expect((await send(api, q, 'earlier')).status).toBe(201);
    const at = new Date(world.clock.now() + MINUTE).toISOString();
    const order = ['s0', 'a', 's1', 's2', 'b', 's3', 'c', 's4'];
    // A process of its own that counts the counter writes it makes (`nth` Infinity: no fault).
    const { api: counted, log } = world.process({ match: isDraw, nth: Infinity });
    const batch = await counted('POST', `/queues/${q}/messages/batch`, {
      messages: order.map((id) => ({ body: id, messageId: id, ...(id.startsWith('s') ? { scheduledEnqueueTime: at } : {}) })),
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);
    const numbers = (batch.body.results as Json[]).map((r) => BigInt(r.sequenceNumber as string));
    expect(numbers).toEqual([
      scheduledSeq(1, 0, 1), // after the last position drawn before the batch ('earlier')
      positionedSeq(2, 0),
      scheduledSeq(2, 0, 1), // after the batch's own positions: no counter write
      scheduledSeq(2, 0, 2),
      positionedSeq(3, 0),
      scheduledSeq(3, 0, 1),
      positionedSeq(4, 0),
      scheduledSeq(4, 0, 1), // after the batch's last position, through the counter
    ]);
    expect(numbers.every((n, i) => i === 0 || n > numbers[i - 1]!)).toBe(true);
    // Three counter writes: the numbers before, the positions, the numbers after.
    expect(log.seen).toBe(3);
    const peeked = await api('GET', `/queues/${q}/messages?maxMessages=20`);
    expect((peeked.body.messages as Json[]).map((m) => m.messageId)).toEqual(['earlier', ...order]);
    expect(await positionedIds(deps, eid)).toEqual(['earlier', 'a', 'b', 'c']);
    // Others number after the batch's last position from where it left off (S2).
    const later = await send(api, q, 's5', MINUTE);
    expect(BigInt(later.body.sequenceNumber as string)).toBe(scheduledSeq(4, 0, 2));
    expect(ids(await receive(q, 20))).toEqual(['earlier', 'a', 'b', 'c']);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q, 20)).sort()).toEqual(['s0', 's1', 's2', 's3', 's4', 's5']);
  });

  for (const forwarding of [false, true]) {
    it(`S2, S4: with ${forwarding ? 'forwarding' : 'duplicate detection'}, a mixed batch, each message a request of its own, is numbered in batch order`, async () => {
      const target = forwarding ? await world.newQueue() : undefined;
      const q = await world.newQueue(target ? { forwardTo: target } : { requiresDuplicateDetection: true });
      const numbered = target ?? q;
      const at = new Date(world.clock.now() + MINUTE).toISOString();
      const order = ['s0', 'a', 's1', 's2', 'b', 's3'];
      const batch = await api('POST', `/queues/${q}/messages/batch`, {
        messages: order.map((id) => ({ body: id, messageId: id, ...(id.startsWith('s') ? { scheduledEnqueueTime: at } : {}) })),
      });
      expect(batch.status, JSON.stringify(batch.body)).toBe(201);
      const peeked = await api('GET', `/queues/${numbered}/messages?maxMessages=20`);
      const seen = (peeked.body.messages as Json[]).map((m) => [m.messageId, BigInt(m.sequenceNumber as string)] as const);
      expect(seen.map(([id]) => id)).toEqual(order);
      expect(seen.every(([, n], i) => i === 0 || n > seen[i - 1]![1])).toBe(true);
    });
  }

  it('S4, S1: a mixed batch whose one scheduled put is throttled out answers that one not stored (retryable), the rest stored, each delivered once', async () => {
    const q = await world.newQueue();
    const at = new Date(world.clock.now() + MINUTE).toISOString();
    const order = ['a', 's1', 'b', 's2'];
    const throttled = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'PutItem' && c.input.Item?.messageId?.S === 's1' } },
      { fastRetries: true },
    );
    const batch = await apiClient({ ...deps, db: throttled.db })('POST', `/queues/${q}/messages/batch`, {
      messages: order.map((id) => ({ body: id, messageId: id, ...(id.startsWith('s') ? { scheduledEnqueueTime: at } : {}) })),
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(207);
    const results = batch.body.results as Json[];
    expect(results.map((r) => (r.error ? `${r.messageId}: ${(r.error as Json).code}` : r.messageId))).toEqual(['a', 's1: Throttled', 'b', 's2']);
    expect((results[1]!.error as Json).retryable).toBe(true);
    const numbers = [results[0], results[2], results[3]].map((r) => BigInt(r!.sequenceNumber as string));
    expect(numbers[0]! < numbers[1]! && numbers[1]! < numbers[2]!).toBe(true);
    expect(ids(await receive(q))).toEqual(['a', 'b']);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q))).toEqual(['s2']);
    expect(await receive(q)).toEqual([]);
  });

  it('S2: once the numbers after one position are used up, a scheduled message takes a position of its own (a tombstone), and numbering starts again after it', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const before = await send(api, q, 'before');
    await useUpNumbers(eid);
    const s1 = await send(api, q, 's1', MINUTE);
    const s2 = await send(api, q, 's2', MINUTE);
    const after = await send(api, q, 'after');
    const numbers = [before, s1, s2, after].map((r) => BigInt(r.body.sequenceNumber as string));
    expect(numbers).toEqual([positionedSeq(1, 0), scheduledSeq(2, 0, 1), scheduledSeq(2, 0, 2), positionedSeq(3, 0)]);
    expect((await positionedIn(deps, eid)).map((i) => (i.tomb ? 'tomb' : i.messageId))).toEqual(['before', 'tomb', 'after']);
    // A message sent after the tombstone is not held back by it.
    expect(ids(await receive(q))).toEqual(['before', 'after']);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q))).toEqual(['s1', 's2']);
  });

  it('E4: a scheduled send to a queue whose positions were retired (deleted) is refused and numbers nothing', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: { ...positionCounterKey(positionedPk(eid, 'active', 0)), gone: 1 } }));
    const refused = await send(api, q, 's', MINUTE);
    expect(refused.status, JSON.stringify(refused.body)).toBe(404);
    expect(await counterOf(eid)).not.toHaveProperty('sl');
    expect(await todaysIn(deps, eid)).toEqual([]);
  });

  it('S2, F1: a scheduled fan-out to a topic numbers each positioned subscription copy from its own counter', async () => {
    expect((await api('PUT', '/topics/schedfan', {})).status).toBe(201);
    for (const s of ['a', 'b']) expect((await api('PUT', `/topics/schedfan/subscriptions/${s}`, {})).status).toBe(201);
    expect((await api('POST', '/topics/schedfan/messages', { body: 1, messageId: 'f0' })).status).toBe(201);
    const sent = await api('POST', '/topics/schedfan/messages', {
      body: 2,
      messageId: 'f1',
      scheduledEnqueueTime: new Date(world.clock.now() + MINUTE).toISOString(),
    });
    expect(sent.status).toBe(201);
    expect((await api('POST', '/topics/schedfan/messages', { body: 3, messageId: 'f2' })).status).toBe(201);
    for (const s of ['a', 'b']) {
      const page = await api('GET', `/topics/schedfan/subscriptions/${s}/messages?maxMessages=10`);
      const seen = (page.body.messages as Json[]).map((m) => [m.messageId, BigInt(m.sequenceNumber as string)] as const);
      expect(seen.map(([id]) => id)).toEqual(['f0', 'f1', 'f2']);
      // Subscriptions of a deployment that positions them: numbers grow in enqueue order (S2) whichever layout each took.
      expect(seen.every(([, n], i) => i === 0 || n > seen[i - 1]![1])).toBe(true);
    }
    expect((await api('DELETE', `/topics/schedfan/messages/scheduled/${sent.body.sequenceNumber as string}`)).status).toBe(204);
    world.clock.advance(2 * MINUTE);
    for (const s of ['a', 'b']) {
      const got = await api('POST', `/topics/schedfan/subscriptions/${s}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages: 10 });
      expect(ids(got.body.messages as Json[])).toEqual(['f0', 'f2']);
    }
  });
});

describe('S1, S6: a scheduled send into a positioned queue that dies or is refused part-way', () => {
  it('S1: dying after the numbering stores nothing and leaves no hole: a message sent after it is received at once; the retry is stored once', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const dying = world.process({ match: isDraw, phase: 'after' });
    expect((await send(dying.api, q, 's', MINUTE)).status).toBe(500);
    expect(await counterOf(eid)).toMatchObject({ sl: 1 });
    expect(await todaysIn(deps, eid)).toEqual([]);
    await send(api, q, 'after');
    expect(ids(await receive(q))).toEqual(['after']);
    expect((await send(api, q, 's', MINUTE)).status).toBe(201);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q))).toEqual(['s']);
    expect(await receive(q)).toEqual([]);
  });

  // A mixed batch's writes in order: the numbers before its first message (counter), its
  // positions (counter), the numbers after its last (counter), then its puts.
  const mixedSteps: [string, Parameters<typeof world.process>[0]][] = [
    ['the numbers before', { match: isDraw, nth: 1 }],
    ['the positions', { match: isDraw, nth: 2 }],
    ['the numbers after', { match: isDraw, nth: 3 }],
    ['the numbers after, once written', { match: isDraw, nth: 3, phase: 'after' }],
    ['a message put', { match: both(is(PutCommand), (c) => inputOf(c).Item?.messageId === 'b'), phase: 'after' }],
    ['a scheduled put', { match: isScheduledPut, nth: 2, phase: 'after' }],
  ];
  for (const [step, fault] of mixedSteps) {
    it(`S1, S2, S4: a mixed batch dying at ${step} is never delivered in part beyond what its retry stores again, and its retry is numbered in batch order`, async () => {
      const q = await world.newQueue();
      const at = new Date(world.clock.now() + MINUTE).toISOString();
      const order = ['s0', 'a', 's1', 'b', 's2'];
      const batch = { messages: order.map((id) => ({ body: id, messageId: id, ...(id.startsWith('s') ? { scheduledEnqueueTime: at } : {}) })) };
      const dying = world.process(fault);
      const first = await dying.api('POST', `/queues/${q}/messages/batch`, batch);
      expect(dying.log.tripped).toBe(1);
      const answered = first.status < 300 || first.status === 207 ? (first.body.results as Json[]) : [];
      // Not all stored: the client sends the batch again (at least once, S1).
      expect(answered.filter((r) => r.sequenceNumber !== undefined).length).toBeLessThan(order.length);
      const retry = await api('POST', `/queues/${q}/messages/batch`, batch);
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      const numbers = (retry.body.results as Json[]).map((r) => BigInt(r.sequenceNumber as string));
      expect(numbers.every((n, i) => i === 0 || n > numbers[i - 1]!)).toBe(true);
      world.clock.advance(HOLE_AFTER_MS);
      const now = ids(await receive(q, 20));
      world.clock.advance(MINUTE);
      const due = ids(await receive(q, 20));
      expect(await receive(q, 20)).toEqual([]);
      // Each message once from the retry, and at most once more from what the dying try stored
      // (it was never acknowledged: at least once, S1); a scheduled one never before it is due (S6).
      const delivered = [...now, ...due];
      for (const id of order) expect([1, 2], id).toContain(delivered.filter((d) => d === id).length);
      expect(now.filter((d) => d.startsWith('s'))).toEqual([]);
      expect(due.filter((d) => !d.startsWith('s'))).toEqual([]);
    });
  }

  it('S1: numbers used up, dying at the tombstone: the message is stored or not, never delivered twice and never from its position; receivers pass the hole once it ages', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    await useUpNumbers(eid);
    const dying = world.process({ match: isTombstonePut });
    // The tombstone is best effort beside the message's put: a process that dies there may have put the message or not.
    const status = (await send(dying.api, q, 's', MINUTE)).status;
    expect(dying.log.tripped).toBe(1);
    const stored = (await todaysIn(deps, eid)).length;
    expect([201, 500]).toContain(status);
    if (status === 201) expect(stored).toBe(1);
    expect((await positionedIn(deps, eid)).filter((i) => !i.tomb)).toEqual([]);
    await send(api, q, 'after');
    world.clock.advance(HOLE_AFTER_MS);
    expect(ids(await receive(q))).toEqual(['after']);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q))).toEqual(stored === 1 ? ['s'] : []);
    expect(await receive(q)).toEqual([]);
  });

  it('S1, S6: dying after the message is put: stored once (at least once, as today) and due only at its time', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const dying = world.process({ match: isScheduledPut, phase: 'after' });
    expect((await send(dying.api, q, 's', MINUTE)).status).toBe(500);
    await send(api, q, 'after');
    expect(ids(await receive(q))).toEqual(['after']);
    expect((await todaysIn(deps, eid)).map((i) => i.messageId)).toEqual(['s']);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q))).toEqual(['s']);
  });

  it('S1: numbers used up, a tombstone throttled past the SDK retries still acknowledges the stored message; the hole ages into a tombstone; delivered once when due', async () => {
    const q = await world.newQueue();
    await useUpNumbers(await eidOf(deps, q));
    const store = faultyStore(deps.db, { throttle: { when: (c) => c.operation === 'PutItem' && c.input.Item?.tomb !== undefined } }, { fastRetries: true });
    const sent = await send(apiClient({ ...deps, db: store.db }), q, 's', MINUTE);
    expect(sent.status).toBe(201);
    expect(store.log.throttledOut).toBeGreaterThan(0);
    await send(api, q, 'after');
    world.clock.advance(HOLE_AFTER_MS);
    expect(ids(await receive(q))).toEqual(['after']);
    world.clock.advance(MINUTE);
    expect((await receive(q)).map((m) => [m.messageId, m.sequenceNumber])).toEqual([['s', sent.body.sequenceNumber]]);
    expect(await receive(q)).toEqual([]);
  });

  it('S1: a numbering throttled out, or its message put throttled out, answers a retryable 503; nothing is delivered from it; the retry once', async () => {
    const q = await world.newQueue();
    const throttled = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'UpdateItem' && String(c.input.Key?.pk?.S ?? '').startsWith('posnext/') } },
      { fastRetries: true },
    );
    const refused = await send(apiClient({ ...deps, db: throttled.db }), q, 's', MINUTE);
    expect(refused.status).toBe(503);
    expect(refused.body.error.retryable).toBe(true);
    const putThrottled = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'PutItem' && c.input.Item?.state?.S === 'Scheduled' } },
      { fastRetries: true },
    );
    const refusedPut = await send(apiClient({ ...deps, db: putThrottled.db }), q, 's', MINUTE);
    expect(refusedPut.status).toBe(503);
    expect((await send(api, q, 's', MINUTE)).status).toBe(201);
    await send(api, q, 'after');
    world.clock.advance(HOLE_AFTER_MS);
    expect(ids(await receive(q))).toEqual(['after']);
    world.clock.advance(MINUTE);
    expect(ids(await receive(q))).toEqual(['s']);
    expect(await receive(q)).toEqual([]);
  });
});

describe('S6, R2: a due scheduled message does not wait for a backlog to drain', () => {
  /** The queue's `todayFrom`, as its receives read it (today-first.ts). */
  const todayFromOf = async (queue: string) =>
    (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', queue), ConsistentRead: true }))).Item?.todayFrom as
      number | undefined;
  /** The state of message `id` of `queue` as stored in today's layout (peek shows a due one Active). */
  const stateOf = async (queue: string, id: string) =>
    ((await todaysIn(deps, await eidOf(deps, queue))) as Json[]).find((m) => m.messageId === id)?.state as string | undefined;
  /** Sends `count` plain messages in one batch, named `b<n>`. */
  let sent = 0;
  const backlog = async (queue: string, count: number) => {
    const messages = Array.from({ length: count }, () => ({ body: `b${sent}`, messageId: `b${sent++}` }));
    expect((await api('POST', `/queues/${queue}/messages/batch`, { messages })).status).toBe(201);
  };

  /** The sweeper's activation of a message, and a receive's move of the entity's mark (today-first.ts). */
  const isActivation = both(is(UpdateCommand), (c) => inputOf(c).ExpressionAttributeValues?.[':active'] === 'Active');
  const isMove = both(is(UpdateCommand), (c) => String(inputOf(c).ConditionExpression).includes('todayVersion = :seen'));
  /** The same writes as dynamo-faults.ts sees them: the mark (the sweeper's, an abandon's) and the move. */
  const markCall = (call: StoreCall) => call.operation === 'UpdateItem' && String(call.input.UpdateExpression).startsWith('SET todayFrom = :at');
  const moveCall = (call: StoreCall) => call.operation === 'UpdateItem' && String(call.input.ConditionExpression).includes('todayVersion = :seen');
  /** A store whose marks (or moves) are throttled past the SDK's retries. */
  const refusing = (when: (call: StoreCall) => boolean) => faultyStore(deps.db, { throttle: { when } }, { fastRetries: true });

  /**
   * A queue of lock PT30S behind `backlogSize` plain messages whose scheduled message `s` came
   * due, was activated by the sweeper (which marks the queue) and was received first: the queue and `s` as handed out.
   */
  async function dueAndHeld(backlogSize: number) {
    const q = await world.newQueue({ lockDuration: 'PT30S' });
    if (backlogSize > 0) await backlog(q, backlogSize);
    expect((await send(api, q, 's', 10_000)).status).toBe(201);
    world.clock.advance(20_000);
    await createBroker(deps).sweep();
    const [s] = await receive(q, 5);
    expect(s!.messageId).toBe('s');
    return { q, s: s! };
  }

  it('S1, S6: the sweeper marks, then activates: a mark refused leaves both to its next run; a run dying after the mark leaves the message received ahead of the backlog all the same', async () => {
    const q = await world.newQueue({ lockDuration: 'PT30S' });
    await backlog(q, 10);
    expect((await send(api, q, 's', 10_000)).status).toBe(201);
    world.clock.advance(20_000);
    // Refused for load at every attempt (this queue's and the file's other due ones): nothing is activated, nothing marked.
    const refused = refusing(markCall);
    expect((await createBroker({ ...deps, db: refused.db }).sweep()).raced).toBeGreaterThanOrEqual(1);
    expect(await stateOf(q, 's')).toBe('Scheduled');
    expect(refused.log.throttledOut).toBeGreaterThanOrEqual(1);
    expect(await todayFromOf(q)).toBeUndefined();
    // Dying between the mark and the activation: the mark stands, so the receive finds it first.
    const eid = await eidOf(deps, q);
    const dying = faultyClient(deps.db, { match: both(isActivation, (c) => String(inputOf(c).Key?.pk).includes(eid)) });
    await expect(createBroker({ ...deps, db: dying.db }).sweep()).rejects.toThrow(InjectedCrash);
    expect(dying.log.tripped).toBe(1);
    expect(await todayFromOf(q)).toBe(world.clock.now());
    const [first] = await receive(q, 5);
    expect(first!.messageId).toBe('s');
    expect((await api('POST', `/queues/${q}/messages/${first!.sequenceNumber}/complete`, { lockToken: first!.lockToken })).status).toBe(204);
  });

  it('S6, R2: a receive whose move of the mark is refused, or dies, leaves the mark for the next receive, which moves it', async () => {
    const { q, s } = await dueAndHeld(10);
    const marked = await todayFromOf(q);
    // Refused for load at every attempt: the receive answers what the positions hold.
    const refused = refusing(moveCall);
    const got = await apiClient({ ...deps, db: refused.db })('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages: 5 });
    expect([got.status, refused.log.throttledOut]).toEqual([200, 1]);
    expect(got.body.messages).toHaveLength(5);
    expect(await todayFromOf(q)).toBe(marked);
    // Dying at the move: the request fails, the mark stands.
    const dying = faultyClient(deps.db, { match: isMove });
    expect((await apiClient({ ...deps, db: dying.db })('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages: 5 })).status).toBe(500);
    expect(dying.log.tripped).toBe(1);
    expect(await todayFromOf(q)).toBe(marked);
    expect(ids(await receive(q, 5)).includes('s')).toBe(false);
    expect(await todayFromOf(q)).toBe(Date.parse(s.lockedUntil));
  });

  it('S1, S6, R4: an abandon marks before it writes: refused at the mark it answers Throttled and changes nothing; dying after the mark, the message comes back ahead of the backlog at its lock end', async () => {
    const { q, s } = await dueAndHeld(10);
    const abandonWith = (db: typeof deps.db) =>
      apiClient({ ...deps, db })('POST', `/queues/${q}/messages/${s.sequenceNumber}/abandon`, { lockToken: s.lockToken });
    // Refused for load at every attempt of the mark: nothing is abandoned.
    const throttled = await abandonWith(refusing(markCall).db);
    expect([throttled.status, throttled.body.error?.code]).toEqual([503, 'Throttled']);
    // Dying at the abandon's own write, after the mark: the lock stands until its end.
    const isAbandonWrite = (c: unknown) => (is(UpdateCommand)(c) || is(TransactWriteCommand)(c)) && !String(inputOf(c).UpdateExpression).includes('todayFrom');
    const dying = faultyClient(deps.db, { match: isAbandonWrite });
    expect((await abandonWith(dying.db)).status).toBe(500);
    expect(dying.log.tripped).toBe(1);
    await backlog(q, 5);
    expect(ids(await receive(q, 5)).includes('s')).toBe(false);
    world.clock.advance(31_000);
    await backlog(q, 5);
    const [again] = await receive(q, 5);
    expect([again!.messageId, again!.deliveryCount]).toEqual(['s', 2]);
    expect((await api('POST', `/queues/${q}/messages/${again!.sequenceNumber}/complete`, { lockToken: again!.lockToken })).status).toBe(204);
  });

  it('S6, R2: a receive waiting on an empty queue moves the mark once, not at each poll of its wait', async () => {
    const { q, s } = await dueAndHeld(0);
    const watched = faultyClient(deps.db, { match: isMove, nth: Number.POSITIVE_INFINITY });
    const waited = await apiClient({ ...deps, db: watched.db })('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT5S' });
    expect([waited.status, waited.body.messages]).toEqual([200, []]);
    expect(watched.log.seen).toBe(1);
    expect(await todayFromOf(q)).toBe(Date.parse(s.lockedUntil));
  });

  it('S6, R2: activated by the sweeper, it is received ahead of the backlog; abandoned or lapsed, it comes back ahead of it; settled, nothing is read first any more', async () => {
    const q = await world.newQueue({ lockDuration: 'PT30S' });
    const sweeper = createBroker(deps);
    await backlog(q, 10);
    expect((await send(api, q, 's', 10_000)).status).toBe(201);
    // Before it is due, and with no sweeper run yet, the positions fill every answer.
    expect(ids(await receive(q, 5)).includes('s')).toBe(false);
    world.clock.advance(20_000);
    await backlog(q, 5);
    expect(await todayFromOf(q)).toBeUndefined();
    await sweeper.sweep();
    expect(await stateOf(q, 's')).toBe('Active');
    expect(await todayFromOf(q)).toBe(world.clock.now());
    // act: a receive whose answer the positions would fill
    const [first, ...others] = await receive(q, 5);
    expect(first!.messageId).toBe('s');
    expect(others).toHaveLength(4);
    // Abandoned, it is first again.
    expect((await api('POST', `/queues/${q}/messages/${first!.sequenceNumber}/abandon`, { lockToken: first!.lockToken })).status).toBe(204);
    const [again] = await receive(q, 5);
    expect([again!.messageId, again!.deliveryCount]).toEqual(['s', 2]);
    // Held: the next receive finds nothing in today's layout and waits for its lock's end.
    await backlog(q, 5);
    expect(ids(await receive(q, 5)).includes('s')).toBe(false);
    expect(await todayFromOf(q)).toBe(Date.parse(again!.lockedUntil));
    // Lapsed, it is first again, with no write at the lapse.
    world.clock.advance(31_000);
    const [lapsed] = await receive(q, 5);
    expect([lapsed!.messageId, lapsed!.deliveryCount]).toEqual(['s', 3]);
    expect((await api('POST', `/queues/${q}/messages/${lapsed!.sequenceNumber}/complete`, { lockToken: lapsed!.lockToken })).status).toBe(204);
    world.clock.advance(31_000);
    await backlog(q, 5);
    expect(ids(await receive(q, 5)).includes('s')).toBe(false);
    // Nothing left in today's layout: the mark is gone and receives read the positions alone.
    expect(await todayFromOf(q)).toBeUndefined();
  });
});
