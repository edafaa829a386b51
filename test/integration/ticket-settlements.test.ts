/**
 * Settlements other than complete on a ticket's token (lib/broker/positioned-settle.ts,
 * lib/store/ticket-settlements.ts): abandon, batch abandon, defer, dead-letter and renew of a
 * message a ticket took (store/tickets.ts), on a queue created under the 'tickets' switch value
 * whatever SLUICE_TEST_LAYOUT says. Messages are taken as a ticketed receive takes them:
 * lapsed tickets taken back first, then the cursor's `back`, then the head by ticket. What
 * each rule needs of the counter item's entries is checked here: the lapse of a ticket brings
 * back only what is still held under it (R6), a settlement past the lock end fails (R5), a
 * renew moves one message's lock and not its siblings' (R4), and every write dying or refused
 * part-way loses and doubles nothing (D3).
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { faultyDeps, InjectedCrash, is } from '../support/faults.js';
import { faultyStore, onOperations, seededRandom } from '../support/dynamo-faults.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers } from '../support/queue-helpers.js';
import { brokerContext, type BrokerContext } from '../../lib/broker/context.js';
import { requireEntity, type EntityItem } from '../../lib/broker/entities.js';
import { buildMessageItem } from '../../lib/broker/message-items.js';
import { abandonPositioned, abandonPositionedBatch, deadLetterPositioned, deferPositioned, renewPositioned } from '../../lib/broker/positioned-settle.js';
import { completePositioned } from '../../lib/broker/positioned-receive.js';
import { BrokerError } from '../../lib/errors.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { messagePk, positionCounterKey, positionedPk, positionKey } from '../../lib/store/keys.js';
import { claim, entryOfToken, type Claim } from '../../lib/store/leases.js';
import { storedMessage } from '../../lib/store/message-layout.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { positionedSeq } from '../../lib/store/sequence.js';
import { isStoreBusy } from '../../lib/store/outcomes.js';
import {
  completeTicketed,
  counterView,
  lapsedTickets,
  markTicketed,
  readTicket,
  takeBackTickets,
  takeTicket,
  type CounterView,
} from '../../lib/store/tickets.js';
import type { MessageInput } from '../../lib/messages/schema.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: 'tickets' };
let api: ReturnType<typeof apiClient>;
let ctx: BrokerContext;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'tsettle')), newEntityLayout: 'tickets' };
  api = apiClient(deps);
  ctx = brokerContext(deps);
});

const { createQueue, peek, dlq } = queueHelpers(() => api);

type Held = Claim['messages'][number];

/** A ticketed queue, its entity and its first partition (marked ticketed, as a receive marks it). */
async function ticketedQueue(name: string, props: Record<string, unknown> = {}) {
  await createQueue(name, { lockDuration: 'PT30S', ...props });
  const target: ReceiveTarget = { kind: 'queue', name, subqueue: 'active' };
  const entity = await requireEntity(ctx, target);
  expect([entity.layout, entity.ticketed]).toEqual(['positions', true]);
  const pk = positionedPk(entity.eid, 'active', 0);
  expect(await markTicketed(ctx, pk)).toBe(true);
  return { target, entity, pk };
}

/** Messages put at positions as a positioned send stores them, in one request. */
async function seed(entity: EntityItem, pk: string, inputs: MessageInput[]) {
  const payloads = inputs.map((m) => {
    const { pk: _pk, sk: _sk, rpk: _rpk, rsk: _rsk, dpk: _dpk, dsk: _dsk, ...rest } = storedMessage(buildMessageItem(ctx, entity, m));
    return rest;
  });
  const draw = await drawPositions(ctx, pk, payloads.length);
  expect(await putAtPositions(ctx, pk, draw, payloads)).toBe('written');
}
const ids = (prefix: string, n: number): MessageInput[] => Array.from({ length: n }, (_, i) => ({ body: `${prefix}${i}`, messageId: `${prefix}${i}` }));

const counterOf = async (pk: string): Promise<CounterView> =>
  counterView((await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(pk), ConsistentRead: true }))).Item);

