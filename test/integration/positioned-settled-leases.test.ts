/**
 * A batch complete that settles every message of a lease deletes the lease at once
 * (broker/positioned-receive.ts `forgetSettledLeases`, store/leases.ts `deleteSettledLease`),
 * through the API on DynamoDB Local: the lapse then reads nothing for it (R6), a claim of
 * another receiver does not write it again from the cursor's record (its repair finds no
 * message of the record held), and a lease with a message still held (a take-back, an abandon,
 * a renew that moved an entry out, a complete that failed) stays for its lapse. A Lambda dying
 * at each step of the batch complete, or DynamoDB refusing the lease's delete, loses, doubles
 * and strands nothing (D3).
 */
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { jsonMessages, messagesLeft, queueEntity, recordingCalls, sendPositioned } from '../support/positioned-queue.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { faultyStore, seededRandom } from '../support/dynamo-faults.js';
import { claim, forgetRememberedLeases, readCursor, readLeases } from '../../lib/store/leases.js';
import { positionedPk } from '../../lib/store/keys.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'possettled')), newEntityLayout: positionedLayout };
});

async function positionedQueue() {
  const name = `sq${++queues}`;
  expect((await apiClient(deps)('PUT', `/queues/${name}`, { lockDuration: 'PT30S' })).status).toBe(201);
  const entity = await queueEntity(deps, name);
  return { name, entity, pk: positionedPk(entity.eid, 'active', 0) };
}

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);

