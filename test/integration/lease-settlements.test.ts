/**
 * Settlements under leases other than complete (lib/store/lease-settlements.ts), on DynamoDB
 * Local, with messages locked by leases.ts's `claim`: an abandon puts its message first in
 * line at once, counted again, and ends its token (R4, R3, R5); a renew moves one message's
 * lock end and not its siblings' (R4, R6); a move off a position (defer, dead-letter) is one
 * transaction (D3); a crash at each step, throttles and conflicts lose, double and strand
 * nothing; and a seeded model run adds abandons, renews and moves to leases.test.ts's.
 * "No message under two valid locks" is checked as there: no position is handed out twice at
 * one take-back count, the count every settlement's condition insists on.
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import type { MessageItem } from '../../lib/messages/item.js';
import { padPosition } from '../../lib/store/keys.js';
import { type PositionedItem, type PositionStore } from '../../lib/store/positions.js';
import { claim, completeAtPosition, entryOfToken, readCursor, readLeases, type Claim } from '../../lib/store/leases.js';
import {
  abandonAtPosition,
  abandonAtPositions,
  leasesHolding,
  lockEnd,
  moveFromPosition,
  readPartitionLeases,
  renewAtPosition,
} from '../../lib/store/lease-settlements.js';
import { positionedPartitions, sendAtPositions, type Deps } from '../support/positioned-partitions.js';
import { both, dyingRequests, faultyDeps, inputOf, InjectedCrash, is, type Fault } from '../support/faults.js';
import { faultyStore, losingAnswers, onOperations, seededRandom } from '../support/dynamo-faults.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const { clock, open, newPartition } = positionedPartitions();
let deps: Deps;

beforeAll(async () => {
  deps = await open('leasesettle');
});

type Held = Claim['messages'][number];
const range = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const bodiesOf = (c: Claim) => c.messages.map((m) => m.item.b as string);
const send = async (ctx: PositionStore, pk: string, bodies: string[]) => (await sendAtPositions(ctx, pk, bodies)).outcome;

/** Where a moved message lands in these tests: an item of its own, keyed by the body (the broker's targets are tested in positioned-settle.test.ts). */
const movedKey = (pk: string, position: number) => ({ pk: `moved/${pk}`, sk: padPosition(position) });
const targetOf = (pk: string, m: Held) => {
  const position = entryOfToken(m.token)[0];
  return { ...movedKey(pk, position), seq: String(position), b: m.item.b } as unknown as MessageItem;
};

/** Every hand-out and settlement of a test: no position at one take-back count handed out twice (R1). */
class Ledger {
  readonly handed = new Set<string>();
  readonly completed = new Map<string, number>();
  readonly moved = new Map<string, number>();
  note(c: Claim) {
    for (const m of c.messages) {
      const [p, g] = entryOfToken(m.token);
      const id = `${p}@${g}`;
      expect(this.handed.has(id), `position ${p} handed out twice at take-back count ${g}`).toBe(false);
      this.handed.add(id);
    }
    return c;
  }
  async complete(ctx: PositionStore, pk: string, m: Held) {
    let outcome;
    try {
      outcome = await completeAtPosition(ctx, pk, m.token);
    } catch (e) {
      // Died once its delete (its only write) had landed: completed all the same.
      if (e instanceof InjectedCrash && e.message.includes('after')) this.count(this.completed, m);
      throw e;
    }
    if (outcome === 'completed') this.count(this.completed, m);
    return outcome;
  }
  async move(ctx: PositionStore, pk: string, m: Held) {
    const outcome = await moveFromPosition(ctx, pk, entryOfToken(m.token), [targetOf(pk, m)]);
    if (outcome === 'done') this.count(this.moved, m);
    return outcome;
  }
  private count(map: Map<string, number>, m: Held) {
    map.set(m.item.b as string, (map.get(m.item.b as string) ?? 0) + 1);
  }
  /** Claims and completes until the partition is empty, letting leases lapse when a claim finds nothing. */
  async drain(pk: string, rounds = 40) {
    for (let round = 0; round < rounds; round++) {
      const c = this.note(await claim(deps, pk, 10, { lockMs: LOCK }));
      for (const m of c.messages) await this.complete(deps, pk, m);
      if (c.messages.length === 0) {
        if ((await messagesLeft(pk)).length === 0 && (await readLeases(deps, pk)).length === 0) return;
        clock.advance(LOCK + SECOND);
      }
    }
  }
  /** Each body settled exactly once, completed or moved. */
  settledOnce(bodies: Iterable<string>) {
    for (const b of bodies) expect((this.completed.get(b) ?? 0) + (this.moved.get(b) ?? 0), b).toBe(1);
  }
}

