/**
 * A ticketed queue's receive and complete through the API (lib/broker/ticket-receive.ts,
 * positioned-receive.ts `ticketedInto`): the twins, at the ticket's own calls, of the cursor
 * claim's fault and crash tests (positioned-receive-faults.test.ts injects at the cursor's and
 * the lease items' calls, which a ticket's head never makes). A Lambda dying at each step of a
 * ticket receive (the take, the take-back of a lapsed ticket and its transaction, the read, the
 * give-back, the complete) or DynamoDB refusing it past the SDK's retries loses, doubles and
 * strands nothing (D3), never hands a message out under two valid locks (R1), brings a lapsed
 * message back before the head (R6), and counts no delivery for what it did not hand out (R3).
 * And 16 receivers of one message each on one partition, with a lapse in the middle (R1, R6).
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { newTicketedQueue, TicketLedger } from '../support/ticketed-queues.js';
import { jsonMessages, sendPositioned } from '../support/positioned-queue.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { drawPositions } from '../../lib/store/positions.js';
import { readCursor } from '../../lib/store/leases.js';
import { counterView } from '../../lib/store/tickets.js';
import { CURSOR_PK_PREFIX, POSITION_COUNTER_PK_PREFIX, positionCounterKey } from '../../lib/store/keys.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'ticketrecv')), newEntityLayout: 'tickets' };
});

const ticketedQueue = (maxDeliveryCount = 100) => newTicketedQueue(deps, `tq${++queues}`, maxDeliveryCount);

class Ledger extends TicketLedger {
  constructor(name: string, api: ReturnType<typeof apiClient>) {
    super(name, api, clock, LOCK);
  }
}

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);
const onCounter = onPrefix(POSITION_COUNTER_PK_PREFIX);
const isTake = both(is(UpdateCommand), (c) => onCounter(c) && String(inputOf(c).UpdateExpression).includes('taken ='));
const isGiveBack = both(is(UpdateCommand), (c) => onCounter(c) && String(inputOf(c).ConditionExpression).startsWith('#u.u = :u'));
const isTakeBackOne = both(is(UpdateCommand), (c) => onPrefix('pos/')(c) && String(inputOf(c).UpdateExpression).includes('gl = :ticket'));
const isReturn = is(TransactWriteCommand);
const isRead = both(is(QueryCommand), (c) => String(inputOf(c).ExpressionAttributeValues?.[':pk'] ?? '').startsWith('pos/'));
const isMarker = both(is(PutCommand), (c) => onPrefix('pos/')(c) && inputOf(c).Item?.done === 1);

async function counterOf(pk: string) {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionCounterKey(pk), ConsistentRead: true }));
  return counterView(out.Item);
}

/** Nothing left behind once drained: no ticket in flight, nothing queued in `back`. */
async function expectClean(pk: string) {
  expect((await counterOf(pk)).tickets).toEqual([]);
  expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
}

/** Crash points of a receive that takes the head by ticket, takes a lapsed ticket back and reads past a hole. */
const receiveCrashes: [string, Fault][] = [
  ['the take, before it', { match: isTake }],
  ['the take, after it', { match: isTake, phase: 'after' }],
  ['the take-back of a lapsed message, before it', { match: isTakeBackOne }],
  ['the take-back of a lapsed message, after it', { match: isTakeBackOne, phase: 'after' }],
  ["the take-back's transaction, before it", { match: isReturn }],
  ["the take-back's transaction, after it", { match: isReturn, phase: 'after' }],
  ["the ticket's read, before it", { match: isRead }],
  ['the give-back, before it', { match: isGiveBack }],
  ['the give-back, after it', { match: isGiveBack, phase: 'after' }],
];

