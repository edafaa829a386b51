/**
 * Tickets (lib/store/tickets.ts) on DynamoDB Local: the head of a positioned partition taken by
 * one update of its counter that fails only when the head is empty (R1, S2), reads that hand
 * out whole requests only and void a request with a tombstone for every holder alike (S1), a
 * hole a dead sender left given back and tombstoned at its deadline, what a holder does not
 * hand out given back and counted as no delivery (R10, R3), lapsed tickets taken back through
 * the cursor's `back` exactly once (R6), a Lambda dying at each step (D3), throttles and
 * conflicts on the counter, and a seeded model run. "No message under two valid locks" is
 * checked as in leases.test.ts: no position is handed out twice at one take-back count.
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { positionCounterKey, positionKey } from '../../lib/store/keys.js';
import {
  deletePassed,
  drawPositions,
  HOLE_AFTER_MS,
  putAtPositions,
  putTombstone,
  type PositionedItem,
  type PositionStore,
} from '../../lib/store/positions.js';
import { claim, entryOfToken, readCursor, readLeases } from '../../lib/store/leases.js';
import {
  completeTicketed,
  counterView,
  forgetTickets,
  giveBack,
  holeDeadline,
  lapsedTickets,
  lockEndOfTicket,
  markTicketed,
  readTicket,
  takeBackTickets,
  takeTicket,
  TICKETED,
  type CounterView,
} from '../../lib/store/tickets.js';
import { isStoreBusy } from '../../lib/store/outcomes.js';
import { positionedPartitions, sendAtPositions, type Deps } from '../support/positioned-partitions.js';
import { both, dyingRequests, faultyDeps, inputOf, InjectedCrash, is, type Fault } from '../support/faults.js';
import { faultyStore, losingAnswers, seededRandom } from '../support/dynamo-faults.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const { clock, open, newPartition } = positionedPartitions();
let deps: Deps;

beforeAll(async () => {
  deps = await open('tickets');
});

const range = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const send = async (ctx: PositionStore, pk: string, bodies: string[]) => (await sendAtPositions(ctx, pk, bodies)).outcome;

/** A fresh partition whose head is the tickets'. */
async function ticketed(): Promise<string> {
  const pk = newPartition();
  expect(await markTicketed(deps, pk)).toBe(true);
  return pk;
}

async function counterOf(pk: string): Promise<CounterView> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionCounterKey(pk), ConsistentRead: true }));
  return counterView(out.Item);
}

/** The partition's messages (no tombstone, no done marker). */
async function messagesLeft(pk: string): Promise<PositionedItem[]> {
  const out = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return ((out.Items ?? []) as PositionedItem[]).filter((i) => !i.tomb && i.done === undefined);
}