async function messagesLeft(pk: string): Promise<PositionedItem[]> {
  const out = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return ((out.Items ?? []) as PositionedItem[]).filter((i) => !i.tomb);
}

const holding = async (ctx: PositionStore, pk: string, token: string) => leasesHolding(await readPartitionLeases(ctx, pk, true), token);
const renew = async (ctx: PositionStore, pk: string, m: Held, until: number) =>
  renewAtPosition(ctx, pk, await holding(deps, pk, m.token), entryOfToken(m.token), until);

describe('lease settlements: abandon', () => {
  it('R4, R3: an abandoned message is first in line at once, ahead of messages never taken, counted again, with its properties', async () => {
    const pk = newPartition();
    await send(deps, pk, range('a', 3));
    await send(deps, pk, ['later']);
    const ledger = new Ledger();
    const first = ledger.note(await claim(deps, pk, 3, { lockMs: LOCK }));
    expect(await abandonAtPosition(deps, pk, entryOfToken(first.messages[1]!.token), '{"k":"v"}')).toBe('done');
    const next = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(next)).toEqual(['a1', 'later']);
    expect(next.messages[0]!.deliveryCount).toBe(2);
    expect(next.messages[0]!.item.props).toBe('{"k":"v"}');
    for (const m of [first.messages[0]!, first.messages[2]!, ...next.messages]) expect(await ledger.complete(deps, pk, m)).toBe('completed');
    expect(await messagesLeft(pk)).toEqual([]);
  });

  it("R5: after one's own abandon, a complete, an abandon and a move under the token fail; the lease's lapse does not queue it again", async () => {
    const pk = newPartition();
    await send(deps, pk, ['x', 'y']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    const [x] = held.messages;
    expect(await abandonAtPosition(deps, pk, entryOfToken(x!.token))).toBe('done');
    expect(await ledger.complete(deps, pk, x!)).toBe('lockLost');
    expect(await abandonAtPosition(deps, pk, entryOfToken(x!.token))).toBe('lockLost');
    expect(await ledger.move(deps, pk, x!)).toBe('lockLost');
    clock.advance(LOCK / 2);
    const again = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(again)).toEqual(['x']);
    // The first lease still lists x: its lapse takes back y only, and x stays with its new holder.
    clock.advance(LOCK / 2);
    const lapse = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(lapse)).toEqual(['y']);
    expect(lapse.messages.map((m) => m.deliveryCount)).toEqual([2]);
    expect(await ledger.complete(deps, pk, again.messages[0]!)).toBe('completed');
    for (const m of lapse.messages) expect(await ledger.complete(deps, pk, m)).toBe('completed');
    ledger.settledOnce(['x', 'y']);
  });

  it('R5: an abandon under a lock taken back after its lapse fails and changes nothing', async () => {
    const pk = newPartition();
    await send(deps, pk, ['z']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    clock.advance(LOCK);
    const next = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    expect(bodiesOf(next)).toEqual(['z']);
    const v = (await readCursor(deps, pk)).v;
    expect(await abandonAtPosition(deps, pk, entryOfToken(held.messages[0]!.token))).toBe('lockLost');
    expect((await readCursor(deps, pk)).v).toBe(v);
    expect(await ledger.complete(deps, pk, next.messages[0]!)).toBe('completed');
  });

  it('R9, R2: several abandons of one partition in one transaction; one refused is answered alone, the rest handed out again oldest first', async () => {
    const pk = newPartition();
    await send(deps, pk, range('b', 4));
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 4, { lockMs: LOCK }));
    expect(await ledger.complete(deps, pk, held.messages[1]!)).toBe('completed');
    const outcomes = await abandonAtPositions(
      deps,
      pk,
      [3, 1, 0].map((i) => ({ entry: entryOfToken(held.messages[i]!.token) })),
    );
    expect(outcomes).toEqual(['done', 'lockLost', 'done']);
    const next = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(next)).toEqual(['b0', 'b3']);
    await ledger.complete(deps, pk, held.messages[2]!);
    for (const m of next.messages) await ledger.complete(deps, pk, m);
    ledger.settledOnce(range('b', 4));
  });
});

