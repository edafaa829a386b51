/**
 * Receive and complete on a positioned queue (lib/broker/positioned-receive.ts), through the
 * API on DynamoDB Local: messages claimed by cursor and lease, handed out in order under
 * GUID-shaped tokens that number them (R1-R3), completed by one delete (R4), refused once the
 * lock has ended or the message was taken back (R5), answers within Lambda's limit with
 * nothing claimed that is not handed out (R10), and today's-layout messages the queue holds
 * (scheduled ones) received after the positions. Messages are seeded as a positioned send
 * will put them (test/support/positioned-queue.ts).
 */
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { testDeps } from '../support/table.js';
import { HookedClock } from '../support/hooked-clock.js';
import { jsonMessages, queueEntity, sendPositioned } from '../support/positioned-queue.js';
import { isLockTokenShape, sequenceOfLockToken } from '../../lib/messages/lock-token.js';
import { isPositionedSeq, partitionOfSeq } from '../../lib/store/sequence.js';
import { cursorKey, leasePk, positionCounterKey, positionedPk } from '../../lib/store/keys.js';
import { counterView } from '../../lib/store/tickets.js';
import { RECEIVE_AND_DELETE_LOCK_MS } from '../../lib/broker/positioned-receive.js';
import type { MessageInput } from '../../lib/messages/schema.js';
import { getReadyMarks } from '../../lib/store/markers.js';
import { CLEAR_AFTER_MS } from '../../lib/broker/ready-marks.js';
import { faultyDeps, inputOf, is } from '../support/faults.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new HookedClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let api: ReturnType<typeof apiClient>;
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'posrecv')), newEntityLayout: positionedLayout };
  api = apiClient(deps);
});

/** A new positioned queue, its entity item, and a sender of positioned requests into it. */
async function positionedQueue(props: Record<string, unknown> = {}) {
  const name = `pq${++queues}`;
  expect((await api('PUT', `/queues/${name}`, { lockDuration: 'PT30S', ...props })).status).toBe(201);
  const entity = await queueEntity(deps, name);
  expect(entity.layout).toBe('positions');
  const send = (messages: MessageInput[], partition = 0) => sendPositioned(deps, entity, messages, partition);
  return { name, entity, send };
}