/** As a ticketed receive takes: lapsed tickets taken back (R6), then `back` by the cursor, then the head by ticket. */
async function take(pk: string, n = 10, lockMs = LOCK): Promise<Held[]> {
  await takeBackTickets(ctx, pk, lapsedTickets(await counterOf(pk), clock.now()));
  const fromBack = await claim(ctx, pk, n, { lockMs });
  const want = n - fromBack.messages.length;
  if (want <= 0) return fromBack.messages;
  const took = await takeTicket(ctx, pk, want, { lockMs, look: true });
  if (!took.ticket) return fromBack.messages;
  return [...fromBack.messages, ...(await readTicket(ctx, pk, took.ticket)).messages];
}

const seqOf = (m: Held) => positionedSeq(entryOfToken(m.token)[0], 0);
const idOf = (m: Held) => m.item.messageId as string;
const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof BrokerError ? e.code : String(e)),
  );
const at = async (pk: string, m: Held) =>
  (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionKey(pk, entryOfToken(m.token)[0]), ConsistentRead: true }))).Item;

/** Every verb under test on `m`'s token, as settle.ts calls it. */
const verbs = {
  abandon: (c: BrokerContext, e: EntityItem, t: ReceiveTarget, m: Held) => abandonPositioned(c, e, t, seqOf(m), m.token),
  defer: (c: BrokerContext, e: EntityItem, t: ReceiveTarget, m: Held) => deferPositioned(c, e, t, seqOf(m), m.token),
  deadLetter: (c: BrokerContext, e: EntityItem, t: ReceiveTarget, m: Held) =>
    deadLetterPositioned(c, e, t, seqOf(m), { lockToken: m.token, deadLetterReason: 'X' }),
  renew: (c: BrokerContext, e: EntityItem, t: ReceiveTarget, m: Held) => renewPositioned(c, e, t, seqOf(m), m.token),
};
type Verb = keyof typeof verbs;

/**
 * Receives and completes everything left, moving the clock past every lock (renewed ones too)
 * until nothing comes back; returns how often each message id was handed out meanwhile.
 */
async function drain(pk: string): Promise<Map<string, number>> {
  const handed = new Map<string, number>();
  for (let round = 0; round < 6; round++) {
    const got = await take(pk, 50);
    for (const m of got) {
      handed.set(idOf(m), (handed.get(idOf(m)) ?? 0) + 1);
      expect(await completeTicketedOrLease(pk, m)).toBe('completed');
    }
    clock.advance(2 * LOCK);
  }
  return handed;
}
/** The deferred messages of an incarnation's first active partition, in today's layout (where a defer puts them). */
const todaysDeferred = async (entity: EntityItem) =>
  (
    (
      await ctx.db.send(
        new QueryCommand({
          TableName: ctx.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': messagePk(entity.eid, 'active', 0) },
          ConsistentRead: true,
        }),
      )
    ).Items ?? []
  ).filter((i) => i.state === 'Deferred');
/** A ticketed partition's complete: a marker, under either kind of token. */
const completeTicketedOrLease = (pk: string, m: Held) => completeTicketed(ctx, pk, m.token);