/** A message put by hand at `position` as part of a request (a sender whose other puts did not land). */
async function putPart(pk: string, position: number, body: string, request: { first: number; count: number; at: number }) {
  await deps.db.send(
    new PutCommand({
      TableName: deps.tableName,
      Item: { ...positionKey(pk, position), b: body, at: request.at, rf: request.first, rn: request.count },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

type Handed = { item: PositionedItem; token: string; deliveryCount: number };

/** Every hand-out of a test: no position at one take-back count twice (R1); what was completed, by body. */
class Ledger {
  readonly handed = new Set<string>();
  readonly completed = new Map<string, number>();
  note<T extends { messages: Handed[] }>(got: T): T {
    for (const m of got.messages) {
      const [p, g] = entryOfToken(m.token);
      const id = `${p}@${g}`;
      expect(this.handed.has(id), `position ${p} handed out twice at take-back count ${g}`).toBe(false);
      this.handed.add(id);
    }
    return got;
  }
  async complete(ctx: PositionStore, pk: string, m: Handed) {
    let outcome;
    try {
      outcome = await completeTicketed(ctx, pk, m.token);
    } catch (e) {
      // Died once its write had landed: completed all the same.
      if (e instanceof InjectedCrash && e.message.includes('after')) this.completed.set(m.item.b as string, (this.completed.get(m.item.b as string) ?? 0) + 1);
      throw e;
    }
    if (outcome === 'completed') this.completed.set(m.item.b as string, (this.completed.get(m.item.b as string) ?? 0) + 1);
    return outcome;
  }
}

/**
 * One receive as the wiring would make it (the broker's part, written here for the tests): a
 * ticket of the head, the lapsed tickets its take showed taken back, the ticket read, its void
 * messages deleted and what it cannot hand out given back; then `back` by a cursor claim. Returns
 * what it hands out and the ticket, when one was taken.
 */
async function receive(ctx: PositionStore, pk: string, want: number, options: { prune?: number[]; lockMs?: number } = {}) {
  const lockMs = options.lockMs ?? LOCK;
  const take = await takeTicket(ctx, pk, want, { lockMs, prune: options.prune });
  const lapsed = lapsedTickets(take.counter, ctx.clock.now()).filter((t) => t.id !== take.ticket?.id);
  if (lapsed.length > 0) await takeBackTickets(ctx, pk, lapsed);
  const messages: Handed[] = [];
  if (take.ticket) {
    const read = await readTicket(ctx, pk, take.ticket);
    if (read.voided.length > 0) await deletePassed(ctx, read.voided);
    if (read.blockedFrom !== undefined) await giveBack(ctx, pk, take.ticket, read.blockedFrom - take.ticket.first, holeDeadline(take.ticket));
    messages.push(...read.messages);
  }
  if (messages.length < want && ((await readCursor(ctx, pk)).back ?? []).length > 0) {
    messages.push(...(await claim(ctx, pk, want - messages.length, { lockMs })).messages);
  }
  return { messages, ticket: take.ticket, failedWrites: take.failedWrites };
}

/** Receives and completes until nothing is left anywhere, letting locks and holes lapse when a receive finds nothing. */
async function drain(ledger: Ledger, pk: string, rounds = 40) {
  for (let round = 0; round < rounds; round++) {
    const got = ledger.note(await receive(deps, pk, 10));
    for (const m of got.messages) await ledger.complete(deps, pk, m);
    if (got.messages.length > 0) continue;
    // The cursor's leases lapse as before: a claim takes them back (the broker's sweeper pass, when wired).
    const swept = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    for (const m of swept.messages) await ledger.complete(deps, pk, m);
    if (swept.messages.length > 0) continue;
    const counter = await counterOf(pk);
    if (
      counter.tickets.length === 0 &&
      (await messagesLeft(pk)).length === 0 &&
      ((await readCursor(deps, pk)).back ?? []).length === 0 &&
      (await readLeases(deps, pk)).length === 0
    )
      return;
    clock.advance(LOCK + SECOND);
    // A lapsed ticket is seen by the next take; one with an empty head sees it too (its refused write returns the item).
  }
  throw new Error(
    `drain: ${pk} not empty after ${rounds} rounds: ${JSON.stringify({ counter: await counterOf(pk), left: await messagesLeft(pk), cursor: await readCursor(deps, pk), leases: await readLeases(deps, pk), now: clock.now() })}`,
  );
}

describe('tickets: taking and reading the head', () => {
  it('R1, S2, R4: tickets take positions in draw order, each once; a whole request is handed out; a complete leaves a marker', async () => {
    const pk = await ticketed();
    await send(deps, pk, ['a0', 'a1', 'a2']);
    await send(deps, pk, ['b']);
    const ledger = new Ledger();
    const one = await takeTicket(deps, pk, 1, { lockMs: LOCK });
    expect(one.ticket).toMatchObject({ first: 1, count: 1, until: clock.now() + LOCK });
    expect(one.counter).toMatchObject({ next: 4, taken: 1 });
    const first = ledger.note(await readTicket(deps, pk, one.ticket!));
    expect(first.messages.map((m) => [m.item.b, m.deliveryCount])).toEqual([['a0', 1]]);
    const two = await takeTicket(deps, pk, 2, { lockMs: LOCK });
    expect(two.ticket).toMatchObject({ first: 2, count: 2 });
    const second = ledger.note(await readTicket(deps, pk, two.ticket!));
    expect(second.messages.map((m) => m.item.b)).toEqual(['a1', 'a2']);
    const rest = await takeTicket(deps, pk, 5, { lockMs: LOCK });
    expect(rest.ticket).toMatchObject({ first: 4, count: 1 });
    const third = ledger.note(await readTicket(deps, pk, rest.ticket!));
    expect(third.messages.map((m) => m.item.b)).toEqual(['b']);
    // The head is empty: a take of one fails its write (billed), one of more reads first and writes nothing.
    const empty = await takeTicket(deps, pk, 1, { lockMs: LOCK });
    expect([empty.ticket, empty.failedWrites]).toEqual([undefined, 1]);
    const looked = await takeTicket(deps, pk, 10, { lockMs: LOCK });
    expect([looked.ticket, looked.failedWrites]).toEqual([undefined, 0]);
    expect((await counterOf(pk)).tickets.map((t) => t.first)).toEqual([1, 2, 4]);
    for (const m of [...first.messages, ...second.messages, ...third.messages]) expect(await ledger.complete(deps, pk, m)).toBe('completed');
    expect(await completeTicketed(deps, pk, first.messages[0]!.token)).toBe('lockLost');
    expect(await messagesLeft(pk)).toEqual([]);
    const marker = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionKey(pk, 1), ConsistentRead: true }));
    expect(marker.Item).toMatchObject({ done: 1 });
    // Settled whole: the next take carries their entries' removal (a take that fails, on an empty head, carries nothing).
    await send(deps, pk, ['c']);
    const next = await takeTicket(deps, pk, 1, { lockMs: LOCK, prune: [one.ticket!.id, two.ticket!.id, rest.ticket!.id] });
    expect((await counterOf(pk)).tickets.map((t) => t.id)).toEqual([next.ticket!.id]);
    expect((await readCursor(deps, pk)).pos).toBe(TICKETED);
  });

  it('R1: 16 racing takers of one position each take every position exactly once and lose no race; requests spanning tickets are handed out whole', async () => {
    const pk = await ticketed();
    for (let i = 0; i < 16; i++) await send(deps, pk, range(`r${i}-`, 10));
    const ledger = new Ledger();
    let failed = 0;
    let takes = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        let settled: number[] = [];
        for (;;) {
          const take = await takeTicket(deps, pk, 1, { lockMs: LOCK, prune: settled });
          failed += take.failedWrites;
          if (!take.ticket) return;
          takes++;
          const read = ledger.note(await readTicket(deps, pk, take.ticket));
          expect(read.messages).toHaveLength(1);
          for (const m of read.messages) expect(await ledger.complete(deps, pk, m)).toBe('completed');
          settled = [take.ticket.id];
        }
      }),
    );
    // Each taker's one failed write is its last take, on an empty head.
    expect(failed).toBe(16);
    expect(takes).toBe(160);
    expect(ledger.completed.size).toBe(160);
    expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
    expect(await messagesLeft(pk)).toEqual([]);
    expect((await counterOf(pk)).tickets.length).toBeLessThanOrEqual(16);
  });

  it('R1: single and batch takers racing with throttles and conflicts on the counter each take every message once', async () => {
    const pk = await ticketed();
    for (let i = 0; i < 12; i++) await send(deps, pk, range(`t${i}-`, 10));
    const counterWrites = (c: { operation: string; input: { Key?: { pk?: { S?: string } } } }) =>
      c.operation === 'UpdateItem' && (c.input.Key?.pk?.S ?? '').startsWith('posnext/');
    const store = faultyStore(
      deps.db,
      { throttle: { when: counterWrites, rate: 0.2 }, conflict: { when: counterWrites, rate: 0.1 } },
      { random: seededRandom(5), fastRetries: true },
    );
    const faulty = { ...deps, db: store.db };
    const ledger = new Ledger();
    await Promise.all(
      [...Array.from({ length: 12 }, () => 1), ...Array.from({ length: 4 }, () => 10)].map(async (want) => {
        for (;;) {
          let got;
          try {
            got = ledger.note(await receive(faulty, pk, want));
          } catch (e) {
            if (isStoreBusy(e)) continue;
            throw e;
          }
          if (got.messages.length === 0 && !got.ticket) return;
          for (const m of got.messages) expect(await ledger.complete(deps, pk, m)).toBe('completed');
        }
      }),
    );
    expect(store.log.throttledOut + store.log.conflicted).toBeGreaterThan(0);
    await drain(ledger, pk);
    expect(ledger.completed.size).toBe(120);
    expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
  });
});

