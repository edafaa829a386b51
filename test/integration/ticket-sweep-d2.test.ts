/**
 * D2 by the sweeper on positioned queues (lib/broker/positioned-expiry.ts): a last allowed lock
 * that runs out with nobody receiving is dead-lettered (MaxDeliveryCountExceeded) by the
 * sweeper's pass, not only by the next receive. On a ticketed partition a lapsed ticket's
 * messages are moved in place before its take-back (an entity that allows one delivery: a
 * ticket hands out first deliveries only); a lapsed cursor lease's (later deliveries, and the
 * cursor-claimed layout) are taken back and claimed from `back` by the pass, which moves them.
 * Each message moves exactly once with two passes at once and receivers racing (R1, D2, D3); a
 * crash or a refusal at each step loses and doubles nothing (D3).
 */
import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { jobBudget } from '../../lib/broker/budget.js';
import { POSITIONED_PASS_EVERY_MINUTES, SWEEP_LOCK_MS, sweepPositionedExpiry } from '../../lib/broker/positioned-expiry.js';
import { cursorKey, positionCounterKey, positionedPk } from '../../lib/store/keys.js';
import { counterView } from '../../lib/store/tickets.js';
import type { PositionedItem } from '../../lib/store/positions.js';
import type { EntityItem } from '../../lib/store/entities.js';
import { faultyDeps, inputOf, is, transactionConflict, type Fault } from '../support/faults.js';
import { positionedQueues } from '../support/positioned-seeds.js';
import type { Msg } from '../support/queue-helpers.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const QUARTER = POSITIONED_PASS_EVERY_MINUTES * MINUTE;
const LOCK = 30 * SECOND;

const { clock, world, open, createQueue } = positionedQueues('ticket-sweep-d2', 'tickets');
const cursorClaimed = positionedQueues('ticket-sweep-d2-cursor', 'positions');

beforeAll(async () => {
  await open();
  await cursorClaimed.open();
});

type World = typeof world;

const idsOf = (messages: Msg[]) => messages.map((m) => m.messageId).sort();

