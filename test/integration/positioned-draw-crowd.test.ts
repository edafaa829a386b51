/**
 * Concurrent sends of one process to one positioned partition share their position draws
 * (lib/store/positions.ts `joinDraw`): a send that arrives while a draw of its partition is in
 * flight joins the next one, and each gets its own contiguous range, in the order it joined.
 * Proved on cursor-claimed and ticketed queues: numbers grow in the order each sender sent
 * (S2), every message is received once (R1), a request is delivered whole or not at all and a
 * failed one leaves only its own positions as holes (S1), duplicates within one crowd are
 * stored once (S7), and a shared draw that DynamoDB throttles out or that the process dies
 * after fails only the sends that joined it, retryably, losing nothing (D3).
 *
 * A slow first draw (an interleave of test/support/faults.ts) lets a crowd gather behind it;
 * throttles through dynamo-faults.ts, crashes through faults.ts.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import type { EntityLayout } from '../../lib/deps.js';
import { POSITION_COUNTER_PK_PREFIX, positionedPk } from '../../lib/store/keys.js';
import { CounterRetired, HOLE_AFTER_MS, joinDraw, retireCounter } from '../../lib/store/positions.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { both, faultyClient, inputOf, is, type Fault } from '../support/faults.js';
import { drawnIn, eidOf, positionedIn, type PositionedDeps } from '../support/positioned-queues.js';
import { ManualClock, testDeps } from '../support/table.js';
import { TicketLedger } from '../support/ticketed-queues.js';

const LOCK_MS = 30_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

/** A position draw (`drawPositions`), not a ticket's take, which writes the same counter item. */
const isDraw = both(
  is(UpdateCommand),
  (c) => String(inputOf(c).Key?.pk ?? '').startsWith(POSITION_COUNTER_PK_PREFIX) && /ADD #next/.test(String(inputOf(c).UpdateExpression)),
);
/** The same, as dynamo-faults.ts sees a call; `shared`: drawing for more than one position (a crowd of single sends). */
const drawCall = (c: StoreCall, shared = false) =>
  c.operation === 'UpdateItem' &&
  String(c.input.Key?.pk?.S ?? '').startsWith(POSITION_COUNTER_PK_PREFIX) &&
  /ADD #next/.test(String(c.input.UpdateExpression)) &&
  (!shared || Number(c.input.ExpressionAttributeValues?.[':count']?.N) > 1);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** A first draw slow enough that the sends started beside it all arrive while it is in flight, also on a loaded machine. */
const slowFirstDraw: Fault = { match: isDraw, interleave: () => sleep(1000) };

const sendOne = (api: ReturnType<typeof apiClient>, queue: string, n: string, messageId = n) =>
  api('POST', `/queues/${queue}/messages`, { body: { n }, messageId });

/** A store-level view of one partition's draws: a client whose first draw waits for `release`. */
function heldFirstDraw(deps: PositionedDeps, db = deps.db) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = faultyClient(db, { match: isDraw, times: 1, interleave: () => released });
  return { ctx: { ...deps, db: held.db }, release, log: held.log };
}

describe('S2: requests of one process drawing together (store)', () => {
  let deps: PositionedDeps;
  beforeAll(async () => {
    deps = { ...(await testDeps(clock, 'drawcrowd')), newEntityLayout: 'positions' };
  });

  it('S2: requests that join while a draw is in flight share the next draw, their ranges in the order they joined', async () => {
    const pk = positionedPk('crowd-order', 'active', 0);
    const { ctx, release, log } = heldFirstDraw(deps);
    const first = joinDraw(ctx, pk, 1);
    const joined = [joinDraw(ctx, pk, 3), joinDraw(ctx, pk, 1), joinDraw(ctx, pk, 2)];
    release();
    expect(await first).toMatchObject({ first: 1, count: 1 });
    const draws = await Promise.all(joined);
    expect(draws.map((d) => [d.first, d.count])).toEqual([
      [2, 3],
      [5, 1],
      [6, 2],
    ]);
    expect(new Set(draws.map((d) => d.at)).size).toBe(1);
    expect(log.seen).toBe(2);
    // Nobody in flight: the next request draws at once, alone.
    expect(await joinDraw(ctx, pk, 1)).toMatchObject({ first: 8, count: 1 });
    expect(log.seen).toBe(3);
  });

  it('S1, D3: a shared draw throttled out fails the requests that joined it, and only them; it drew nothing', async () => {
    const pk = positionedPk('crowd-throttle', 'active', 0);
    const plan: StoreFaultPlan = { throttle: { when: (c) => drawCall(c, true) } };
    const store = faultyStore(deps.db, plan, { fastRetries: true });
    const { ctx, release } = heldFirstDraw(deps, store.db);
    const alone = joinDraw(ctx, pk, 1);
    const crowd = [joinDraw(ctx, pk, 1), joinDraw(ctx, pk, 2)];
    const settled = Promise.allSettled(crowd);
    release();
    expect(await alone).toMatchObject({ first: 1, count: 1 });
    // The crowd's draw is in flight now (it went out as the first one came back): this one waits for the next.
    const after = joinDraw(ctx, pk, 1);
    const outcomes = await settled;
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    for (const o of outcomes) expect((o as PromiseRejectedResult).reason.name).toBe('ProvisionedThroughputExceededException');
    expect(await after).toMatchObject({ first: 2, count: 1 });
    expect(store.log.throttledOut).toBe(1);
  });

  it('E4: a crowd drawing from a retired counter is refused whole: nothing drawn, nothing created', async () => {
    const pk = positionedPk('crowd-retired', 'active', 0);
    await retireCounter(deps, pk);
    const { ctx, release } = heldFirstDraw(deps);
    const all = [joinDraw(ctx, pk, 1), joinDraw(ctx, pk, 2), joinDraw(ctx, pk, 1)].map((p) =>
      p.then(
        () => 'drawn',
        (e: unknown) => e,
      ),
    );
    release();
    for (const outcome of await Promise.all(all)) expect(outcome).toBeInstanceOf(CounterRetired);
  });
});

