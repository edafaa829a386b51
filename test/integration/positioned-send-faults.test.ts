/**
 * A positioned send dying or refused at each of its steps (lib/broker/positioned-send.ts): the
 * draw, the puts, the transaction with S7's marker, and the tombstones a send that its entity
 * read refused leaves on its drawn positions (E4). Whatever happens, a message the client was
 * not told is stored is either never delivered or delivered once, its retry is stored once, and
 * a receiver is held back by a dead sender's hole only until the hole ages (S1, S4, D3).
 * Crashes through test/support/faults.ts, throttles and conflicts through dynamo-faults.ts;
 * what a receiver would deliver is read with the store's `findHead`.
 */
import { PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { entityKey, positionedPk } from '../../lib/store/keys.js';
import { findHead, HOLE_AFTER_MS, putTombstone } from '../../lib/store/positions.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { both, inputOf, is } from '../support/faults.js';
import { eidOf, positionedIds, positionedIn, positionedWorld, type Api, type PositionedDeps } from '../support/positioned-queues.js';

const world = positionedWorld('possendfault');
let deps: PositionedDeps;
let api: Api;

beforeAll(async () => {
  ({ deps, api } = await world.open());
});

const send = (a: Api, queue: string, messageId: string) => a('POST', `/queues/${queue}/messages`, { body: messageId, messageId });
const batch = (a: Api, queue: string, ids: string[]) =>
  a('POST', `/queues/${queue}/messages/batch`, { messages: ids.map((messageId) => ({ body: messageId, messageId })) });
const isDraw = both(is(UpdateCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('posnext/'));
const isPositionedPut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('pos/') && !inputOf(c).Item?.tomb);
const isTombstonePut = both(is(PutCommand), (c) => inputOf(c).Item?.tomb === 1);
const drawCall = (c: StoreCall) => c.operation === 'UpdateItem' && String(c.input.Key?.pk?.S ?? '').startsWith('posnext/');
const putCall = (c: StoreCall) => c.operation === 'PutItem' && String(c.input.Item?.pk?.S ?? '').startsWith('pos/');

/** What a receiver delivers from the start once every hole has aged: the ids, in order. */
async function delivered(eid: string): Promise<string[]> {
  world.clock.advance(HOLE_AFTER_MS);
  const head = await findHead(deps, positionedPk(eid, 'active', 0), 1, 100);
  return head.take.map((i) => i.messageId as string);
}

/** Something sent after, so a hole before it is one a receiver meets. */
const later = (queue: string) => send(api, queue, 'later');

describe('D3, S1: a positioned send that dies part-way', () => {
  it('S1: dying before its draw stores nothing; the retry is stored once', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const dying = world.process({ match: isDraw });
    expect((await send(dying.api, q, 'm')).status).toBe(500);
    expect(await positionedIn(deps, eid)).toEqual([]);
    expect((await send(api, q, 'm')).status).toBe(201);
    expect(await delivered(eid)).toEqual(['m']);
  });

  it('S1: dying after its draw leaves a hole that holds receivers back only until it ages; the retry is delivered once', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const dying = world.process({ match: isDraw, phase: 'after' });
    expect((await send(dying.api, q, 'm')).status).toBe(500);
    expect((await send(api, q, 'm')).status).toBe(201);
    expect((await findHead(deps, positionedPk(eid, 'active', 0), 1, 10)).take).toEqual([]);
    expect(await delivered(eid)).toEqual(['m']);
  });

  it('S1: dying after its put: stored, and a retry without duplicate detection is stored again (at least once, as today)', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const dying = world.process({ match: isPositionedPut, phase: 'after' });
    expect((await send(dying.api, q, 'm')).status).toBe(500);
    expect((await send(api, q, 'm')).status).toBe(201);
    expect(await delivered(eid)).toEqual(['m', 'm']);
  });

  it('S4, D3: a batch whose second put never went out is never delivered in part; its retry is delivered whole, once', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const dying = world.process({ match: isPositionedPut, nth: 2 });
    const sent = await batch(dying.api, q, ['x0', 'x1', 'x2']);
    expect((sent.body.results as Json[]).every((r) => r.error?.retryable === true)).toBe(true);
    await later(q);
    expect((await batch(api, q, ['x0', 'x1', 'x2'])).status).toBe(201);
    expect(await delivered(eid)).toEqual(['later', 'x0', 'x1', 'x2']);
  });

  it('S7: with duplicate detection, dying after the draw stores nothing and the retry is stored once; dying after the transaction, the retry is answered as the first', async () => {
    const q = await world.newQueue({ requiresDuplicateDetection: true });
    const eid = await eidOf(deps, q);
    const beforeTransaction = world.process({ match: isDraw, phase: 'after' });
    expect((await send(beforeTransaction.api, q, 'a')).status).toBe(500);
    const afterTransaction = world.process({ match: is(TransactWriteCommand), phase: 'after' });
    expect((await send(afterTransaction.api, q, 'b')).status).toBe(500);
    const a = await send(api, q, 'a');
    const b = await send(api, q, 'b');
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(await delivered(eid)).toEqual(['b', 'a']);
    const head = await findHead(deps, positionedPk(eid, 'active', 0), 1, 10);
    expect(head.take.map((i) => i.sk)).toEqual([2, 3].map((p) => String(p).padStart(19, '0')));
    expect(b.body.sequenceNumber).toBe((BigInt(2) << 16n).toString());
  });

  it('E4: a send refused by its entity read that dies before tombstoning its drawn position leaves a hole receivers tombstone once it ages', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const sender = world.process({ match: isTombstonePut });
    expect((await send(sender.api, q, 'm1')).status).toBe(201);
    expect((await api('PUT', `/queues/${q}`, { status: 'SendDisabled' })).status).toBe(200);
    expect((await send(sender.api, q, 'm2')).body.error.code).toBe('EntityDisabled');
    expect(sender.log.tripped).toBe(1);
    expect((await positionedIn(deps, eid)).map((i) => i.messageId)).toEqual(['m1']);
    expect((await api('PUT', `/queues/${q}`, { status: 'Active' })).status).toBe(200);
    await later(q);
    expect(await delivered(eid)).toEqual(['m1', 'later']);
  });
});

