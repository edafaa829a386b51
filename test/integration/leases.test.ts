/**
 * The positioned layout's receiving side (lib/store/leases.ts), on DynamoDB Local: a claim
 * takes messages in order under one lease (R1, R2, R3); a complete is one delete that fails
 * once the message was completed or taken back (R4, R5); a lapsed lease's messages come back
 * first, counted again (R6, R3); concurrent claimers, throttles and conflicts on the cursor
 * never hand one message out twice at once (R1); and a Lambda dying at each step of a claim
 * (take-back, tombstone, cursor write, lease write, clean-up) loses, doubles and strands
 * nothing (D3, R10). A model run mixes random sends, claims, completes, clock moves and
 * crashes. "No message under two valid leases" is checked as: no position is ever handed out
 * twice at one take-back count, the count its complete's condition insists on.
 */
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { cursorKey, padPosition } from '../../lib/store/keys.js';
import { drawPositions, HOLE_AFTER_MS, type PositionedItem, type PositionStore } from '../../lib/store/positions.js';
import { claim, completeAtPosition, entryOfToken, readCursor, readLeases, releaseLease, type Claim } from '../../lib/store/leases.js';
import { positionedPartitions, sendAtPositions, type Deps } from '../support/positioned-partitions.js';
import { both, dyingRequests, faultyDeps, inputOf, InjectedCrash, is, type Fault } from '../support/faults.js';
import { faultyStore, losingAnswers, seededRandom } from '../support/dynamo-faults.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const { clock, open, newPartition } = positionedPartitions();
let deps: Deps;

beforeAll(async () => {
  deps = await open('leases');
});

const send = async (ctx: PositionStore, pk: string, bodies: string[]) => (await sendAtPositions(ctx, pk, bodies)).outcome;
const range = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const bodiesOf = (c: Claim) => c.messages.map((m) => m.item.b as string);

/** Every hand-out of a test: no position at one take-back count twice (R1). */
class Ledger {
  readonly handed = new Set<string>();
  readonly completed = new Map<string, number>();
  note(c: Claim) {
    for (const m of c.messages) {
      const [p, g] = entryOfToken(m.token);
      const id = `${p}@${g}`;
      expect(this.handed.has(id), `position ${p} handed out twice at take-back count ${g}`).toBe(false);
      this.handed.add(id);
    }
    return c;
  }
  async complete(pk: string, m: Claim['messages'][number]) {
    const outcome = await completeAtPosition(deps, pk, m.token);
    if (outcome === 'completed') this.completed.set(m.item.b as string, (this.completed.get(m.item.b as string) ?? 0) + 1);
    return outcome;
  }
  /** Claims and completes until the partition is empty, letting leases lapse when a claim finds nothing. */
  async drain(pk: string, rounds = 30) {
    for (let round = 0; round < rounds; round++) {
      const c = this.note(await claim(deps, pk, 10, { lockMs: LOCK }));
      for (const m of c.messages) await this.complete(pk, m);
      if (c.messages.length === 0) {
        if ((await messagesLeft(pk)).length === 0 && (await readLeases(deps, pk)).length === 0) return;
        clock.advance(LOCK + SECOND);
      }
    }
  }
}

/** The partition's message items (not tombstones). */
async function messagesLeft(pk: string): Promise<PositionedItem[]> {
  const out = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return ((out.Items ?? []) as PositionedItem[]).filter((i) => !i.tomb);
}