for (const layout of ['positions', 'tickets'] as const satisfies readonly EntityLayout[]) {
  const kind = layout === 'tickets' ? 'ticketed' : 'cursor-claimed';
  describe(`S1, S2, R1: concurrent sends sharing draws into a ${kind} queue`, () => {
    let deps: PositionedDeps;
    let api: ReturnType<typeof apiClient>;
    let queues = 0;
    beforeAll(async () => {
      deps = { ...(await testDeps(clock, `drawcrowd${layout}`)), newEntityLayout: layout };
      api = apiClient(deps);
    });

    const newQueue = async (properties: Record<string, unknown> = {}) => {
      const name = `cq${++queues}`;
      const made = await api('PUT', `/queues/${name}`, { lockDuration: 'PT30S', maxDeliveryCount: 100, ...properties });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      return name;
    };
    /** A sending process of its own whose first draw is slow (`slowFirstDraw`) and whose draws are counted. */
    const process = (inner?: Fault) => {
      const crashing = inner ? faultyClient(deps.db, inner).db : deps.db;
      const slow = faultyClient(crashing, slowFirstDraw);
      return { api: apiClient({ ...deps, db: slow.db }), draws: slow.log };
    };
    const ledger = (queue: string) => new TicketLedger(queue, api, clock, LOCK_MS);

    it(`S2, R1: 16 clients sending 4 messages each through one process share draws; each client's messages are numbered and received in the order it sent them, each once`, async () => {
      const q = await newQueue();
      const sender = process();
      const numbers = new Map<string, bigint>();
      await Promise.all(
        Array.from({ length: 16 }, async (_, client) => {
          for (let i = 0; i < 4; i++) {
            const sent = await sendOne(sender.api, q, `c${client}-${i}`);
            expect(sent.status, JSON.stringify(sent.body)).toBe(201);
            numbers.set(`c${client}-${i}`, BigInt(sent.body.sequenceNumber as string));
          }
        }),
      );
      expect(sender.draws.seen).toBeLessThan(64);
      expect(await drawnIn(deps, await eidOf(deps, q))).toBe(64);
      const l = ledger(q);
      await l.drain();
      expect(l.order).toHaveLength(64);
      for (const [n, times] of l.completed) expect(times, n).toBe(1);
      expect(l.completed.size).toBe(64);
      for (let client = 0; client < 16; client++) {
        const mine = l.order.filter((n) => n.startsWith(`c${client}-`));
        expect(mine).toEqual([0, 1, 2, 3].map((i) => `c${client}-${i}`));
        const sequence = mine.map((n) => numbers.get(n)!);
        expect(sequence).toEqual([...sequence].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      }
      // Received in the order of the positions: the sequence numbers' order.
      const received = l.order.map((n) => numbers.get(n)!);
      expect(received).toEqual([...received].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    });

    it('S4, S2: batches and single sends drawing together: each batch contiguous and whole, in its order', async () => {
      const q = await newQueue();
      const sender = process();
      const sends = Array.from({ length: 6 }, (_, k) =>
        k % 2 === 0
          ? sender.api('POST', `/queues/${q}/messages/batch`, { messages: [0, 1, 2].map((i) => ({ body: { n: `b${k}-${i}` }, messageId: `b${k}-${i}` })) })
          : sendOne(sender.api, q, `s${k}`),
      );
      for (const sent of await Promise.all(sends)) expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      expect(sender.draws.seen).toBeLessThan(6);
      const items = (await positionedIn(deps, await eidOf(deps, q))).filter((i) => !i.tomb);
      expect(items).toHaveLength(12);
      for (const k of [0, 2, 4]) {
        const batch = items.filter((i) => String(i.messageId).startsWith(`b${k}-`));
        expect(batch.map((i) => i.messageId)).toEqual([0, 1, 2].map((i) => `b${k}-${i}`));
        expect(new Set(batch.map((i) => i.rf)).size).toBe(1);
        expect(batch.every((i) => i.rn === 3)).toBe(true);
      }
      const l = ledger(q);
      await l.drain();
      expect(l.completed.size).toBe(12);
      for (const [n, times] of l.completed) expect(times, n).toBe(1);
    });

    it('S1, D3: the process dying right after a shared draw, before the puts: its sends are not stored, their holes are tombstoned once aged, their retries land once', async () => {
      const q = await newQueue();
      const eid = await eidOf(deps, q);
      // The second draw is the crowd's that gathered behind the slow first one.
      const sender = process({ match: isDraw, nth: 2, phase: 'after' });
      const ids = Array.from({ length: 8 }, (_, i) => `m${i}`);
      const sent = await Promise.all(ids.map((n) => sendOne(sender.api, q, n)));
      const failed = ids.filter((_, i) => sent[i]!.status !== 201);
      for (const f of failed) expect(sent[ids.indexOf(f)]!.status).toBe(500);
      // Whichever send drew first, alone, was stored; the crowd behind it died with the process.
      expect(failed.length).toBeGreaterThanOrEqual(2);
      expect(failed.length).toBeLessThan(ids.length);
      const drawnBefore = await drawnIn(deps, eid);
      expect(drawnBefore).toBe(ids.length);
      // The dead crowd's positions hold nothing: holes, never a part of a request.
      expect((await positionedIn(deps, eid)).filter((i) => !i.tomb)).toHaveLength(ids.length - failed.length);
      for (const f of failed) expect((await sendOne(api, q, f)).status).toBe(201);
      clock.advance(HOLE_AFTER_MS);
      const l = ledger(q);
      await l.drain();
      expect([...l.completed.keys()].sort()).toEqual([...ids].sort());
      for (const [n, times] of l.completed) expect(times, n).toBe(1);
      expect(l.order.slice(-failed.length).sort()).toEqual([...failed].sort());
    });

    it('S1, D3: a shared draw DynamoDB throttles out: its sends answer a retryable 503, nothing is drawn for them, their retries land once', async () => {
      const q = await newQueue();
      const eid = await eidOf(deps, q);
      const plan: StoreFaultPlan = { throttle: { when: (c) => drawCall(c, true) } };
      const store = faultyStore(deps.db, plan, { fastRetries: true });
      const slow = faultyClient(store.db, slowFirstDraw);
      const sender = apiClient({ ...deps, db: slow.db });
      const ids = Array.from({ length: 8 }, (_, i) => `t${i}`);
      const sent = await Promise.all(ids.map((n) => sendOne(sender, q, n)));
      const refused = ids.filter((_, i) => sent[i]!.status !== 201);
      // Whichever send drew first, alone, was stored; the crowd behind it was throttled out.
      expect(refused.length).toBeGreaterThanOrEqual(2);
      expect(refused.length).toBeLessThan(ids.length);
      for (const r of refused) {
        const answer = sent[ids.indexOf(r)]!;
        expect(answer.status, JSON.stringify(answer.body)).toBe(503);
        expect(answer.body.error?.retryable ?? true).toBe(true);
      }
      expect(await drawnIn(deps, eid)).toBe(ids.length - refused.length);
      plan.throttle = undefined;
      for (const r of refused) expect((await sendOne(sender, q, r)).status).toBe(201);
      const l = ledger(q);
      await l.drain();
      expect([...l.completed.keys()].sort()).toEqual([...ids].sort());
      for (const [n, times] of l.completed) expect(times, n).toBe(1);
    });

    it('S7: duplicates sent at once through one process, sharing draws, are stored once and all answered with its number', async () => {
      const q = await newQueue({ requiresDuplicateDetection: true });
      const sender = process();
      const sent = await Promise.all(Array.from({ length: 6 }, () => sendOne(sender.api, q, 'same', 'dup')));
      for (const s of sent) expect(s.status, JSON.stringify(s.body)).toBe(201);
      expect(new Set(sent.map((s) => (s.body as Json).sequenceNumber)).size).toBe(1);
      expect(sender.draws.seen).toBeLessThan(6);
      const l = ledger(q);
      await l.drain();
      expect([...l.completed.entries()]).toEqual([['same', 1]]);
    });
  });
}