describe('ticket receive: a Lambda dying at each step', () => {
  it.each(receiveCrashes)('D3, R1, R6: a peek-lock receive dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('a', 3));
    await sendPositioned(deps, entity, jsonMessages('b', 1));
    // Two held, one completed: the other lapses and is taken back by the dying receive.
    const held = await ledger.receive({ maxMessages: 2 });
    expect(await ledger.complete(held.messages[0])).toBe(204);
    clock.advance(LOCK + SECOND);
    // A sender that died a moment ago: a hole too young to pass, given back by whoever takes it with its deadline.
    await drawPositions(deps, pk, 2);
    await sendPositioned(deps, entity, jsonMessages('d', 1));
    const dying = faultyDeps(deps, fault);
    const crashed = await ledger.receive({ maxMessages: 10 }, apiClient(dying));
    expect(dying.faults.tripped).toBe(1);
    // A death after the claim of `back` handed a message out answers what it handed out (R10), as a claim's does.
    expect(crashed.status === 500 || (crashed.status === 200 && crashed.messages.length > 0)).toBe(true);
    for (const m of crashed.messages) expect(await ledger.complete(m)).toBe(204);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ a0: 1, a1: 1, a2: 1, b0: 1, d0: 1 });
    await expectClean(pk);
  });

  it.each([
    ['before it', 'before'],
    ['after it', 'after'],
  ] as const)('D3, R4, R5: a complete dying at its marker, %s, completes once: the retry completes or answers MessageLockLost', async (_, phase) => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('c', 1));
    const [x] = (await ledger.receive({})).messages;
    expect(await ledger.complete(x, apiClient(faultyDeps(deps, { match: isMarker, phase })))).toBe(500);
    expect(await ledger.complete(x)).toBe(phase === 'before' ? 204 : 410);
    clock.advance(LOCK + SECOND);
    expect((await ledger.receive({ maxMessages: 10 })).messages).toEqual([]);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual(phase === 'before' ? { c0: 1 } : {});
    await expectClean(pk);
  });

  it('R3, R10: a receive-and-delete whose removal fails answers the others and gives its ticket back at once, no delivery counted', async () => {
    const { name, entity } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('r', 3));
    const failing = faultyDeps(deps, { match: isMarker, nth: 2, afterwards: 'lives' });
    const first = await ledger.receive({ mode: 'receiveAndDelete', maxMessages: 3 }, apiClient(failing));
    expect(first.status).toBe(200);
    expect(first.messages.map((m) => m.body.n)).toEqual(['r0', 'r2']);
    // Given back at once: the next receive takes it back and hands it out, at delivery count 1 (R3).
    const back = await ledger.receive({ maxMessages: 3 });
    expect(back.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['r1', 1]]);
    expect(await ledger.complete(back.messages[0])).toBe(204);
  });
});

describe('ticket complete: a ticket settled whole leaves with the next take', () => {
  // The twins of positioned-settled-leases and -single-lease, which pin lease items: a ticket has none; its entry in the counter is its lease.
  it('R4, R6: single and batch completes settle their tickets; the next take removes their entries, and their lapse brings nothing back', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('s', 5));
    const [one] = (await ledger.receive({})).messages;
    const three = (await ledger.receive({ maxMessages: 3 })).messages;
    expect((await counterOf(pk)).tickets).toHaveLength(2);
    expect(await ledger.complete(one!)).toBe(204);
    const batch = await apiClient(deps)('POST', `/queues/${name}/messages/complete`, { lockTokens: three.map((m) => m.lockToken) });
    expect(batch.body.results.every((r: Json) => r.ok === true)).toBe(true);
    three.forEach((m) => ledger.done(m));
    const [last] = (await ledger.receive({})).messages;
    // The take that handed out `last` carried both removals: only its own ticket is left.
    expect((await counterOf(pk)).tickets.map((t) => t.first)).toEqual([5]);
    expect(await ledger.complete(last!)).toBe(204);
    clock.advance(LOCK + SECOND);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ s0: 1, s1: 1, s2: 1, s3: 1, s4: 1 });
    expect(ledger.order).toEqual(['s0', 's1', 's2', 's3', 's4']);
    await expectClean(pk);
  });

  it.each([
    ['the first marker, before it', { match: isMarker }],
    ['the first marker, after it', { match: isMarker, phase: 'after' }],
    ['the last marker, before it', { match: isMarker, nth: 3 }],
    ['the last marker, after it', { match: isMarker, nth: 3, phase: 'after' }],
  ] as [string, Fault][])('D3, R4, R6: a batch complete dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('k', 3));
    const held = (await ledger.receive({ maxMessages: 3 })).messages;
    const dying = faultyDeps(deps, fault);
    const res = await apiClient(dying)('POST', `/queues/${name}/messages/complete`, { lockTokens: held.map((m) => m.lockToken) });
    expect(dying.faults.tripped).toBe(1);
    expect(res.status).toBe(500);
    // Its holder retries each: completed once (204), or found completed by the dead call (410).
    for (const m of held) expect([204, 410]).toContain(await ledger.complete(m));
    clock.advance(LOCK + SECOND);
    await ledger.drain();
    // Nothing comes back: every message was completed, by the dead call or by the retry.
    expect(ledger.order).toEqual(['k0', 'k1', 'k2']);
    await expectClean(pk);
  });

  it('R3: a peek-lock receive failing after its take gives the ticket back: the message comes back at once, no delivery counted', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('u', 2));
    const failing = faultyDeps(deps, { match: isRead, phase: 'before', afterwards: 'lives' });
    expect((await ledger.receive({ maxMessages: 2 }, apiClient(failing))).status).toBe(500);
    const next = await ledger.receive({ maxMessages: 2 });
    expect(next.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['u0', 1],
      ['u1', 1],
    ]);
    for (const m of next.messages) expect(await ledger.complete(m)).toBe(204);
    clock.advance(LOCK + SECOND);
    await ledger.drain();
    await expectClean(pk);
  });
});

