/**
 * A ticketed partition's count of `back` on its counter item (lib/store/ticket-back.ts): a
 * receive claims `back` by cursor only when the take's returned counter shows something queued
 * there since a claim found it clear (`bq > bc`), and a settlement of any kind under a ticket's
 * token lets the ticket leave with the next take (ticket-receive.ts `noteTicketSettled`).
 *
 * Races (R1, R6): a receive whose take shows the count clear while an abandon queues into
 * `back` leaves the message for the next receive, which delivers it once; an abandon landing
 * between a claim's look at the cursor and its mark refuses the mark. Crashes and throttles at
 * each new write (the abandon's counter part, the mark's Query and transaction) lose, double and
 * strand nothing (D3).
 */
import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { newTicketedQueue, TicketLedger } from '../support/ticketed-queues.js';
import { jsonMessages, sendPositioned } from '../support/positioned-queue.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { readCursor, readLeases } from '../../lib/store/leases.js';
import { markBackClear } from '../../lib/store/ticket-back.js';
import { counterView } from '../../lib/store/tickets.js';
import { CURSOR_PK_PREFIX, LEASE_PK_PREFIX, positionCounterKey } from '../../lib/store/keys.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'ticketback')), newEntityLayout: 'tickets' };
});

const ticketedQueue = (maxDeliveryCount = 100) => newTicketedQueue(deps, `tb${++queues}`, maxDeliveryCount);

class Ledger extends TicketLedger {
  constructor(name: string, api: ReturnType<typeof apiClient>) {
    super(name, api, clock, LOCK);
  }
}

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? inputOf(c).ExpressionAttributeValues?.[':pk'] ?? '');
const isCursorRead = both(is(GetCommand), (c) => pkOf(c).startsWith(CURSOR_PK_PREFIX));
const isLeaseLook = both(is(QueryCommand), (c) => pkOf(c).startsWith(LEASE_PK_PREFIX) && inputOf(c).Limit === 1 && inputOf(c).ConsistentRead === true);
const isMark = both(is(TransactWriteCommand), (c) => (inputOf(c).TransactItems as Json[]).some((t) => t.ConditionCheck !== undefined));
const isAbandon = both(is(TransactWriteCommand), (c) =>
  (inputOf(c).TransactItems as Json[]).some((t) => String(t.Update?.UpdateExpression ?? '').includes('REMOVE gl')),
);

async function counterOf(pk: string) {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionCounterKey(pk), ConsistentRead: true }));
  return counterView(out.Item);
}

/** A receive through deps that count the cursor reads it makes (no fault). */
async function countingCursorReads(ledger: Ledger, body: Record<string, unknown>) {
  const counting = faultyDeps(deps, { match: isCursorRead, nth: Number.POSITIVE_INFINITY });
  const got = await ledger.receive(body, apiClient(counting));
  return { ...got, cursorReads: counting.faults.seen };
}

/** Nothing left behind once drained: no ticket in flight, nothing queued in `back`, and the count clear or due (never clear past what was queued). */
async function expectClean(pk: string) {
  const counter = await counterOf(pk);
  expect(counter.tickets).toEqual([]);
  expect(counter.backClear).toBeLessThanOrEqual(counter.backQueued);
  expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
}

