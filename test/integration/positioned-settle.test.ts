/**
 * The broker's settlements under lease tokens (lib/broker/positioned-settle.ts) on a queue of
 * the positioned layout: messages seeded at positions as a send stores them and locked by
 * leases.ts's `claim` (receive is wired by its own step), then abandoned, deferred,
 * dead-lettered and renewed through the functions settle.ts dispatches to. What they leave in
 * today's layout is read through the API as any client would: receive-deferred by number (R7),
 * the dead-letter subqueue's peek (D1, D4), forwarding (F3).
 */
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { faultyDeps, InjectedCrash, is } from '../support/faults.js';
import { faultyStore, onOperations } from '../support/dynamo-faults.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers } from '../support/queue-helpers.js';
import { brokerContext, type BrokerContext } from '../../lib/broker/context.js';
import { requireEntity, type EntityItem } from '../../lib/broker/entities.js';
import { buildMessageItem } from '../../lib/broker/message-items.js';
import {
  abandonPositioned,
  abandonPositionedBatch,
  deadLetterPositioned,
  deferPositioned,
  handOutOrDeadLetter,
  renewPositioned,
} from '../../lib/broker/positioned-settle.js';
import { BrokerError } from '../../lib/errors.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { positionCounterKey, positionedPk } from '../../lib/store/keys.js';
import { completeTicketed, counterView, lapsedTickets, markTicketed, readTicket, takeBackTickets, takeTicket } from '../../lib/store/tickets.js';
import { claim, completeAtPosition, entryOfToken, type Claim } from '../../lib/store/leases.js';
import { storedMessage } from '../../lib/store/message-layout.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { positionedSeq } from '../../lib/store/sequence.js';
import type { MessageInput } from '../../lib/messages/schema.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let api: ReturnType<typeof apiClient>;
let ctx: BrokerContext;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'posettle')), newEntityLayout: positionedLayout };
  api = apiClient(deps);
  ctx = brokerContext(deps);
});

const { createQueue, peek, dlq } = queueHelpers(() => api);

type Held = Claim['messages'][number];

/** A positioned queue, its entity and its first partition. */
async function positionedQueue(name: string, props: Record<string, unknown> = {}) {
  await createQueue(name, { lockDuration: 'PT30S', ...props });
  const target: ReceiveTarget = { kind: 'queue', name, subqueue: 'active' };
  const entity = await requireEntity(ctx, target);
  expect(entity.layout).toBe('positions');
  return { target, entity, pk: positionedPk(entity.eid, 'active', 0) };
}

/** Messages put at positions as a send of the positioned layout stores them: today's item without its key and index attributes. */
async function seed(entity: EntityItem, pk: string, inputs: MessageInput[]) {
  const payloads = inputs.map((m) => {
    const { pk: _pk, sk: _sk, rpk: _rpk, rsk: _rsk, dpk: _dpk, dsk: _dsk, ...rest } = storedMessage(buildMessageItem(ctx, entity, m));
    return rest;
  });
  const draw = await drawPositions(ctx, pk, payloads.length);
  expect(await putAtPositions(ctx, pk, draw, payloads)).toBe('written');
}

const ticketed = positionedLayout === 'tickets';

/**
 * Takes up to `n` messages as a receive of the queue's layout takes them. With cursor claims,
 * one `claim`. On a ticketed queue (SLUICE_TEST_LAYOUT=tickets) the head is taken by ticket and
 * the cursor claims only `back`: lapsed tickets are taken back first, then `back` is claimed,
 * then the head is taken by ticket (design.md, "A claim that cannot lose"). The mechanism
 * differs, the rules these tests prove do not: the same messages in the same order, with the
 * same delivery counts.
 */