/** Receives, completes and counts each body completed; R1: never handed out under two valid locks. */
class Ledger {
  readonly lockedUntil = new Map<string, number>();
  readonly completed = new Map<string, number>();
  constructor(readonly name: string) {}
  async receive(maxMessages: number, via = apiClient(deps)): Promise<Json[]> {
    const res = await via('POST', `/queues/${this.name}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages });
    const messages = (res.status === 200 ? res.body.messages : []) as Json[];
    for (const m of messages) {
      expect((this.lockedUntil.get(m.sequenceNumber) ?? -Infinity) <= clock.now(), `message ${m.sequenceNumber} under two valid locks`).toBe(true);
      this.lockedUntil.set(m.sequenceNumber, Date.parse(m.lockedUntil));
    }
    return messages;
  }
  /** A batch complete: the answer per token, each completed body counted. */
  async completeAll(messages: Json[], via = apiClient(deps)): Promise<{ status: number; ok: boolean[] }> {
    const res = await via('POST', `/queues/${this.name}/messages/complete`, { lockTokens: messages.map((m) => m.lockToken) });
    const ok = res.status === 200 ? (res.body.results as { ok?: boolean }[]).map((r) => r.ok === true) : messages.map(() => false);
    messages.forEach((m, i) => {
      if (ok[i]) this.completed.set(m.body.n, (this.completed.get(m.body.n) ?? 0) + 1);
    });
    return { status: res.status, ok };
  }
  /** Receives and completes until nothing is left, letting locks lapse when a receive finds nothing. */
  async drain(rounds = 10) {
    for (let round = 0; round < rounds; round++) {
      const got = await this.receive(10);
      if (got.length > 0) {
        const { ok } = await this.completeAll(got);
        for (const m of got.filter((_, i) => !ok[i])) this.completed.set(`failed ${m.body.n}`, 1);
        continue;
      }
      clock.advance(LOCK + SECOND);
      if ((await this.receive(10)).length === 0) return;
    }
  }
}

// Pins lease items and their deletes: a ticket has none (its counter entry leaves with the next take); the
// twins on a ticketed queue are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned batch complete: a lease settled whole goes at once', () => {
  it('R4, R6: the lease is deleted with its last message; the lapse reads nothing for it, and another receiver does not write it back', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('a', 5));
    const got = await ledger.receive(5);
    expect((await ledger.completeAll(got)).ok).toEqual([true, true, true, true, true]);
    expect(await readLeases(deps, pk)).toEqual([]);
    // The lease is the cursor's last claim; a receiver in a fresh process finds it missing,
    // finds none of its messages held, and drops the record instead of writing the lease again.
    expect((await readCursor(deps, pk)).claim).toBeDefined();
    forgetRememberedLeases();
    const { calls, store } = recordingCalls(deps);
    expect((await claim(store, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect(calls.filter((c) => c.startsWith('PutCommand lease'))).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).claim).toBeUndefined();
    // Past the lock's end, nothing is read consistently for it, nor deleted.
    clock.advance(LOCK + SECOND);
    const later = recordingCalls(deps);
    expect((await claim(later.store, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect(later.calls.filter((c) => c.startsWith('DeleteCommand') || c.startsWith('PutCommand'))).toEqual([]);
    expect(Object.fromEntries(ledger.completed)).toEqual({ a0: 1, a1: 1, a2: 1, a3: 1, a4: 1 });
  });

  it('R4, R6: a complete in another process finds the lease with one read of its second, and deletes it too', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('b', 3));
    const got = await ledger.receive(3);
    forgetRememberedLeases();
    expect((await ledger.completeAll(got)).ok).toEqual([true, true, true]);
    expect(await readLeases(deps, pk)).toEqual([]);
  });

  it('R4, R6: a batch complete of part of a lease, or of two leases each settled whole, deletes only those settled whole', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('c', 6));
    const first = await ledger.receive(3);
    const second = await ledger.receive(3);
    expect((await ledger.completeAll([...first.slice(0, 2), ...second])).ok).toEqual([true, true, true, true, true]);
    const left = await readLeases(deps, pk);
    expect(left.map((l) => l.e.length)).toEqual([3]);
    // The lapse brings the one left back, counted again.
    clock.advance(LOCK + SECOND);
    const back = await ledger.receive(10);
    expect(back.map((m) => [m.body.n, m.deliveryCount])).toEqual([['c2', 2]]);
    expect((await ledger.completeAll(back)).ok).toEqual([true]);
    expect(await readLeases(deps, pk)).toEqual([]);
  });

  it('R5, R6: a lease taken back after its lapse stays while a complete under it fails; its new lease goes once settled', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('d', 2));
    const held = await ledger.receive(2);
    clock.advance(LOCK + SECOND);
    const again = await ledger.receive(10);
    expect(again.map((m) => m.body.n)).toEqual(['d0', 'd1']);
    // The lapsed holder completes late: refused, and the lease it was under is no longer there to delete.
    expect((await ledger.completeAll(held)).ok).toEqual([false, false]);
    expect(await readLeases(deps, pk)).toHaveLength(1);
    expect((await ledger.completeAll(again)).ok).toEqual([true, true]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect(Object.fromEntries(ledger.completed)).toEqual({ d0: 1, d1: 1 });
  });

  it('R4, R6: an abandoned message keeps its lease from going: the lapse takes nothing back twice, and the abandoned one comes back once', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('e', 3));
    const got = await ledger.receive(3);
    expect((await apiClient(deps)('POST', `/queues/${name}/messages/${got[1].sequenceNumber}/abandon`, { lockToken: got[1].lockToken })).status).toBe(204);
    ledger.lockedUntil.delete(got[1].sequenceNumber);
    expect((await ledger.completeAll(got)).ok).toEqual([true, false, true]);
    expect(await readLeases(deps, pk)).toHaveLength(1);
    const back = await ledger.receive(10);
    expect(back.map((m) => [m.body.n, m.deliveryCount])).toEqual([['e1', 2]]);
    expect((await ledger.completeAll(back)).ok).toEqual([true]);
    clock.advance(LOCK + SECOND);
    expect(await ledger.receive(10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect(Object.fromEntries(ledger.completed)).toEqual({ e0: 1, e1: 1, e2: 1 });
  });

  it.each([
    ['in the process that claimed it', false],
    ['in another process', true],
  ])('R6: a lease a renew moved an entry out of stays while the renewed message is held (%s); the renewed lock outlives the old one', async (_, fresh) => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('f', 3));
    const got = await ledger.receive(3);
    clock.advance(20 * SECOND);
    expect((await apiClient(deps)('POST', `/queues/${name}/messages/${got[2].sequenceNumber}/renew-lock`, { lockToken: got[2].lockToken })).status).toBe(200);
    if (fresh) forgetRememberedLeases();
    expect((await ledger.completeAll(got.slice(0, 2))).ok).toEqual([true, true]);
    // Another receiver past the old lease's end (its repair looks at the cursor's record, which lists f2).
    forgetRememberedLeases();
    clock.advance(15 * SECOND);
    expect(await ledger.receive(10)).toEqual([]);
    // f2's lock, renewed to 30 s from the renew, still holds: its complete succeeds.
    expect((await ledger.completeAll([got[2]])).ok).toEqual([true]);
    clock.advance(LOCK);
    expect(await ledger.receive(10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect(Object.fromEntries(ledger.completed)).toEqual({ f0: 1, f1: 1, f2: 1 });
  });

  it('R4, R6: a renewed message completed with its siblings lets the old lease go; the renewed one goes at its lapse', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('g', 2));
    const got = await ledger.receive(2);
    expect((await apiClient(deps)('POST', `/queues/${name}/messages/${got[0].sequenceNumber}/renew-lock`, { lockToken: got[0].lockToken })).status).toBe(200);
    expect((await ledger.completeAll(got)).ok).toEqual([true, true]);
    expect((await readLeases(deps, pk)).map((l) => l.e)).toEqual([[[1, 0]]]);
    clock.advance(LOCK + SECOND);
    expect(await ledger.receive(10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
  });

  it('R10, D3: a lease whose write was refused for load, its messages handed out: a receiver writes it back only while one of them is held', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('h', 4));
    let refused = 0;
    const refusing = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'PutItem' && String(c.input.Item?.pk?.S ?? '').startsWith('lease/') && ++refused <= 50 } },
      { fastRetries: true },
    );
    const got = await ledger.receive(4, apiClient({ ...deps, db: refusing.db }));
    expect(got).toHaveLength(4);
    expect(await readLeases(deps, pk)).toEqual([]);
    // Part settled: another receiver writes the lease from the record, and its lapse brings the rest back.
    expect((await ledger.completeAll(got.slice(0, 2))).ok).toEqual([true, true]);
    forgetRememberedLeases();
    expect(await ledger.receive(10)).toEqual([]);
    expect(await readLeases(deps, pk)).toHaveLength(1);
    clock.advance(LOCK + SECOND);
    const back = await ledger.receive(10);
    expect(back.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['h2', 2],
      ['h3', 2],
    ]);
    expect((await ledger.completeAll(back)).ok).toEqual([true, true]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect(Object.fromEntries(ledger.completed)).toEqual({ h0: 1, h1: 1, h2: 1, h3: 1 });
  });

  it('R10, D3: a lease never written whose messages were all completed is not written back; the record goes', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('i', 2));
    let refused = 0;
    const refusing = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'PutItem' && String(c.input.Item?.pk?.S ?? '').startsWith('lease/') && ++refused <= 50 } },
      { fastRetries: true },
    );
    const got = await ledger.receive(2, apiClient({ ...deps, db: refusing.db }));
    expect((await ledger.completeAll(got)).ok).toEqual([true, true]);
    forgetRememberedLeases();
    expect(await ledger.receive(10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).claim).toBeUndefined();
  });
});

/** Crash points of a batch complete of a whole lease of three messages. */
const completeCrashes: [string, Fault][] = [
  ['the first message delete, before it', { match: both(is(DeleteCommand), onPrefix('pos/')) }],
  ['the first message delete, after it', { match: both(is(DeleteCommand), onPrefix('pos/')), phase: 'after' }],
  ['the last message delete, before it', { match: both(is(DeleteCommand), onPrefix('pos/')), nth: 3 }],
  ['the last message delete, after it', { match: both(is(DeleteCommand), onPrefix('pos/')), nth: 3, phase: 'after' }],
  ["the lease's delete, before it", { match: both(is(DeleteCommand), onPrefix('lease/')) }],
  ["the lease's delete, after it", { match: both(is(DeleteCommand), onPrefix('lease/')), phase: 'after' }],
];

// Pins lease items and their deletes: a ticket has none (its counter entry leaves with the next take); the
// twins on a ticketed queue are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned batch complete: a Lambda dying at each step', () => {
  it.each(completeCrashes)('D3, R4, R6: a batch complete dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('k', 3));
    const got = await ledger.receive(3);
    const dying = faultyDeps(deps, fault);
    const crashed = await ledger.completeAll(got, apiClient(dying));
    expect(dying.faults.tripped).toBe(1);
    expect(crashed.status).toBe(500);
    // Which deletes landed is not known to the client; a retry completes what is left.
    expect((await ledger.completeAll(got)).status).toBe(200);
    expect(await messagesLeft(deps, pk)).toEqual([]);
    for (const m of got) ledger.completed.set(m.body.n, 1);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ k0: 1, k1: 1, k2: 1 });
    expect(await messagesLeft(deps, pk)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
  });

  it('D3, R6: a lease delete refused for load answers the complete; the lapse deletes the lease instead', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('t', 3));
    const got = await ledger.receive(3);
    const refusing = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'DeleteItem' && String(c.input.Key?.pk?.S ?? '').startsWith('lease/') } },
      { fastRetries: true },
    );
    const res = await ledger.completeAll(got, apiClient({ ...deps, db: refusing.db }));
    expect(res).toEqual({ status: 200, ok: [true, true, true] });
    expect(await readLeases(deps, pk)).toHaveLength(1);
    clock.advance(LOCK + SECOND);
    expect(await ledger.receive(10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect(Object.fromEntries(ledger.completed)).toEqual({ t0: 1, t1: 1, t2: 1 });
  });
});

// Pins lease items and their deletes: a ticket has none (its counter entry leaves with the next take); the
// twins on a ticketed queue are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned batch complete: DynamoDB refusing the look for the lease', () => {
  it('D3, R6: in another process, a look for the lease refused for load answers the complete; the lapse deletes the lease instead', async () => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name);
    await sendPositioned(deps, entity, jsonMessages('q', 2));
    const got = await ledger.receive(2);
    forgetRememberedLeases();
    const refusing = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'Query' && String(c.input.ExpressionAttributeValues?.[':pk']?.S ?? '').startsWith('lease/') } },
      { fastRetries: true },
    );
    expect(await ledger.completeAll(got, apiClient({ ...deps, db: refusing.db }))).toEqual({ status: 200, ok: [true, true] });
    expect(refusing.log.throttledOut).toBeGreaterThan(0);
    expect(await readLeases(deps, pk)).toHaveLength(1);
    clock.advance(LOCK + SECOND);
    expect(await ledger.receive(10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
  });
});

describe('positioned batch complete: the model', () => {
  it.each([5, 23, 71])(
    'R1, R4, R5, R6, D3: random sends, batch receives, batch completes of whole and part leases, abandons, renews, other processes, clock moves, crashes and throttles never lose or double a message, nor hand one out under two valid locks (seed %i)',
    { timeout: 120_000 },
    async (seed) => {
      const { name, entity, pk } = await positionedQueue();
      const random = seededRandom(seed);
      const healthy = apiClient(deps);
      const ledger = new Ledger(name);
      const faulty = () => {
        const roll = random();
        const phase = random() < 0.5 ? 'before' : 'after';
        if (roll < 0.1) return apiClient(faultyDeps(deps, { match: () => true, nth: 1 + Math.floor(random() * 8), phase }));
        if (roll < 0.2) {
          const store = faultyStore(deps.db, { throttle: { when: (c) => c.operation !== 'Query' && random() < 0.3 } }, { fastRetries: true });
          return apiClient({ ...deps, db: store.db });
        }
        return healthy;
      };
      const sent: string[] = [];
      let held: Json[] = [];
      /** Messages whose batch complete failed whole (a crash): deleted or not, its holder cannot tell. */
      const maybeCompleted = new Set<string>();
      for (let step = 0; step < 60; step++) {
        const roll = random();
        // Another process: it knows none of the leases this one claimed.
        if (random() < 0.2) forgetRememberedLeases();
        if (roll < 0.2) {
          const bodies = jsonMessages(`m${step}-`, 1 + Math.floor(random() * 6));
          await sendPositioned(deps, entity, bodies);
          sent.push(...bodies.map((b) => (b.body as { n: string }).n));
        } else if (roll < 0.45) {
          held.push(...(await ledger.receive(1 + Math.floor(random() * 8), faulty())));
        } else if (roll < 0.7 && held.length > 0) {
          // Often a whole lease (the last receive's messages), else a random part of what is held.
          const some = random() < 0.5 ? held.slice(-1 - Math.floor(random() * held.length)) : held.filter(() => random() < 0.5);
          held = held.filter((m) => !some.includes(m));
          const { status, ok } = await ledger.completeAll(some, faulty());
          // A request that failed whole may have deleted some before it died; a token answered with an error deleted nothing.
          if (status !== 200) for (const m of some) maybeCompleted.add(m.body.n);
          else expect(ok.length).toBe(some.length);
        } else if (roll < 0.8 && held.length > 0) {
          const m = held[Math.floor(random() * held.length)]!;
          const res = await faulty()('POST', `/queues/${name}/messages/${m.sequenceNumber}/renew-lock`, { lockToken: m.lockToken });
          if (res.status === 200) ledger.lockedUntil.set(m.sequenceNumber, Date.parse(res.body.lockedUntil));
        } else if (roll < 0.88 && held.length > 0) {
          const m = held.splice(Math.floor(random() * held.length), 1)[0]!;
          const res = await faulty()('POST', `/queues/${name}/messages/${m.sequenceNumber}/abandon`, { lockToken: m.lockToken });
          // Abandoned or not, the holder lets it go: the lock it may still hold ends at its lease's end.
          if (res.status === 204) ledger.lockedUntil.delete(m.sequenceNumber);
        } else {
          clock.advance(Math.floor(random() * 1.5 * LOCK));
        }
      }
      clock.advance(LOCK + SECOND);
      await ledger.drain(40);
      // Each message completed exactly once; one missing only where its complete may have landed unseen.
      expect([...ledger.completed.entries()].filter(([, n]) => n !== 1)).toEqual([]);
      for (const body of ledger.completed.keys()) expect(sent).toContain(body);
      for (const body of sent.filter((b) => !ledger.completed.has(b))) expect([...maybeCompleted], `${body} lost`).toContain(body);
      expect(await messagesLeft(deps, pk)).toEqual([]);
      clock.advance(LOCK + SECOND);
      expect(await ledger.receive(10)).toEqual([]);
      expect(await readLeases(deps, pk)).toEqual([]);
    },
  );
});