describe('abandon on a ticket token', () => {
  it("R4, R6, R1: an abandoned message is back in line once; its siblings stay held; the ticket's lapse takes back only what it still holds", async () => {
    const { target, entity, pk } = await ticketedQueue('ta-abandon');
    await seed(entity, pk, ids('x', 3));
    const [x0, x1, x2] = await take(pk);
    expect([x0, x1, x2].map((m) => entryOfToken(m!.token)[1])).toEqual([0, 0, 0]);
    await abandonPositioned(ctx, entity, target, seqOf(x1!), x1!.token, { tried: 1 });
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(x1!), x1!.token))).toBe('MessageLockLost');
    expect(await completeTicketed(ctx, pk, x1!.token)).toBe('lockLost');
    // Back first, before any head, counted again, held now under a cursor lease far longer than the ticket.
    const [again, ...none] = await take(pk, 10, 10 * LOCK);
    expect(none).toEqual([]);
    expect([idOf(again!), again!.deliveryCount, JSON.parse(again!.item.props as string)]).toEqual(['x1', 2, { tried: 1 }]);
    expect(await completeTicketed(ctx, pk, x0!.token)).toBe('completed');
    clock.advance(LOCK);
    // The ticket lapsed: x2 comes back; x1, held under its lease, does not (R1), nor x0, settled.
    expect((await take(pk)).map((m) => [idOf(m), m.deliveryCount])).toEqual([['x2', 2]]);
    expect((await counterOf(pk)).tickets).toEqual([]);
    expect(await completeTicketed(ctx, pk, again!.token)).toBe('completed');
  });

  it('R6, R2: a ticket lapsing while its abandoned message waits in line queues only the others; the abandoned one is in line once, in its place', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-abandon-lapse');
    await seed(entity, pk, ids('y', 3));
    const [y0, y1] = await take(pk);
    await abandonPositioned(ctx, entity, target, seqOf(y1!), y1!.token);
    clock.advance(LOCK);
    const back = await take(pk);
    expect(back.map((m) => [idOf(m), m.deliveryCount])).toEqual([
      ['y0', 2],
      ['y1', 2],
      ['y2', 2],
    ]);
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(y0!), y0!.token))).toBe('MessageLockLost');
    for (const m of back) expect(await completeTicketed(ctx, pk, m.token)).toBe('completed');
    clock.advance(2 * LOCK);
    expect(await take(pk)).toEqual([]);
  });

  it('R9, R2: a batch abandon of ticket and lease tokens of one partition answers each, queues them once; they come back oldest first', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-batch');
    await seed(entity, pk, ids('b', 3));
    const [b0, b1, b2] = await take(pk);
    await abandonPositioned(ctx, entity, target, seqOf(b0!), b0!.token);
    const [b0again] = await take(pk, 1);
    expect(entryOfToken(b0again!.token)[1]).toBe(1);
    const answers = await abandonPositionedBatch(
      ctx,
      entity,
      target,
      [b2!, b0again!, b0!, b1!, b2!].map((m) => ({ token: m.token, seq: seqOf(m) })),
    );
    expect(answers.map((a) => (a === true ? 'ok' : a.code))).toEqual(['ok', 'ok', 'MessageLockLost', 'ok', 'MessageLockLost']);
    expect((await take(pk)).map((m) => [idOf(m), m.deliveryCount])).toEqual([
      ['b0', 3],
      ['b1', 2],
      ['b2', 2],
    ]);
  });

  it('D2: an abandon on the last allowed delivery dead-letters, leaving a done marker; its sibling stays held', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-d2', { maxDeliveryCount: 1 });
    await seed(entity, pk, ids('d', 2));
    const [d0, d1] = await take(pk);
    await abandonPositioned(ctx, entity, target, seqOf(d0!), d0!.token);
    expect((await peek(dlq('ta-d2'))).map((m: Record<string, unknown>) => [m.messageId, m.deadLetterReason, m.deliveryCount])).toEqual([
      ['d0', 'MaxDeliveryCountExceeded', 1],
    ]);
    expect(await at(pk, d0!)).toMatchObject({ done: 1 });
    expect(await completeTicketed(ctx, pk, d1!.token)).toBe('completed');
    clock.advance(LOCK);
    expect(await take(pk)).toEqual([]);
  });

  it('T5: an abandon past the expiry of a message whose renewed lock still holds removes it, leaving a done marker', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-t5', { defaultMessageTimeToLive: 'PT1M' });
    await seed(entity, pk, ids('e', 1));
    const [e0] = await take(pk);
    clock.advance(LOCK / 2);
    await renewPositioned(ctx, entity, target, seqOf(e0!), e0!.token);
    clock.advance(LOCK - 5 * SECOND);
    await renewPositioned(ctx, entity, target, seqOf(e0!), e0!.token);
    clock.advance(LOCK - 5 * SECOND);
    await abandonPositioned(ctx, entity, target, seqOf(e0!), e0!.token);
    expect(await at(pk, e0!)).toMatchObject({ done: 1 });
    expect(await peek(dlq('ta-t5'))).toEqual([]);
    clock.advance(2 * LOCK);
    expect(await take(pk)).toEqual([]);
  });
});