describe('ticket receive: behind expired messages', () => {
  it('R3, T4: a receive whose rounds end on expired messages takes no ticket it does not hand out: the live one behind is next, counted once', async () => {
    const { name, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    const api = apiClient(deps);
    // Each its own request, so each round of a receive of one takes one expired message.
    for (let i = 0; i < 3; i++) expect((await api('POST', `/queues/${name}/messages`, { body: { n: `old${i}` }, timeToLive: 'PT1M' })).status).toBe(201);
    expect((await api('POST', `/queues/${name}/messages`, { body: { n: 'live' } })).status).toBe(201);
    clock.advance(2 * 60 * SECOND);
    const first = await ledger.receive({ maxMessages: 1 });
    const second = first.messages.length > 0 ? first : await ledger.receive({ maxMessages: 1 });
    expect(second.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['live', 1]]);
    expect(await ledger.complete(second.messages[0]!)).toBe(204);
    await ledger.drain();
    await expectClean(pk);
  });
});

describe('ticket receive: what a receiver that dies counts', () => {
  it('R3: a receiver that dies outright after its take counts the delivery at the lapse, as Service Bus counts an expired lock', async () => {
    const { name, entity, pk } = await ticketedQueue(10);
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('d', 2));
    // Once the take has landed, nothing of the receiver runs any more (its give-back neither).
    const dying = faultyDeps(deps, { match: isTake, phase: 'after' });
    expect((await ledger.receive({ maxMessages: 2 }, apiClient(dying))).status).toBe(500);
    clock.advance(LOCK + SECOND);
    const next = await ledger.receive({ maxMessages: 2 });
    expect(next.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['d0', 2],
      ['d1', 2],
    ]);
    for (const m of next.messages) expect(await ledger.complete(m)).toBe(204);
    await expectClean(pk);
  });

  it('D2: a receive-and-delete whose removal fails, maxDeliveryCount 1, does not dead-letter it early: delivered once, then dead-lettered', async () => {
    const { name, entity } = await ticketedQueue(1);
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('z', 1));
    const failing = faultyDeps(deps, { match: isMarker, afterwards: 'lives' });
    expect((await ledger.receive({ mode: 'receiveAndDelete' }, apiClient(failing))).messages).toEqual([]);
    const [once] = (await ledger.receive({})).messages;
    expect(once).toMatchObject({ deliveryCount: 1 });
    clock.advance(LOCK + SECOND);
    expect((await ledger.receive({})).messages).toEqual([]);
    const dead = await apiClient(deps)('GET', `/queues/${name}/$deadletterqueue/messages?maxMessages=10`);
    expect((dead.body.messages as Json[]).map((m) => [m.body.n, m.deadLetterReason])).toEqual([['z0', 'MaxDeliveryCountExceeded']]);
  });
});