describe('tickets: holes and void requests', () => {
  it('S1: a sender that dies between its draw and its put: the holder waits, gives the hole back, its lapse tombstones it, the late put answers retry', async () => {
    const pk = await ticketed();
    const dead = await drawPositions(deps, pk, 1);
    await send(deps, pk, ['after']);
    const ledger = new Ledger();
    const got = ledger.note(await receive(deps, pk, 10));
    // Nothing handed out: the hole comes first, and what follows it waits behind it (S2).
    expect(got.messages).toEqual([]);
    const given = (await counterOf(pk)).tickets;
    expect(given).toMatchObject([{ first: 1, count: 2, nd: 1, until: holeDeadline(got.ticket!) }]);
    clock.advance(HOLE_AFTER_MS);
    const next = ledger.note(await receive(deps, pk, 10));
    expect(next.messages.map((m) => [m.item.b, m.deliveryCount])).toEqual([['after', 1]]);
    expect(await putAtPositions(deps, pk, dead, [{ b: 'late' }])).toBe('retry');
    for (const m of next.messages) await ledger.complete(deps, pk, m);
    await drain(ledger, pk);
    expect(Object.fromEntries(ledger.completed)).toEqual({ after: 1 });
  });

  it('S1: a put landing while the holder waits for it is handed out with its request', async () => {
    const pk = await ticketed();
    const draw = await drawPositions(deps, pk, 2);
    const take = await takeTicket(deps, pk, 2, { lockMs: LOCK });
    let landed = false;
    const waiting = {
      ...deps,
      clock: {
        now: () => clock.now(),
        sleep: async (ms: number) => {
          if (!landed) await putAtPositions(deps, pk, draw, [{ b: 'x0' }, { b: 'x1' }]);
          landed = true;
          clock.advance(ms);
        },
      },
    };
    const read = await readTicket(waiting, pk, take.ticket!);
    expect(read.messages.map((m) => m.item.b)).toEqual(['x0', 'x1']);
    expect(read.blockedFrom).toBeUndefined();
  });

  it('S1: a request spanning two tickets is handed out whole by both holders, and a complete of one part does not make the other look like a hole', async () => {
    const pk = await ticketed();
    await send(deps, pk, ['s0', 's1', 's2']);
    const ledger = new Ledger();
    const a = await takeTicket(deps, pk, 1, { lockMs: LOCK });
    const b = await takeTicket(deps, pk, 2, { lockMs: LOCK });
    const first = ledger.note(await readTicket(deps, pk, a.ticket!));
    await ledger.complete(deps, pk, first.messages[0]!);
    clock.advance(HOLE_AFTER_MS);
    const second = ledger.note(await readTicket(deps, pk, b.ticket!));
    expect(second.messages.map((m) => m.item.b)).toEqual(['s1', 's2']);
    expect(second.tombstoned).toEqual([]);
  });

  it('S1: a holder of one message of a request this process saw whole reads only its own position; another process reads the request once, then remembers', async () => {
    const pk = await ticketed();
    await send(deps, pk, range('r', 40));
    /** A process of its own (its own client, so its own memory), counting the positions its reads return. */
    const process = () => {
      const log = { items: 0 };
      const db = new Proxy(deps.db, {
        get(target, prop, receiver) {
          if (prop !== 'send') return Reflect.get(target, prop, receiver);
          return async (command: unknown) => {
            const out = await target.send(command as never);
            if (command instanceof QueryCommand) log.items += ((out as { Items?: unknown[] }).Items ?? []).length;
            return out;
          };
        },
      });
      return { ctx: { ...deps, db } as PositionStore, log };
    };
    const one = process();
    const ledger = new Ledger();
    const readOne = async (ctx: PositionStore) => {
      const take = await takeTicket(ctx, pk, 1, { lockMs: LOCK });
      return ledger.note(await readTicket(ctx, pk, take.ticket!));
    };
    expect((await readOne(one.ctx)).messages.map((m) => m.item.b)).toEqual(['r0']);
    expect(one.log.items).toBe(40);
    for (let i = 1; i < 5; i++) expect((await readOne(one.ctx)).messages.map((m) => m.item.b)).toEqual([`r${i}`]);
    expect(one.log.items).toBe(44);
    const other = process();
    expect((await readOne(other.ctx)).messages.map((m) => m.item.b)).toEqual(['r5']);
    expect((await readOne(other.ctx)).messages.map((m) => m.item.b)).toEqual(['r6']);
    expect(other.log.items).toBe(41);
  });

  it('S1: a void request (a tombstone in its middle) is passed by every holder of a part of it alike: none handed out, its landed parts deleted', async () => {
    const pk = await ticketed();
    const draw = await drawPositions(deps, pk, 3);
    await putPart(pk, 1, 'v0', draw);
    await putPart(pk, 3, 'v2', draw);
    expect(await putTombstone(deps, pk, 2)).toBe(true);
    await send(deps, pk, ['w']);
    const ledger = new Ledger();
    const a = ledger.note(await receive(deps, pk, 1));
    const b = ledger.note(await receive(deps, pk, 3));
    expect(a.messages).toEqual([]);
    expect(b.messages.map((m) => m.item.b)).toEqual(['w']);
    expect((await messagesLeft(pk)).map((m) => m.b)).toEqual(['w']);
  });

  it('S1: two holders of one request with a hole both give it back; the first lapse tombstones it and both void it alike', async () => {
    const pk = await ticketed();
    const draw = await drawPositions(deps, pk, 3);
    await putPart(pk, 1, 'h0', draw);
    await putPart(pk, 3, 'h2', draw);
    const ledger = new Ledger();
    const a = ledger.note(await receive(deps, pk, 1));
    const b = ledger.note(await receive(deps, pk, 2));
    expect([...a.messages, ...b.messages]).toEqual([]);
    expect((await counterOf(pk)).tickets.map((t) => [t.first, t.count, t.nd])).toEqual([
      [1, 1, 1],
      [2, 2, 1],
    ]);
    clock.advance(HOLE_AFTER_MS);
    const view = await counterOf(pk);
    const outcomes = await takeBackTickets(deps, pk, lapsedTickets(view, clock.now()));
    expect([...outcomes.values()]).toEqual(['settled', 'settled']);
    expect(await messagesLeft(pk)).toEqual([]);
    expect(await putAtPositions(deps, pk, { first: 2, count: 1, at: draw.at }, [{ b: 'late' }])).toBe('retry');
    expect((await counterOf(pk)).tickets).toEqual([]);
  });
});