describe('R5 on a ticket token', () => {
  it.each(Object.keys(verbs) as Verb[])(
    'R5: %s past the lock end, before and after the take-back, is MessageLockLost and changes nothing; the message comes back once',
    async (verb) => {
      const { target, entity, pk } = await ticketedQueue(`ta-r5-${verb}`);
      await seed(entity, pk, ids('r', 1));
      const [r0] = await take(pk);
      clock.advance(LOCK);
      expect(await codeOf(verbs[verb](ctx, entity, target, r0!))).toBe('MessageLockLost');
      expect(await at(pk, r0!)).not.toHaveProperty('g');
      const [back] = await take(pk);
      expect([idOf(back!), back!.deliveryCount]).toEqual(['r0', 2]);
      expect(await codeOf(verbs[verb](ctx, entity, target, r0!))).toBe('MessageLockLost');
      expect(await completeTicketed(ctx, pk, back!.token)).toBe('completed');
      expect(await peek(dlq(`ta-r5-${verb}`))).toEqual([]);
    },
  );
});

describe('renew on a ticket token', () => {
  it('R4, R6: a renewed message moves into an entry of its own; siblings before and after it keep their lock end and come back at it, once', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-renew');
    await seed(entity, pk, ids('z', 3));
    const [z0, z1, z2] = await take(pk);
    const [ticket] = (await counterOf(pk)).tickets;
    clock.advance(LOCK / 2);
    const renewed = await renewPositioned(ctx, entity, target, seqOf(z1!), z1!.token);
    expect(renewed.lockedUntil).toBe(new Date(clock.now() + LOCK).toISOString());
    const split = (await counterOf(pk)).tickets;
    expect(split.map((t) => [t.first, t.count, t.until, t.o, t.r])).toEqual([
      [ticket!.first, 1, ticket!.until, undefined, undefined],
      [ticket!.first + 1, 1, clock.now() + LOCK, ticket!.id, ticket!.until],
      [ticket!.first + 2, 1, ticket!.until, ticket!.id, undefined],
    ]);
    // A second renew moves its own entry's lock end, in place.
    clock.advance(LOCK / 4);
    await renewPositioned(ctx, entity, target, seqOf(z1!), z1!.token);
    expect((await counterOf(pk)).tickets.map((t) => t.until)).toEqual([ticket!.until, clock.now() + LOCK, ticket!.until]);
    clock.advance(LOCK / 4);
    // The siblings' locks ended where they did: back, in order; z1 is still held.
    const siblings = await take(pk);
    expect(siblings.map((m) => [idOf(m), m.deliveryCount])).toEqual([
      ['z0', 2],
      ['z2', 2],
    ]);
    for (const m of siblings) expect(await completeTicketed(ctx, pk, m.token)).toBe('completed');
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(z0!), z0!.token))).toBe('MessageLockLost');
    // Past the lock end its token states, z1's settlement reads its own entry (R5): held.
    expect(await codeOf(renewPositioned(ctx, entity, target, seqOf(z1!), z1!.token))).toBe('ok');
    clock.advance(LOCK);
    expect((await take(pk)).map((m) => [idOf(m), m.deliveryCount])).toEqual([['z1', 2]]);
    expect(await codeOf(renewPositioned(ctx, entity, target, seqOf(z1!), z1!.token))).toBe('MessageLockLost');
    expect(await codeOf(completePositioned(ctx, entity, target, seqOf(z2!), z2!.token))).toBe('MessageLockLost');
  });

  it('R5, R4: a complete past the lock end its token states completes a renewed message, and fails once its renewed lock ended', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-renew-late');
    await seed(entity, pk, ids('w', 2));
    const [w0, w1] = await take(pk);
    clock.advance(LOCK / 2);
    await renewPositioned(ctx, entity, target, seqOf(w0!), w0!.token);
    await renewPositioned(ctx, entity, target, seqOf(w1!), w1!.token);
    clock.advance(LOCK / 2 + SECOND);
    expect(await codeOf(completePositioned(ctx, entity, target, seqOf(w0!), w0!.token))).toBe('ok');
    clock.advance(LOCK / 2);
    expect(await codeOf(completePositioned(ctx, entity, target, seqOf(w1!), w1!.token))).toBe('MessageLockLost');
    expect((await take(pk)).map((m) => [idOf(m), m.deliveryCount])).toEqual([['w1', 2]]);
  });

  it('R4: renews of two siblings at once both hold (one reads the entry again); the third message lapses alone', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-renew-race');
    await seed(entity, pk, ids('a', 3));
    const [a0, a1, a2] = await take(pk);
    clock.advance(LOCK / 2);
    const [r0, r2] = await Promise.all([a0!, a2!].map((m) => codeOf(renewPositioned(ctx, entity, target, seqOf(m), m.token))));
    expect([r0, r2]).toEqual(['ok', 'ok']);
    expect((await counterOf(pk)).tickets.map((t) => t.count)).toEqual([1, 1, 1]);
    clock.advance(LOCK / 2);
    expect((await take(pk)).map(idOf)).toEqual(['a1']);
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(a1!), a1!.token))).toBe('MessageLockLost');
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(a0!), a0!.token))).toBe('ok');
    expect(await codeOf(deferPositioned(ctx, entity, target, seqOf(a2!), a2!.token))).toBe('ok');
  });

  it("R5: a renew after the holder's own complete, abandon or defer is MessageLockLost and writes nothing", async () => {
    const { target, entity, pk } = await ticketedQueue('ta-renew-spent');
    await seed(entity, pk, ids('s', 3));
    const [s0, s1, s2] = await take(pk);
    const before = (await counterOf(pk)).tickets;
    expect(await completeTicketed(ctx, pk, s0!.token)).toBe('completed');
    await abandonPositioned(ctx, entity, target, seqOf(s1!), s1!.token);
    await deferPositioned(ctx, entity, target, seqOf(s2!), s2!.token);
    for (const m of [s0!, s1!, s2!]) expect(await codeOf(renewPositioned(ctx, entity, target, seqOf(m), m.token))).toBe('MessageLockLost');
    expect((await counterOf(pk)).tickets).toEqual(before);
  });
});