const receive = async (q: string, body: Record<string, unknown> = {}) => {
  const res = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT0S', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.messages as Json[];
};
const complete = (q: string, m: Json) => api('POST', `/queues/${q}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
const bodies = (messages: Json[]) => messages.map((m) => m.body.n as string);

async function itemsUnder(pk: string) {
  const out = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return out.Items ?? [];
}

/**
 * What is left of a partition's messages: no tombstone, and on a ticketed queue no `done`
 * marker either (a completed message's marker stays a day, till DynamoDB's TTL: store/tickets.ts);
 * the rule is that no message is left, which both layouts are held to.
 */
async function messagesUnder(pk: string) {
  return (await itemsUnder(pk)).filter((i) => !i.tomb && i.done === undefined);
}

describe('positioned receive: peek-lock and complete', () => {
  it('R1, R2, R3, R4: takes messages in order under GUID tokens that number them, delivery count 1; a single and a batch complete remove them', async () => {
    const { name, entity, send } = await positionedQueue();
    const first = await send(jsonMessages('a', 5));
    const second = await send(jsonMessages('b', 3));
    const one = await receive(name, { maxMessages: 1 });
    expect(bodies(one)).toEqual(['a0']);
    const m = one[0]!;
    expect(isLockTokenShape(m.lockToken)).toBe(true);
    expect(sequenceOfLockToken(m.lockToken).toString()).toBe(m.sequenceNumber);
    expect(isPositionedSeq(BigInt(m.sequenceNumber))).toBe(true);
    expect(m.sequenceNumber).toBe(first.sequenceNumbers[0]);
    expect(m).toMatchObject({ deliveryCount: 1, state: 'Active', lockedUntil: new Date(clock.now() + LOCK).toISOString() });
    const rest = await receive(name, { maxMessages: 10 });
    expect(bodies(rest)).toEqual(['a1', 'a2', 'a3', 'a4', 'b0', 'b1', 'b2']);
    expect(rest.map((r) => r.sequenceNumber)).toEqual([...first.sequenceNumbers.slice(1), ...second.sequenceNumbers]);
    expect(new Set(rest.map((r) => r.lockToken)).size).toBe(7);
    expect((await complete(name, m)).status).toBe(204);
    const batch = await api('POST', `/queues/${name}/messages/complete`, { lockTokens: rest.map((r) => r.lockToken) });
    expect(batch.status).toBe(200);
    expect(batch.body.results.every((r: Json) => r.ok === true)).toBe(true);
    expect(await receive(name, { maxMessages: 10 })).toEqual([]);
    expect(await messagesUnder(positionedPk(entity.eid, 'active', 0))).toEqual([]);
  });

  it('R5: a second complete of one token, and a token that names no delivery, answer MessageLockLost and change nothing', async () => {
    const { name, send } = await positionedQueue();
    await send(jsonMessages('c', 2));
    const [x, y] = await receive(name, { maxMessages: 2 });
    expect((await complete(name, x)).status).toBe(204);
    const again = await complete(name, x);
    expect(again.status).toBe(410);
    expect(again.body.error.code).toBe('MessageLockLost');
    // The same message at another take-back count, and a token of another message under its number.
    const hex = (y.lockToken as string).replace(/-/g, '');
    const otherCount = `${hex.slice(0, 16)}${(Number.parseInt(hex.slice(16, 17), 16) ^ 1).toString(16)}${hex.slice(17)}`;
    const guid = (h: string) => `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    expect((await api('POST', `/queues/${name}/messages/${y.sequenceNumber}/complete`, { lockToken: guid(otherCount) })).status).toBe(410);
    expect((await api('POST', `/queues/${name}/messages/${y.sequenceNumber}/complete`, { lockToken: x.lockToken })).status).toBe(410);
    expect((await complete(name, y)).status).toBe(204);
  });

  it("R5, R6, R3: a complete after the lock's end, before any take-back, answers MessageLockLost; the message comes back, counted again", async () => {
    const { name, send } = await positionedQueue();
    await send(jsonMessages('d', 1));
    const [held] = await receive(name);
    clock.advance(LOCK + SECOND);
    const late = await complete(name, held);
    expect(late.status).toBe(410);
    expect(late.body.error.code).toBe('MessageLockLost');
    const [back] = await receive(name);
    expect(back).toMatchObject({ sequenceNumber: held.sequenceNumber, deliveryCount: 2 });
    expect((await complete(name, held)).status).toBe(410);
    expect((await complete(name, back)).status).toBe(204);
  });

  // Pins the cursor claim's lease item (a ticket has none; its renewal is the settlements' and carries its own twin there).
  it.skipIf(positionedLayout === 'tickets')(
    "R5, R4: past the token's stated lock end, the lease decides: a lease whose lock was extended still completes",
    async () => {
      const { name, entity, send } = await positionedQueue();
      await send(jsonMessages('e', 1));
      const [held] = await receive(name);
      // What a renewal leaves (lib/store/leases.ts `lockEndIn`): the lease's lock end later than the token says.
      const [lease] = await itemsUnder(leasePk(positionedPk(entity.eid, 'active', 0)));
      await deps.db.send(
        new UpdateCommand({
          TableName: deps.tableName,
          Key: { pk: lease!.pk, sk: lease!.sk },
          UpdateExpression: 'SET #until = :until',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':until': clock.now() + 3 * LOCK },
        }),
      );
      clock.advance(LOCK + SECOND);
      expect((await complete(name, held)).status).toBe(204);
    },
  );
});

describe('positioned receive: what a claim reads', () => {
  it("R1: a claim after one of the same process does not read whether that claim's lease was written", async () => {
    const { name, send } = await positionedQueue();
    await send(jsonMessages('j', 3));
    const counted = faultyDeps(deps, {
      match: (c) => is(GetCommand)(c) && String(inputOf(c).Key?.pk ?? '').startsWith('lease/'),
      interleave: async () => {},
      times: Infinity,
    });
    const via = apiClient(counted);
    for (let i = 0; i < 3; i++) {
      const res = await via('POST', `/queues/${name}/messages/receive`, { maxWaitTime: 'PT0S' });
      expect(bodies(res.body.messages)).toEqual([`j${i}`]);
    }
    expect(counted.faults.seen).toBe(0);
  });
});

