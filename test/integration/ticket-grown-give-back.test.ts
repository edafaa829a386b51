/**
 * The give-back of a grown ticket (lib/broker/positioned-receive.ts `takeSize`, `notePass`;
 * ticket-receive.ts `handOutTicket`; store/tickets.ts `giveBack`): after a round that only
 * passed tombstones, a ticketed receive takes `PASS_GROWTH` times as many positions, and what
 * that ticket holds beyond its answer goes back in line at once, counting no delivery (R3, R10).
 * Here that give-back meets a Lambda dying before it and after it landed, a throttle past the
 * SDK's retries, and the ticket's lock ending before it is sent; afterwards every message is
 * delivered once, in order (S2), its deliveryCount one more than the times it was handed out
 * (R3), or than a dead receiver's lapse (its one allowance).
 *
 * The run of tombstones is made as a sender that gave up leaves it: positions drawn
 * (`drawPositions`) and tombstoned (`putTombstone`).
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { faultyClient, InjectedCrash, inputOf, is, type Fault } from '../support/faults.js';
import { faultyStore, type StoreCall, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';
import { newTicketedQueue } from '../support/ticketed-queues.js';
import { drawPositions, putTombstone } from '../../lib/store/positions.js';
import { POSITION_COUNTER_PK_PREFIX } from '../../lib/store/keys.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'ticketgrown')), newEntityLayout: 'tickets' };
});

const BODIES = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onCounter = (c: unknown) => is(UpdateCommand)(c) && pkOf(c).startsWith(POSITION_COUNTER_PK_PREFIX);
const isTake = (c: unknown) => onCounter(c) && String(inputOf(c).UpdateExpression).includes('taken =');
/** A give-back (store `giveBack`): of the rest of a ticket (`keep` > 0, a split) or of a whole one. */
const isGiveBack = (c: unknown) =>
  onCounter(c) && String(inputOf(c).UpdateExpression).startsWith('SET #u') && String(inputOf(c).ConditionExpression).startsWith('#u.u = :u');
const isSplitGiveBack = (c: unknown) => isGiveBack(c) && inputOf(c).ExpressionAttributeValues?.[':keep'] !== undefined;
const isTicketRead = (c: unknown) => is(QueryCommand)(c) && String(inputOf(c).ExpressionAttributeValues?.[':pk'] ?? '').startsWith('pos/');
/** The same calls as dynamo-faults.ts sees them (attribute values marshalled). */
const storeGiveBack = (c: StoreCall) =>
  c.operation === 'UpdateItem' &&
  String(c.input.Key?.pk?.S ?? '').startsWith(POSITION_COUNTER_PK_PREFIX) &&
  String(c.input.UpdateExpression).startsWith('SET #u') &&
  String(c.input.ConditionExpression).startsWith('#u.u = :u');

/**
 * A ticketed queue whose partition holds two tombstones (a sender that drew two positions and
 * gave up) and then a to g. A receive of one takes position 1 (a tombstone), then a grown
 * ticket of 8: the other tombstone and a to g. It hands out a and gives b to g back.
 */
async function grownQueue() {
  const q = await newTicketedQueue(deps, `gq${++queues}`);
  const draw = await drawPositions(deps, q.pk, 2);
  for (let p = draw.first; p < draw.first + draw.count; p++) expect(await putTombstone(deps, q.pk, p)).toBe(true);
  const api = apiClient(deps);
  for (const n of BODIES) expect((await api('POST', `/queues/${q.name}/messages`, { body: { n } })).status).toBe(201);
  return q;
}

/**
 * A receiving process of its own, every call recorded, `fault` on it. Once a crash is injected
 * the process is dead: every later call of the request dies too (a catch that gives back on its
 * way out never runs in a Lambda that died).
 */
function receiver(fault: Fault = { match: () => false }) {
  const calls: unknown[] = [];
  const { db: faulty, log } = faultyClient(deps.db, {
    ...fault,
    match: (c) => {
      calls.push(c);
      return fault.match(c);
    },
  });
  const state = { dead: false };
  const send = async (command: unknown, ...rest: unknown[]) => {
    if (state.dead) throw new InjectedCrash('the Lambda died');
    try {
      return await (faulty.send as (c: unknown, ...r: unknown[]) => Promise<unknown>)(command, ...rest);
    } catch (e) {
      if (e instanceof InjectedCrash) state.dead = true;
      throw e;
    }
  };
  const db = new Proxy(faulty, { get: (target, prop) => (prop === 'send' ? send : Reflect.get(target, prop, target)) });
  return { api: apiClient({ ...deps, db }), calls, log, state };
}