describe('renew on a ticket token: what stays on the counter', () => {
  /** Through the API, as one process receives, renews and settles: its memory of what it settled whole rides its next take (`TakeOptions.prune`). */
  const receive = async (name: string, maxMessages: number) => {
    const res = await api('POST', `/queues/${name}/messages/receive`, { maxMessages, maxWaitTime: 'PT0S' });
    expect(res.status).toBe(200);
    return res.body.messages as { sequenceNumber: string; lockToken: string; messageId: string }[];
  };
  const settle = async (name: string, m: { sequenceNumber: string; lockToken: string }, how: 'complete' | 'renew-lock' | 'abandon') =>
    (await api('POST', `/queues/${name}/messages/${m.sequenceNumber}/${how}`, { lockToken: m.lockToken })).status;

  it.each(['complete', 'abandon'] as const)(
    "R4, R6: after a renew of a ticket's middle message and its holder's %s of all three, its next take leaves no entry of that ticket on the counter",
    async (last) => {
      const name = `ta-renew-prune-${last}`;
      const { entity, pk } = await ticketedQueue(name);
      await seed(entity, pk, ids('p', 3));
      const [p0, p1, p2] = await receive(name, 3);
      expect((await counterOf(pk)).tickets).toHaveLength(1);
      expect(await settle(name, p1!, 'renew-lock')).toBe(200);
      // The renew split the entry: before it, its own, after it.
      expect((await counterOf(pk)).tickets.map((t) => t.count)).toEqual([1, 1, 1]);
      expect(await settle(name, p0!, 'complete')).toBe(204);
      expect(await settle(name, p2!, 'complete')).toBe(204);
      expect(await settle(name, p1!, last)).toBe(204);
      await seed(entity, pk, ids('q', 1));

      const next = await receive(name, 1);

      expect(next.map((m) => m.messageId)).toEqual([last === 'abandon' ? 'p1' : 'q0']);
      // Only the next take's ticket (q0's; given back when p1, abandoned, filled the answer): nothing of the settled one waits for its lapse's take-back.
      expect((await counterOf(pk)).tickets.map((t) => t.first)).toEqual([4]);
    },
  );
});