describe('leases: claims and completes', () => {
  it('R1, R2, R3: claims take messages in order under one lease each, delivery count 1, and a complete removes each', async () => {
    const pk = newPartition();
    await send(deps, pk, range('a', 10));
    for (const b of range('s', 5)) await send(deps, pk, [b]);
    const ledger = new Ledger();
    const first = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(first)).toEqual(range('a', 10));
    expect(first.lease).toMatchObject({ until: clock.now() + LOCK });
    expect(first.messages.every((m) => m.deliveryCount === 1)).toBe(true);
    const second = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(second)).toEqual(range('s', 5));
    for (const m of [...first.messages, ...second.messages]) expect(await ledger.complete(pk, m)).toBe('completed');
    expect(await messagesLeft(pk)).toEqual([]);
    const before = await readCursor(deps, pk);
    expect((await claim(deps, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect((await readCursor(deps, pk)).v).toBe(before.v);
  });

  it('R5: a second complete of one message, and a complete under a lock taken back after its lapse, fail and change nothing', async () => {
    const pk = newPartition();
    await send(deps, pk, ['x', 'y']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    expect(await ledger.complete(pk, held.messages[0]!)).toBe('completed');
    expect(await ledger.complete(pk, held.messages[0]!)).toBe('lockLost');
    clock.advance(LOCK);
    const again = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    expect(bodiesOf(again)).toEqual(['y']);
    expect(await ledger.complete(pk, held.messages[1]!)).toBe('lockLost');
    expect(await ledger.complete(pk, again.messages[0]!)).toBe('completed');
  });

  it("R6, R3: a lapsed lease's messages left come back first, in order, counted again; a lease lapsed with all settled is deleted, and the cursor forgets it once", async () => {
    const pk = newPartition();
    await send(deps, pk, range('m', 5));
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 5, { lockMs: LOCK }));
    await ledger.complete(pk, held.messages[0]!);
    await ledger.complete(pk, held.messages[3]!);
    await send(deps, pk, ['n0', 'n1']);
    clock.advance(LOCK);
    const back = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(back)).toEqual(['m1', 'm2', 'm4', 'n0', 'n1']);
    expect(back.messages.map((m) => m.deliveryCount)).toEqual([2, 2, 2, 1, 1]);
    expect((await readLeases(deps, pk)).map((l) => l.id)).toEqual([back.lease!.id]);
    for (const m of back.messages) expect(await ledger.complete(pk, m)).toBe('completed');
    clock.advance(LOCK);
    const v = (await readCursor(deps, pk)).v;
    expect((await claim(deps, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    // That lease was the cursor's last claim: its record goes too, once, so no later claim
    // writes the lease again from it (the repair); after that, claims write nothing.
    expect((await readCursor(deps, pk)).claim).toBeUndefined();
    expect((await readCursor(deps, pk)).v).toBe(v + 1);
    for (let i = 0; i < 2; i++) expect((await claim(deps, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).v).toBe(v + 1);
    expect([...ledger.completed.keys()].sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'n0', 'n1']);
  });

  it('R1: 8 single receivers and 2 batch receivers racing, with throttles and conflicts on the cursor, each take every message once', async () => {
    const pk = newPartition();
    // A claim cursor serves its receivers one at a time: 10 receivers race as 20 would, in half the time.
    for (let i = 0; i < 4; i++) await send(deps, pk, range(`r${i}-`, 10));
    const random = seededRandom(11);
    const cursorWrites = (c: { operation: string; input: { Item?: { pk?: { S?: string } } } }) =>
      c.operation === 'PutItem' && (c.input.Item?.pk?.S ?? '').startsWith('cursor/');
    const store = faultyStore(
      deps.db,
      { throttle: { when: cursorWrites, rate: 0.2 }, conflict: { when: cursorWrites, rate: 0.1 } },
      { random, fastRetries: true },
    );
    const faulty = { ...deps, db: store.db };
    const ledger = new Ledger();
    let lost = 0;
    const receiver = (want: number) => async () => {
      for (let k = 0; k < 40; k++) {
        const c = ledger.note(await claim(faulty, pk, want, { lockMs: LOCK }));
        lost += c.lostRaces;
        for (const m of c.messages) expect(await ledger.complete(pk, m)).toBe('completed');
        if (c.messages.length === 0 && (await messagesLeft(pk)).length === 0) return;
      }
    };
    await Promise.all([...Array.from({ length: 8 }, () => receiver(1)), ...Array.from({ length: 2 }, () => receiver(10))].map((r) => r()));
    expect(lost).toBeGreaterThan(0);
    expect(store.log.throttledOut + store.log.conflicted).toBeGreaterThan(0);
    expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
    expect(ledger.completed.size).toBe(40);
    expect(await messagesLeft(pk)).toEqual([]);
  });
});

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);

/** The crash points of a claim that takes a lapsed lease back, tombstones a hole and claims past it. */
const crashPoints: [string, Fault][] = [
  ['the take-back of a lapsed message, before it', { match: is(UpdateCommand) }],
  ['the take-back of a lapsed message, after it', { match: is(UpdateCommand), phase: 'after' }],
  ['a tombstone, after it', { match: both(is(PutCommand), (c) => inputOf(c).Item?.tomb === 1), phase: 'after' }],
  ['the cursor write, before it', { match: both(is(PutCommand), onPrefix('cursor/')) }],
  ['the cursor write, after it', { match: both(is(PutCommand), onPrefix('cursor/')), phase: 'after' }],
  ['the lease write, before it', { match: both(is(PutCommand), onPrefix('lease/')) }],
  ['the lease write, after it', { match: both(is(PutCommand), onPrefix('lease/')), phase: 'after' }],
  ["the lapsed lease's delete, before it", { match: both(is(DeleteCommand), onPrefix('lease/')) }],
];

describe('leases: a Lambda dying at each step of a claim', () => {
  it.each(crashPoints)('D3, R10, R6: a claim dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const pk = newPartition();
    const ledger = new Ledger();
    await send(deps, pk, ['a0', 'a1', 'a2']);
    await send(deps, pk, ['b']);
    await drawPositions(deps, pk, 2); // a sender that died: a hole
    await send(deps, pk, ['d']);
    const held = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    await ledger.complete(pk, held.messages[0]!);
    clock.advance(Math.max(LOCK, HOLE_AFTER_MS));
    const dying = faultyDeps(deps, fault);
    await expect(claim(dying, pk, 10, { lockMs: LOCK })).rejects.toThrow(InjectedCrash);
    expect(dying.faults.tripped).toBe(1);
    // Another receiver right after the crash, then everything drained.
    for (const m of ledger.note(await claim(deps, pk, 10, { lockMs: LOCK })).messages) await ledger.complete(pk, m);
    await ledger.drain(pk);
    expect(Object.fromEntries(ledger.completed)).toEqual({ a0: 1, a1: 1, a2: 1, b: 1, d: 1 });
    expect(await messagesLeft(pk)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
  });

  it('D3: a claim that dies after its cursor write leaves a lease the next claim writes from the record, so its messages come back at the lapse', async () => {
    const pk = newPartition();
    await send(deps, pk, range('c', 4));
    const dying = faultyDeps(deps, { match: both(is(PutCommand), onPrefix('cursor/')), phase: 'after' });
    await expect(claim(dying, pk, 2, { lockMs: LOCK })).rejects.toThrow(InjectedCrash);
    expect(await readLeases(deps, pk)).toEqual([]);
    const ledger = new Ledger();
    const next = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(next)).toEqual(['c2', 'c3']);
    expect((await readLeases(deps, pk)).map((l) => l.e.map((e) => e[0]))).toEqual([
      [1, 2],
      [3, 4],
    ]);
    clock.advance(LOCK);
    const back = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(back)).toEqual(['c0', 'c1', 'c2', 'c3']);
    expect(back.messages.map((m) => m.deliveryCount)).toEqual([2, 2, 2, 2]);
  });
});

