/**
 * Sending into a positioned queue (lib/broker/positioned-send.ts) over the API handler, on
 * DynamoDB Local: a request's messages of a partition draw their positions once and are put
 * there (S1, S2, S4); a request a receiver gave up on answers a retryable Throttled and is
 * never delivered (S1); scheduled messages stay in today's layout (S6); duplicate detection
 * (S7), forwarding into and out of a positioned queue (F2, F1), and the send beside its entity
 * read (E4, E5). Messages are read back from the store, not by receive.
 */
import { PutCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { positionedPk } from '../../lib/store/keys.js';
import { findHead, HOLE_AFTER_MS, putTombstone } from '../../lib/store/positions.js';
import { positionedSeq, scheduledSeq } from '../../lib/store/sequence.js';
import { errorFromResponse } from '../../lib/client/errors.js';
import type { Json } from '../support/api.js';
import { both, faultyDeps, InjectedCrash, inputOf, is } from '../support/faults.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { reapAll } from '../support/send-ahead.js';
import {
  drawnIn,
  eidOf,
  peekIds,
  positionedIds,
  positionedIn,
  positionedWorld,
  todaysIn,
  type Api,
  type PositionedDeps,
} from '../support/positioned-queues.js';

const world = positionedWorld('possend');
let deps: PositionedDeps;
let api: Api;

beforeAll(async () => {
  ({ deps, api } = await world.open());
});

const send = (a: Api, queue: string, message: Record<string, unknown>) => a('POST', `/queues/${queue}/messages`, message);
const batch = (a: Api, queue: string, ids: string[], extra: Record<string, unknown> = {}) =>
  a('POST', `/queues/${queue}/messages/batch`, { messages: ids.map((messageId) => ({ body: { messageId }, messageId, ...extra })) });
const isDraw = both(is(UpdateCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('posnext/'));
const isPositionedPut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('pos/') && !inputOf(c).Item?.tomb);

describe('S1, S2, S4: sends into a positioned queue', () => {
  it("S1, S2: a send is put at the partition's next position, numbered by it, without index or lock attributes", async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const first = await send(api, q, { body: { hello: 'world' }, messageId: 'a' });
    const second = await send(api, q, { body: 2, messageId: 'b' });
    expect(first.status).toBe(201);
    expect(first.body.sequenceNumber).toBe(positionedSeq(1, 0).toString());
    expect(second.body.sequenceNumber).toBe(positionedSeq(2, 0).toString());
    const items = await positionedIn(deps, eid);
    expect(items.map((i) => i.messageId)).toEqual(['a', 'b']);
    for (const attribute of ['rpk', 'rsk', 'dpk', 'dsk', 'lockToken', 'lockedUntil', 'seq', 'eid', 'rf', 'rn']) expect(items[0]).not.toHaveProperty(attribute);
    expect(items[0]).toMatchObject({ state: 'Active', deliveryCount: 0, at: world.clock.now(), entity: `queues/${q}` });
    expect(await todaysIn(deps, eid)).toEqual([]);
    expect(await peekIds(api, q)).toEqual(['a', 'b']);
  });

  it('S4, S2: a batch draws its positions once and is put in batch order, one request', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const sender = world.process({ match: isDraw, times: Infinity, phase: 'after', interleave: async () => {} });
    const ids = Array.from({ length: 10 }, (_, i) => `m${i}`);
    const sent = await batch(sender.api, q, ids);
    expect(sent.status).toBe(201);
    expect(sender.log.seen).toBe(1);
    expect((sent.body.results as Json[]).map((r) => r.sequenceNumber)).toEqual(ids.map((_, i) => positionedSeq(i + 1, 0).toString()));
    const items = await positionedIn(deps, eid);
    expect(items.map((i) => i.messageId)).toEqual(ids);
    expect(items.every((i) => i.rf === 1 && i.rn === 10)).toBe(true);
    expect(await drawnIn(deps, eid)).toBe(10);
  });

  it('S4: a batch into a partitioned queue draws once per partition, each partition in batch order', async () => {
    const q = await world.newQueue({ enablePartitioning: true });
    const eid = await eidOf(deps, q);
    const sender = world.process({ match: isDraw, times: Infinity, phase: 'after', interleave: async () => {} });
    const messages = ['a', 'b', 'a', 'c', 'b', 'a'].map((key, i) => ({ body: i, messageId: `${key}${i}`, partitionKey: key }));
    const sent = await sender.api('POST', `/queues/${q}/messages/batch`, { messages });
    expect(sent.status).toBe(201);
    const results = sent.body.results as Json[];
    const partitions = new Set(results.map((r) => Number((BigInt(r.sequenceNumber as string) >> 12n) & 15n)));
    expect(sender.log.seen).toBe(partitions.size);
    for (const key of ['a', 'b', 'c']) {
      const mine = results.filter((r) => (r.messageId as string).startsWith(key));
      const partition = Number((BigInt(mine[0].sequenceNumber as string) >> 12n) & 15n);
      expect((await positionedIds(deps, eid, partition)).filter((id) => id.startsWith(key))).toEqual(mine.map((r) => r.messageId));
    }
  });

  it('S1: a send whose position a receiver tombstoned before its put answers a retryable Throttled (503), and nothing of it is delivered', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const pk = positionedPk(eid, 'active', 0);
    const sender = world.process({
      match: isDraw,
      phase: 'after',
      interleave: async () => void (await putTombstone(deps, pk, 1)),
    });
    const refused = await send(sender.api, q, { body: 1, messageId: 'late' });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: 'Throttled', retryable: true });
    expect(refused.headers['retry-after']).toBe('1');
    // Our client retries it as ServiceBusy (the Azure SDK retries a 503 with Retry-After as ServerBusy).
    expect(errorFromResponse(refused.status, refused.body, 1000)).toMatchObject({ code: 'ServiceBusy', retryable: true });
    expect(await positionedIds(deps, eid)).toEqual([]);
    // The client sends again: stored once, at the next position.
    const again = await send(sender.api, q, { body: 1, messageId: 'late' });
    expect(again.status).toBe(201);
    expect(await positionedIds(deps, eid)).toEqual(['late']);
    expect(await peekIds(api, q)).toEqual(['late']);
  });

  it('S1, S4: a batch one of whose positions a receiver tombstoned is refused whole, each message retryable, and none is delivered', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const pk = positionedPk(eid, 'active', 0);
    const sender = world.process({ match: isDraw, phase: 'after', interleave: async () => void (await putTombstone(deps, pk, 2)) });
    const sent = await batch(sender.api, q, ['x0', 'x1', 'x2']);
    expect(sent.status).toBe(207);
    expect((sent.body.results as Json[]).map((r) => r.error?.code)).toEqual(['Throttled', 'Throttled', 'Throttled']);
    expect((sent.body.results as Json[]).every((r) => r.error.retryable === true)).toBe(true);
    await send(api, q, { body: 'after', messageId: 'after' });
    world.clock.advance(HOLE_AFTER_MS);
    const head = await findHead(deps, pk, 1, 10);
    expect(head.take.map((i) => i.messageId)).toEqual(['after']);
    expect(await peekIds(api, q)).toEqual(['after']);
  });
});

