/**
 * A ticketed receive that takes beside its entity read (lib/broker/ticket-ahead.ts): the take
 * and the read of the ticket's positions go with the entity a read of the same process saw a
 * moment ago, and are handed out only when the request's own entity read finds the same
 * incarnation unchanged (E4, E5). Here the entity changes between two receives of a process
 * (deleted, deleted and re-created, ReceiveDisabled, its lock duration changed), the function
 * dies at each step of the new path, and DynamoDB refuses the take. What was taken and not
 * handed out goes back counting no delivery (R3), unless the function died first (a lapse,
 * counted as for a receiver that died).
 *
 * The receiving process has a client of its own (`receiver`), as another Lambda instance
 * would, recording its calls; `other` is another process that changes the entity and sends.
 */
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { faultyClient, inputOf, is, type Fault } from '../support/faults.js';
import { faultyStore, type StoreFaultPlan } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';
import { newTicketedQueue } from '../support/ticketed-queues.js';
import { queueEntity } from '../support/positioned-queue.js';
import { counterView } from '../../lib/store/tickets.js';
import { POSITION_COUNTER_PK_PREFIX, positionCounterKey, positionedPk } from '../../lib/store/keys.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let other: ReturnType<typeof apiClient>;
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'ticketahead')), newEntityLayout: 'tickets' };
  other = apiClient(deps);
});

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onCounter = (c: unknown) => pkOf(c).startsWith(POSITION_COUNTER_PK_PREFIX);
const isTake = (c: unknown) => is(UpdateCommand)(c) && onCounter(c) && String(inputOf(c).UpdateExpression).includes('taken =');
const isGiveBack = (c: unknown) => is(UpdateCommand)(c) && onCounter(c) && String(inputOf(c).ConditionExpression).startsWith('#u.u = :u');
const isTicketRead = (c: unknown) => is(QueryCommand)(c) && String(inputOf(c).ExpressionAttributeValues?.[':pk'] ?? '').startsWith('pos/');
const isEntityRead = (name: string) => (c: unknown) => is(GetCommand)(c) && inputOf(c).Key?.pk === 'queues' && inputOf(c).Key?.sk === name;

/** The receiving process: a client of its own (its own entity reads), every call recorded, `fault` on it once `armed`. */
function receiver(fault: Fault = { match: () => false }) {
  const calls: unknown[] = [];
  const state = { armed: false };
  const { db, log } = faultyClient(deps.db, {
    ...fault,
    match: (c) => {
      calls.push(c);
      return state.armed && fault.match(c);
    },
  });
  return { api: apiClient({ ...deps, db }), calls, log, state };
}

async function queueWith(bodies: string[]) {
  const q = await newTicketedQueue(deps, `aq${++queues}`);
  for (const n of bodies) expect((await other('POST', `/queues/${q.name}/messages`, { body: { n } })).status).toBe(201);
  return q;
}

const receive = (api: ReturnType<typeof apiClient>, name: string, maxMessages = 10) =>
  api('POST', `/queues/${name}/messages/receive`, { maxMessages, maxWaitTime: 'PT0S' });
const bodiesOf = (res: Json) => ((res.status === 200 ? res.body.messages : []) as Json[]).map((m) => [m.body.n, m.deliveryCount]);

async function counterOf(pk: string) {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionCounterKey(pk), ConsistentRead: true }));
  return counterView(out.Item);
}