describe('the count of back: when a receive claims it', () => {
  it('R6: a single life claims nothing by cursor; an abandon makes the next receive claim, and once found clear the cursor is left alone again', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('s', 2));
    const first = await countingCursorReads(ledger, {});
    expect(first.cursorReads).toBe(0);
    expect(await ledger.complete(first.messages[0])).toBe(204);
    const second = await countingCursorReads(ledger, {});
    expect(second.cursorReads).toBe(0);
    expect(await ledger.settle(second.messages[0], 'abandon')).toBe(204);
    expect(await counterOf(pk)).toMatchObject({ backQueued: 1, backClear: 0 });
    // R6: the abandoned message is first in line, counted again.
    const again = await countingCursorReads(ledger, {});
    expect(again.cursorReads).toBeGreaterThan(0);
    expect(again.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['s1', 2]]);
    expect(await ledger.complete(again.messages[0])).toBe(204);
    // The next receive claims, finds `back` clear (its lease deleted by the complete) and marks it so; the one after pays no cursor read.
    await sendPositioned(deps, entity, jsonMessages('t', 2));
    const third = await countingCursorReads(ledger, {});
    expect(third.cursorReads).toBeGreaterThan(0);
    expect(third.messages.map((m) => m.body.n)).toEqual(['t0']);
    expect(await counterOf(pk)).toMatchObject({ backQueued: 1, backClear: 1 });
    expect(await ledger.complete(third.messages[0])).toBe(204);
    const fourth = await countingCursorReads(ledger, {});
    expect(fourth.cursorReads).toBe(0);
    expect(await ledger.complete(fourth.messages[0])).toBe(204);
    expect(Object.fromEntries(ledger.completed)).toEqual({ s0: 1, s1: 1, t0: 1, t1: 1 });
    clock.advance(LOCK + SECOND);
    await ledger.drain();
    await expectClean(pk);
  });

  it('R6: a lapsed ticket taken back raises the count with its transaction; a cursor lease of back that lapses is claimed back before the count is marked clear', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('l', 2));
    await ledger.receive({});
    clock.advance(LOCK + SECOND);
    // The take shows l0's ticket lapsed: taken back (bq 1) and claimed, under a cursor lease that lapses too.
    const back = await ledger.receive({});
    expect(back.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['l0', 2]]);
    expect((await counterOf(pk)).backQueued).toBe(1);
    clock.advance(LOCK + SECOND);
    // A lease exists while it is held and after it lapses: the count is not marked clear; the lease's take-back brings l0 again.
    const twice = await ledger.receive({});
    expect(twice.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['l0', 3]]);
    expect((await counterOf(pk)).backClear).toBe(0);
    expect(await ledger.complete(twice.messages[0])).toBe(204);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ l0: 1, l1: 1 });
    await expectClean(pk);
  });
});

describe('the count of back: races', () => {
  it('R1, R6: a receive whose take shows the count clear while an abandon queues into back leaves it to the next receive, which delivers it once', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('r', 3));
    const [x] = (await ledger.receive({})).messages;
    // The abandon lands just after the next receive's take returned the counter (bq = bc = 0).
    let abandoned = 0;
    const interleaved = faultyDeps(deps, {
      match: (c) => String(inputOf(c).UpdateExpression ?? '').includes('taken ='),
      phase: 'after',
      interleave: async () => {
        expect(await ledger.settle(x!, 'abandon')).toBe(204);
        abandoned++;
      },
    });
    const during = await ledger.receive({}, apiClient(interleaved));
    expect(abandoned).toBe(1);
    // It took the head, and did not claim `back`: the abandoned message waits there.
    expect(during.messages.map((m) => m.body.n)).toEqual(['r1']);
    expect((await readCursor(deps, pk)).back).toEqual([[expect.any(Number), 1]]);
    const next = await ledger.receive({ maxMessages: 10 });
    expect(next.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['r0', 2],
      ['r2', 1],
    ]);
    for (const m of [...during.messages, ...next.messages]) expect(await ledger.complete(m)).toBe(204);
    clock.advance(LOCK + SECOND);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ r0: 1, r1: 1, r2: 1 });
    await expectClean(pk);
  });

  it('R1, R6: an abandon landing between the claim that found back clear and its mark refuses the mark; the next receive delivers it once', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('m', 2));
    const [a] = (await ledger.receive({})).messages;
    const [b] = (await ledger.receive({})).messages;
    expect(await ledger.settle(a!, 'abandon')).toBe(204);
    const [a2] = (await ledger.receive({})).messages;
    expect(a2).toMatchObject({ body: { n: 'm0' }, deliveryCount: 2 });
    expect(await ledger.complete(a2!)).toBe(204);
    await sendPositioned(deps, entity, jsonMessages('n', 1));
    // This receive claims (bq 1 > bc 0), finds the cursor clear, and is about to mark it: b's abandon lands first.
    const interleaved = faultyDeps(deps, {
      match: isMark,
      interleave: async () => {
        expect(await ledger.settle(b!, 'abandon')).toBe(204);
      },
    });
    const during = await ledger.receive({}, apiClient(interleaved));
    expect(interleaved.faults.tripped).toBe(1);
    expect(during.messages.map((m) => m.body.n)).toEqual(['n0']);
    expect(await counterOf(pk)).toMatchObject({ backQueued: 2, backClear: 0 });
    const next = await ledger.receive({ maxMessages: 10 });
    expect(next.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['m1', 2]]);
    for (const m of [...during.messages, ...next.messages]) expect(await ledger.complete(m)).toBe(204);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ m0: 1, m1: 1, n0: 1 });
    await expectClean(pk);
  });
});