describe('S6: scheduled sends into a positioned queue stay in the ready layout', () => {
  it('S2, S6: a scheduled message is a msg/ item numbered from the position counter after the last position (it takes none), cancellable as today; a due one is positioned', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const at = new Date(world.clock.now() + 60_000).toISOString();
    const scheduled = await send(api, q, { body: 1, messageId: 's', scheduledEnqueueTime: at });
    const due = await send(api, q, { body: 2, messageId: 'd', scheduledEnqueueTime: new Date(world.clock.now()).toISOString() });
    expect(scheduled.status).toBe(201);
    expect(scheduled.body.sequenceNumber).toBe(scheduledSeq(0, 0, 1).toString());
    expect(due.body.sequenceNumber).toBe(positionedSeq(1, 0).toString());
    expect((await todaysIn(deps, eid)).map((i) => [i.messageId, i.state, typeof i.rsk])).toEqual([['s', 'Scheduled', 'string']]);
    expect((await positionedIn(deps, eid)).map((i) => (i.tomb ? 'tomb' : i.messageId))).toEqual(['d']);
    const batched = await batch(api, q, ['b1', 'b2'], { scheduledEnqueueTime: at });
    expect((batched.body.results as Json[]).map((r) => r.sequenceNumber)).toEqual([scheduledSeq(1, 0, 1).toString(), scheduledSeq(1, 0, 2).toString()]);
    expect((await todaysIn(deps, eid)).map((i) => i.messageId).sort()).toEqual(['b1', 'b2', 's']);
    const cancelled = await api('DELETE', `/queues/${q}/messages/scheduled/${scheduled.body.sequenceNumber as string}`);
    expect(cancelled.status).toBe(204);
    expect((await todaysIn(deps, eid)).map((i) => i.messageId).sort()).toEqual(['b1', 'b2']);
  });
});