describe('defer and dead-letter on a ticket token', () => {
  it('R4, R7, D1, D3: each leaves a done marker at its position in the transaction that puts its target; the lapse takes nothing back', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-moves');
    await seed(entity, pk, ids('m', 2));
    const [m0, m1] = await take(pk);
    await deferPositioned(ctx, entity, target, seqOf(m0!), m0!.token, { why: 'later' });
    await deadLetterPositioned(ctx, entity, target, seqOf(m1!), { lockToken: m1!.token, deadLetterReason: 'Bad' });
    expect(await at(pk, m0!)).toMatchObject({ done: 1 });
    expect(await at(pk, m1!)).toMatchObject({ done: 1 });
    const got = await api('POST', '/queues/ta-moves/messages/deferred', { sequenceNumbers: [seqOf(m0!).toString()] });
    expect(got.body.messages.map((m: Record<string, unknown>) => [m.messageId, m.deliveryCount, m.applicationProperties])).toEqual([
      ['m0', 2, { why: 'later' }],
    ]);
    expect((await peek(dlq('ta-moves'))).map((m: Record<string, unknown>) => [m.messageId, m.deadLetterReason])).toEqual([['m1', 'Bad']]);
    for (const m of [m0!, m1!]) expect(await codeOf(verbs.defer(ctx, entity, target, m))).toBe('MessageLockLost');
    clock.advance(LOCK);
    expect(await take(pk)).toEqual([]);
    expect((await counterOf(pk)).tickets).toEqual([]);
  });
});