const receive = (api: ReturnType<typeof apiClient>, name: string, maxMessages: number) =>
  api('POST', `/queues/${name}/messages/receive`, { maxMessages, maxWaitTime: 'PT0S' });
const handedOut = (res: Json) => (res.status === 200 ? res.body.messages : []) as Json[];

/** Receives with a fresh process and completes everything until two receives find nothing (a lock's lapse between them); bodies and delivery counts. */
async function drain(name: string): Promise<[string, number][]> {
  const api = apiClient(deps);
  const got: [string, number][] = [];
  for (let empty = 0; empty < 2;) {
    const res = await receive(api, name, 10);
    expect(res.status).toBe(200);
    const messages = res.body.messages as Json[];
    if (messages.length === 0) {
      empty++;
      clock.advance(LOCK + SECOND);
      continue;
    }
    for (const m of messages) {
      got.push([m.body.n, m.deliveryCount]);
      expect((await api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    }
  }
  return got;
}

const takeSizes = (calls: unknown[]) => calls.filter(isTake).map((c) => Number(inputOf(c).ExpressionAttributeValues?.[':n']));

describe('a grown ticket gives back what its answer has no room for', () => {
  it('R2, R3, R10: after a tombstone a receive of one takes 8, hands out a, and b to g come next at once, each counted once', async () => {
    const { name } = await grownQueue();
    const r = receiver();

    const res = await receive(r.api, name, 1);

    expect(handedOut(res).map((m) => [m.body.n, m.deliveryCount])).toEqual([['a', 1]]);
    expect(takeSizes(r.calls)).toEqual([1, 8]);
    expect(r.calls.filter(isSplitGiveBack)).toHaveLength(1);
    const [a] = handedOut(res);
    expect((await r.api('POST', `/queues/${name}/messages/${a!.sequenceNumber}/complete`, { lockToken: a!.lockToken })).status).toBe(204);
    // Given back at once: no lapse to wait for.
    const next = await receive(apiClient(deps), name, 10);
    expect(handedOut(next).map((m) => [m.body.n, m.deliveryCount])).toEqual(BODIES.slice(1).map((n) => [n, 1]));
    for (const m of handedOut(next)) {
      expect((await apiClient(deps)('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    }
    expect(await drain(name)).toEqual([]);
  });
});

describe("a grown ticket's give-back: a Lambda dying", () => {
  it("D3, S2, R3: dying before the give-back loses and doubles nothing; after the lapse a to g come in order, counted as a dead receiver's", async () => {
    const { name } = await grownQueue();
    const r = receiver({ match: isSplitGiveBack });

    const res = await receive(r.api, name, 1);

    expect(r.log.tripped).toBe(1);
    expect(res.status).not.toBe(200);
    // The whole ticket lapses: R3's one allowance, a receiver that died holding it.
    clock.advance(LOCK + SECOND);
    expect(await drain(name)).toEqual(BODIES.map((n) => [n, 2]));
  });

  it("D3, S2, R3: dying after the give-back landed: b to g count no delivery, a counts the dead receiver's, in order after the lapse", async () => {
    const { name } = await grownQueue();
    const r = receiver({ match: isSplitGiveBack, phase: 'after' });

    const res = await receive(r.api, name, 1);

    expect(r.log.tripped).toBe(1);
    expect(res.status).not.toBe(200);
    clock.advance(LOCK + SECOND);
    expect(await drain(name)).toEqual([['a', 2], ...BODIES.slice(1).map((n): [string, number] => [n, 1])]);
  });

  it('D3, R1, R3: dying after the give-back landed: b to g are received at once counting no delivery, a after its lapse', async () => {
    const { name } = await grownQueue();
    const r = receiver({ match: isSplitGiveBack, phase: 'after' });
    expect((await receive(r.api, name, 1)).status).not.toBe(200);

    const next = await receive(apiClient(deps), name, 10);

    expect(handedOut(next).map((m) => [m.body.n, m.deliveryCount])).toEqual(BODIES.slice(1).map((n) => [n, 1]));
    for (const m of handedOut(next)) {
      expect((await apiClient(deps)('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    }
    expect(await drain(name)).toEqual([['a', 2]]);
  });
});

describe("a grown ticket's give-back refused", () => {
  const splitGiveBack = (c: StoreCall) => storeGiveBack(c) && c.input.ExpressionAttributeValues?.[':keep'] !== undefined;
  it.each([
    ['throttled past the retries', { throttle: { when: splitGiveBack } }],
    ['meeting a conflicting transaction', { conflict: { when: splitGiveBack } }],
  ] as [string, StoreFaultPlan][])(
    'R10, R3, S2: the give-back %s: the receive answers Throttled, gives all back, and a to g come in order counting no delivery',
    async (_, plan) => {
      const { name } = await grownQueue();
      const store = faultyStore(deps.db, plan, { fastRetries: true });
      const api = apiClient({ ...deps, db: store.db });

      const res = await receive(api, name, 1);

      expect(store.log.throttledOut + store.log.conflicted).toBe(1);
      expect(res.body.error?.code).toBe('Throttled');
      expect(await drain(name)).toEqual(BODIES.map((n) => [n, 1]));
    },
  );

  it('R10, R3, S2: every give-back throttled past the retries: nothing handed out twice, a to g come in order, none counted twice', async () => {
    const { name } = await grownQueue();
    const store = faultyStore(deps.db, { throttle: { when: storeGiveBack } }, { fastRetries: true });
    const api = apiClient({ ...deps, db: store.db });

    const res = await receive(api, name, 1);

    // The give-back of the rest, then of the whole ticket: both refused, so its messages are marked instead.
    expect(store.log.throttledOut).toBe(2);
    expect(res.body.error?.code).toBe('Throttled');
    const handed = handedOut(res).map((m) => [m.body.n, m.deliveryCount]);
    for (const m of handedOut(res))
      expect((await api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    clock.advance(LOCK + SECOND);
    const rest = await drain(name);
    expect([...handed, ...rest].map(([n]) => n)).toEqual(BODIES);
    expect([...handed, ...rest].map(([, c]) => c)).toEqual(BODIES.map(() => 1));
  });

  it('R3, R6: a head ticket given back whole after a lapse filled the answer, every give-back refused: its message counts no delivery', async () => {
    const q = await newTicketedQueue(deps, `gq${++queues}`);
    const api = apiClient(deps);
    for (const n of ['x', 'y']) expect((await api('POST', `/queues/${q.name}/messages`, { body: { n } })).status).toBe(201);
    expect(handedOut(await receive(api, q.name, 1)).map((m) => m.body.n)).toEqual(['x']);
    clock.advance(LOCK + SECOND);
    // The take of y's position comes first; x's lapse then fills the answer and y's ticket goes back, refused each time.
    const store = faultyStore(deps.db, { throttle: { when: storeGiveBack } }, { fastRetries: true });
    const res = await receive(apiClient({ ...deps, db: store.db }), q.name, 1);
    expect(handedOut(res).map((m) => [m.body.n, m.deliveryCount])).toEqual([['x', 2]]);
    expect(store.log.throttledOut).toBeGreaterThanOrEqual(1);
    const [x] = handedOut(res);
    expect((await api('POST', `/queues/${q.name}/messages/${x.sequenceNumber}/complete`, { lockToken: x.lockToken })).status).toBe(204);
    clock.advance(LOCK + SECOND);
    expect(await drain(q.name)).toEqual([['y', 1]]);
  });

  it('R3, S2: the lock ending before the give-back is sent: a handed out, b to g count no delivery, all in order', async () => {
    const { name } = await grownQueue();
    // The grown ticket's read (the first after the second take) takes its lock's whole length: the give-back finds the lock ended.
    let takes = 0;
    const afterGrownTake = (c: unknown) => (isTake(c) && takes++, takes === 2 && isTicketRead(c));
    const r = receiver({ match: afterGrownTake, phase: 'after', interleave: async () => void clock.advance(LOCK) });

    const res = await receive(r.api, name, 1);

    expect(r.log.tripped).toBe(1);
    expect(takeSizes(r.calls)).toEqual([1, 8]);
    // Handed out under a lock that has ended: its complete is refused, and it comes back counted.
    const handed = handedOut(res);
    expect(handed.map((m) => [m.body.n, m.deliveryCount])).toEqual([['a', 1]]);
    expect((await r.api('POST', `/queues/${name}/messages/${handed[0]!.sequenceNumber}/complete`, { lockToken: handed[0]!.lockToken })).status).toBe(410);
    expect(await drain(name)).toEqual([['a', 2], ...BODIES.slice(1).map((n): [string, number] => [n, 1])]);
  });
});