describe('lease settlements: renew', () => {
  it("R4, R6: a renewed message's lock ends at its new end; its siblings' locks end where they did", async () => {
    const pk = newPartition();
    await send(deps, pk, range('r', 3));
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 3, { lockMs: LOCK }));
    const [r0, r1, r2] = held.messages;
    clock.advance(LOCK / 2);
    const until = clock.now() + LOCK;
    expect(await renew(deps, pk, r1!, until)).toBe('done');
    expect(lockEnd(await holding(deps, pk, r1!.token))).toBe(until);
    expect(lockEnd(await holding(deps, pk, r0!.token))).toBe(held.lease!.until);
    // Renewed again: still one lease holds it.
    expect(await renew(deps, pk, r1!, until + SECOND)).toBe('done');
    expect(await holding(deps, pk, r1!.token)).toHaveLength(1);
    clock.advance(LOCK / 2);
    const lapse = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(lapse)).toEqual(['r0', 'r2']);
    expect(await ledger.complete(deps, pk, r1!)).toBe('completed');
    expect(await ledger.complete(deps, pk, r2!)).toBe('lockLost');
    for (const m of lapse.messages) await ledger.complete(deps, pk, m);
    await ledger.drain(pk);
    ledger.settledOnce(range('r', 3));
  });

  it('R6: a renewed message not settled comes back at its new lock end, once, counted again', async () => {
    const pk = newPartition();
    await send(deps, pk, ['s0', 's1']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    expect(await renew(deps, pk, held.messages[0]!, clock.now() + 2 * LOCK)).toBe('done');
    clock.advance(LOCK);
    expect(bodiesOf(ledger.note(await claim(deps, pk, 10, { lockMs: 5 * LOCK })))).toEqual(['s1']);
    clock.advance(LOCK);
    const back = ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(bodiesOf(back)).toEqual(['s0']);
    expect(back.messages[0]!.deliveryCount).toBe(2);
  });

  it('R5: a renew after its lease was taken back finds no lease holding it and is refused', async () => {
    const pk = newPartition();
    await send(deps, pk, ['t0', 't1']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    clock.advance(LOCK);
    ledger.note(await claim(deps, pk, 10, { lockMs: LOCK }));
    expect(await holding(deps, pk, held.messages[0]!.token)).toEqual([]);
    expect(await renewAtPosition(deps, pk, [], entryOfToken(held.messages[0]!.token), clock.now() + LOCK)).toBe('lockLost');
  });

  it("R6: a renew's lease of its own, left holding a message another lease took back (a renew racing the lapse), does not queue it again", async () => {
    const pk = newPartition();
    await send(deps, pk, ['u0']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    const leases = await holding(deps, pk, held.messages[0]!.token);
    clock.advance(LOCK);
    // The lapse takes the message back while the renew (which read the lease before) is on its way; it dies after its new lease.
    const next = ledger.note(await claim(deps, pk, 1, { lockMs: 4 * LOCK }));
    expect(bodiesOf(next)).toEqual(['u0']);
    const dying = faultyDeps(deps, { match: both(is(PutCommand), onPrefix('lease/')), phase: 'after' });
    await expect(renewAtPosition(dying, pk, leases, entryOfToken(held.messages[0]!.token), clock.now() + LOCK)).rejects.toThrow(InjectedCrash);
    clock.advance(LOCK);
    expect((await claim(deps, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect(await ledger.complete(deps, pk, next.messages[0]!)).toBe('completed');
  });
});

describe('lease settlements: a renew racing a take-back that died', () => {
  it('R6, R1: a take-back that died before its cursor write, then a renew that read the lease before the lapse: the message comes back, once, and the renew is refused', async () => {
    const pk = newPartition();
    await send(deps, pk, ['v0']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    const token = held.messages[0]!.token;
    const leases = await holding(deps, pk, token);
    clock.advance(LOCK);
    // The lapse's take-back raises the message's count, and its process dies before the cursor write that would queue it.
    const dying = faultyDeps(deps, { match: both(is(UpdateCommand), onPrefix('pos/')), phase: 'after' });
    await expect(claim(dying, pk, 1, { lockMs: LOCK })).rejects.toThrow(InjectedCrash);
    expect(dying.faults.tripped).toBe(1);
    // The renew read its lease before the lapse, and writes now.
    expect(await renewAtPosition(deps, pk, leases, entryOfToken(token), clock.now() + LOCK)).toBe('lockLost');
    await ledger.drain(pk);
    ledger.settledOnce(['v0']);
    expect(await messagesLeft(pk)).toEqual([]);
  });
});

describe('lease settlements: moves off a position', () => {
  it('D3, R4: a move deletes the message at its position and puts its target in one transaction; the lapse then finds nothing', async () => {
    const pk = newPartition();
    await send(deps, pk, ['d0', 'd1']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    expect(await ledger.move(deps, pk, held.messages[0]!)).toBe('done');
    expect(await ledger.move(deps, pk, held.messages[0]!)).toBe('lockLost');
    expect(await ledger.complete(deps, pk, held.messages[0]!)).toBe('lockLost');
    const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: movedKey(pk, entryOfToken(held.messages[0]!.token)[0]) }));
    expect(got.Item?.b).toBe('d0');
    clock.advance(LOCK);
    expect(bodiesOf(ledger.note(await claim(deps, pk, 10, { lockMs: LOCK })))).toEqual(['d1']);
  });
});

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);

/** The crash points of each settlement's writes. */
const crashPoints: [string, 'abandon' | 'renew' | 'move', Fault][] = [
  ["an abandon's transaction, before it", 'abandon', { match: is(TransactWriteCommand) }],
  ["an abandon's transaction, after it", 'abandon', { match: is(TransactWriteCommand), phase: 'after' }],
  ["a renew's new lease, before it", 'renew', { match: both(is(PutCommand), onPrefix('lease/')) }],
  ["a renew's new lease, after it", 'renew', { match: both(is(PutCommand), onPrefix('lease/')), phase: 'after' }],
  ["a renew's rewrite of the old lease, after it", 'renew', { match: both(is(UpdateCommand), onPrefix('lease/')), phase: 'after' }],
  ["a move's transaction, before it", 'move', { match: is(TransactWriteCommand) }],
  ["a move's transaction, after it", 'move', { match: is(TransactWriteCommand), phase: 'after' }],
];

describe('lease settlements: a Lambda dying at each step', () => {
  it.each(crashPoints)('D3, R6: a settlement dying at %s loses, doubles and strands nothing', async (_, verb, fault) => {
    const pk = newPartition();
    const ledger = new Ledger();
    await send(deps, pk, range('c', 3));
    const held = ledger.note(await claim(deps, pk, 3, { lockMs: LOCK }));
    const dying = faultyDeps(deps, fault);
    const m = held.messages[1]!;
    const settling =
      verb === 'abandon'
        ? abandonAtPosition(dying, pk, entryOfToken(m.token))
        : verb === 'renew'
          ? renew(dying, pk, m, clock.now() + 3 * LOCK)
          : ledger.move(dying, pk, m);
    await expect(settling).rejects.toThrow(InjectedCrash);
    expect(dying.faults.tripped).toBe(1);
    // Whatever landed, the move is whole or not at all.
    const moved = (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: movedKey(pk, entryOfToken(m.token)[0]), ConsistentRead: true }))).Item;
    if (moved) ledger.moved.set('c1', 1);
    const atPosition = (await messagesLeft(pk)).some((i) => i.b === 'c1');
    expect(atPosition).toBe(!moved);
    // Another receiver right after the crash, then everything drained, leases lapsing as they come.
    for (const n of ledger.note(await claim(deps, pk, 10, { lockMs: LOCK })).messages) await ledger.complete(deps, pk, n);
    await ledger.complete(deps, pk, held.messages[0]!);
    await ledger.drain(pk);
    ledger.settledOnce(range('c', 3));
    expect(await messagesLeft(pk)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
  });
});