async function sendAll(w: World, q: string, ids: string[]) {
  const res = await w.api('POST', `/queues/${q}/messages/batch`, { messages: ids.map((id) => ({ body: { id }, messageId: id })) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

async function receive(w: World, q: string, maxMessages = 10): Promise<Msg[]> {
  const res = await w.api('POST', `/queues/${q}/messages/receive`, { maxMessages });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.messages as Msg[];
}

async function deadLetters(w: World, q: string): Promise<Msg[]> {
  const res = await w.api('GET', `/queues/${q}/$deadletterqueue/messages?maxMessages=100`);
  expect(res.status).toBe(200);
  return res.body.messages as Msg[];
}

/** Everything at the partition's positions: message ids, `done` markers and tombstones as such. */
async function atPositions(w: World, pk: string): Promise<string[]> {
  const out = await w.deps.db.send(
    new QueryCommand({ TableName: w.deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return ((out.Items ?? []) as PositionedItem[]).map((i) => (i.tomb ? 'tomb' : i.done ? 'done' : String(i.messageId)));
}

const ticketsOf = async (w: World, pk: string) =>
  counterView((await w.deps.db.send(new GetCommand({ TableName: w.deps.tableName, Key: positionCounterKey(pk), ConsistentRead: true }))).Item).tickets;

const pkOf = (entity: EntityItem) => positionedPk(entity.eid, 'active', 0);
const sweepWith = (w: World, db = w.deps.db) => sweepPositionedExpiry({ ...w.broker.ctx, db }, jobBudget());

/** Each id is in the dead-letter subqueue once, with MaxDeliveryCountExceeded and `delivered` deliveries; nothing is left to receive. */
async function expectDeadLetteredOnce(w: World, q: string, pk: string, ids: string[], delivered: number) {
  const dead = await deadLetters(w, q);
  expect(idsOf(dead)).toEqual([...ids].sort());
  expect(dead.every((m) => m.deadLetterReason === 'MaxDeliveryCountExceeded' && m.deliveryCount === delivered)).toBe(true);
  expect((await atPositions(w, pk)).every((p) => p === 'done')).toBe(true);
  expect(await receive(w, q)).toEqual([]);
}

/** A queue allowing `max` deliveries holding `ids`, each received `max` times, its last lock lapsed. */
async function usedUpWorld(w: World, q: string, ids: string[], max: number, props: Record<string, unknown> = {}) {
  const entity = await createQueueIn(w, q, { maxDeliveryCount: max, lockDuration: 'PT30S', ...props });
  await sendAll(w, q, ids);
  let last: Msg[] = [];
  for (let d = 1; d <= max; d++) {
    last = await receive(w, q, ids.length);
    expect(last.map((m) => [m.messageId, m.deliveryCount])).toEqual(ids.map((id) => [id, d]));
    clock.advance(LOCK + SECOND);
  }
  return { entity, pk: pkOf(entity), last };
}

const createQueueIn = (w: World, q: string, props: Record<string, unknown>) => (w === world ? createQueue(q, props) : cursorClaimed.createQueue(q, props));

describe('D2: the sweeper dead-letters a lapsed last lock on a positioned queue, with nobody receiving', () => {
  it('D2 (tickets): a batch on its last allowed delivery is dead-lettered by the sweeper at the lapse; its late complete is lost', async () => {
    const { pk, last } = await usedUpWorld(world, 'batch', ['m-0', 'm-1'], 1);
    // The sweeper's run whose minute the pass over positioned queues is due in.
    clock.current = Math.ceil(clock.current / QUARTER) * QUARTER + 5 * SECOND;
    const report = await createSweeperHandler(world.deps)();
    expect(report.positioned).toMatchObject({ overDelivered: 2, left: 0, raced: 0 });
    await expectDeadLetteredOnce(world, 'batch', pk, ['m-0', 'm-1'], 1);
    expect(await ticketsOf(world, pk)).toEqual([]);
    const late = await world.api('POST', `/queues/batch/messages/${last[0]!.sequenceNumber}/complete`, { lockToken: last[0]!.lockToken });
    expect(late.status).toBe(410);
  });

  it('D2 (tickets), R3: a later delivery (a lease of `back`) used up is dead-lettered by the pass with its count; a live message after it stays, uncounted', async () => {
    const { entity, pk } = await usedUpWorld(world, 'lease', ['m-0'], 2);
    await sendAll(world, 'lease', ['live']);
    const report = await sweepWith(world);
    expect(report).toMatchObject({ overDelivered: 1, raced: 0 });
    await expect(deadLetters(world, 'lease').then(idsOf)).resolves.toEqual(['m-0']);
    expect((await deadLetters(world, 'lease'))[0]!.deliveryCount).toBe(2);
    expect((await receive(world, 'lease')).map((m) => [m.messageId, m.deliveryCount])).toEqual([['live', 1]]);
    expect(entity.maxDeliveryCount).toBe(2);
    expect(await atPositions(world, pk)).toEqual(['done', 'live']);
  });

  it('D2 (positions): the cursor-claimed layout has the pass dead-letter a lapsed last lock too', async () => {
    const w = cursorClaimed.world;
    cursorClaimed.clock.current = clock.current;
    const entity = await cursorClaimed.createQueue('cursor', { maxDeliveryCount: 1, lockDuration: 'PT30S' });
    await sendAll(w, 'cursor', ['m-0', 'm-1']);
    expect(await receive(w, 'cursor').then(idsOf)).toEqual(['m-0', 'm-1']);
    cursorClaimed.clock.advance(LOCK + SECOND);
    const report = await sweepWith(w);
    expect(report).toMatchObject({ overDelivered: 2, left: 0, raced: 0 });
    const dead = await deadLetters(w, 'cursor');
    expect(dead.map((m) => [m.messageId, m.deadLetterReason, m.deliveryCount])).toEqual([
      ['m-0', 'MaxDeliveryCountExceeded', 1],
      ['m-1', 'MaxDeliveryCountExceeded', 1],
    ]);
    expect(await receive(w, 'cursor')).toEqual([]);
    expect(entity.layout).toBe('positions');
  });

  it('D2: a last lock still held is not moved; one with deliveries left is taken back, not moved', async () => {
    const entity = await createQueue('held', { maxDeliveryCount: 1, lockDuration: 'PT1M' });
    await sendAll(world, 'held', ['m-0']);
    const [m] = await receive(world, 'held');
    clock.advance(30 * SECOND);
    expect(await sweepWith(world)).toMatchObject({ overDelivered: 0 });
    expect((await world.api('POST', `/queues/held/messages/${m!.sequenceNumber}/complete`, { lockToken: m!.lockToken })).status).toBe(204);
    const left = await createQueue('left', { maxDeliveryCount: 3, lockDuration: 'PT30S' });
    await sendAll(world, 'left', ['m-0']);
    await receive(world, 'left');
    clock.advance(LOCK + SECOND);
    expect(await sweepWith(world)).toMatchObject({ overDelivered: 0 });
    expect(await deadLetters(world, 'left')).toEqual([]);
    expect((await receive(world, 'left')).map((x) => x.deliveryCount)).toEqual([2]);
    expect([entity.maxDeliveryCount, left.maxDeliveryCount]).toEqual([1, 3]);
  });
});

describe('R1, D2, D3: two passes at once and receivers racing them', () => {
  it('D2, R1: two passes and a receiver together move each used-up message exactly once and hand none out', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `m-${i}`);
    const { pk } = await usedUpWorld(world, 'race', ids, 1);
    const handed: Msg[] = [];
    const receiver = async () => {
      for (let i = 0; i < 3; i++) handed.push(...(await receive(world, 'race', 4)));
    };
    const [a, b] = await Promise.all([sweepWith(world), sweepWith(world), receiver()]);
    expect(handed).toEqual([]);
    // Whoever moved each (a pass, or the receive's own D2), it is in the dead-letter subqueue once.
    expect(a.overDelivered + b.overDelivered).toBeLessThanOrEqual(ids.length);
    await sweepWith(world);
    await expectDeadLetteredOnce(world, 'race', pk, ids, 1);
    expect(await ticketsOf(world, pk)).toEqual([]);
  });

  it('D2, R1: two passes at once over lapsed later deliveries (leases) move each exactly once', async () => {
    const ids = ['m-0', 'm-1', 'm-2'];
    const { pk } = await usedUpWorld(world, 'race-lease', ids, 2);
    const [a, b] = await Promise.all([sweepWith(world), sweepWith(world)]);
    expect(a.overDelivered + b.overDelivered).toBe(ids.length);
    await expectDeadLetteredOnce(world, 'race-lease', pk, ids, 2);
  });
});

/** A TransactWriteItems touching `pk`'s positions: the dead-letter move (its DLQ copy and the position's marker). */
const moveOf = (pk: string) => (c: unknown) =>
  is(TransactWriteCommand)(c) &&
  ((inputOf(c).TransactItems ?? []) as Record<string, { Key?: { pk?: unknown }; Item?: { pk?: unknown } }>[]).some((t) =>
    Object.values(t).some((op) => (op.Key?.pk ?? op.Item?.pk) === pk),
  );
const counterReadOf = (pk: string) => (c: unknown) =>
  is(GetCommand)(c) && (inputOf(c).Key as { pk?: string }).pk === positionCounterKey(pk).pk && inputOf(c).ConsistentRead === true;
const surveyOf = (pk: string) => (c: unknown) =>
  is(QueryCommand)(c) && (inputOf(c).ExpressionAttributeValues as { ':pk'?: string })[':pk'] === pk && inputOf(c).ConsistentRead === true;
const takeBackOf = (pk: string) => (c: unknown) =>
  is(UpdateCommand)(c) &&
  (inputOf(c).Key as { pk?: string }).pk === positionCounterKey(pk).pk &&
  String(inputOf(c).UpdateExpression).startsWith('REMOVE #p, #u');
const cursorWriteOf = (pk: string) => (c: unknown) =>
  (is(PutCommand)(c) && (inputOf(c).Item as { pk?: string }).pk === cursorKey(pk).pk) ||
  (is(UpdateCommand)(c) && (inputOf(c).Key as { pk?: string }).pk === cursorKey(pk).pk);
const throttled = async () => {
  throw new ProvisionedThroughputExceededException({ $metadata: {}, message: 'injected' });
};
const conflicted = async () => {
  throw transactionConflict();
};

type How = 'before' | 'after' | 'throttled' | 'conflict';
const faultOf = (match: (c: unknown) => boolean, how: How): Fault => ({
  match,
  ...(how === 'after' ? { phase: 'after' as const } : {}),
  ...(how === 'throttled' ? { interleave: throttled } : how === 'conflict' ? { interleave: conflicted } : {}),
});

describe('D3: the pass dying or refused at each step of D2', () => {
  const ticketSteps: [string, (pk: string) => (c: unknown) => boolean, How[]][] = [
    ['the counter read', counterReadOf, ['before', 'after', 'throttled']],
    ['the survey', surveyOf, ['before', 'after', 'throttled']],
    ['the move', moveOf, ['before', 'after', 'throttled', 'conflict']],
    ['the take-back', takeBackOf, ['before', 'after', 'throttled']],
  ];
  const ticketCases = ticketSteps.flatMap(([step, match, hows]) => hows.map((how) => [step, how, match] as const));

  it.each(ticketCases)('D3, D2, R1 (a lapsed ticket): at %s, %s, the message moves once, and only by a pass', async (step, how, match) => {
    const q = `t-${step.replace(/\W+/g, '-')}-${how}`;
    const { pk, last } = await usedUpWorld(world, q, ['m-0', 'm-1'], 1);
    const faulty = faultyDeps(world.deps, faultOf(match(pk), how));
    await sweepWith(world, faulty.db);
    expect(faulty.faults.tripped).toBe(1);
    // What moved is in the DLQ once, what did not is still where its lapsed ticket left it.
    const between = await deadLetters(world, q);
    expect(new Set(between.map((m) => m.messageId)).size).toBe(between.length);
    // The next pass (nothing it took is held: no lock to wait for) finishes.
    await sweepWith(world);
    await expectDeadLetteredOnce(world, q, pk, ['m-0', 'm-1'], 1);
    expect(await ticketsOf(world, pk)).toEqual([]);
    expect((await world.api('POST', `/queues/${q}/messages/${last[0]!.sequenceNumber}/complete`, { lockToken: last[0]!.lockToken })).status).toBe(410);
  });

  const leaseSteps: [string, (pk: string) => (c: unknown) => boolean, How[]][] = [
    ['the claim', cursorWriteOf, ['before', 'after', 'throttled']],
    ['the move', moveOf, ['before', 'after', 'throttled', 'conflict']],
  ];
  const leaseCases = leaseSteps.flatMap(([step, match, hows]) => hows.map((how) => [step, how, match] as const));

  it.each(leaseCases)(
    'D3, D2, R3 (a lapsed lease): at %s, %s, the message moves once with its count, after the pass lock at worst',
    async (step, how, match) => {
      const q = `l-${step.replace(/\W+/g, '-')}-${how}`;
      const { pk } = await usedUpWorld(world, q, ['m-0'], 2);
      const faulty = faultyDeps(world.deps, faultOf(match(pk), how));
      await sweepWith(world, faulty.db);
      expect(faulty.faults.tripped).toBe(1);
      // What a dead pass claimed comes back when its lock lapses, counting no delivery (R3).
      clock.advance(SWEEP_LOCK_MS + SECOND);
      await sweepWith(world);
      // A pass that died between its cursor write and its lease leaves the lease to be repaired,
      // lapsed, by the next claim, and taken back by the one after (store/leases.ts `claim`).
      await sweepWith(world);
      await expectDeadLetteredOnce(world, q, pk, ['m-0'], 2);
    },
  );
});