describe('positioned receive: receive-and-delete, partitions, waiting', () => {
  it('R3: receive-and-delete hands out each message once, removed', async () => {
    const { name, entity, send } = await positionedQueue();
    await send(jsonMessages('g', 4));
    const got = await receive(name, { mode: 'receiveAndDelete', maxMessages: 3 });
    expect(bodies(got)).toEqual(['g0', 'g1', 'g2']);
    expect(got.every((m) => m.lockToken === undefined && m.deliveryCount === 1)).toBe(true);
    expect(bodies(await receive(name, { mode: 'receiveAndDelete', maxMessages: 3 }))).toEqual(['g3']);
    clock.advance(RECEIVE_AND_DELETE_LOCK_MS + SECOND);
    expect(await receive(name, { mode: 'receiveAndDelete', maxMessages: 3 })).toEqual([]);
    expect(await messagesUnder(positionedPk(entity.eid, 'active', 0))).toEqual([]);
  });

  it('R2: a partitioned positioned queue hands out the messages of every partition, each in its order', async () => {
    const { name, send } = await positionedQueue({ enablePartitioning: true });
    await send(jsonMessages('p3-', 3), 3);
    await send(jsonMessages('p9-', 2), 9);
    await send(jsonMessages('p0-', 2), 0);
    const got = await receive(name, { maxMessages: 20 });
    expect(got).toHaveLength(7);
    for (const p of [0, 3, 9]) {
      const of = got.filter((m) => partitionOfSeq(BigInt(m.sequenceNumber)) === p);
      expect(bodies(of)).toEqual(of.map((_, i) => `p${p}-${i}`));
    }
    const done = await api('POST', `/queues/${name}/messages/complete`, { lockTokens: got.map((m) => m.lockToken) });
    expect(done.body.results.every((r: Json) => r.ok === true)).toBe(true);
    expect(await receive(name, { maxMessages: 20 })).toEqual([]);
  });

  it("R2, R6: a partition's ready mark stays while its message is in flight, and goes once the partition holds nothing", async () => {
    const { name, entity, send } = await positionedQueue({ enablePartitioning: true, lockDuration: 'PT5M' });
    const markOf = async () => (await getReadyMarks(deps, entity.eid))(4);
    await send(jsonMessages('k', 1), 4);
    clock.advance(4 * 60 * SECOND);
    const [held] = await receive(name);
    expect(held.body.n).toBe('k0');
    // The mark is old enough to clear, the partition shows nothing to take: its lease keeps the mark.
    clock.advance(CLEAR_AFTER_MS - 4 * 60 * SECOND + SECOND);
    expect(await receive(name)).toEqual([]);
    expect(await markOf()).toBeDefined();
    clock.advance(5 * 60 * SECOND);
    const [back] = await receive(name);
    expect(back).toMatchObject({ sequenceNumber: held.sequenceNumber, deliveryCount: 2 });
    expect((await complete(name, back)).status).toBe(204);
    expect(await markOf()).toBeDefined();
    // Lapsed and settled, the lease goes with the next receive; the one after clears the mark.
    clock.advance(5 * 60 * SECOND + SECOND);
    expect(await receive(name)).toEqual([]);
    expect(await receive(name)).toEqual([]);
    expect(await markOf()).toBeUndefined();
    // A new send marks it again, and is received.
    await send(jsonMessages('l', 1), 4);
    expect(bodies(await receive(name))).toEqual(['l0']);
  });

  it('R2: a receive that waits takes a message that arrives during its wait', async () => {
    const { name, send } = await positionedQueue();
    // The broker clock's sleep moves it at once: the message arrives while the receive sleeps
    // between polls, not at a moment of real time its polls may all have passed.
    clock.onSleep = async () => {
      await send(jsonMessages('w', 1));
    };
    const res = await api('POST', `/queues/${name}/messages/receive`, { maxWaitTime: 'PT5S' });
    expect(res.status).toBe(200);
    expect(bodies(res.body.messages)).toEqual(['w0']);
  });
});