describe('a Lambda dying part-way, DynamoDB refusing', () => {
  /** Where message c0 ended: handed out again (and completed) by the drain, deferred, or dead-lettered. */
  async function fateOf(queue: string, pk: string, c0: Held) {
    const handed = await drain(pk);
    const deferred = await api('POST', `/queues/${queue}/messages/deferred`, { sequenceNumbers: [seqOf(c0).toString()] });
    return {
      handed: handed.get('c0') ?? 0,
      sibling: handed.get('c1') ?? 0,
      deferred: (deferred.body.messages ?? []).length,
      dead: (await peek(dlq(queue))).length,
    };
  }
  const writeOf: Record<Verb, (c: unknown) => boolean> = {
    abandon: is(TransactWriteCommand),
    defer: is(TransactWriteCommand),
    deadLetter: is(TransactWriteCommand),
    renew: is(UpdateCommand),
  };
  /** Where c0 is once the write landed: abandoned (back, delivered again), deferred, dead-lettered, or renewed (back at its renewed lapse). */
  const landed: Record<Verb, { handed: number; deferred: number; dead: number }> = {
    abandon: { handed: 1, deferred: 0, dead: 0 },
    defer: { handed: 0, deferred: 1, dead: 0 },
    deadLetter: { handed: 0, deferred: 0, dead: 1 },
    renew: { handed: 1, deferred: 0, dead: 0 },
  };

  it.each((Object.keys(verbs) as Verb[]).flatMap((verb) => (['before', 'after'] as const).map((phase) => [verb, phase] as const)))(
    'D3, R6, R1: a %s dying %s its write leaves the message in exactly one place, handed out again at most once',
    async (verb, phase) => {
      const queue = `ta-crash-${verb}-${phase}`;
      const { target, entity, pk } = await ticketedQueue(queue);
      await seed(entity, pk, ids('c', 2));
      const [c0, c1] = await take(pk);
      const dying = { ...ctx, ...faultyDeps(deps, { match: writeOf[verb], phase }) };
      await expect(verbs[verb](dying, entity, target, c0!)).rejects.toThrow(InjectedCrash);
      expect(await completeTicketed(ctx, pk, c1!.token)).toBe('completed');
      const fate = await fateOf(queue, pk, c0!);
      // Dying before, the message is still held under its ticket: its lapse brings it back once.
      expect(fate).toEqual(phase === 'before' ? { handed: 1, sibling: 0, deferred: 0, dead: 0 } : { ...landed[verb], sibling: 0 });
    },
  );

  it.each(['abandon', 'defer', 'deadLetter'] as const)(
    'R4, D3: a %s whose transaction keeps meeting another answers Throttled (retryable) and changes nothing; the retry settles once',
    async (verb) => {
      const queue = `ta-busy-${verb}`;
      const { target, entity, pk } = await ticketedQueue(queue);
      await seed(entity, pk, ids('c', 2));
      const [c0, c1] = await take(pk);
      const store = faultyStore(deps.db, { conflict: { when: onOperations('TransactWriteItems') } }, { fastRetries: true });
      const refused = await verbs[verb]({ ...ctx, db: store.db }, entity, target, c0!).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(BrokerError);
      expect([(refused as BrokerError).code, (refused as BrokerError).retryable]).toEqual(['Throttled', true]);
      expect(await at(pk, c0!)).not.toHaveProperty('g');
      expect(await at(pk, c0!)).not.toHaveProperty('done');
      await verbs[verb](ctx, entity, target, c0!);
      expect(await completeTicketed(ctx, pk, c1!.token)).toBe('completed');
      expect(await fateOf(queue, pk, c0!)).toEqual({ ...landed[verb], sibling: 0 });
    },
  );

  it('R4: a renew throttled past the SDK retries answers Throttled; the lock ends where it did; a retry renews it', async () => {
    const { target, entity, pk } = await ticketedQueue('ta-renew-busy');
    await seed(entity, pk, ids('o', 2));
    const [o0] = await take(pk);
    const before = (await counterOf(pk)).tickets;
    const store = faultyStore(deps.db, { throttle: { when: onOperations('UpdateItem') } }, { fastRetries: true });
    expect(await codeOf(renewPositioned({ ...ctx, db: store.db }, entity, target, seqOf(o0!), o0!.token))).toBe('Throttled');
    expect((await counterOf(pk)).tickets).toEqual(before);
    clock.advance(LOCK / 2);
    await renewPositioned(ctx, entity, target, seqOf(o0!), o0!.token);
    clock.advance(LOCK / 2);
    expect((await take(pk)).map(idOf)).toEqual(['o1']);
    expect(await completeTicketed(ctx, pk, o0!.token)).toBe('completed');
  });

  it("R5: past the lock end its token states, a settlement whose read of the ticket's entry is refused for load writes nothing and can be retried", async () => {
    const { target, entity, pk } = await ticketedQueue('ta-read-busy');
    await seed(entity, pk, ids('q', 1));
    const [q0] = await take(pk);
    clock.advance(LOCK / 2);
    await renewPositioned(ctx, entity, target, seqOf(q0!), q0!.token);
    clock.advance(LOCK / 2 + SECOND);
    const store = faultyStore(deps.db, { throttle: { when: onOperations('GetItem') } }, { fastRetries: true });
    const refused = await abandonPositioned({ ...ctx, db: store.db }, entity, target, seqOf(q0!), q0!.token).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStoreBusy(refused)).toBe(true);
    expect(await at(pk, q0!)).not.toHaveProperty('g');
    await abandonPositioned(ctx, entity, target, seqOf(q0!), q0!.token);
    expect((await take(pk)).map((m) => [idOf(m), m.deliveryCount])).toEqual([['q0', 2]]);
  });
});