/** Crash points of the new writes: the abandon's transaction (with the counter part), and the mark's Query and transaction. */
const crashes: [string, Fault][] = [
  ["the abandon's transaction, before it", { match: isAbandon }],
  ["the abandon's transaction, after it", { match: isAbandon, phase: 'after' }],
  ["the mark's look at the leases, before it", { match: isLeaseLook }],
  ["the mark's transaction, before it", { match: isMark }],
  ["the mark's transaction, after it", { match: isMark, phase: 'after' }],
];

describe('the count of back: a Lambda dying at each new write', () => {
  it.each(crashes)('D3, R1, R6: dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('c', 1));
    const dyingDeps = faultyDeps(deps, { ...fault, times: 1 });
    const dying = apiClient(dyingDeps);
    const [x] = (await ledger.receive({})).messages;
    // The abandon, through the dying deps: answered, or dead (its retry answers, or finds it done).
    const status = await ledger.settle(x!, 'abandon', dying);
    if (status !== 204) {
      const retry = await ledger.settle(x!, 'abandon');
      expect([204, 410]).toContain(retry);
      // 410: the dead call's abandon landed; its lock is released.
      ledger.lockedUntil.delete(x!.sequenceNumber);
    }
    // Through the dying deps: the receive that claims `back` (the head empty), then, with a new
    // message at the head, the one that finds `back` clear and marks it so.
    for (const m of (await ledger.receive({}, dying)).messages) expect(await ledger.complete(m)).toBe(204);
    await sendPositioned(deps, entity, jsonMessages('d', 1));
    for (const m of (await ledger.receive({}, dying)).messages) expect(await ledger.complete(m)).toBe(204);
    expect(dyingDeps.faults.tripped).toBe(1);
    clock.advance(LOCK + SECOND);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ c0: 1, d0: 1 });
    await expectClean(pk);
  });
});

const pkSent = (c: StoreCall) => String((c.input.Item ?? c.input.Key)?.pk?.S ?? c.input.ExpressionAttributeValues?.[':pk']?.S ?? '');
const throttledSteps: [string, (c: StoreCall) => boolean][] = [
  ["the abandon's transaction", (c) => c.operation === 'TransactWriteItems' && JSON.stringify(c.input).includes('REMOVE gl')],
  ["the mark's look at the leases", (c) => c.operation === 'Query' && pkSent(c).startsWith(LEASE_PK_PREFIX) && c.input.Limit === 1],
  ["the mark's transaction", (c) => c.operation === 'TransactWriteItems' && JSON.stringify(c.input).includes('ConditionCheck')],
];

describe('the count of back: DynamoDB refusing each new write past the SDK retries', () => {
  it.each(throttledSteps)('D3, R1, R6: %s throttled: the request answers or fails, and nothing is lost, doubled or stranded', async (_, when) => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('t', 1));
    let seen = 0;
    const store = faultyStore(deps.db, { throttle: { when: (c) => when(c) && ++seen === 1 } }, { fastRetries: true });
    const refused = apiClient({ ...deps, db: store.db });
    const [x] = (await ledger.receive({})).messages;
    if ((await ledger.settle(x!, 'abandon', refused)) !== 204) expect(await ledger.settle(x!, 'abandon')).toBe(204);
    for (const m of (await ledger.receive({}, refused)).messages) expect(await ledger.complete(m)).toBe(204);
    await sendPositioned(deps, entity, jsonMessages('u', 1));
    for (const m of (await ledger.receive({}, refused)).messages) expect(await ledger.complete(m)).toBe(204);
    expect(seen).toBeGreaterThan(0);
    clock.advance(LOCK + SECOND);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ t0: 1, u0: 1 });
    await expectClean(pk);
  });
});