describe('tickets: giving back and taking back', () => {
  it('R10, R3: what a holder does not hand out is given back, comes back first through the cursor, and counts no delivery', async () => {
    const pk = await ticketed();
    await send(deps, pk, range('g', 3));
    const ledger = new Ledger();
    const take = await takeTicket(deps, pk, 3, { lockMs: LOCK });
    const read = await readTicket(deps, pk, take.ticket!);
    // Only the first fits the answer.
    ledger.note({ messages: read.messages.slice(0, 1) });
    const rest = await giveBack(deps, pk, take.ticket!, 1, clock.now());
    expect(rest).toMatchObject({ first: 2, count: 2, nd: 1, o: take.ticket!.id });
    expect(await ledger.complete(deps, pk, read.messages[0]!)).toBe('completed');
    const again = ledger.note(await receive(deps, pk, 10, { prune: [take.ticket!.id] }));
    expect(again.messages.map((m) => [m.item.b, m.deliveryCount])).toEqual([
      ['g1', 1],
      ['g2', 1],
    ]);
    // Their old tokens fail: the take-back raised their count.
    expect(await completeTicketed(deps, pk, read.messages[1]!.token)).toBe('lockLost');
    for (const m of again.messages) expect(await ledger.complete(deps, pk, m)).toBe('completed');
    await drain(ledger, pk);
    expect(Object.fromEntries(ledger.completed)).toEqual({ g0: 1, g1: 1, g2: 1 });
  });

  it('R6, R3: a lapsed ticket is taken back once though two receivers take it back at once, and counts a delivery', async () => {
    const pk = await ticketed();
    await send(deps, pk, range('l', 2));
    const ledger = new Ledger();
    const held = ledger.note(await receive(deps, pk, 2));
    expect(held.messages).toHaveLength(2);
    await ledger.complete(deps, pk, held.messages[0]!);
    clock.advance(LOCK);
    const lapsed = lapsedTickets(await counterOf(pk), clock.now());
    const outcomes = await Promise.all([takeBackTickets(deps, pk, lapsed), takeBackTickets(deps, pk, lapsed)]);
    expect(outcomes.map((o) => o.get(held.ticket!.id)).sort()).toEqual(['changed', 'returned']);
    expect((await readCursor(deps, pk)).back).toEqual([[2, 1]]);
    const back = ledger.note(await receive(deps, pk, 10));
    expect(back.messages.map((m) => [m.item.b, m.deliveryCount])).toEqual([['l1', 2]]);
    expect(await completeTicketed(deps, pk, held.messages[1]!.token)).toBe('lockLost');
    for (const m of back.messages) await ledger.complete(deps, pk, m);
    await drain(ledger, pk);
    expect(Object.fromEntries(ledger.completed)).toEqual({ l0: 1, l1: 1 });
  });

  it('R5: the lock end a ticket token states is read back from its entry while it holds the message; not once settled, nor once taken back', async () => {
    const pk = await ticketed();
    await send(deps, pk, range('k', 2));
    const one = await takeTicket(deps, pk, 1, { lockMs: LOCK });
    const two = await takeTicket(deps, pk, 1, { lockMs: LOCK });
    const [settled] = (await readTicket(deps, pk, one.ticket!)).messages;
    const [held] = (await readTicket(deps, pk, two.ticket!)).messages;
    expect(await lockEndOfTicket(deps, pk, settled!.token, clock.now())).toBe(one.ticket!.until);
    expect(await completeTicketed(deps, pk, settled!.token)).toBe('completed');
    await forgetTickets(deps, pk, [one.ticket!.id]);
    expect(await lockEndOfTicket(deps, pk, settled!.token, clock.now())).toBeUndefined();
    clock.advance(LOCK);
    expect(await lockEndOfTicket(deps, pk, held!.token, clock.now())).toBe(two.ticket!.until);
    await takeBackTickets(deps, pk, lapsedTickets(await counterOf(pk), clock.now()));
    expect(await lockEndOfTicket(deps, pk, held!.token, clock.now())).toBeUndefined();
    expect(await completeTicketed(deps, pk, held!.token)).toBe('lockLost');
  });

  it('R1: a batch take the head outran retries from the item its refused write returned, reading the counter once', async () => {
    const pk = await ticketed();
    await send(deps, pk, range('o', 3));
    const racing = faultyDeps(deps, {
      match: isTake,
      interleave: async () => {
        expect((await takeTicket(deps, pk, 1, { lockMs: LOCK })).ticket).toMatchObject({ first: 1 });
      },
    });
    const reads = faultyDeps(racing, { match: is(GetCommand), times: 0 });
    const take = await takeTicket(reads, pk, 3, { lockMs: LOCK });
    expect(take.ticket).toMatchObject({ first: 2, count: 2 });
    expect(take.failedWrites).toBe(1);
    expect(reads.faults.seen).toBe(1);
  });

  it('pruning: a receiver of one message at a time leaves at most its last ticket in the counter', async () => {
    const pk = await ticketed();
    for (let i = 0; i < 3; i++) await send(deps, pk, range(`p${i}-`, 10));
    const ledger = new Ledger();
    let settled: number[] = [];
    for (let i = 0; i < 30; i++) {
      const got = ledger.note(await receive(deps, pk, 1, { prune: settled }));
      for (const m of got.messages) expect(await ledger.complete(deps, pk, m)).toBe('completed');
      settled = [got.ticket!.id];
    }
    expect((await counterOf(pk)).tickets.map((t) => t.id)).toEqual(settled);
  });
});

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);
const isTake = (c: unknown) => is(UpdateCommand)(c) && onPrefix('posnext/')(c) && String(inputOf(c).UpdateExpression).startsWith('SET taken');
const isGiveBack = (c: unknown) => is(UpdateCommand)(c) && onPrefix('posnext/')(c) && String(inputOf(c).ConditionExpression).startsWith('#u.u');
const isTakeBackOne = (c: unknown) => is(UpdateCommand)(c) && onPrefix('pos/')(c) && String(inputOf(c).UpdateExpression).startsWith('SET g = :one');