describe('S7: duplicate detection in a positioned queue', () => {
  it('S7: a resend within the window answers the first receipt; one message is stored and the resend gives its position up', async () => {
    const q = await world.newQueue({ requiresDuplicateDetection: true, duplicateDetectionHistoryTimeWindow: 'PT10M' });
    const eid = await eidOf(deps, q);
    const first = await send(api, q, { body: 1, messageId: 'dup' });
    const again = await send(api, q, { body: 1, messageId: 'dup' });
    expect(first.status).toBe(201);
    expect(again.body).toEqual(first.body);
    const items = await positionedIn(deps, eid);
    expect(items.map((i) => (i.tomb ? 'tomb' : i.messageId))).toEqual(['dup', 'tomb']);
    const batched = await batch(api, q, ['dup', 'new']);
    expect((batched.body.results as Json[]).map((r) => r.sequenceNumber)).toEqual([first.body.sequenceNumber, expect.any(String)]);
    expect(await peekIds(api, q)).toEqual(['dup', 'new']);
  });
});

describe('S2: a batch sent one request a message keeps its order', () => {
  // Duplicate detection sends each message of a batch as a request of its own, with its marker;
  // they draw their positions one after another, so a slow draw cannot let a later one pass it.
  it('S2, S7: a batch into a queue with duplicate detection is numbered in batch order, also when its first draw is slow', async () => {
    const q = await world.newQueue({ requiresDuplicateDetection: true });
    const eid = await eidOf(deps, q);
    const slow = world.process({ match: isDraw, interleave: () => new Promise((resolve) => setTimeout(resolve, 300)) });
    const sent = await batch(slow.api, q, ['a', 'b', 'c']);
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(slow.log.tripped).toBe(1);
    expect(await positionedIds(deps, eid)).toEqual(['a', 'b', 'c']);
    const numbers = (sent.body.results as Json[]).map((r) => BigInt(r.sequenceNumber as string));
    expect(numbers).toEqual([...numbers].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    expect(await peekIds(api, q)).toEqual(['a', 'b', 'c']);
  });
});

describe('F1, F2: forwarding and positioned queues', () => {
  it('F2: into a positioned target the copy is positioned; out of one it lands in the target as the target keeps messages', async () => {
    const target = await world.newQueue();
    const plainTarget = await world.newQueue({}, true);
    const plainSource = await world.newQueue({ forwardTo: target }, true);
    const source = await world.newQueue({ forwardTo: plainTarget });
    expect((await send(api, plainSource, { body: 1, messageId: 'in' })).status).toBe(201);
    expect((await send(api, source, { body: 2, messageId: 'out' })).status).toBe(201);
    expect(await positionedIds(deps, await eidOf(deps, target))).toEqual(['in']);
    expect((await todaysIn(deps, await eidOf(deps, plainSource))).length + (await positionedIn(deps, await eidOf(deps, plainSource))).length).toBe(0);
    expect((await todaysIn(deps, await eidOf(deps, plainTarget))).map((i) => i.messageId)).toEqual(['out']);
    expect(await positionedIn(deps, await eidOf(deps, source))).toEqual([]);
    const chained = await world.newQueue({ forwardTo: target });
    const sent = await batch(api, chained, ['c1', 'c2']);
    expect((sent.body.results as Json[]).every((r) => typeof r.sequenceNumber === 'string')).toBe(true);
    // A forwarded batch's messages are routed one by one, as today: in no set order.
    expect((await positionedIds(deps, await eidOf(deps, target))).sort()).toEqual(['c1', 'c2', 'in']);
  });

  it("F1, F2: a topic's copy forwarded by a subscription into a positioned queue lands there with the other copies in one transaction", async () => {
    const target = await world.newQueue();
    expect((await api('PUT', '/topics/t1', {})).status).toBe(201);
    expect((await api('PUT', '/topics/t1/subscriptions/fwd', { forwardTo: target })).status).toBe(201);
    expect((await api('PUT', '/topics/t1/subscriptions/keep', {})).status).toBe(201);
    const sent = await api('POST', '/topics/t1/messages', { body: 1, messageId: 'fan' });
    expect(sent.status).toBe(201);
    expect(await positionedIds(deps, await eidOf(deps, target))).toEqual(['fan']);
    const kept = await api('GET', '/topics/t1/subscriptions/keep/messages?maxMessages=10');
    expect((kept.body.messages as Json[]).map((m) => m.messageId)).toEqual(['fan']);
  });
});

describe('E4, E5: a positioned send beside its entity read', () => {
  /** A sending process that has read `q` (its first send `m1` is stored). */
  async function warmed(q: string) {
    const sender = world.process({ match: isPositionedPut, times: Infinity, phase: 'after', interleave: async () => {} });
    expect((await send(sender.api, q, { body: 1, messageId: 'm1' })).status).toBe(201);
    return sender;
  }

  it('E4: into a queue deleted since: positions drawn ahead, nothing put, the drawn position tombstoned, 404', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const sender = await warmed(q);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    const refused = await send(sender.api, q, { body: 2, messageId: 'm2' });
    expect(refused.status).toBe(404);
    expect(sender.log.seen).toBe(1);
    expect(await drawnIn(deps, eid)).toBe(2);
    expect((await positionedIn(deps, eid)).map((i) => (i.tomb ? 'tomb' : i.messageId))).toEqual(['m1', 'tomb']);
  });

  it('E4: into a queue deleted and already reaped: 404, and the late send leaves nothing behind that stays', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const sender = await warmed(q);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    await reapAll(deps);
    expect((await send(sender.api, q, { body: 2, messageId: 'm2' })).status).toBe(404);
    expect((await batch(sender.api, q, ['b1', 'b2'])).status).toBe(404);
    // Whatever the late sends wrote under the reaped incarnation goes by itself (a ttl), or nothing at all.
    const left = await deps.db.send(new ScanCommand({ TableName: deps.tableName, ConsistentRead: true }));
    const ours = (left.Items ?? []).filter((i) => String(i.pk).includes(eid));
    expect(ours.filter((i) => i.ttl === undefined)).toEqual([]);
  });

  it.each(['before', 'after'] as const)(
    'E4: a reaper that dies %s retiring a counter finishes on its next runs; a late send still leaves nothing that stays',
    async (phase) => {
      const q = await world.newQueue();
      const eid = await eidOf(deps, q);
      const sender = await warmed(q);
      expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
      const isRetire = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('posnext/'));
      const dying = faultyDeps(deps, { match: isRetire, phase });
      // Its first run removes the messages; a later one, finding all empty, retires the counter and dies there.
      for (let run = 0; run < 3 && dying.faults.tripped === 0; run++)
        await createReaperHandler(dying)().catch((e: unknown) => expect(e).toBeInstanceOf(InjectedCrash));
      expect(dying.faults.tripped).toBe(1);
      await reapAll(deps);
      expect((await send(sender.api, q, { body: 2, messageId: 'm2' })).status).toBe(404);
      const left = await deps.db.send(new ScanCommand({ TableName: deps.tableName, ConsistentRead: true }));
      expect((left.Items ?? []).filter((i) => String(i.pk).includes(eid) && i.ttl === undefined)).toEqual([]);
    },
  );

  it('E4: into a queue deleted and re-created since: stored once, in the new incarnation only', async () => {
    const q = await world.newQueue();
    const old = await eidOf(deps, q);
    const sender = await warmed(q);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    expect((await api('PUT', `/queues/${q}`, {})).status).toBe(201);
    const renewed = await eidOf(deps, q);
    const sent = await send(sender.api, q, { body: 2, messageId: 'm2' });
    expect(sent.status).toBe(201);
    expect(await positionedIds(deps, old)).toEqual(['m1']);
    expect(await positionedIds(deps, renewed)).toEqual(['m2']);
    expect(await peekIds(api, q)).toEqual(['m2']);
  });

  it('E5: into a queue made SendDisabled since: EntityDisabled, nothing of the send stored', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const sender = await warmed(q);
    expect((await api('PUT', `/queues/${q}`, { status: 'SendDisabled' })).status).toBe(200);
    const refused = await send(sender.api, q, { body: 2, messageId: 'm2' });
    expect(refused.body.error.code).toBe('EntityDisabled');
    expect(await positionedIds(deps, eid)).toEqual(['m1']);
  });

  it('E4, E5: a batch into a queue deleted, re-created or disabled since is answered as the queue now is, stored only where it now may be', async () => {
    const deleted = await world.newQueue();
    const recreated = await world.newQueue();
    const disabled = await world.newQueue();
    const senders = await Promise.all([deleted, recreated, disabled].map(warmed));
    const eids = await Promise.all([deleted, recreated, disabled].map((q) => eidOf(deps, q)));
    await api('DELETE', `/queues/${deleted}`);
    await api('DELETE', `/queues/${recreated}`);
    await api('PUT', `/queues/${recreated}`, {});
    await api('PUT', `/queues/${disabled}`, { status: 'SendDisabled' });
    expect((await batch(senders[0]!.api, deleted, ['b1', 'b2'])).status).toBe(404);
    const again = await batch(senders[1]!.api, recreated, ['b1', 'b2']);
    expect((again.body.results as Json[]).map((r) => r.sequenceNumber)).toEqual([positionedSeq(1, 0).toString(), positionedSeq(2, 0).toString()]);
    expect((await batch(senders[2]!.api, disabled, ['b1', 'b2'])).body.error.code).toBe('EntityDisabled');
    for (const eid of eids) expect(await positionedIds(deps, eid)).toEqual(['m1']);
    expect(await positionedIds(deps, await eidOf(deps, recreated))).toEqual(['b1', 'b2']);
    expect((await positionedIn(deps, eids[0]!)).map((i) => (i.tomb ? 'tomb' : i.messageId))).toEqual(['m1', 'tomb', 'tomb']);
  });

  it('E4: an unchanged queue: the send is written with the entity seen a moment ago, acknowledged once its read agrees', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const sender = await warmed(q);
    expect((await send(sender.api, q, { body: 2, messageId: 'm2' })).status).toBe(201);
    expect((await batch(sender.api, q, ['m3', 'm4'])).status).toBe(201);
    expect(await positionedIds(deps, eid)).toEqual(['m1', 'm2', 'm3', 'm4']);
    expect((await positionedIn(deps, eid)).some((i) => i.tomb)).toBe(false);
  });
});

describe('E4: what a deleted positioned queue leaves', () => {
  it('E4: the reaper removes its positioned messages, tombstones and counters', async () => {
    const q = await world.newQueue({ enablePartitioning: true });
    const eid = await eidOf(deps, q);
    const sent = await api('POST', `/queues/${q}/messages/batch`, { messages: ['a', 'b', 'c'].map((k) => ({ body: k, partitionKey: k })) });
    const partitions = (sent.body.results as Json[]).map((r) => Number((BigInt(r.sequenceNumber as string) >> 12n) & 15n));
    await putTombstone(deps, positionedPk(eid, 'active', partitions[0]!), 99);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    await reapAll(deps);
    for (const p of partitions) {
      expect(await positionedIn(deps, eid, p)).toEqual([]);
      expect(await drawnIn(deps, eid, p)).toBe(0);
    }
  });
});