describe('a ticket settled whole by any settlement leaves with the next take', () => {
  it.each(['abandon', 'defer', 'deadletter', 'renew-lock'] as const)(
    'R4, R6: a ticket whose messages were completed and one %s leaves the counter with the next take; nothing comes back twice',
    async (how) => {
      const { name, entity, pk } = await ticketedQueue();
      const ledger = new Ledger(name, apiClient(deps));
      await sendPositioned(deps, entity, jsonMessages('p', 4));
      const held = (await ledger.receive({ maxMessages: 3 })).messages;
      expect(held.map((m) => m.body.n)).toEqual(['p0', 'p1', 'p2']);
      const taken = (await counterOf(pk)).tickets;
      expect(taken).toHaveLength(1);
      expect(await ledger.complete(held[0])).toBe(204);
      expect([200, 204]).toContain(await ledger.settle(held[1], how));
      expect(await ledger.complete(held[2])).toBe(204);
      // The next take carries the ticket's removal. A renew of the middle message left two entries
      // of new ids: p2's, split off after it, goes with the ticket; the renewed message's own stays while p1 is held.
      const next = await ledger.receive({ maxMessages: 1 });
      const left = (await counterOf(pk)).tickets;
      expect(left.map((t) => t.id)).not.toContain(taken[0]!.id);
      expect(left.map((t) => t.first)).toEqual(how === 'renew-lock' ? [taken[0]!.first + 1, taken[0]!.first + 3] : [taken[0]!.first + 3]);
      const more = [...next.messages];
      if (how === 'renew-lock') expect(await ledger.complete(held[1])).toBe(204);
      for (const m of more) expect(await ledger.complete(m)).toBe(204);
      clock.advance(LOCK + SECOND);
      await ledger.drain();
      // A deferred or dead-lettered message left the active line; every other one is completed once.
      const moved = how === 'defer' || how === 'deadletter';
      expect(Object.fromEntries(ledger.completed)).toEqual(moved ? { p0: 1, p2: 1, p3: 1 } : { p0: 1, p1: 1, p2: 1, p3: 1 });
      await expectClean(pk);
    },
  );
});

describe('markBackClear: what refuses the mark', () => {
  it('R6: a lease item, a cursor moved since the claim, or a raise since the take refuses it; only the clear cursor at the version seen is marked', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('k', 1));
    const [x] = (await ledger.receive({})).messages;
    expect(await ledger.settle(x!, 'abandon')).toBe(204);
    // The abandoned message claimed back under a cursor lease: while the lease exists, no mark.
    const [x2] = (await ledger.receive({})).messages;
    const cursor = await readCursor(deps, pk);
    expect(await markBackClear(deps, pk, cursor.v, 1)).toBe(false);
    expect(await ledger.complete(x2!)).toBe(204);
    expect((await readLeases(deps, pk)).length).toBe(0);
    // The lease gone: a stale cursor version, or a `bq` that rose since the take, still refuses it.
    expect(await markBackClear(deps, pk, cursor.v - 1, 1)).toBe(false);
    // A writer's raise (as an abandon's counter part makes it) after the take read `bq` 1.
    await deps.db.send(
      new UpdateCommand({ TableName: deps.tableName, Key: positionCounterKey(pk), UpdateExpression: 'ADD bq :one', ExpressionAttributeValues: { ':one': 1 } }),
    );
    expect(await markBackClear(deps, pk, cursor.v, 1)).toBe(false);
    expect(await counterOf(pk)).toMatchObject({ backQueued: 2, backClear: 0 });
    expect(await markBackClear(deps, pk, cursor.v, 2)).toBe(true);
    expect(await counterOf(pk)).toMatchObject({ backQueued: 2, backClear: 2 });
  });
});