describe('positioned receive: behind expired messages', () => {
  // The ManualClock stands still while a receive works: a wait of one second polls five times,
  // sleeping between polls, and each poll passes only so many expired messages (T4).
  it('T4, R2: a receive that waits keeps polling at once while it is removing expired messages, and finds the live one behind them', async () => {
    const { name } = await positionedQueue();
    for (let i = 0; i < 30; i++) expect((await api('POST', `/queues/${name}/messages`, { body: { n: `old${i}` }, timeToLive: 'PT1M' })).status).toBe(201);
    expect((await api('POST', `/queues/${name}/messages`, { body: { n: 'live' } })).status).toBe(201);
    clock.advance(2 * 60 * SECOND);
    const got = await receive(name, { maxWaitTime: 'PT1S' });
    expect(got.map((m) => [m.body.n, m.deliveryCount])).toEqual([['live', 1]]);
    expect((await complete(name, got[0]!)).status).toBe(204);
  });
});

describe("positioned receive: today's layout in a positioned queue", () => {
  it("S6, R2: a scheduled message (today's layout) is received once due, after the positions, under today's token, and completes", async () => {
    const { name, send } = await positionedQueue();
    const at = new Date(clock.now() + 60 * SECOND).toISOString();
    const scheduled = await api('POST', `/queues/${name}/messages`, { body: { n: 'sched' }, scheduledEnqueueTime: at });
    expect(scheduled.status).toBe(201);
    await send(jsonMessages('h', 2));
    const early = await receive(name, { maxMessages: 10 });
    expect(bodies(early)).toEqual(['h0', 'h1']);
    expect((await api('POST', `/queues/${name}/messages/complete`, { lockTokens: early.map((m) => m.lockToken) })).status).toBe(200);
    clock.advance(61 * SECOND);
    await send(jsonMessages('i', 1));
    const got = await receive(name, { maxMessages: 10 });
    expect(bodies(got)).toEqual(['i0', 'sched']);
    const today = got[1]!;
    expect(isPositionedSeq(sequenceOfLockToken(today.lockToken))).toBe(false);
    const done = await api('POST', `/queues/${name}/messages/complete`, { lockTokens: got.map((m) => m.lockToken) });
    expect(done.body.results.every((r: Json) => r.ok === true)).toBe(true);
    expect(await receive(name, { maxMessages: 10 })).toEqual([]);
  });
});

describe('positioned receive: R10', () => {
  it('R10: takes no more than an answer within 6 MB carries, and leaves the rest in line at once, never locked', async () => {
    const { name, entity, send } = await positionedQueue();
    const big = 'x'.repeat(200 * 1024);
    for (let i = 0; i < 4; i++) await send(Array.from({ length: 10 }, (_, j) => ({ body: { n: `big${i * 10 + j}`, big } }) as MessageInput));
    const first = await receive(name, { maxMessages: 40 });
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(40);
    expect(bodies(first)).toEqual(first.map((_, i) => `big${i}`));
    const pk = positionedPk(entity.eid, 'active', 0);
    if (positionedLayout === 'tickets') {
      // Taken by a ticket, the rest is given back at once: an entry of its own from the first left, ended now, handing nothing out (R3).
      const counter = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionCounterKey(pk), ConsistentRead: true }));
      const back = counterView(counter.Item).tickets.find((t) => t.first === first.length + 1);
      expect(back).toMatchObject({ count: 40 - first.length, nd: 1 });
      expect(back!.until).toBeLessThanOrEqual(clock.now());
    } else {
      // The rest are not claimed: the cursor stops at the first left, and the next receive takes them at once.
      const cursor = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: cursorKey(pk), ConsistentRead: true }));
      expect(cursor.Item!.pos).toBe(first.length + 1);
    }
    const second = await receive(name, { maxMessages: 40 });
    expect(bodies(second)).toEqual(second.map((_, i) => `big${first.length + i}`));
    expect(second.every((m) => m.deliveryCount === 1)).toBe(true);
  });
});
