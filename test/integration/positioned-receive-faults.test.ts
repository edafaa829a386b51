/**
 * A positioned queue's receive and complete (lib/broker/positioned-receive.ts) when a Lambda
 * dies part-way (test/support/faults.ts) or DynamoDB refuses a call past the SDK's retries or
 * meets a conflicting write (test/support/dynamo-faults.ts), through the API: nothing is lost,
 * doubled or stranded (D3), nothing is handed out under two valid locks at once (R1), and a
 * receive answers with what it claimed (R10). Racing receivers, with throttles and conflicts on
 * the cursor, each take every message once.
 */
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { jsonMessages, queueEntity, sendPositioned } from '../support/positioned-queue.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { faultyStore, seededRandom, type StoreCall } from '../support/dynamo-faults.js';
import { drawPositions, HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { readCursor, readLeases } from '../../lib/store/leases.js';
import { positionedPk } from '../../lib/store/keys.js';
import { RECEIVE_AND_DELETE_LOCK_MS } from '../../lib/broker/positioned-receive.js';
import type { Deps } from '../../lib/deps.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'posrecvf')), newEntityLayout: positionedLayout };
});

async function positionedQueue(maxDeliveryCount = 100) {
  const name = `fq${++queues}`;
  expect((await apiClient(deps)('PUT', `/queues/${name}`, { lockDuration: 'PT30S', maxDeliveryCount })).status).toBe(201);
  const entity = await queueEntity(deps, name);
  return { name, entity, pk: positionedPk(entity.eid, 'active', 0) };
}

/**
 * Every hand-out and complete of a test. R1: a message is never handed out while an earlier
 * hand-out of it still holds its lock; each body is completed once.
 */