describe('S1: a positioned send the store refuses', () => {
  it('E4, S1: a send ahead whose entity read is throttled out puts nothing, gives its position up and answers a retryable 503', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const plan: StoreFaultPlan = {};
    const store = faultyStore(deps.db, plan, { fastRetries: true });
    const sender = apiClient({ ...deps, db: store.db });
    expect((await send(sender, q, 'm1')).status).toBe(201);
    const key = entityKey('queue', q);
    plan.throttle = { when: (c) => c.operation === 'GetItem' && c.input.Key?.pk?.S === key.pk && c.input.Key?.sk?.S === key.sk };
    const refused = await send(sender, q, 'm2');
    expect(refused.status).toBe(503);
    expect(refused.body.error.retryable).toBe(true);
    expect((await positionedIn(deps, eid)).map((i) => (i.tomb ? 'tomb' : i.messageId))).toEqual(['m1', 'tomb']);
    delete plan.throttle;
    expect((await send(sender, q, 'm2')).status).toBe(201);
    expect(await delivered(eid)).toEqual(['m1', 'm2']);
  });

  it('S1: a draw throttled past the SDK retries answers a retryable 503 and draws nothing', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const store = faultyStore(deps.db, { throttle: { when: drawCall } }, { fastRetries: true });
    const refused = await send(apiClient({ ...deps, db: store.db }), q, 'm');
    expect(refused.status).toBe(503);
    expect(refused.body.error.retryable).toBe(true);
    expect(store.log.throttledOut).toBe(1);
    expect((await send(api, q, 'm')).status).toBe(201);
    expect(await delivered(eid)).toEqual(['m']);
  });

  it('S1: a put throttled past the SDK retries answers a retryable 503; its hole ages into a tombstone and the retry is delivered once', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const store = faultyStore(deps.db, { throttle: { when: putCall } }, { fastRetries: true });
    const refused = await send(apiClient({ ...deps, db: store.db }), q, 'm');
    expect(refused.status).toBe(503);
    expect(refused.body.error.retryable).toBe(true);
    expect((await send(api, q, 'm')).status).toBe(201);
    expect(await delivered(eid)).toEqual(['m']);
  });

  it('S4: a batch whose puts are throttled out answers each message retryable, and none of it is delivered', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const store = faultyStore(deps.db, { throttle: { when: putCall, rate: 0.5 } }, { fastRetries: true, random: alternate() });
    const sent = await batch(apiClient({ ...deps, db: store.db }), q, ['t0', 't1', 't2', 't3']);
    expect(sent.status).toBe(207);
    expect((sent.body.results as Json[]).map((r) => r.error?.code)).toEqual(['Throttled', 'Throttled', 'Throttled', 'Throttled']);
    await later(q);
    expect(await delivered(eid)).toEqual(['later']);
  });

  it('S7: a transaction that meets another in flight answers retryable and its positions are left for receivers; the retry is stored once', async () => {
    const q = await world.newQueue({ requiresDuplicateDetection: true });
    const eid = await eidOf(deps, q);
    const store = faultyStore(deps.db, { conflict: { when: (c) => c.operation === 'TransactWriteItems' } }, { fastRetries: true });
    const refused = await send(apiClient({ ...deps, db: store.db }), q, 'm');
    expect(refused.status).toBe(503);
    expect(refused.body.error.retryable).toBe(true);
    expect((await send(api, q, 'm')).status).toBe(201);
    expect(await delivered(eid)).toEqual(['m']);
  });
});

/** A `random` for faultyStore that chooses every other call. */
function alternate() {
  let n = 0;
  return () => (n++ % 2 === 0 ? 0 : 1);
}

describe('S1, F1: a request with copies in both layouts lands whole or not at all', () => {
  it('S1, F1: a fan-out whose positioned copy met a tombstone, or whose sender died after its draw, leaves no subscription a copy; the retry reaches both', async () => {
    const target = await world.newQueue();
    const eid = await eidOf(deps, target);
    expect((await api('PUT', '/topics/mixed', {})).status).toBe(201);
    expect((await api('PUT', '/topics/mixed/subscriptions/fwd', { forwardTo: target })).status).toBe(201);
    expect((await api('PUT', '/topics/mixed/subscriptions/keep', {})).status).toBe(201);
    const kept = async () => ((await api('GET', '/topics/mixed/subscriptions/keep/messages?maxMessages=10')).body.messages as Json[]).map((m) => m.messageId);
    const buried = world.process({ match: isDraw, phase: 'after', interleave: async () => void (await putTombstone(deps, positionedPk(eid, 'active', 0), 1)) });
    const refused = await buried.api('POST', '/topics/mixed/messages', { body: 1, messageId: 'f' });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: 'Throttled', retryable: true });
    const dying = world.process({ match: isDraw, phase: 'after' });
    expect((await dying.api('POST', '/topics/mixed/messages', { body: 1, messageId: 'f' })).status).toBe(500);
    expect(await kept()).toEqual([]);
    expect(await positionedIds(deps, eid)).toEqual([]);
    expect((await api('POST', '/topics/mixed/messages', { body: 1, messageId: 'f' })).status).toBe(201);
    expect(await kept()).toEqual(['f']);
    expect(await delivered(eid)).toEqual(['f']);
  });
});