async function takeClaim(pk: string, n = 10): Promise<Claim> {
  if (!ticketed) return claim(ctx, pk, n, { lockMs: LOCK });
  expect(await markTicketed(ctx, pk)).toBe(true);
  const counter = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(pk), ConsistentRead: true }));
  await takeBackTickets(ctx, pk, lapsedTickets(counterView(counter.Item), clock.now()));
  const fromBack = await claim(ctx, pk, n, { lockMs: LOCK });
  const want = n - fromBack.messages.length;
  if (want <= 0) return fromBack;
  const took = await takeTicket(ctx, pk, want, { lockMs: LOCK, look: true });
  if (!took.ticket) return fromBack;
  const read = await readTicket(ctx, pk, took.ticket);
  return { ...fromBack, messages: [...fromBack.messages, ...read.messages] };
}
const take = async (pk: string, n = 10) => (await takeClaim(pk, n)).messages;
/** A complete as the layout completes: a ticketed partition's leaves a `done` marker. */
const complete = (pk: string, token: string) => (ticketed ? completeTicketed(ctx, pk, token) : completeAtPosition(ctx, pk, token));
const seqOf = (m: Held) => positionedSeq(entryOfToken(m.token)[0], 0);
const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof BrokerError ? e.code : String(e)),
  );

describe('positioned settlements: abandon', () => {
  it('R4, R3: an abandoned message comes back first with its delivery count one more and its properties changed; the token is spent (R5)', async () => {
    const { target, entity, pk } = await positionedQueue('pa-abandon');
    await seed(entity, pk, [{ body: 'a0', applicationProperties: { keep: 1 } }, { body: 'a1' }]);
    const [a0, a1] = await take(pk);
    await abandonPositioned(ctx, entity, target, seqOf(a0!), a0!.token, { tried: 'yes' });
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(a0!), a0!.token))).toBe('MessageLockLost');
    expect(await codeOf(renewPositioned(ctx, entity, target, seqOf(a0!), a0!.token))).toBe('MessageLockLost');
    expect(await complete(pk, a0!.token)).toBe('lockLost');
    const [again] = await take(pk);
    expect(again!.deliveryCount).toBe(2);
    expect(JSON.parse(again!.item.props as string)).toEqual({ keep: 1, tried: 'yes' });
    expect(await complete(pk, again!.token)).toBe('completed');
    expect(await complete(pk, a1!.token)).toBe('completed');
  });

  it('R5: a token for another sequence number, a lapsed lock, or the dead-letter subqueue is MessageLockLost', async () => {
    const { target, entity, pk } = await positionedQueue('pa-lost');
    await seed(entity, pk, [{ body: 'b0' }, { body: 'b1' }]);
    const [b0, b1] = await take(pk);
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(b1!), b0!.token))).toBe('MessageLockLost');
    expect(await codeOf(deferPositioned(ctx, entity, { ...target, subqueue: 'deadletter' }, seqOf(b0!), b0!.token))).toBe('MessageLockLost');
    clock.advance(LOCK);
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(b0!), b0!.token))).toBe('MessageLockLost');
    expect(await codeOf(renewPositioned(ctx, entity, target, seqOf(b0!), b0!.token))).toBe('MessageLockLost');
  });

  it('D2: an abandon on the last allowed delivery dead-letters with MaxDeliveryCountExceeded', async () => {
    const { target, entity, pk } = await positionedQueue('pa-d2', { maxDeliveryCount: 2 });
    await seed(entity, pk, [{ body: 'c0', messageId: 'c0' }]);
    const [first] = await take(pk);
    await abandonPositioned(ctx, entity, target, seqOf(first!), first!.token);
    const [second] = await take(pk);
    expect(second!.deliveryCount).toBe(2);
    await abandonPositioned(ctx, entity, target, seqOf(second!), second!.token);
    expect(await take(pk)).toEqual([]);
    const dead = await peek(dlq('pa-d2'));
    expect(dead.map((m: Record<string, unknown>) => [m.messageId, m.deadLetterReason, m.deliveryCount])).toEqual([['c0', 'MaxDeliveryCountExceeded', 2]]);
  });

  it('D2: a message whose lock ran out on its last allowed delivery is dead-lettered by the claim that takes it back, not handed out', async () => {
    const { entity, pk } = await positionedQueue('pa-d2-lapse', { maxDeliveryCount: 2 });
    await seed(entity, pk, [
      { body: 'l0', messageId: 'l0' },
      { body: 'l1', messageId: 'l1' },
    ]);
    const first = await takeClaim(pk, 1);
    expect(await handOutOrDeadLetter(ctx, entity, first)).toHaveLength(1);
    clock.advance(LOCK);
    const second = await takeClaim(pk, 1);
    expect(second.messages[0]!.deliveryCount).toBe(2);
    expect(await handOutOrDeadLetter(ctx, entity, second)).toHaveLength(1);
    clock.advance(LOCK);
    const third = await takeClaim(pk, 2);
    expect(third.messages.map((m) => m.deliveryCount)).toEqual([3, 1]);
    const handed = await handOutOrDeadLetter(ctx, entity, third);
    expect(handed.map((m) => m.item.messageId)).toEqual(['l1']);
    const dead = await peek(dlq('pa-d2-lapse'));
    expect(dead.map((m: Record<string, unknown>) => [m.messageId, m.deadLetterReason, m.deliveryCount])).toEqual([['l0', 'MaxDeliveryCountExceeded', 2]]);
  });

  it('R9, R2: a batch abandon answers each token; all of one partition are queued at once and handed out again oldest first', async () => {
    const { target, entity, pk } = await positionedQueue('pa-batch');
    await seed(
      entity,
      pk,
      ['d0', 'd1', 'd2', 'd3'].map((body) => ({ body })),
    );
    const held = await take(pk);
    expect(await complete(pk, held[1]!.token)).toBe('completed');
    const answers = await abandonPositionedBatch(
      ctx,
      entity,
      target,
      [3, 1, 0, 0].map((i) => ({ token: held[i]!.token, seq: seqOf(held[i]!) })),
    );
    expect(answers.map((a) => (a === true ? 'ok' : a.code))).toEqual(['ok', 'MessageLockLost', 'ok', 'MessageLockLost']);
    const again = await take(pk);
    expect(again.map((m) => [m.item.messageId !== undefined, m.deliveryCount])).toEqual([
      [true, 2],
      [true, 2],
    ]);
    expect(again.map((m) => entryOfToken(m.token)[0])).toEqual([held[0], held[3]].map((m) => entryOfToken(m!.token)[0]));
  });
});