/** The crash points of a receive that takes a ticket, takes a lapsed one back, hands out, gives a hole back and completes. */
const crashPoints: [string, Fault][] = [
  ['the take, before it', { match: isTake }],
  ['the take, after it', { match: isTake, phase: 'after' }],
  ["the ticket's read, after it", { match: is(QueryCommand), phase: 'after', nth: 2 }],
  ['the take-back of a lapsed message, before it', { match: isTakeBackOne }],
  ['the take-back of a lapsed message, after it', { match: isTakeBackOne, phase: 'after' }],
  ["the take-back's transaction, before it", { match: is(TransactWriteCommand) }],
  ["the take-back's transaction, after it", { match: is(TransactWriteCommand), phase: 'after' }],
  ['the give-back, before it', { match: isGiveBack }],
  ['the give-back, after it', { match: isGiveBack, phase: 'after' }],
  ['a complete, after it', { match: both(is(PutCommand), (c) => inputOf(c).Item?.done === 1), phase: 'after' }],
];

describe('tickets: a Lambda dying at each step', () => {
  it.each(crashPoints)('D3, R6, S1: a receive dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const pk = await ticketed();
    const ledger = new Ledger();
    await send(deps, pk, ['a0', 'a1']);
    await send(deps, pk, ['b']);
    // A holder of position 1 that died right after its take: a ticket to take back.
    await takeTicket(deps, pk, 1, { lockMs: LOCK });
    clock.advance(LOCK);
    await drawPositions(deps, pk, 2); // a sender that died: a hole
    await send(deps, pk, ['d']);
    const dying = faultyDeps(deps, fault);
    try {
      const got = await receive(dying, pk, 10);
      for (const m of got.messages) await ledger.complete(dying, pk, m);
    } catch (e) {
      if (!(e instanceof InjectedCrash)) throw e;
    }
    expect(dying.faults.tripped).toBe(1);
    await drain(ledger, pk);
    expect(Object.fromEntries(ledger.completed)).toEqual({ a0: 1, a1: 1, b: 1, d: 1 });
    expect(await messagesLeft(pk)).toEqual([]);
    expect((await counterOf(pk)).tickets).toEqual([]);
    expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
  });
});