/** The calls of each step of a ticket receive, as the SDK sends them (marshalled). */
const pkSent = (c: StoreCall) => String((c.input.Item ?? c.input.Key)?.pk?.S ?? '');
const throttledSteps: [string, (c: StoreCall) => boolean][] = [
  ['the take', (c) => c.operation === 'UpdateItem' && pkSent(c).startsWith(POSITION_COUNTER_PK_PREFIX) && String(c.input.UpdateExpression).includes('taken =')],
  ['the take-back of a lapsed message', (c) => c.operation === 'UpdateItem' && String(c.input.UpdateExpression).includes('gl = :ticket')],
  ["the take-back's transaction", (c) => c.operation === 'TransactWriteItems'],
  ["the ticket's read", (c) => c.operation === 'Query' && String(c.input.ExpressionAttributeValues?.[':pk']?.S ?? '').startsWith('pos/')],
  ['the cursor claim of back', (c) => c.operation === 'PutItem' && pkSent(c).startsWith(CURSOR_PK_PREFIX)],
  ['the complete', (c) => c.operation === 'PutItem' && c.input.Item?.done !== undefined],
];

describe('ticket receive: DynamoDB refusing each step past the SDK retries', () => {
  it.each(throttledSteps)('D3, R1, R3, R6: %s throttled: the request answers or fails, and nothing is lost, doubled or stranded', async (_, when) => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    await sendPositioned(deps, entity, jsonMessages('t', 4));
    const held = await ledger.receive({ maxMessages: 2 });
    expect(await ledger.complete(held.messages[0])).toBe(204);
    clock.advance(LOCK + SECOND);
    let seen = 0;
    const store = faultyStore(deps.db, { throttle: { when: (c) => when(c) && ++seen === 1 } }, { fastRetries: true });
    const refused = apiClient({ ...deps, db: store.db });
    const got = await ledger.receive({ maxMessages: 10 }, refused);
    for (const m of got.messages) await ledger.complete(m, refused);
    await ledger.drain();
    expect(Object.fromEntries(ledger.completed)).toEqual({ t0: 1, t1: 1, t2: 1, t3: 1 });
    await expectClean(pk);
  });
});

describe('ticket receive: many receivers of one message each', () => {
  it('R1, R6: 16 receivers of one message each take every message once under one valid lock; a lapse in the middle comes back before the head', async () => {
    const { name, entity, pk } = await ticketedQueue();
    const ledger = new Ledger(name, apiClient(deps));
    for (let i = 0; i < 8; i++) await sendPositioned(deps, entity, jsonMessages(`m${i}-`, 10));
    const wave = async () => Promise.all(Array.from({ length: 16 }, () => ledger.receive({ maxMessages: 1 })));
    const first = (await wave()).flatMap((r) => r.messages);
    expect(first).toHaveLength(16);
    // Half of them lapse (their receivers died); the others complete.
    const lapsing = new Set(first.filter((_, i) => i % 2 === 0).map((m) => m.body.n as string));
    for (const m of first) if (!lapsing.has(m.body.n)) expect(await ledger.complete(m)).toBe(204);
    clock.advance(LOCK + SECOND);
    // R6: the next receive gets a lapsed message, the oldest, counted again, before the head's next.
    const oldest = first.filter((m) => lapsing.has(m.body.n)).sort((x, y) => Number(BigInt(x.sequenceNumber) - BigInt(y.sequenceNumber)))[0]!;
    const [back] = (await ledger.receive({ maxMessages: 1 })).messages;
    expect(back).toMatchObject({ sequenceNumber: oldest.sequenceNumber, deliveryCount: 2 });
    expect(await ledger.complete(back!)).toBe(204);
    // The rest of the lapsed ones race the head among 16 receivers: each handed out once, counted again.
    const second = (await wave()).flatMap((r) => r.messages);
    for (const m of second) expect(await ledger.complete(m)).toBe(204);
    expect(second.filter((m) => lapsing.has(m.body.n)).every((m) => m.deliveryCount === 2)).toBe(true);
    for (;;) {
      const more = (await wave()).flatMap((r) => r.messages);
      if (more.length === 0) break;
      for (const m of more) expect(await ledger.complete(m)).toBe(204);
    }
    await ledger.drain();
    expect(ledger.completed.size).toBe(80);
    expect([...ledger.completed.values()].every((n) => n === 1)).toBe(true);
    await expectClean(pk);
  }, 60_000);
});