describe('the model', () => {
  interface HandOut {
    id: string;
    m: Held;
    until: number;
    /** Settled by a verb whose write landed. */
    over: boolean;
  }
  type ModelVerb = 'complete' | Verb;
  const writeOf: Record<ModelVerb, (c: unknown) => boolean> = {
    complete: is(PutCommand),
    abandon: is(TransactWriteCommand),
    defer: is(TransactWriteCommand),
    deadLetter: is(TransactWriteCommand),
    renew: is(UpdateCommand),
  };

  it.each([7, 19, 31])(
    'R1, R4, R5, R6, D3: random sends, takes, abandons, defers, dead-letters, renews and completes on ticket and lease tokens, clock moves and crashes never lose or double a message, nor hand one out under two valid locks (seed %i)',
    async (seedNumber) => {
      const random = seededRandom(seedNumber);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
      const queue = `ta-model-${seedNumber}`;
      const { target, entity, pk } = await ticketedQueue(queue, { maxDeliveryCount: 100 });
      const sent: string[] = [];
      const handOuts: HandOut[] = [];
      const completed = new Map<string, number>();
      /** Takes and records each hand-out, checking R1 against every hand-out of that message still under a valid lock. */
      const takeSome = async (n: number, lockMs = LOCK) => {
        await takeBackTickets(ctx, pk, lapsedTickets(await counterOf(pk), clock.now()));
        const fromBack = await claim(ctx, pk, n, { lockMs });
        const got: { m: Held; until: number }[] = fromBack.messages.map((m) => ({ m, until: fromBack.lease!.until }));
        if (got.length < n) {
          const took = await takeTicket(ctx, pk, n - got.length, { lockMs, look: true });
          if (took.ticket) got.push(...(await readTicket(ctx, pk, took.ticket)).messages.map((m) => ({ m, until: took.ticket!.until })));
        }
        for (const { m, until } of got) {
          const id = idOf(m);
          const live = handOuts.filter((h) => h.id === id && !h.over && h.until > clock.now());
          expect(
            live.map((h) => h.m.token),
            `R1: ${id} handed out again while held`,
          ).toEqual([]);
          handOuts.push({ id, m, until, over: false });
        }
        return got;
      };
      for (let step = 0; step < 150; step++) {
        const roll = random();
        if (roll < 0.2) {
          const n = 1 + Math.floor(random() * 3);
          const batch = Array.from({ length: n }, (_, i) => ({ body: `s${step}-${i}`, messageId: `s${step}-${i}` }));
          await seed(entity, pk, batch);
          sent.push(...batch.map((b) => b.messageId));
        } else if (roll < 0.45) {
          await takeSome(1 + Math.floor(random() * 4));
        } else if (roll < 0.85 && handOuts.length > 0) {
          const h = pick(handOuts.slice(-12));
          const verb = pick<ModelVerb>(['complete', 'abandon', 'defer', 'deadLetter', 'renew', 'renew']);
          const crash = random() < 0.15 ? pick(['before', 'after'] as const) : undefined;
          const c = crash ? { ...ctx, ...faultyDeps(deps, { match: writeOf[verb], phase: crash }) } : ctx;
          const held = !h.over && h.until > clock.now();
          const run = async () => {
            if (verb !== 'complete') return verbs[verb](c, entity, target, h.m);
            await completePositioned(c, entity, target, seqOf(h.m), h.m.token);
          };
          const outcome = await run().then(
            () => 'ok',
            (e: unknown) => (e instanceof InjectedCrash ? 'crash' : e instanceof BrokerError ? e.code : String(e)),
          );
          // A crash before the verb's write changes nothing; one after it, only once the write landed.
          if (outcome === 'crash' && crash === 'before') continue;
          if (outcome !== 'crash') {
            // R5: a valid lock settles; an ended or settled one answers MessageLockLost.
            expect(outcome, `${verb} of ${h.id} (${held ? 'held' : 'not held'})`).toBe(held ? 'ok' : 'MessageLockLost');
            if (outcome !== 'ok') continue;
          }
          if (verb === 'complete') completed.set(h.id, (completed.get(h.id) ?? 0) + 1);
          if (verb === 'renew') h.until = clock.now() + LOCK;
          else h.over = true;
        } else clock.advance(Math.floor(random() * 20) * SECOND);
      }
      // Everything left comes back once its locks end; completed, it is gone.
      for (let round = 0; round < 8; round++) {
        clock.advance(2 * LOCK);
        for (const { m } of await takeSome(100)) {
          expect(await completeTicketed(ctx, pk, m.token)).toBe('completed');
          completed.set(idOf(m), (completed.get(idOf(m)) ?? 0) + 1);
          for (const h of handOuts) if (h.m.token === m.token) h.over = true;
        }
      }
      const deferred = (await todaysDeferred(entity)).map((i) => i.messageId as string);
      const dead = (await peek(dlq(queue), 100)).map((m: Record<string, unknown>) => m.messageId as string);
      const fates = new Map<string, number>();
      for (const id of [...deferred, ...dead, ...[...completed].flatMap(([id, n]) => Array<string>(n).fill(id))]) fates.set(id, (fates.get(id) ?? 0) + 1);
      expect(
        sent.filter((id) => fates.get(id) !== 1).map((id) => [id, fates.get(id) ?? 0]),
        'each message settled exactly once',
      ).toEqual([]);
      expect(fates.size).toBe(sent.length);
    },
  );
});