describe('leases: a void request passed by a claim that dies', () => {
  it("S1: a claim that dies after its cursor write leaves the void request's landed messages to the next claim, which deletes them", async () => {
    const pk = newPartition();
    // A request of three whose sender died after two of its puts: a hole in its middle.
    const draw = await drawPositions(deps, pk, 3);
    for (const [i, p] of [draw.first, draw.first + 2].entries()) {
      const item = { pk, sk: padPosition(p), b: `v${i}`, at: draw.at, rf: draw.first, rn: 3 };
      await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: item }));
    }
    await send(deps, pk, ['after']);
    clock.advance(HOLE_AFTER_MS);
    const dying = faultyDeps(deps, { match: both(is(PutCommand), onPrefix('cursor/')), phase: 'after' });
    await expect(claim(dying, pk, 10, { lockMs: LOCK })).rejects.toThrow(InjectedCrash);
    expect((await messagesLeft(pk)).map((m) => m.b)).toEqual(['v0', 'v1', 'after']);
    expect((await readCursor(deps, pk)).vd).toEqual([draw.first, draw.first + 2]);
    const ledger = new Ledger();
    await ledger.drain(pk);
    expect(Object.fromEntries(ledger.completed)).toEqual({ after: 1 });
    expect(await messagesLeft(pk)).toEqual([]);
    expect((await readCursor(deps, pk)).vd).toBeUndefined();
  });
});

