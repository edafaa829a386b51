/**
 * Taking by predicate on ticketed partitions (lib/broker/ticket-sweeps.ts; design.md, "A claim
 * that cannot lose", cause 4): the sweeper's expiry pass (T6, T7) and bulk delete with a cutoff
 * (R11) look at the head first and take by ticket only what the predicate accepts there, remove
 * it leaving `done` markers, and give back at once, counting no delivery (R3), what a ticket
 * took that the predicate refuses (a receiver took the positions looked at first). A live head
 * costs no take; lapsed tickets of a partition nobody receives from are taken back by the pass
 * (R6); a crash or a throttle at each step loses and doubles nothing (D3); and racing receivers
 * nothing is handed out twice, nor removed while a receiver holds it (R1).
 *
 * Receivers here are the store's ticket operations, as a receive of a ticketed partition uses
 * them: a ticket of the head, the lapsed tickets it shows taken back, `back` claimed by cursor.
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { CapacityMeter } from '../../bench/capacity.js';
import { jobBudget } from '../../lib/broker/budget.js';
import { deletePositioned } from '../../lib/broker/positioned-bulk-delete.js';
import { expiredBy, sweepPositionedExpiry, SWEEP_LOCK_MS } from '../../lib/broker/positioned-expiry.js';
import { documentClient } from '../../lib/deps.js';
import { cursorKey, positionCounterKey } from '../../lib/store/keys.js';
import { claim, completeAtPosition as completeAtPositionOf, readCursor, TICKETED } from '../../lib/store/leases.js';
import { deletePassed, type PositionedItem, type PositionStore } from '../../lib/store/positions.js';
import { completeTicketed, counterView, forgetTickets, lapsedTickets, markTicketed, readTicket, takeBackTickets, takeTicket } from '../../lib/store/tickets.js';
import { faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { bodies, positionedQueues } from '../support/positioned-seeds.js';
import { messageItems } from '../support/stream.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const LOCK = 30 * SECOND;
const { clock, world, open, createQueue, seed, runtime } = positionedQueues('ticket-sweeps', 'tickets');

beforeAll(async () => {
  await open();
});

type Got = { item: PositionedItem; token: string; deliveryCount: number };
const nameOf = (m: { item: PositionedItem } | PositionedItem): string => {
  const item = (m as { item?: PositionedItem }).item ?? (m as PositionedItem);
  return (JSON.parse(String(item.body)) as { n: string }).n;
};

/** Everything at the partition's positions: messages by name, `done` markers and tombstones as such. */
async function atPositions(pk: string): Promise<string[]> {
  const out = await world.deps.db.send(
    new QueryCommand({ TableName: world.deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return ((out.Items ?? []) as PositionedItem[]).map((i) => (i.tomb ? 'tomb' : i.done ? 'done' : nameOf(i)));
}

const counterOf = async (pk: string) =>
  counterView((await world.deps.db.send(new GetCommand({ TableName: world.deps.tableName, Key: positionCounterKey(pk), ConsistentRead: true }))).Item);

/**
 * A receiver of a ticketed partition, at store level: a ticket of the head (`want` positions),
 * the lapsed tickets its take shows taken back, and, when the head is empty, `back` by cursor.
 * Expired messages it takes it removes (T4, T6, as the receive does), the rest it hands out.
 */
async function receive(pk: string, want = 1, ctx: PositionStore = world.deps, lockMs = LOCK): Promise<Got[]> {
  const take = await takeTicket(ctx, pk, want, { lockMs, look: true });
  const lapsed = lapsedTickets(take.counter, clock.now()).filter((t) => t.id !== take.ticket?.id);
  if (lapsed.length > 0) await takeBackTickets(ctx, pk, lapsed);
  let got: Got[];
  if (take.ticket) {
    const read = await readTicket(ctx, pk, take.ticket, { holeWaitMs: 0 });
    if (read.voided.length > 0) await deletePassed(ctx, read.voided);
    got = read.messages;
  } else got = (await claim(ctx, pk, want, { lockMs })).messages;
  const expired = expiredBy(clock.now());
  for (const m of got.filter((g) => expired(g.item))) await completeTicketed(ctx, pk, m.token);
  return got.filter((g) => !expired(g.item));
}

/** A ticket of the head and what it reads, handed out (a receiver that hands out everything). */
async function takeAndRead(ctx: PositionStore, pk: string, want = 1, lockMs = LOCK): Promise<Got[]> {
  const take = await takeTicket(ctx, pk, want, { lockMs, look: true });
  return take.ticket ? (await readTicket(ctx, pk, take.ticket, { holeWaitMs: 0 })).messages : [];
}

const sweepWith = (db = world.deps.db) => sweepPositionedExpiry({ ...world.broker.ctx, db }, jobBudget());

describe('T6, T7: the pass over a ticketed partition', () => {
  it('T7, T6: the pass removes the expired head (done markers), stops at a live message, and a receiver gets the rest counted once', async () => {
    const entity = await createQueue('idle');
    const { pk } = await seed(entity, [
      { body: { n: 'e1' }, timeToLive: MINUTE },
      { body: { n: 'e2' }, timeToLive: MINUTE },
    ]);
    await seed(entity, [{ body: { n: 'live' } }, { body: { n: 'e3' }, timeToLive: MINUTE }]);
    clock.advance(2 * MINUTE);
    const report = await sweepPositionedExpiry(world.broker.ctx, jobBudget());
    expect(report).toMatchObject({ expired: 2, deadLettered: 0, left: 0, raced: 0, complete: true });
    expect(await atPositions(pk)).toEqual(['done', 'done', 'live', 'e3']);
    // The pass marked the partition ticketed before its take: no cursor with a position was made.
    expect((await readCursor(world.deps, pk)).pos).toBe(TICKETED);
    // Its ticket settled whole: its entry left the counter.
    expect((await counterOf(pk)).tickets).toEqual([]);
    expect((await runtime('idle')).activeMessageCount).toBe(2);
    const got = await receive(pk, 2);
    expect(got.map((m) => [nameOf(m), m.deliveryCount])).toEqual([['live', 1]]);
  });

  it('T6: with deadLetteringOnMessageExpiration the expired head moves to the dead-letter subqueue with its reason, a marker left', async () => {
    const entity = await createQueue('dlq', { deadLetteringOnMessageExpiration: true });
    const { pk } = await seed(entity, [{ body: { n: 'e1' }, timeToLive: MINUTE }, { body: { n: 'e2' }, timeToLive: MINUTE }, { body: { n: 'live' } }]);
    clock.advance(2 * MINUTE);
    const report = await sweepPositionedExpiry(world.broker.ctx, jobBudget());
    expect(report).toMatchObject({ expired: 2, deadLettered: 2, left: 0 });
    const dead = await messageItems(world.deps, 'dlq', 'deadletter');
    expect(dead.map((d) => [d.deadLetterReason, d.deliveryCount])).toEqual([
      ['TTLExpiredException', 0],
      ['TTLExpiredException', 0],
    ]);
    expect(await atPositions(pk)).toEqual(['done', 'done', 'live']);
  });

  it('T7, S4, S1: the pass may take part of a request; its marker keeps the request whole for the ticket that takes the rest (S1: not void)', async () => {
    const entity = await createQueue('part');
    const { pk } = await seed(entity, [{ body: { n: 'old' }, timeToLive: MINUTE }, { body: { n: 'new' } }, { body: { n: 'old2' }, timeToLive: MINUTE }]);
    clock.advance(2 * MINUTE);
    await sweepWith();
    expect(await atPositions(pk)).toEqual(['done', 'new', 'old2']);
    const take = await takeTicket(world.deps, pk, 2, { lockMs: LOCK });
    const read = await readTicket(world.deps, pk, take.ticket!, { holeWaitMs: 0 });
    expect(read.voided).toEqual([]);
    expect(read.messages.map((m) => [nameOf(m), m.deliveryCount])).toEqual([
      ['new', 1],
      ['old2', 1],
    ]);
    // Settled whole, as a receive leaves it (its entry gone with its next take).
    for (const m of read.messages) expect(await completeTicketed(world.deps, pk, m.token)).toBe('completed');
    await forgetTickets(world.deps, pk, [take.ticket!.id]);
  });

  it('T7: a live head costs no take and no write, only looks (the counter, the cursor, the head)', async () => {
    const entity = await createQueue('quiet');
    const { pk } = await seed(entity, bodies('q', 3));
    clock.advance(2 * MINUTE);
    const watched = faultyDeps(world.deps, { match: (c) => !is(GetCommand, QueryCommand)(c), times: 0 });
    const reads = faultyDeps({ ...world.deps, db: watched.db }, { match: is(GetCommand, QueryCommand), times: 0 });
    const report = await sweepWith(reads.db);
    expect(report).toMatchObject({ expired: 0, left: 0, raced: 0 });
    expect(watched.faults.seen).toBe(0); // no take, no mark, no write of any kind
    // Of this partition: its cursor and counter, and its head.
    const partitions = report.partitions;
    expect(reads.faults.seen).toBeGreaterThanOrEqual(2 * partitions);
    // Nothing was taken: the head is where it was, and no cursor was made for it.
    expect((await counterOf(pk)).taken).toBe(0);
    expect((await world.deps.db.send(new GetCommand({ TableName: world.deps.tableName, Key: cursorKey(pk) }))).Item).toBeUndefined();
  });
});

/** The counter's updates a taker, a give-back and a forget make (by their expressions). */
const onCounter = (pk: string, test: (input: Record<string, unknown>) => boolean) => (c: unknown) =>
  is(UpdateCommand)(c) && (inputOf(c).Key as { pk?: string } | undefined)?.pk === positionCounterKey(pk).pk && test(inputOf(c) as Record<string, unknown>);
const takeOf = (pk: string) => onCounter(pk, (i) => String(i.UpdateExpression).startsWith('SET taken'));
const giveBackOf = (pk: string) =>
  onCounter(pk, (i) => String(i.ConditionExpression).startsWith('#u.u = :u') && !String(i.UpdateExpression).startsWith('REMOVE'));
const forgetOf = (pk: string) => onCounter(pk, (i) => String(i.UpdateExpression).startsWith('REMOVE') && i.ConditionExpression === undefined);
const markerOf = (pk: string) => (c: unknown) =>
  is(PutCommand)(c) && (inputOf(c).Item as { pk?: string; done?: number }).pk === pk && (inputOf(c).Item as { done?: number }).done === 1;
const moveOf = (pk: string) => (c: unknown) =>
  is(TransactWriteCommand)(c) && (inputOf(c).TransactItems as { Put?: { Item?: { pk?: string; done?: number } } }[])[0]?.Put?.Item?.pk === pk;
const headReadOf = (pk: string) => (c: unknown) => is(QueryCommand)(c) && (inputOf(c).ExpressionAttributeValues as { ':pk'?: string })[':pk'] === pk;
const throttled = async () => {
  throw new ProvisionedThroughputExceededException({ $metadata: {}, message: 'injected' });
};

describe('R11: a cutoff delete on a ticketed partition', () => {
  it('R11, R3, R1: a delete whose look a receiver outran stops at the first younger message, gives it back counting no delivery, and leaves the receiver its message', async () => {
    const entity = await createQueue('cutoff');
    let pk = '';
    for (const n of ['old1', 'old2', 'old3']) pk = (await seed(entity, [{ body: { n } }])).pk;
    clock.advance(SECOND);
    const cutoff = clock.now();
    clock.advance(SECOND);
    await seed(entity, [{ body: { n: 'new1' } }]);
    await seed(entity, [{ body: { n: 'new2' } }]);
    let held: Got[] = [];
    // A receiver takes the first position between the delete's look and its take.
    const racing = faultyDeps(world.deps, { match: takeOf(pk), interleave: async () => void (held = await takeAndRead(world.deps, pk)) });
    const deleted = await deletePositioned({ ...world.broker.ctx, db: racing.db }, entity, { max: 100, before: cutoff }, Date.now());
    expect(held.map(nameOf)).toEqual(['old1']);
    expect(deleted).toBe(2);
    expect(await atPositions(pk)).toEqual(['old1', 'done', 'done', 'new1', 'new2']);
    // R1: the receiver's message was not removed under it; its lock completes it.
    expect(await completeTicketed(world.deps, pk, held[0]!.token)).toBe('completed');
    // The younger message given back lapsed at once; taken back, it counts no delivery (R3).
    const lapsed = lapsedTickets(await counterOf(pk), clock.now());
    expect(lapsed.map((t) => [t.first, t.count, t.nd])).toEqual([[4, 1, 1]]);
    await takeBackTickets(world.deps, pk, lapsed);
    const back = await claim(world.deps, pk, 5, { lockMs: LOCK });
    expect(back.messages.map((m) => [nameOf(m), m.deliveryCount])).toEqual([['new1', 1]]);
    expect((await takeAndRead(world.deps, pk)).map((m) => [nameOf(m), m.deliveryCount])).toEqual([['new2', 1]]);
  });

  it('R11: a delete with no look needed (a purge) takes the head by counter, and a younger message is never touched by a cutoff', async () => {
    const entity = await createQueue('purge');
    const { pk } = await seed(entity, bodies('p', 3));
    clock.advance(SECOND);
    const cutoff = clock.now();
    // Nothing is older than a cutoff before the first send: a look, no take.
    const watched = faultyDeps(world.deps, { match: takeOf(pk), times: 0 });
    expect(await deletePositioned({ ...world.broker.ctx, db: watched.db }, entity, { max: 100, before: cutoff - 10 * SECOND }, Date.now())).toBe(0);
    expect(watched.faults.seen).toBe(0);
    expect(await deletePositioned(world.broker.ctx, entity, { max: 2, before: cutoff }, Date.now())).toBe(2);
    expect(await deletePositioned(world.broker.ctx, entity, { max: 100 }, Date.now())).toBe(1);
    expect(await atPositions(pk)).toEqual(['done', 'done', 'done']);
    expect((await counterOf(pk)).tickets).toEqual([]);
  });
});

describe('R6: lapsed tickets of a partition nobody receives from', () => {
  it("R6, T6: the pass takes a dead receiver's lapsed ticket back, removes its expired message from back, and leaves the live one first in line, counted", async () => {
    const entity = await createQueue('lapsed');
    const { pk } = await seed(entity, [{ body: { n: 'short' }, timeToLive: MINUTE }, { body: { n: 'kept' } }]);
    await markTicketed(world.deps, pk);
    expect((await takeAndRead(world.deps, pk, 2)).map(nameOf)).toEqual(['short', 'kept']); // then the receiver dies
    clock.advance(2 * MINUTE);
    const report = await sweepPositionedExpiry(world.broker.ctx, jobBudget());
    // The pass goes over every queue of the table: this partition's part is what it left.
    expect(report).toMatchObject({ left: 0, raced: 0 });
    expect(report.ticketsTakenBack).toBeGreaterThanOrEqual(1);
    expect((await counterOf(pk)).tickets).toEqual([]);
    expect(await atPositions(pk)).toEqual(['done', 'kept']);
    // Handed out once before, it comes back counted again (R6), first in line.
    expect((await receive(pk, 5)).map((m) => [nameOf(m), m.deliveryCount])).toEqual([['kept', 2]]);
  });
});

describe('D3: the pass dying or refused at each step of a ticket', () => {
  type Step = 'take' | 'read' | 'giveBack' | 'remove' | 'forget';
  const matchOf: Record<Step, (pk: string, dlq: boolean) => Pick<Fault, 'match' | 'nth'>> = {
    take: (pk) => ({ match: takeOf(pk) }),
    read: (pk) => ({ match: headReadOf(pk), nth: 2 }), // the first is the look, the second the ticket's read
    giveBack: (pk) => ({ match: giveBackOf(pk) }),
    remove: (pk, dlq) => ({ match: dlq ? moveOf(pk) : markerOf(pk) }),
    forget: (pk) => ({ match: forgetOf(pk) }),
  };
  const cases: [Step, 'before' | 'after' | 'throttled', boolean][] = [];
  for (const step of ['take', 'read', 'giveBack', 'remove', 'forget'] as Step[])
    for (const how of ['before', 'after', 'throttled'] as const) cases.push([step, how, false]);
  for (const how of ['before', 'after', 'throttled'] as const) cases.push(['remove', how, true]);

  it.each(cases)('D3, R1, R3, T6: at the %s, %s (dead-lettering %s), nothing is lost, doubled or removed from its holder', async (step, how, dlq) => {
    const name = `d3-${step}-${how}-${dlq ? 'dlq' : 'del'}`;
    const entity = await createQueue(name, dlq ? { deadLetteringOnMessageExpiration: true } : {});
    const { pk } = await seed(entity, [
      { body: { n: 'e1' }, timeToLive: MINUTE },
      { body: { n: 'e2' }, timeToLive: MINUTE },
    ]);
    await seed(entity, [{ body: { n: 'live' } }]);
    clock.advance(2 * MINUTE);
    let held: Got[] = [];
    // A receiver outruns the pass's look, so its ticket holds a live message to give back.
    const racing = faultyDeps(world.deps, { match: takeOf(pk), interleave: async () => void (held = await takeAndRead(world.deps, pk)) });
    const { match, nth } = matchOf[step](pk, dlq);
    const faulty = faultyDeps(racing, {
      match,
      ...(nth ? { nth } : {}),
      ...(how === 'after' ? { phase: 'after' as const } : {}),
      ...(how === 'throttled' ? { interleave: throttled } : {}),
    });
    await sweepWith(faulty.db);
    expect(faulty.faults.tripped).toBe(1);
    // The receiver ran unless the pass died or was refused before its take reached the store.
    expect(held.map(nameOf)).toEqual(step === 'take' && how !== 'after' ? [] : ['e1']);
    // R1: what the receiver holds is its own to settle.
    for (const m of held) expect(await completeTicketed(world.deps, pk, m.token)).toBe('completed');
    clock.advance(SWEEP_LOCK_MS + SECOND);
    await sweepWith();
    expect((await counterOf(pk)).tickets).toEqual([]);
    expect(await atPositions(pk)).toEqual(['done', 'done', 'live']);
    const dead = await messageItems(world.deps, name, 'deadletter');
    expect(
      dead
        .map((d) => JSON.parse(String(d.body)) as { n: string })
        .map((b) => b.n)
        .sort(),
    ).toEqual(dlq ? ['e1', 'e2'].filter((n) => !held.some((h) => nameOf(h) === n)) : []);
    // R3: the pass's ticket handed nothing out; the live message is delivered once, first.
    expect((await receive(pk, 5)).map((m) => [nameOf(m), m.deliveryCount])).toEqual([['live', 1]]);
  });
});

describe('R1: the pass racing receivers', () => {
  it('R1, R3, T4: receivers and the pass together hand out each live message once, never an expired one, and remove every expired one once', async () => {
    const entity = await createQueue('race');
    const { pk } = await seed(entity, bodies('e', 6, { timeToLive: MINUTE }));
    for (let i = 0; i < 4; i++) await seed(entity, [{ body: { n: `x${i}` }, timeToLive: MINUTE }]);
    clock.advance(2 * MINUTE);
    for (let i = 0; i < 3; i++) await seed(entity, bodies(`l${i}-`, 3));
    await markTicketed(world.deps, pk);
    const handed: Got[] = [];
    const lost: string[] = [];
    const receiver = async () => {
      for (let empty = 0; empty < 3;) {
        const got = await receive(pk, 2);
        if (got.length === 0) empty++;
        for (const m of got) {
          handed.push(m);
          if ((await completeTicketed(world.deps, pk, m.token)) !== 'completed') lost.push(nameOf(m));
        }
      }
    };
    const [report] = await Promise.all([sweepWith(), receiver(), receiver(), receiver()]);
    // Whatever the pass gave back lapsed at once: a last receiver drains it.
    await receiver();
    expect(lost).toEqual([]);
    const names = handed.map(nameOf);
    expect(names.filter((n) => n.startsWith('e') || n.startsWith('x'))).toEqual([]);
    expect([...names].sort()).toEqual(['l0-0', 'l0-1', 'l0-2', 'l1-0', 'l1-1', 'l1-2', 'l2-0', 'l2-1', 'l2-2']);
    expect(handed.every((m) => m.deliveryCount === 1)).toBe(true);
    expect((await atPositions(pk)).every((p) => p === 'done')).toBe(true);
    expect(report.raced).toBe(0);
  });
});

describe('T7: what a pass costs an idle partition, ticketed against cursor-claimed', () => {
  /**
   * A table of its own holding one queue (made under `layout`) with three live messages, of which
   * a receiver took and completed `received` first, swept twice idle, metered.
   */
  async function idlePass(layout: 'tickets' | 'positions', received: number) {
    const own = positionedQueues(`ticket-sweeps-${layout}`, layout);
    own.clock.current = clock.current;
    await own.open();
    const entity = await own.createQueue('cost');
    const { pk } = await own.seed(entity, bodies('c', 3));
    if (received > 0) {
      // The cursor (or the counter) has a history.
      if (layout === 'tickets') {
        // As the receive does: marked before its take, and the settled ticket's entry gone with its next take.
        await markTicketed(own.world.deps, pk);
        for (const m of await takeAndRead(own.world.deps, pk, received)) await completeTicketed(own.world.deps, pk, m.token);
        await forgetTickets(
          own.world.deps,
          pk,
          (
            await counterView((await own.world.deps.db.send(new GetCommand({ TableName: own.world.deps.tableName, Key: positionCounterKey(pk) }))).Item)
          ).tickets.map((t) => t.id),
        );
      } else {
        const c = await claim(own.world.deps, pk, received, { lockMs: LOCK });
        for (const m of c.messages) await completeAtPositionOf(own.world.deps, pk, m.token);
      }
    }
    own.clock.advance(2 * MINUTE);
    const metered = documentClient(own.world.deps.client);
    const meter = new CapacityMeter(metered);
    const ctx = { ...own.world.broker.ctx, db: metered };
    const pass = async () => {
      const { tally, result } = await meter.measure(() => sweepPositionedExpiry(ctx, jobBudget()));
      expect(result).toMatchObject({ queues: 1, partitions: 1, expired: 0, raced: 0 });
      // The listing of queues is the sweep's, not the partition's.
      const calls = tally.calls.filter((c) => c.label !== 'entity');
      return {
        readUnits: calls.filter((c) => c.kind === 'read').reduce((a, c) => a + c.billed.total, 0),
        writeUnits: tally.writeUnits,
        calls: calls.map((c) => `${c.type} ${c.label}${c.consistent ? ' (consistent)' : ''} ${c.billed.total}`),
      };
    };
    // The first pass may clean up once (a lease deleted, a cursor record dropped); the second is every pass after.
    return { first: await pass(), every: await pass() };
  }

  it('T7: a ticketed partition with a live or an empty head costs no write and no more reads than a cursor-claimed one', async () => {
    const costs = {
      ticketsFresh: await idlePass('tickets', 0),
      ticketsUsed: await idlePass('tickets', 1),
      ticketsDrained: await idlePass('tickets', 3),
      cursorFresh: await idlePass('positions', 0),
      cursorUsed: await idlePass('positions', 1),
      cursorDrained: await idlePass('positions', 3),
    };
    console.log(
      JSON.stringify(
        Object.fromEntries(
          Object.entries(costs).map(([k, v]) => [k, { first: v.first.readUnits, every: v.every.readUnits, writes: v.first.writeUnits + v.every.writeUnits }]),
        ),
      ),
    );
    for (const c of [costs.ticketsFresh, costs.ticketsUsed, costs.ticketsDrained]) expect([c.first.writeUnits, c.every.writeUnits]).toEqual([0, 0]);
    expect(costs.ticketsFresh.every.readUnits).toBeLessThanOrEqual(costs.cursorFresh.every.readUnits);
    expect(costs.ticketsUsed.every.readUnits).toBeLessThanOrEqual(costs.cursorUsed.every.readUnits);
    expect(costs.ticketsDrained.every.readUnits).toBeLessThanOrEqual(costs.cursorDrained.every.readUnits);
  });
});