describe('lease settlements: DynamoDB refusing', () => {
  it('an abandon that meets a conflict or throttling is busy and changes nothing', async () => {
    const pk = newPartition();
    await send(deps, pk, ['f0']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    const v = (await readCursor(deps, pk)).v;
    for (const plan of [{ conflict: { when: onOperations('TransactWriteItems') } }, { throttle: { when: onOperations('TransactWriteItems') } }]) {
      const store = faultyStore(deps.db, plan, { fastRetries: true });
      expect(await abandonAtPosition({ ...deps, db: store.db }, pk, entryOfToken(held.messages[0]!.token))).toBe('busy');
    }
    expect((await readCursor(deps, pk)).v).toBe(v);
    expect(await ledger.complete(deps, pk, held.messages[0]!)).toBe('completed');
  });

  it("a renew whose old lease's rewrite is throttled is busy, and leaves no lease of its own behind to end the lock early", async () => {
    const pk = newPartition();
    await send(deps, pk, ['f1', 'f2']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 2, { lockMs: LOCK }));
    const store = faultyStore(deps.db, { throttle: { when: onOperations('UpdateItem') } }, { fastRetries: true });
    expect(await renew({ ...deps, db: store.db }, pk, held.messages[0]!, clock.now() + 2 * LOCK)).toBe('busy');
    expect((await readPartitionLeases(deps, pk, true)).map((l) => l.id)).toEqual([held.lease!.id]);
    expect(await renew(deps, pk, held.messages[0]!, clock.now() + 2 * LOCK)).toBe('done');
    expect(await ledger.complete(deps, pk, held.messages[0]!)).toBe('completed');
  });

  it('a move that meets a conflict is busy and changes nothing', async () => {
    const pk = newPartition();
    await send(deps, pk, ['f3']);
    const ledger = new Ledger();
    const held = ledger.note(await claim(deps, pk, 1, { lockMs: LOCK }));
    const store = faultyStore(deps.db, { conflict: { when: onOperations('TransactWriteItems') } }, { fastRetries: true });
    expect(await ledger.move({ ...deps, db: store.db }, pk, held.messages[0]!)).toBe('busy');
    expect(await messagesLeft(pk)).toHaveLength(1);
    expect(await ledger.move(deps, pk, held.messages[0]!)).toBe('done');
  });
});