/**
 * A claim of one message of `pk` whose take-back write comes just after another receiver's,
 * which died before its cursor write: both take the same lapsed lease back.
 */
async function claimBehindADyingTakeBack(pk: string) {
  const other = faultyDeps(deps, { match: is(UpdateCommand), phase: 'after' });
  const racing = faultyDeps(deps, {
    match: is(UpdateCommand),
    interleave: async () => {
      await expect(claim(other, pk, 1, { lockMs: LOCK })).rejects.toThrow(InjectedCrash);
    },
  });
  const claimed = await claim(racing, pk, 1, { lockMs: LOCK });
  expect(racing.faults.tripped).toBe(1);
  return claimed;
}

describe('leases: taking one lapsed lease back at once', () => {
  it("R6, D3: a receiver whose take-back write comes after another's (which died before its cursor write) still puts the message back in line", async () => {
    const pk = newPartition();
    await send(deps, pk, ['t0']);
    const ledger = new Ledger();
    ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    clock.advance(LOCK);
    const again = ledger.note(await claimBehindADyingTakeBack(pk));
    expect(bodiesOf(again)).toEqual(['t0']);
    expect(again.messages[0]!.deliveryCount).toBe(2);
  });
});

describe('leases: a claim that hands nothing out (undelivered)', () => {
  it('R3: its take-back counts no delivery, when released and when it lapses; a delivered lease lapsing still counts one, and the take-back still fences its complete', async () => {
    const pk = newPartition();
    await send(deps, pk, ['u0']);
    const ledger = new Ledger();
    const released = ledger.note(await claim(deps, pk, 1, { lockMs: 5 * SECOND, undelivered: true }));
    await releaseLease(deps, pk, released.lease!);
    expect(await completeAtPosition(deps, pk, released.messages[0]!.token)).toBe('lockLost');
    const lapsing = ledger.note(await claim(deps, pk, 1, { lockMs: 5 * SECOND, undelivered: true }));
    expect(lapsing.messages.map((m) => m.deliveryCount)).toEqual([1]);
    clock.advance(5 * SECOND);
    const delivered = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    expect(delivered.messages.map((m) => m.deliveryCount)).toEqual([1]);
    expect(await completeAtPosition(deps, pk, lapsing.messages[0]!.token)).toBe('lockLost');
    clock.advance(LOCK);
    const again = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    expect(again.messages.map((m) => m.deliveryCount)).toEqual([2]);
    expect(await ledger.complete(pk, again.messages[0]!)).toBe('completed');
  });

  it('R3, D3: a claim dying after its cursor write leaves a lease, written from its record, that still counts no delivery at its lapse', async () => {
    const pk = newPartition();
    await send(deps, pk, range('n', 2));
    const dying = faultyDeps(deps, { match: both(is(PutCommand), onPrefix('cursor/')), phase: 'after' });
    await expect(claim(dying, pk, 2, { lockMs: 5 * SECOND, undelivered: true })).rejects.toThrow(InjectedCrash);
    const ledger = new Ledger();
    expect(bodiesOf(ledger.note(await claim(deps, pk, 10, { lockMs: LOCK })))).toEqual([]);
    expect((await readLeases(deps, pk)).map((l) => l.nd)).toEqual([1]);
    clock.advance(5 * SECOND);
    const back = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(back.messages.map((m) => [m.item.b, m.deliveryCount])).toEqual([
      ['n0', 1],
      ['n1', 1],
    ]);
  });

  it('R3, D3: two receivers taking one lapsed undelivered lease back at once count it once, as no delivery', async () => {
    const pk = newPartition();
    await send(deps, pk, ['w0']);
    const ledger = new Ledger();
    ledger.note(await claim(deps, pk, 1, { lockMs: 5 * SECOND, undelivered: true }));
    clock.advance(5 * SECOND);
    const again = ledger.note(await claimBehindADyingTakeBack(pk));
    expect(again.messages.map((m) => [m.item.b, m.item.g, m.item.ug, m.deliveryCount])).toEqual([['w0', 1, 1, 1]]);
  });
});