/** Receives with `api` and completes everything until a receive finds nothing; the bodies and delivery counts it got. */
async function drain(api: ReturnType<typeof apiClient>, name: string): Promise<unknown[][]> {
  const got: unknown[][] = [];
  for (let empty = 0; empty < 2;) {
    const res = await receive(api, name);
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

/** A receive by `r` that reads the entity (so the next one of that process takes ahead), completing what it got. */
async function warm(r: ReturnType<typeof receiver>, name: string) {
  const first = await receive(r.api, name, 1);
  expect(first.status).toBe(200);
  for (const m of first.body.messages as Json[]) {
    expect((await r.api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
  }
  r.calls.length = 0;
}

describe('a ticketed receive that takes beside its entity read', () => {
  it('R1, R3: with the entity unchanged, the take and its read go before the entity read answers, and the messages are handed out once', async () => {
    const { name } = await queueWith(['w', 'a', 'b']);
    const r = receiver();
    await warm(r, name);

    const res = await receive(r.api, name);

    expect(bodiesOf(res)).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    // The take (its look at the counter, for more than one) is sent before the entity read.
    const take = r.calls.findIndex(onCounter);
    expect(take).toBeGreaterThanOrEqual(0);
    expect(r.calls.findIndex(isEntityRead(name))).toBeGreaterThan(take);
    expect(r.calls.filter(isTake)).toHaveLength(1);
    expect(r.calls.filter(isGiveBack)).toHaveLength(0);
    for (const m of res.body.messages as Json[]) {
      expect((await r.api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    }
    expect(await drain(other, name)).toEqual([]);
  });

  it('E4: from a queue deleted since the process last read it: taken ahead, given back, and the receive answers 404 handing out nothing', async () => {
    const { name, pk } = await queueWith(['w', 'a']);
    const r = receiver();
    await warm(r, name);
    expect((await other('DELETE', `/queues/${name}`)).status).toBe(204);

    const refused = await receive(r.api, name);

    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('EntityNotFound');
    // Taken ahead on the deleted incarnation's counter, or found nothing there: either way nothing handed out.
    expect(r.calls.filter(isTake).map(pkOf)).toEqual([positionCounterKey(pk).pk]);
    expect((await counterOf(pk)).tickets.every((t) => t.nd === 1 || t.until <= clock.now())).toBe(true);
  });

  it('E4: from a queue deleted and re-created since: nothing of the old incarnation handed out, the new one received with deliveryCount 1', async () => {
    const { name, pk } = await queueWith(['w', 'old']);
    const r = receiver();
    await warm(r, name);
    expect((await other('DELETE', `/queues/${name}`)).status).toBe(204);
    expect((await other('PUT', `/queues/${name}`, { lockDuration: 'PT30S' })).status).toBe(201);
    const renewed = await queueEntity(deps, name);
    expect(positionedPk(renewed.eid, 'active', 0)).not.toBe(pk);
    expect((await other('POST', `/queues/${name}/messages`, { body: { n: 'new' } })).status).toBe(201);

    const res = await receive(r.api, name);

    // The take ahead went to the old incarnation, and was given back there.
    expect(r.calls.filter(isTake).map(pkOf)[0]).toBe(positionCounterKey(pk).pk);
    expect(r.calls.filter(isGiveBack).map(pkOf)).toEqual([positionCounterKey(pk).pk]);
    expect(res.status).toBe(200);
    const got = bodiesOf(res);
    for (const m of res.body.messages as Json[]) {
      expect((await r.api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    }
    expect([...got, ...(await drain(r.api, name))]).toEqual([['new', 1]]);
  });

  it('E5, R3: from a queue made ReceiveDisabled since: EntityDisabled, nothing handed out, and once enabled the message comes with deliveryCount 1', async () => {
    const { name, pk } = await queueWith(['w', 'a']);
    const r = receiver();
    await warm(r, name);
    expect((await other('PUT', `/queues/${name}`, { status: 'ReceiveDisabled' })).status).toBe(200);

    const refused = await receive(r.api, name);

    expect(refused.body.error.code).toBe('EntityDisabled');
    expect(r.calls.filter(isTake)).toHaveLength(1);
    expect(r.calls.filter(isGiveBack)).toHaveLength(1);
    expect((await counterOf(pk)).tickets.map((t) => t.nd)).toEqual([1]);
    expect((await other('PUT', `/queues/${name}`, { status: 'Active' })).status).toBe(200);
    expect(await drain(r.api, name)).toEqual([['a', 1]]);
  });

  it('R1, R3: from a queue whose lock duration changed since: given back, then handed out under the new lock with deliveryCount 1', async () => {
    const { name } = await queueWith(['w', 'a']);
    const r = receiver();
    await warm(r, name);
    expect((await other('PUT', `/queues/${name}`, { lockDuration: 'PT1M' })).status).toBe(200);

    const res = await receive(r.api, name);

    expect(r.calls.filter(isGiveBack)).toHaveLength(1);
    expect(bodiesOf(res)).toEqual([['a', 1]]);
    const [m] = res.body.messages as Json[];
    expect(Date.parse(m.lockedUntil)).toBe(clock.now() + 60 * SECOND);
    expect((await r.api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    expect(await drain(other, name)).toEqual([]);
  });
});

/** Where the new path can die: with the entity unchanged (`same`), or made ReceiveDisabled meanwhile (`disabled`). */
const crashes: [string, Fault, 'same' | 'disabled'][] = [
  ['the take ahead, before it', { match: isTake }, 'same'],
  ['the take ahead, after it', { match: isTake, phase: 'after' }, 'same'],
  ["the ticket's read ahead, before it", { match: isTicketRead }, 'same'],
  ["the ticket's read ahead, after it", { match: isTicketRead, phase: 'after' }, 'same'],
  ['the take ahead of a disabled queue, after it', { match: isTake, phase: 'after' }, 'disabled'],
  ['the give-back, before it', { match: isGiveBack }, 'disabled'],
  ['the give-back, after it', { match: isGiveBack, phase: 'after' }, 'disabled'],
];

describe('a take beside the entity read: a Lambda dying at each step', () => {
  it.each(crashes)('D3, R1, E5: dying at %s loses and doubles nothing, and hands nothing out of a disabled queue', async (_, fault, change) => {
    const { name } = await queueWith(['w', 'a', 'b']);
    const r = receiver(fault);
    await warm(r, name);
    if (change === 'disabled') expect((await other('PUT', `/queues/${name}`, { status: 'ReceiveDisabled' })).status).toBe(200);
    r.state.armed = true;

    const res = await receive(r.api, name);

    expect(r.log.tripped).toBe(1);
    r.state.armed = false;

    const handed = (res.status === 200 ? res.body.messages : []) as Json[];
    if (change === 'disabled') expect(handed).toEqual([]);
    for (const m of handed) expect((await r.api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    if (change === 'disabled') expect((await other('PUT', `/queues/${name}`, { status: 'Active' })).status).toBe(200);
    const rest = await drain(other, name);
    // Each once; a delivery counted for what a dead receive took is the lapse's, as for any receiver that died.
    expect([...handed.map((m) => m.body.n), ...rest.map(([n]) => n)].sort()).toEqual(['a', 'b']);
  });
});

describe('a take beside the entity read, refused', () => {
  it('R3, R10: a take throttled past the retries hands out nothing and counts no delivery', async () => {
    const { name } = await queueWith(['w', 'a']);
    const plan: StoreFaultPlan = {};
    const store = faultyStore(deps.db, plan, { fastRetries: true });
    const api = apiClient({ ...deps, db: store.db });
    const first = await receive(api, name, 1);
    for (const m of first.body.messages as Json[]) {
      expect((await api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    }
    plan.throttle = {
      when: (c) =>
        c.operation === 'UpdateItem' &&
        String(c.input.Key?.pk?.S ?? '').startsWith(POSITION_COUNTER_PK_PREFIX) &&
        String(c.input.UpdateExpression).includes('taken ='),
    };

    const refused = await receive(api, name);

    expect(refused.body.error.code).toBe('Throttled');
    expect(store.log.throttledOut).toBe(1);
    delete plan.throttle;
    expect(await drain(api, name)).toEqual([['a', 1]]);
  });
});