describe('positioned settlements: defer and dead-letter', () => {
  it("R4, R7: a deferred message is received by its sequence number through today's receive-deferred, with its properties and delivery count", async () => {
    const { target, entity, pk } = await positionedQueue('pa-defer');
    await seed(entity, pk, [{ body: { n: 1 }, messageId: 'e0' }, { body: 'e1' }]);
    const [e0] = await take(pk, 1);
    await deferPositioned(ctx, entity, target, seqOf(e0!), e0!.token, { why: 'later' });
    expect(await codeOf(deferPositioned(ctx, entity, target, seqOf(e0!), e0!.token))).toBe('MessageLockLost');
    expect(await complete(pk, e0!.token)).toBe('lockLost');
    const peeked = await peek('/queues/pa-defer');
    expect(peeked.find((m: Record<string, unknown>) => m.messageId === 'e0')?.state).toBe('Deferred');
    const got = await api('POST', '/queues/pa-defer/messages/deferred', { sequenceNumbers: [seqOf(e0!).toString()] });
    expect(got.status).toBe(200);
    const [m] = got.body.messages;
    expect([m.messageId, m.body, m.sequenceNumber, m.deliveryCount, m.applicationProperties]).toEqual([
      'e0',
      { n: 1 },
      seqOf(e0!).toString(),
      2,
      { why: 'later' },
    ]);
    const done = await api('POST', `/queues/pa-defer/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
    expect(done.status).toBe(204);
    // Its lease's lapse finds nothing of it: the next claim takes only what was never taken.
    clock.advance(LOCK);
    expect((await take(pk)).map((x) => x.item.messageId !== 'e0')).toEqual([true]);
  });

  it('R4, D1, D4: a dead-lettered message keeps body, properties and id, gets the reason, description, source and its original number', async () => {
    const { target, entity, pk } = await positionedQueue('pa-dead');
    await seed(entity, pk, [{ body: 'f0', messageId: 'f0', applicationProperties: { a: 1 } }]);
    const [f0] = await take(pk);
    await deadLetterPositioned(ctx, entity, target, seqOf(f0!), {
      lockToken: f0!.token,
      deadLetterReason: 'Bad',
      deadLetterErrorDescription: 'no good',
      propertiesToModify: { b: 2 },
    });
    expect(await codeOf(deadLetterPositioned(ctx, entity, target, seqOf(f0!), { lockToken: f0!.token }))).toBe('MessageLockLost');
    const [dead] = await peek(dlq('pa-dead'));
    expect(dead).toMatchObject({
      messageId: 'f0',
      body: 'f0',
      deadLetterReason: 'Bad',
      deadLetterErrorDescription: 'no good',
      deadLetterSource: 'queues/pa-dead',
      enqueuedSequenceNumber: seqOf(f0!).toString(),
      applicationProperties: { a: 1, b: 2 },
      deliveryCount: 1,
    });
    expect(BigInt(dead.sequenceNumber)).not.toBe(seqOf(f0!));
    expect(await take(pk)).toEqual([]);
  });

  it('F3: dead-lettering forwards to forwardDeadLetteredMessagesTo, as for any message', async () => {
    await createQueue('pa-dead-sink', {});
    const { target, entity, pk } = await positionedQueue('pa-dead-fwd', { forwardDeadLetteredMessagesTo: 'pa-dead-sink' });
    await seed(entity, pk, [{ body: 'g0', messageId: 'g0' }]);
    const [g0] = await take(pk);
    await deadLetterPositioned(ctx, entity, target, seqOf(g0!), { lockToken: g0!.token, deadLetterReason: 'Fwd' });
    expect(await peek(dlq('pa-dead-fwd'))).toEqual([]);
    const [arrived] = await peek('/queues/pa-dead-sink');
    expect(arrived).toMatchObject({ messageId: 'g0', deadLetterReason: 'Fwd' });
  });
});

describe('positioned settlements: renew', () => {
  it("R4, R6: a renew moves this message's lock end to lockDuration from now; its siblings' locks end where they did", async () => {
    const { target, entity, pk } = await positionedQueue('pa-renew');
    await seed(
      entity,
      pk,
      ['h0', 'h1'].map((body) => ({ body, messageId: body })),
    );
    const [h0, h1] = await take(pk);
    clock.advance(LOCK / 2);
    const renewed = await renewPositioned(ctx, entity, target, seqOf(h0!), h0!.token);
    expect(renewed.lockedUntil).toBe(new Date(clock.now() + LOCK).toISOString());
    clock.advance(LOCK / 2);
    expect((await take(pk)).map((m) => m.item.messageId)).toEqual(['h1']);
    await abandonPositioned(ctx, entity, target, seqOf(h0!), h0!.token);
    expect(await codeOf(abandonPositioned(ctx, entity, target, seqOf(h1!), h1!.token))).toBe('MessageLockLost');
    expect((await take(pk)).map((m) => [m.item.messageId, m.deliveryCount])).toEqual([['h0', 2]]);
  });
});

describe('positioned settlements: renew after settling', () => {
  it("R5: a renew after the holder's own complete, or its own defer, is MessageLockLost", async () => {
    const { target, entity, pk } = await positionedQueue('pa-renew-spent');
    await seed(
      entity,
      pk,
      ['p0', 'p1'].map((body) => ({ body })),
    );
    const [p0, p1] = await take(pk);
    expect(await complete(pk, p0!.token)).toBe('completed');
    expect(await codeOf(renewPositioned(ctx, entity, target, seqOf(p0!), p0!.token))).toBe('MessageLockLost');
    await deferPositioned(ctx, entity, target, seqOf(p1!), p1!.token);
    expect(await codeOf(renewPositioned(ctx, entity, target, seqOf(p1!), p1!.token))).toBe('MessageLockLost');
  });
});

describe('positioned settlements: a Lambda dying part-way, DynamoDB refusing', () => {
  const dlqMessageIds = async (queue: string) => (await peek(dlq(queue))).map((m: Record<string, unknown>) => m.messageId);

  it.each([
    ['before', 'before'],
    ['after', 'after'],
  ] as const)('D3: a dead-letter dying %s its transaction leaves the message in exactly one place', async (_, phase) => {
    const name = `pa-dead-crash-${phase}`;
    const { target, entity, pk } = await positionedQueue(name);
    await seed(entity, pk, [{ body: 'k0', messageId: 'k0' }]);
    const [k0] = await take(pk);
    const dying = { ...ctx, ...faultyDeps(deps, { match: is(TransactWriteCommand), phase }) };
    await expect(deadLetterPositioned(dying, entity, target, seqOf(k0!), { lockToken: k0!.token, deadLetterReason: 'X' })).rejects.toThrow(InjectedCrash);
    clock.advance(LOCK);
    const back = await take(pk);
    if (phase === 'after') {
      expect(await dlqMessageIds(name)).toEqual(['k0']);
      expect(back).toEqual([]);
    } else {
      expect(await dlqMessageIds(name)).toEqual([]);
      expect(back.map((m) => [m.item.messageId, m.deliveryCount])).toEqual([['k0', 2]]);
    }
  });

  it('D2, D3: a claim whose dead-lettering of an over-delivered message dies leaves it under the lease; it is dead-lettered once, at the next take-back', async () => {
    const { entity, pk } = await positionedQueue('pa-d2-crash', { maxDeliveryCount: 1 });
    await seed(entity, pk, [{ body: 'm0', messageId: 'm0' }]);
    await takeClaim(pk, 1);
    clock.advance(LOCK);
    const over = await takeClaim(pk, 1);
    const dying = { ...ctx, ...faultyDeps(deps, { match: is(TransactWriteCommand) }) };
    await expect(handOutOrDeadLetter(dying, entity, over)).rejects.toThrow(InjectedCrash);
    expect(await dlqMessageIds('pa-d2-crash')).toEqual([]);
    clock.advance(LOCK);
    const again = await takeClaim(pk, 1);
    expect(again.messages[0]!.deliveryCount).toBe(3);
    expect(await handOutOrDeadLetter(ctx, entity, again)).toEqual([]);
    expect(await dlqMessageIds('pa-d2-crash')).toEqual(['m0']);
    clock.advance(LOCK);
    expect(await take(pk)).toEqual([]);
  });

  it('R5: an abandon that keeps meeting a conflicting transaction answers Throttled (retryable) and changes nothing; a retry succeeds', async () => {
    const { target, entity, pk } = await positionedQueue('pa-busy');
    await seed(entity, pk, [{ body: 'n0', messageId: 'n0' }]);
    const [n0] = await take(pk);
    const store = faultyStore(deps.db, { conflict: { when: onOperations('TransactWriteItems') } }, { fastRetries: true });
    const refused = await abandonPositioned({ ...ctx, db: store.db }, entity, target, seqOf(n0!), n0!.token).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(BrokerError);
    expect([(refused as BrokerError).code, (refused as BrokerError).retryable]).toEqual(['Throttled', true]);
    expect(store.log.conflicted).toBe(3);
    expect(await take(pk)).toEqual([]);
    await abandonPositioned(ctx, entity, target, seqOf(n0!), n0!.token);
    expect((await take(pk)).map((m) => m.deliveryCount)).toEqual([2]);
  });

  it('R4: a renew whose old lease rewrite is throttled answers Throttled; the lock still ends where it did, and a retry renews it', async () => {
    const { target, entity, pk } = await positionedQueue('pa-renew-busy');
    await seed(entity, pk, [
      { body: 'o0', messageId: 'o0' },
      { body: 'o1', messageId: 'o1' },
    ]);
    const [o0] = await take(pk);
    const store = faultyStore(deps.db, { throttle: { when: onOperations('UpdateItem') } }, { fastRetries: true });
    expect(await codeOf(renewPositioned({ ...ctx, db: store.db }, entity, target, seqOf(o0!), o0!.token))).toBe('Throttled');
    clock.advance(LOCK / 2);
    await renewPositioned(ctx, entity, target, seqOf(o0!), o0!.token);
    clock.advance(LOCK / 2);
    expect((await take(pk)).map((m) => m.item.messageId)).toEqual(['o1']);
    expect(await complete(pk, o0!.token)).toBe('completed');
  });
});