describe('leases: the model', () => {
  it.each([
    [2026, 0],
    [4, 0],
    [6, 0],
    [10, 0.15],
  ])(
    'R1, R6, S4, D3: random sends, claims, completes, clock moves and crashes never lose, double or split a request, nor hand a message out twice at once (seed %i, answers lost %d)',
    { timeout: 120_000 },
    async (seed, lost) => {
      const pk = newPartition();
      const random = seededRandom(seed);
      // Writes that land and lose their answer, the SDK sending them again (dynamo-faults.ts `retried`).
      const lossy = losingAnswers(deps.db, lost, seededRandom(seed + 1));
      const base = { ...deps, db: lossy.db };
      const ledger = new Ledger();
      const written = new Set<string>();
      const unknown: string[][] = [];
      const held: { pk: string; m: Claim['messages'][number] }[] = [];
      // Each request that may die runs in a process of its own: a dead one makes no call after.
      const crashes = dyingRequests(base.db, { rate: 0.08, random, spared: is(QueryCommand) });
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
            const c = ledger.note(await claim(ctx, pk, random() < 0.5 ? 1 : 10, { lockMs: LOCK }));
            held.push(...c.messages.map((m) => ({ pk, m })));
          } else if (roll < 0.9) {
            const i = Math.floor(random() * held.length);
            const [h] = held.splice(i, 1);
            if (h) await ledger.complete(h.pk, h.m);
          } else clock.advance(Math.floor(random() * 20 * SECOND));
        } catch (e) {
          if (!(e instanceof InjectedCrash)) throw e;
        }
      }
      for (const h of held.splice(0)) await ledger.complete(h.pk, h.m);
      await ledger.drain(pk, 60);
      expect(await messagesLeft(pk)).toEqual([]);
      for (const b of written) expect(ledger.completed.get(b), b).toBe(1);
      expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
      // A send that died part-way is delivered whole or not at all.
      for (const bodies of unknown) {
        const got = bodies.filter((b) => ledger.completed.has(b)).length;
        expect([0, bodies.length], bodies.join(',')).toContain(got);
      }
      expect(written.size).toBeGreaterThan(20);
      expect(crashes.tripped).toBeGreaterThan(0);
      expect(ledger.completed.size).toBeGreaterThanOrEqual(written.size);
      if (lost > 0) expect(lossy.log.retried).toBeGreaterThan(10);
      expect((await readCursor(deps, pk)).pk).toBe(cursorKey(pk).pk);
    },
  );
});