class Ledger {
  readonly lockedUntil = new Map<string, number>();
  readonly completed = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly api: ReturnType<typeof apiClient>,
  ) {}
  async receive(body: Record<string, unknown>, via = this.api): Promise<{ status: number; messages: Json[] }> {
    const res = await via('POST', `/queues/${this.name}/messages/receive`, { maxWaitTime: 'PT0S', ...body });
    const messages = (res.status === 200 ? res.body.messages : []) as Json[];
    const now = clock.now();
    for (const m of messages) {
      const held = this.lockedUntil.get(m.sequenceNumber) ?? -Infinity;
      expect(held <= now, `message ${m.sequenceNumber} handed out under two valid locks`).toBe(true);
      if (m.lockedUntil) this.lockedUntil.set(m.sequenceNumber, Date.parse(m.lockedUntil));
      else this.done(m);
    }
    return { status: res.status, messages };
  }
  done(m: Json) {
    this.completed.set(m.body.n, (this.completed.get(m.body.n) ?? 0) + 1);
    this.lockedUntil.delete(m.sequenceNumber);
  }
  async complete(m: Json, via = this.api) {
    const res = await via('POST', `/queues/${this.name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
    if (res.status === 204) this.done(m);
    return res.status;
  }
  /** Receives and completes until nothing is left, letting locks lapse when a receive finds nothing. */
  async drain(rounds = 20) {
    for (let round = 0; round < rounds; round++) {
      const { messages } = await this.receive({ maxMessages: 10 });
      for (const m of messages) expect(await this.complete(m)).toBe(204);
      if (messages.length === 0) clock.advance(LOCK + HOLE_AFTER_MS);
      if (messages.length === 0 && round > 2) {
        const again = await this.receive({ maxMessages: 10 });
        for (const m of again.messages) expect(await this.complete(m)).toBe(204);
        if (again.messages.length === 0) return;
      }
    }
  }
}

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);

/** Crash points of a receive that takes a lapsed lease back, tombstones a hole and claims past it. */
const receiveCrashes: [string, Fault][] = [
  ['the take-back of a lapsed message, before it', { match: both(is(UpdateCommand), onPrefix('pos/')) }],
  ['the take-back of a lapsed message, after it', { match: both(is(UpdateCommand), onPrefix('pos/')), phase: 'after' }],
  ['a tombstone, after it', { match: both(is(PutCommand), (c) => inputOf(c).Item?.tomb === 1), phase: 'after' }],
  ['the cursor write, before it', { match: both(is(PutCommand), onPrefix('cursor/')) }],
  ['the cursor write, after it', { match: both(is(PutCommand), onPrefix('cursor/')), phase: 'after' }],
  ['the lease write, before it', { match: both(is(PutCommand), onPrefix('lease/')) }],
  ['the lease write, after it', { match: both(is(PutCommand), onPrefix('lease/')), phase: 'after' }],
  ["the lapsed lease's delete, before it", { match: both(is(DeleteCommand), onPrefix('lease/')) }],
];

/** Crash points of a receive-and-delete's put-back of a message whose delete failed (leases.ts `releaseLease`). */
const releaseCrashes: [string, Fault][] = [
  ['the take-back, before it', { match: both(is(UpdateCommand), onPrefix('pos/')) }],
  ['the take-back, after it', { match: both(is(UpdateCommand), onPrefix('pos/')), phase: 'after' }],
  ['the cursor write, before it', { match: both(is(PutCommand), onPrefix('cursor/')), nth: 2 }],
  ['the cursor write, after it', { match: both(is(PutCommand), onPrefix('cursor/')), nth: 2, phase: 'after' }],
  ["the lease's delete, before it", { match: both(is(DeleteCommand), onPrefix('lease/')) }],
];

// Injects at the cursor claim's calls (cursor and lease writes, a complete's message delete), which a ticketed
// queue's head and complete never make: their twins at the ticket's own calls are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned receive: a Lambda dying at each step', () => {
  it.each(receiveCrashes)('D3, R1, R6: a peek-lock receive dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const { name, entity, pk } = await positionedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('a', 3));
    await sendPositioned(deps, entity, jsonMessages('b', 1));
    await drawPositions(deps, pk, 2); // a sender that died: a hole
    await sendPositioned(deps, entity, jsonMessages('d', 1));
    const held = await ledger.receive({ maxMessages: 2 });
    expect(await ledger.complete(held.messages[0])).toBe(204);
    clock.advance(Math.max(LOCK, HOLE_AFTER_MS) + SECOND);
    const dying = faultyDeps(deps, fault);
    const crashed = await ledger.receive({ maxMessages: 10 }, apiClient(dying));
    expect(dying.faults.tripped).toBe(1);
    expect(crashed.status).toBe(500);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ a0: 1, a1: 1, a2: 1, b0: 1, d0: 1 });
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
  });

  it('R3, R10: a receive-and-delete whose delete fails answers the others and puts that message back in line at once', async () => {
    const { name, entity } = await positionedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('r', 3));
    const failing = faultyDeps(deps, { match: both(is(DeleteCommand), onPrefix('pos/')), nth: 2, afterwards: 'lives' });
    const first = await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 }, apiClient(failing));
    // The deletes run together: those that landed are the answer.
    expect(first.status).toBe(200);
    expect(first.messages.map((m) => m.body.n)).toEqual(['r0', 'r2']);
    // Taken back (so a delete still on its way under the claim fails), yet never delivered: no delivery counted.
    const back = await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 });
    expect(back.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['r1', 1]]);
    expect(Object.fromEntries(ledger.completed)).toEqual({ r0: 1, r1: 1, r2: 1 });
  });

  it.each(releaseCrashes)(
    'D3, R3, R10: a receive-and-delete whose delete is throttled, dying at %s of its put-back, loses and doubles nothing',
    async (_, fault) => {
      const { name, entity, pk } = await positionedQueue();
      const ledger = new Ledger(name, apiClient(deps));
      await sendPositioned(deps, entity, jsonMessages('x', 3));
      let seen = 0;
      const store = faultyStore(deps.db, { throttle: { when: (c) => positionDeletes(c) && ++seen === 2 } }, { fastRetries: true });
      const dying = faultyDeps({ ...deps, db: store.db }, fault);
      const first = await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 }, apiClient(dying));
      expect(dying.faults.tripped).toBe(1);
      expect(first.messages).toHaveLength(2);
      // Back at once if the put-back got as far as the cursor, else when the claim's short lock lapses.
      clock.advance(RECEIVE_AND_DELETE_LOCK_MS);
      await ledger.drain();
      expect(Object.fromEntries(ledger.completed)).toEqual({ x0: 1, x1: 1, x2: 1 });
      expect(await readLeases(deps, pk)).toEqual([]);
    },
  );

  it.each(releaseCrashes)('R3: a receive-and-delete whose put-back dies at %s counts no delivery for the message it did not hand out', async (_, fault) => {
    const { name, entity } = await positionedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('y', 3));
    let seen = 0;
    const store = faultyStore(deps.db, { throttle: { when: (c) => positionDeletes(c) && ++seen === 2 } }, { fastRetries: true });
    const dying = faultyDeps({ ...deps, db: store.db }, fault);
    expect((await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 }, apiClient(dying))).messages).toHaveLength(2);
    expect(dying.faults.tripped).toBe(1);
    clock.advance(RECEIVE_AND_DELETE_LOCK_MS);
    const next = await ledger.receive({ maxMessages: 3 });
    expect(next.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['y1', 1]]);
    expect(await ledger.complete(next.messages[0])).toBe(204);
  });

  it('D3, R4, R5: a complete dying before its delete changes nothing (the retry completes); after it, the retry answers MessageLockLost', async () => {
    const { name, entity } = await positionedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('c', 2));
    const [x, y] = (await ledger.receive({ maxMessages: 2 })).messages;
    const before = faultyDeps(deps, { match: both(is(DeleteCommand), onPrefix('pos/')) });
    expect(await ledger.complete(x, apiClient(before))).toBe(500);
    expect(await ledger.complete(x)).toBe(204);
    const after = faultyDeps(deps, { match: both(is(DeleteCommand), onPrefix('pos/')), phase: 'after' });
    expect(await ledger.complete(y, apiClient(after))).toBe(500);
    expect(await ledger.complete(y)).toBe(410);
    clock.advance(LOCK + SECOND);
    expect((await ledger.receive({ maxMessages: 10 })).messages).toEqual([]);
  });
});

/** The partition key a call names, as the SDK sends it (marshalled). */
const pkSent = (c: StoreCall) => String((c.input.Item ?? c.input.Key)?.pk?.S ?? '');
const cursorWrites = (c: StoreCall) => c.operation === 'PutItem' && pkSent(c).startsWith('cursor/');
const leaseWrites = (c: StoreCall) => c.operation === 'PutItem' && pkSent(c).startsWith('lease/');
const positionDeletes = (c: StoreCall) => c.operation === 'DeleteItem' && pkSent(c).startsWith('pos/');

/** An API whose store meets throttles and conflicts as planned, beside a healthy one. */
function faultyApi(d: Deps, plan: Parameters<typeof faultyStore>[1], seed = 3) {
  const store = faultyStore(d.db, plan, { fastRetries: true, random: seededRandom(seed) });
  return { api: apiClient({ ...d, db: store.db }), log: store.log };
}

// Injects at the cursor claim's calls (cursor and lease writes, a complete's message delete), which a ticketed
// queue's head and complete never make: their twins at the ticket's own calls are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned receive: DynamoDB refusing calls', () => {
  it("R10: a lease write throttled past the SDK's retries still hands out the claim, which the next claim's repair keeps", async () => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('t', 4));
    const { api, log } = faultyApi(deps, { throttle: { when: leaseWrites } });
    const ledger = new Ledger(name, api);
    const got = await ledger.receive({ maxMessages: 4 });
    expect(got.status).toBe(200);
    expect(log.throttledOut).toBeGreaterThan(0);
    expect(got.messages.map((m) => m.body.n)).toEqual(['t0', 't1', 't2', 't3']);
    expect(await readLeases(deps, pk)).toEqual([]);
    const healthy = new Ledger(name, apiClient(deps));
    expect((await healthy.receive({ maxMessages: 4 })).messages).toEqual([]);
    expect((await readLeases(deps, pk)).map((l) => l.e.length)).toEqual([4]);
    for (const m of got.messages.slice(0, 2)) expect(await healthy.complete(m)).toBe(204);
    // Past the lock the token states, the repaired lease decides (R5), and the rest come back.
    clock.advance(LOCK + SECOND);
    expect(await healthy.complete(got.messages[2])).toBe(410);
    const back = await healthy.receive({ maxMessages: 4 });
    expect(back.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['t2', 2],
      ['t3', 2],
    ]);
  });

  it('R10, R3, R6: a receive-and-delete whose lease write and deletes were throttled out puts its messages back in line at once, counting no delivery', async () => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('u', 2));
    const { api, log } = faultyApi(deps, { throttle: { when: (c) => leaseWrites(c) || positionDeletes(c) } });
    const got = await api('POST', `/queues/${name}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages: 2, mode: 'receiveAndDelete' });
    expect(log.throttledOut).toBeGreaterThanOrEqual(2);
    expect(got.status === 503 || got.body.messages.length === 0, JSON.stringify(got.body)).toBe(true);
    // The release took the claim back from its record though no lease item was written.
    expect((await readCursor(deps, pk)).back?.map(([p]) => p)).toEqual([1, 2]);
    const healthy = new Ledger(name, apiClient(deps));
    const peeked = (await apiClient(deps)('GET', `/queues/${name}/messages?maxMessages=10`)).body.messages as Json[];
    expect(peeked.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['u0', 0],
      ['u1', 0],
    ]);
    const again = await healthy.receive({ maxMessages: 2 });
    expect(again.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['u0', 1],
      ['u1', 1],
    ]);
  });

  it('R8, R3, R2: a receive-and-delete whose lease, deletes and release were all refused: peek counts no delivery, and after the short lock the next receive repairs and hands it out at once', async () => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('v', 1));
    let cursorWrites = 0;
    const cursorWrite = (c: StoreCall) => c.operation === 'PutItem' && pkSent(c).startsWith('cursor/') && ++cursorWrites > 1;
    const { api } = faultyApi(deps, { throttle: { when: (c) => leaseWrites(c) || positionDeletes(c) || cursorWrite(c) } });
    const got = await api('POST', `/queues/${name}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages: 1, mode: 'receiveAndDelete' });
    expect(got.status === 503 || got.body.messages.length === 0, JSON.stringify(got.body)).toBe(true);
    // Held by the claim's record alone (no lease item), which hands nothing out.
    expect((await readCursor(deps, pk)).claim?.nd).toBe(1);
    expect(await readLeases(deps, pk)).toEqual([]);
    const peek = async () => ((await apiClient(deps)('GET', `/queues/${name}/messages`)).body.messages as Json[]).map((m) => [m.body.n, m.deliveryCount]);
    expect(await peek()).toEqual([['v0', 0]]);
    clock.advance(RECEIVE_AND_DELETE_LOCK_MS + SECOND);
    const again = await new Ledger(name, apiClient(deps)).receive({ maxMessages: 1 });
    expect(again.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['v0', 1]]);
  });

  it('R5, R4: the holder of a claim whose lease write was throttled out renews and abandons under its valid lock before any claim repairs it', async () => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('w', 3));
    const { api } = faultyApi(deps, { throttle: { when: leaseWrites } });
    const got = await new Ledger(name, api).receive({ maxMessages: 3 });
    expect(got.messages.map((m) => m.body.n)).toEqual(['w0', 'w1', 'w2']);
    expect(await readLeases(deps, pk)).toEqual([]);
    const healthy = apiClient(deps);
    const path = (m: Json, verb: string) => `/queues/${name}/messages/${m.sequenceNumber}/${verb}`;
    // The settlement writes the lease from the cursor's record, as the next claim would.
    clock.advance(10 * SECOND);
    const renewed = await healthy('POST', path(got.messages[0], 'renew-lock'), { lockToken: got.messages[0].lockToken });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect((await healthy('POST', path(got.messages[1], 'abandon'), { lockToken: got.messages[1].lockToken })).status).toBe(204);
    expect((await healthy('POST', path(got.messages[2], 'complete'), { lockToken: got.messages[2].lockToken })).status).toBe(204);
    const ledger = new Ledger(name, healthy);
    const again = await ledger.receive({ maxMessages: 3 });
    expect(again.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['w1', 2]]);
    // Past its first lock end the renewed one is still held, and is completed under its token.
    clock.advance(25 * SECOND);
    expect((await ledger.receive({ maxMessages: 3 })).messages).toEqual([]);
    expect((await healthy('POST', path(got.messages[0], 'complete'), { lockToken: got.messages[0].lockToken })).status).toBe(204);
    expect(await ledger.complete(again.messages[0])).toBe(204);
    clock.advance(LOCK);
    expect((await ledger.receive({ maxMessages: 3 })).messages).toEqual([]);
  });

  it('R1, R10: throttles and conflicts on the cursor write are retried; the receive answers what one claim took', async () => {
    const { name, entity } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('u', 5));
    // The first cursor write is throttled past the SDK's retries, the second meets a conflict.
    let writes = 0;
    const nth = (n: number) => (c: StoreCall) => cursorWrites(c) && ++writes === n;
    const { api, log } = faultyApi(deps, { throttle: { when: nth(1) }, conflict: { when: (c) => cursorWrites(c) && writes === 2 } });
    const ledger = new Ledger(name, api);
    const got = await ledger.receive({ maxMessages: 5 });
    expect(got.status).toBe(200);
    expect(log.throttledOut).toBe(1);
    expect(log.conflicted).toBe(1);
    expect(got.messages.map((m) => m.body.n)).toEqual(['u0', 'u1', 'u2', 'u3', 'u4']);
  });

  it("R4, R9: a complete throttled past the SDK's retries answers Throttled (retryable) and changes nothing; the retry completes", async () => {
    const { name, entity } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('v', 2));
    const healthy = new Ledger(name, apiClient(deps));
    const [x, y] = (await healthy.receive({ maxMessages: 2 })).messages;
    const { api } = faultyApi(deps, { throttle: { when: positionDeletes } });
    const single = await api('POST', `/queues/${name}/messages/${x.sequenceNumber}/complete`, { lockToken: x.lockToken });
    expect(single.status).toBe(503);
    expect(single.body.error).toMatchObject({ code: 'Throttled', retryable: true });
    const batch = await api('POST', `/queues/${name}/messages/complete`, { lockTokens: [y.lockToken] });
    expect(batch.status).toBe(200);
    expect(batch.body.results[0].error).toMatchObject({ code: 'Throttled', retryable: true });
    expect(await healthy.complete(x)).toBe(204);
    expect(await healthy.complete(y)).toBe(204);
  });

  it("R10, R3: a receive-and-delete whose delete is throttled past the SDK's retries answers the others; that message is back at once", async () => {
    const { name, entity } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('w', 3));
    let seen = 0;
    const { api } = faultyApi(deps, { throttle: { when: (c) => positionDeletes(c) && ++seen === 2 } });
    const ledger = new Ledger(name, api);
    const first = await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 });
    expect(first.status).toBe(200);
    expect(first.messages).toHaveLength(2);
    const back = await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 });
    expect(back.messages).toHaveLength(1);
    expect(Object.fromEntries(ledger.completed)).toEqual({ w0: 1, w1: 1, w2: 1 });
  });
});

/** A position's take-back (leases.ts `takeBackMessage`): the one UpdateItem of a message. */
const positionUpdates = (c: StoreCall) => c.operation === 'UpdateItem' && pkSent(c).startsWith('pos/');

/**
 * Ways a receive-and-delete's put-back of a message whose delete was refused goes: at once, or
 * refused in turn (at its take-back, or at its cursor write after the take-back landed), so the
 * short lock's lapse takes the message back instead. `plan` refuses the second message's delete
 * and what the put-back is to meet.
 */
const putBacks: [string, boolean, () => Parameters<typeof faultyStore>[1]][] = [
  [
    'put back at once',
    true,
    () => {
      let seen = 0;
      return { throttle: { when: (c) => positionDeletes(c) && ++seen === 2 } };
    },
  ],
  [
    'its take-back refused, back at the lapse',
    false,
    () => {
      let seen = 0;
      return { throttle: { when: (c) => (positionDeletes(c) && ++seen === 2) || positionUpdates(c) } };
    },
  ],
  [
    'its cursor write refused after the take-back, back at the lapse',
    false,
    () => {
      let seen = 0;
      let cursors = 0;
      return { throttle: { when: (c) => (positionDeletes(c) && ++seen === 2) || (cursorWrites(c) && ++cursors > 1) } };
    },
  ],
];

// Injects at the cursor claim's calls (cursor and lease writes, a complete's message delete), which a ticketed
// queue's head and complete never make: their twins at the ticket's own calls are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned receive-and-delete: a delete refused counts no delivery', () => {
  it.each(putBacks)('R3, R10: %s, the message is handed to its next peek-lock receiver at deliveryCount 1', async (_, atOnce, plan) => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('z', 3));
    const ledger = new Ledger(name, faultyApi(deps, plan()).api);
    const first = await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 });
    expect(first.status).toBe(200);
    expect(first.messages.map((m) => m.body.n)).toEqual(['z0', 'z2']);
    // In line at once, or still under the short lock until it lapses.
    expect(((await readCursor(deps, pk)).back ?? []).length).toBe(atOnce ? 1 : 0);
    clock.advance(RECEIVE_AND_DELETE_LOCK_MS);
    const healthy = new Ledger(name, apiClient(deps));
    const next = await healthy.receive({ maxMessages: 3 });
    expect(next.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['z1', 1]]);
    // Its real deliveries still count (R3), and the take-back still fences: the lapsed token's complete fails.
    clock.advance(LOCK + SECOND);
    const again = await healthy.receive({ maxMessages: 3 });
    expect(again.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['z1', 2]]);
    expect(await healthy.complete(next.messages[0])).toBe(410);
    expect(await healthy.complete(again.messages[0])).toBe(204);
    clock.advance(LOCK + SECOND);
    expect((await healthy.receive({ maxMessages: 3 })).messages).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
  });

  it.each(putBacks)('D2: %s, maxDeliveryCount 1 does not dead-letter it early: it is delivered once, then dead-lettered', async (_, _atOnce, plan) => {
    const { name, entity } = await positionedQueue(1);
    await sendPositioned(deps, entity, jsonMessages('d', 2));
    const ledger = new Ledger(name, faultyApi(deps, plan()).api);
    expect((await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 2 })).messages.map((m) => m.body.n)).toEqual(['d0']);
    clock.advance(RECEIVE_AND_DELETE_LOCK_MS);
    const healthy = new Ledger(name, apiClient(deps));
    const dlq = apiClient(deps);
    const deadLetters = async () =>
      ((await dlq('GET', `/queues/${name}/$deadletterqueue/messages?maxMessages=10`)).body.messages as Json[]).map((m) => m.body.n);
    const [m] = (await healthy.receive({ maxMessages: 2 })).messages;
    expect(m).toMatchObject({ body: { n: 'd1' }, deliveryCount: 1 });
    expect(await deadLetters()).toEqual([]);
    // Its one delivery's lock lapses: now it is past maxDeliveryCount, and the next claim dead-letters it.
    clock.advance(LOCK + SECOND);
    expect((await healthy.receive({ maxMessages: 2 })).messages).toEqual([]);
    expect(await deadLetters()).toEqual(['d1']);
  });
});

describe('positioned receive: racing receivers', () => {
  it(
    'R1, R2: 8 receivers of one message and 2 of 10, with throttles and conflicts on the cursor, each take every message once',
    { timeout: 120_000 },
    async () => {
      const { name, entity } = await positionedQueue();
      for (let i = 0; i < 4; i++) await sendPositioned(deps, entity, jsonMessages(`r${i}-`, 10));
      const { api, log } = faultyApi(deps, { throttle: { when: cursorWrites, rate: 0.2 }, conflict: { when: cursorWrites, rate: 0.1 } }, 11);
      const ledger = new Ledger(name, api);
      const receiver = (want: number) => async () => {
        for (let k = 0; k < 60 && ledger.completed.size < 40; k++) {
          const { messages } = await ledger.receive({ maxMessages: want });
          for (const m of messages) expect(await ledger.complete(m)).toBe(204);
        }
      };
      await Promise.all([...Array.from({ length: 8 }, () => receiver(1)), ...Array.from({ length: 2 }, () => receiver(10))].map((r) => r()));
      expect(log.throttled + log.conflicted).toBeGreaterThan(0);
      expect(ledger.completed.size).toBe(40);
      expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
    },
  );
});

describe('positioned receive: the model', () => {
  it.each([17, 42])(
    'R1, R3, R5, R6, R10, D3: random sends, peek-lock and receive-and-delete receives, completes, clock moves, crashes and throttles never lose or double a message, nor hand one out under two valid locks (seed %i)',
    { timeout: 120_000 },
    async (seed) => {
      const { name, entity } = await positionedQueue();
      const random = seededRandom(seed);
      const healthy = apiClient(deps);
      const ledger = new Ledger(name, healthy);
      const faulty = () => {
        const roll = random();
        // A crash after a delete landed (a complete, or a receive-and-delete) removes a message whose
        // holder never learns it: left out, so that every message sent is accounted for below.
        const phase = random() < 0.5 ? 'before' : 'after';
        if (roll < 0.1)
          return apiClient(faultyDeps(deps, { match: (c) => phase === 'before' || !is(DeleteCommand)(c), nth: 1 + Math.floor(random() * 6), phase }));
        if (roll < 0.2) return faultyApi(deps, { throttle: { when: (c) => c.operation !== 'Query' && random() < 0.3 } }, Math.floor(random() * 1000)).api;
        return healthy;
      };
      const sent: string[] = [];
      /** Messages held under a lock, to complete. */
      const held: Json[] = [];
      /** Messages whose complete failed with a crash: deleted or not, its holder cannot tell. */
      const maybeCompleted: string[] = [];
      for (let step = 0; step < 60; step++) {
        const roll = random();
        if (roll < 0.25) {
          const n = 1 + Math.floor(random() * 5);
          const bodies = jsonMessages(`m${step}-`, n);
          await sendPositioned(deps, entity, bodies);
          sent.push(...bodies.map((b) => (b.body as { n: string }).n));
        } else if (roll < 0.6) {
          const mode = random() < 0.2 ? 'receiveAndDelete' : 'peekLock';
          const got = await ledger.receive({ mode, maxMessages: 1 + Math.floor(random() * 10) }, faulty());
          held.push(...got.messages.filter((m) => m.lockToken));
        } else if (roll < 0.85 && held.length > 0) {
          const m = held.splice(Math.floor(random() * held.length), 1)[0]!;
          if ((await ledger.complete(m, faulty())) === 500) maybeCompleted.push(m.body.n);
        } else {
          clock.advance(Math.floor(random() * 2 * LOCK));
        }
      }
      clock.advance(LOCK + HOLE_AFTER_MS);
      await ledger.drain(40);
      // Each message completed or received-and-deleted exactly once; one missing only where a
      // complete died after its delete may have landed (the entity read beside it failed).
      expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
      for (const body of ledger.completed.keys()) expect(sent).toContain(body);
      for (const body of sent.filter((b) => !ledger.completed.has(b))) expect(maybeCompleted, `${body} lost`).toContain(body);
      const left = await deps.db.send(
        new QueryCommand({
          TableName: deps.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': positionedPk(entity.eid, 'active', 0) },
          ConsistentRead: true,
        }),
      );
      // No message left; a ticketed queue's completed ones leave `done` markers for a day (store/tickets.ts).
      expect((left.Items ?? []).filter((i) => !i.tomb && i.done === undefined)).toEqual([]);
    },
  );
});