describe('lease settlements: the model', () => {
  it.each([
    [2026, 0],
    [5, 0],
    [7, 0],
    [13, 0.15],
    [25, 0.15],
  ])(
    'R1, R4, R6, D3: random sends, claims, completes, abandons, renews, moves, clock moves and crashes never lose, double or strand a message, nor hand one out twice at once (seed %i, answers lost %d)',
    { timeout: 180_000 },
    async (seed, lost) => {
      const pk = newPartition();
      const random = seededRandom(seed);
      // Writes that land and lose their answer, the SDK sending them again (dynamo-faults.ts `retried`).
      const lossy = losingAnswers(deps.db, lost, seededRandom(seed + 1));
      const base = { ...deps, db: lossy.db };
      const ledger = new Ledger();
      const written = new Set<string>();
      const unknown: string[][] = [];
      const held: Held[] = [];
      // Each request that may die runs in a process of its own: a dead one makes no call after.
      const crashes = dyingRequests(base.db, { rate: 0.08, random, spared: is(QueryCommand, GetCommand) });
      const dying = (phase: 'before' | 'after') => ({ ...base, db: crashes.db(phase) });
      let request = 0;
      const pick = () => held.splice(Math.floor(random() * held.length), 1)[0];
      for (let step = 0; step < 200; step++) {
        const roll = random();
        const ctx = random() < 0.25 ? dying(random() < 0.5 ? 'before' : 'after') : base;
        try {
          if (roll < 0.25) {
            const bodies = range(`q${request++}-`, 1 + Math.floor(random() * 4));
            try {
              if ((await send(ctx, pk, bodies)) === 'written') bodies.forEach((b) => written.add(b));
            } catch (e) {
              if (!(e instanceof InjectedCrash)) throw e;
              unknown.push(bodies);
            }
          } else if (roll < 0.45) {
            held.push(...ledger.note(await claim(ctx, pk, random() < 0.5 ? 1 : 10, { lockMs: LOCK })).messages);
          } else if (roll < 0.6) {
            const h = pick();
            if (h) await ledger.complete(ctx, pk, h);
          } else if (roll < 0.7) {
            const h = pick();
            if (h) await abandonAtPosition(ctx, pk, entryOfToken(h.token));
          } else if (roll < 0.8) {
            const h = held[Math.floor(random() * held.length)];
            if (h) await renewAtPosition(ctx, pk, await holding(deps, pk, h.token), entryOfToken(h.token), clock.now() + LOCK);
          } else if (roll < 0.87) {
            const h = pick();
            if (h) await ledger.move(ctx, pk, h);
          } else clock.advance(Math.floor(random() * 20 * SECOND));
        } catch (e) {
          if (!(e instanceof InjectedCrash)) throw e;
        }
      }
      // A move that died after its transaction landed: its target tells.
      const moved = await deps.db.send(
        new QueryCommand({
          TableName: deps.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': `moved/${pk}` },
          ConsistentRead: true,
        }),
      );
      const movedBodies = new Set((moved.Items ?? []).map((i) => i.b as string));
      for (const b of movedBodies) if (!ledger.moved.has(b)) ledger.moved.set(b, 1);
      expect(movedBodies.size).toBe(ledger.moved.size);
      for (const h of held.splice(0)) await ledger.complete(deps, pk, h);
      await ledger.drain(pk, 80);
      expect(await messagesLeft(pk)).toEqual([]);
      ledger.settledOnce(written);
      expect([...ledger.completed.values(), ...ledger.moved.values()].every((n) => n === 1)).toBe(true);
      for (const b of ledger.completed.keys()) expect(ledger.moved.has(b), b).toBe(false);
      for (const bodies of unknown) {
        const got = bodies.filter((b) => ledger.completed.has(b) || ledger.moved.has(b)).length;
        expect([0, bodies.length], bodies.join(',')).toContain(got);
      }
      expect(written.size).toBeGreaterThan(20);
      expect(ledger.moved.size).toBeGreaterThan(0);
      expect(crashes.tripped).toBeGreaterThan(0);
      if (lost > 0) expect(lossy.log.retried).toBeGreaterThan(10);
      expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
      expect(await readLeases(deps, pk)).toEqual([]);
    },
  );
});