describe('tickets: the model', () => {
  it.each([
    [2026, 0],
    [7, 0],
    [11, 0.15],
  ])(
    'R1, R6, S1, D3: random sends, receives, completes, clock moves and crashes never lose, double or split a request, nor hand a message out twice at once (seed %i, answers lost %d)',
    { timeout: 120_000 },
    async (seed, lost) => {
      const pk = await ticketed();
      const random = seededRandom(seed);
      // Writes that land and lose their answer, the SDK sending them again (dynamo-faults.ts `retried`).
      const lossy = losingAnswers(deps.db, lost, seededRandom(seed + 1));
      const base = { ...deps, db: lossy.db };
      const ledger = new Ledger();
      const written = new Set<string>();
      const unknown: string[][] = [];
      const held: Handed[] = [];
      const crashes = dyingRequests(base.db, { rate: 0.08, random, spared: is(QueryCommand, GetCommand) });
      const dying = (phase: 'before' | 'after') => ({ ...base, db: crashes.db(phase) });
      let request = 0;
      for (let step = 0; step < 160; step++) {
        const roll = random();
        const ctx = random() < 0.25 ? dying(random() < 0.5 ? 'before' : 'after') : base;
        try {
          if (roll < 0.35) {
            const bodies = range(`q${request++}-`, 1 + Math.floor(random() * 4));
            try {
              if ((await send(ctx, pk, bodies)) === 'written') bodies.forEach((b) => written.add(b));
            } catch (e) {
              if (!(e instanceof InjectedCrash)) throw e;
              unknown.push(bodies);
            }
          } else if (roll < 0.65) {
            held.push(...ledger.note(await receive(ctx, pk, random() < 0.5 ? 1 : 10)).messages);
          } else if (roll < 0.9) {
            const [h] = held.splice(Math.floor(random() * held.length), 1);
            if (h) await ledger.complete(ctx, pk, h);
          } else clock.advance(Math.floor(random() * 20 * SECOND));
        } catch (e) {
          if (!(e instanceof InjectedCrash)) throw e;
        }
      }
      for (const h of held.splice(0)) await ledger.complete(deps, pk, h);
      await drain(ledger, pk, 80);
      expect(await messagesLeft(pk)).toEqual([]);
      for (const b of written) expect(ledger.completed.get(b), b).toBe(1);
      expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
      for (const bodies of unknown) {
        const got = bodies.filter((b) => ledger.completed.has(b)).length;
        expect([0, bodies.length], bodies.join(',')).toContain(got);
      }
      expect(written.size).toBeGreaterThan(20);
      expect(crashes.tripped).toBeGreaterThan(0);
      if (lost > 0) expect(lossy.log.retried).toBeGreaterThan(10);
      expect((await counterOf(pk)).tickets).toEqual([]);
    },
  );
});
