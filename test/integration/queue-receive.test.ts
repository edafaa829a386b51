/**
 * Receiving and settlement over the API handler (R1-R9). Locks run out only when a test
 * moves the clock; long polls sleep on the ManualClock, which advances it at once.
 */
import { describe, expect, it } from 'vitest';
import { apiOnTable, type Json } from '../support/api.js';
import { HookedClock } from '../support/hooked-clock.js';
import { expectError, queueMaker } from '../support/queue-helpers.js';

const clock = new HookedClock();

const api = apiOnTable(clock, 'qreceive');

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const iso = (ms: number) => new Date(ms).toISOString();
type Msg = Record<string, Json>;

const newQueue = queueMaker(() => api, 'r');

/** Sends bodies 0..n-1 (or the given ones) one by one; answers their sequence numbers. */
async function sendAll(q: string, bodies: unknown[]): Promise<string[]> {
  const seqs: string[] = [];
  for (const body of bodies) {
    const sent = await api('POST', `/queues/${q}/messages`, { body });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    seqs.push(sent.body.sequenceNumber);
  }
  return seqs;
}

async function receive(q: string, body: Record<string, unknown> = {}): Promise<Msg[]> {
  const got = await api('POST', `/queues/${q}/messages/receive`, body);
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  return got.body.messages;
}

async function peek(q: string, query = '?maxMessages=100'): Promise<Msg[]> {
  const got = await api('GET', `/queues/${q}/messages${query}`);
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  return got.body.messages;
}

const settle = (q: string, m: Msg, action: string, extra: Record<string, unknown> = {}) =>
  api('POST', `/queues/${q}/messages/${m.sequenceNumber}/${action}`, { lockToken: m.lockToken, ...extra });

describe('R1: receive modes', () => {
  it('R1/R3: peek-lock hands out a locked message with lockToken and lockedUntil = now + lockDuration; no other receiver gets it', async () => {
    // prepare
    const q = await newQueue({ lockDuration: 'PT30S' });
    const [seq] = await sendAll(q, ['one']);
    // act
    const first = await receive(q, { mode: 'peekLock' });
    const second = await receive(q, { mode: 'peekLock' });
    const third = await receive(q, { mode: 'receiveAndDelete' });
    // assess
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      body: 'one',
      sequenceNumber: seq,
      deliveryCount: 1,
      state: 'Active',
      lockToken: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i),
      lockedUntil: iso(clock.now() + 30 * SECOND),
    });
    expect(second).toEqual([]);
    expect(third).toEqual([]);
    expect(await peek(q)).toHaveLength(1); // still stored while locked
  });

  it('R1: receive-and-delete removes the message as it is handed out, without a lock', async () => {
    // prepare
    const q = await newQueue();
    const [seq] = await sendAll(q, ['gone']);
    // act
    const got = await receive(q, { mode: 'receiveAndDelete' });
    const again = await receive(q, { mode: 'peekLock' });
    // assess
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ body: 'gone', sequenceNumber: seq });
    expect(got[0]).not.toHaveProperty('lockToken');
    expect(got[0]).not.toHaveProperty('lockedUntil');
    expect(again).toEqual([]);
    expect(await peek(q)).toEqual([]);
  });

  it('R1/R2: the default receive is one message under peek-lock without waiting', async () => {
    // prepare
    const q = await newQueue();
    await sendAll(q, ['a', 'b']);
    const before = clock.now();
    // act
    const noBody = await api('POST', `/queues/${q}/messages/receive`);
    const emptyBody = await receive(q, {});
    // assess
    expect(noBody.status).toBe(200);
    expect(noBody.body.messages).toHaveLength(1);
    expect(noBody.body.messages[0].lockToken).toEqual(expect.any(String));
    expect(emptyBody).toHaveLength(1);
    expect(emptyBody[0]!.lockToken).toEqual(expect.any(String));
    expect(clock.now()).toBe(before);
  });
});

describe('R2: maxMessages, maxWaitTime, order', () => {
  it('R2: maxMessages 1..100 bounds the answer; 0, 101, 1.5 and "5" are refused with 400 naming maxMessages', async () => {
    // prepare
    const q = await newQueue();
    const sent = await api('POST', `/queues/${q}/messages/batch`, { messages: Array.from({ length: 100 }, (_, i) => ({ body: i })) });
    expect(sent.status).toBe(201);
    await api('POST', `/queues/${q}/messages`, { body: 100 });
    // act
    const refused = await Promise.all([0, 101, 1.5, '5', -1].map((n) => api('POST', `/queues/${q}/messages/receive`, { maxMessages: n })));
    const three = await receive(q, { maxMessages: 3, mode: 'receiveAndDelete' });
    const hundred = await receive(q, { maxMessages: 100, mode: 'receiveAndDelete' });
    const rest = await receive(q, { maxMessages: 100, mode: 'receiveAndDelete' });
    // assess
    for (const r of refused) expectError(r, 400, 'BadRequest', 'maxMessages');
    expect(three.map((m) => m.body)).toEqual([0, 1, 2]);
    expect(hundred).toHaveLength(98);
    expect(hundred.map((m) => m.body)).toEqual(Array.from({ length: 98 }, (_, i) => i + 3));
    expect(rest).toEqual([]);
  });

  it('R2: messages come oldest sequence first', async () => {
    // prepare
    const q = await newQueue();
    const seqs = await sendAll(q, [0, 1, 2, 3, 4]);
    // act
    const got = await receive(q, { maxMessages: 5 });
    // assess
    expect(got.map((m) => m.sequenceNumber)).toEqual(seqs);
    expect(got.map((m) => m.body)).toEqual([0, 1, 2, 3, 4]);
  });

  it('R2: maxWaitTime over PT20S is refused with 400 naming maxWaitTime; PT20S is allowed', async () => {
    // prepare
    const q = await newQueue();
    // act
    const over = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT21S' });
    const overByMs = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT20.001S' });
    const minute = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT1M' });
    const notDuration = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 20 });
    const atLimit = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT20S' });
    // assess
    for (const r of [over, overByMs, minute, notDuration]) expectError(r, 400, 'BadRequest', 'maxWaitTime');
    expect(atLimit.status).toBe(200);
  });

  it('R2: a long poll with nothing arriving answers an empty list after maxWaitTime', async () => {
    // prepare
    const q = await newQueue();
    const before = clock.now();
    // act
    const got = await receive(q, { maxWaitTime: 'PT10S', maxMessages: 5 });
    // assess
    expect(got).toEqual([]);
    expect(clock.now() - before).toBeGreaterThanOrEqual(10 * SECOND);
    expect(clock.now() - before).toBeLessThan(12 * SECOND);
  });

  it('R2: a long poll returns a message that arrives while it waits, before maxWaitTime is over', async () => {
    // prepare
    const q = await newQueue();
    const before = clock.now();
    let arrived: string | undefined;
    clock.onSleep = async () => {
      const sent = await api('POST', `/queues/${q}/messages`, { body: 'late' });
      arrived = sent.body.sequenceNumber;
    };
    // act
    const got = await receive(q, { maxWaitTime: 'PT20S' });
    // assess
    expect(arrived).toBeDefined();
    expect(got.map((m) => m.sequenceNumber)).toEqual([arrived]);
    expect(clock.now() - before).toBeLessThan(20 * SECOND);
  });
});

describe('R3: delivery count', () => {
  it('R3: deliveryCount goes up by one with each peek-lock delivery (after abandon and after lock expiry), not with peek', async () => {
    // prepare
    const q = await newQueue({ lockDuration: 'PT5S' });
    await sendAll(q, ['counted']);
    const counts: number[] = [];
    // act
    const [a] = await receive(q);
    counts.push(a!.deliveryCount);
    expect((await settle(q, a!, 'abandon')).status).toBe(204);
    const [b] = await receive(q);
    counts.push(b!.deliveryCount);
    clock.advance(6 * SECOND);
    const [peeked] = await peek(q);
    const [c] = await receive(q);
    counts.push(c!.deliveryCount);
    // assess
    expect(counts).toEqual([1, 2, 3]);
    expect(peeked!.deliveryCount).toBe(2);
  });
});

describe('R4-R6: settlement and locks', () => {
  it('R4: complete removes the message for good', async () => {
    // prepare
    const q = await newQueue();
    await sendAll(q, ['done']);
    const [m] = await receive(q);
    // act
    const done = await settle(q, m!, 'complete');
    // assess
    expect(done.status).toBe(204);
    expect(await peek(q)).toEqual([]);
    clock.advance(2 * MINUTE);
    expect(await receive(q, { mode: 'receiveAndDelete' })).toEqual([]);
  });

  it('R4: abandon makes the message available again at the head, with propertiesToModify applied', async () => {
    // prepare
    const q = await newQueue();
    await sendAll(q, ['first', 'second']);
    await api('POST', `/queues/${q}/messages`, { body: 'third', applicationProperties: { keep: 'x' } });
    const [first] = await receive(q);
    // act
    const abandoned = await settle(q, first!, 'abandon', { propertiesToModify: { tries: 1, reason: 'busy' } });
    const got = await receive(q, { maxMessages: 3, mode: 'receiveAndDelete' });
    // assess
    expect(abandoned.status).toBe(204);
    expect(got.map((m) => m.body)).toEqual(['first', 'second', 'third']);
    expect(got[0]).toMatchObject({ applicationProperties: { tries: 1, reason: 'busy' }, deliveryCount: 2 });
    expect(got[2]!.applicationProperties).toEqual({ keep: 'x' });
  });

  it('R4: propertiesToModify merges into the existing application properties on abandon', async () => {
    // prepare
    const q = await newQueue();
    await api('POST', `/queues/${q}/messages`, { body: 1, applicationProperties: { a: 1, b: 'two' } });
    const [m] = await receive(q);
    // act
    const abandoned = await settle(q, m!, 'abandon', { propertiesToModify: { b: 'changed', c: true } });
    const [again] = await receive(q, { mode: 'receiveAndDelete' });
    // assess
    expect(abandoned.status).toBe(204);
    expect(again!.applicationProperties).toEqual({ a: 1, b: 'changed', c: true });
  });

  it('R4: renew-lock answers a later lockedUntil = now + lockDuration, and the renewed lock outlives the first one', async () => {
    // prepare
    const q = await newQueue({ lockDuration: 'PT30S' });
    await sendAll(q, ['long job']);
    const [m] = await receive(q);
    const firstUntil = Date.parse(m!.lockedUntil);
    clock.advance(20 * SECOND);
    // act
    const renewed = await settle(q, m!, 'renew-lock');
    clock.advance(15 * SECOND); // past the first lockedUntil, within the renewed one
    const meanwhile = await receive(q);
    const done = await settle(q, m!, 'complete');
    // assess
    expect(renewed.status).toBe(200);
    expect(renewed.body).toEqual({ lockedUntil: iso(clock.now() - 15 * SECOND + 30 * SECOND) });
    expect(Date.parse(renewed.body.lockedUntil)).toBeGreaterThan(firstUntil);
    expect(meanwhile).toEqual([]);
    expect(done.status).toBe(204);
  });

  it('R4/R5: renew-lock after the lock ran out is 410 MessageLockLost', async () => {
    // prepare
    const q = await newQueue({ lockDuration: 'PT5S' });
    await sendAll(q, ['slow']);
    const [m] = await receive(q);
    clock.advance(5 * SECOND);
    // act
    const renewed = await settle(q, m!, 'renew-lock');
    // assess
    expectError(renewed, 410, 'MessageLockLost');
    expect(await receive(q, { mode: 'receiveAndDelete' })).toHaveLength(1);
  });

  it('R6/R5: when the lock runs out the message is receivable again, and the old token gets 410 and changes nothing', async () => {
    // prepare
    const q = await newQueue({ lockDuration: 'PT5S' });
    const [seq] = await sendAll(q, ['expiring lock']);
    const [old] = await receive(q);
    clock.advance(4 * SECOND);
    const stillLocked = await receive(q);
    clock.advance(2 * SECOND);
    // act
    const [again] = await receive(q);
    const staleComplete = await settle(q, old!, 'complete');
    const staleAbandon = await settle(q, old!, 'abandon');
    const staleDefer = await settle(q, old!, 'defer');
    const staleDeadLetter = await settle(q, old!, 'deadletter');
    const staleRenew = await settle(q, old!, 'renew-lock');
    // assess
    expect(stillLocked).toEqual([]);
    expect(again).toMatchObject({ sequenceNumber: seq, deliveryCount: 2 });
    expect(again!.lockToken).not.toBe(old!.lockToken);
    for (const r of [staleComplete, staleAbandon, staleDefer, staleDeadLetter, staleRenew]) expectError(r, 410, 'MessageLockLost');
    // nothing changed: the new holder still holds it, nothing went to the dead-letter subqueue
    expect(await receive(q)).toEqual([]);
    expect((await api('GET', `/queues/${q}/$deadletterqueue/messages`)).body.messages).toEqual([]);
    expect((await settle(q, again!, 'complete')).status).toBe(204);
    expect(await peek(q)).toEqual([]);
  });

  it('R2/R6: a message whose lock ran out is available again like an abandoned one: oldest sequence first', async () => {
    // prepare
    const q = await newQueue({ lockDuration: 'PT5S' });
    const seqs = await sendAll(q, ['A', 'B']);
    const [a] = await receive(q);
    expect(a!.sequenceNumber).toBe(seqs[0]);
    clock.advance(6 * SECOND);
    // act
    const got = await receive(q, { maxMessages: 2, mode: 'receiveAndDelete' });
    // assess
    expect(got.map((m) => m.body)).toEqual(['A', 'B']);
  });

  it('R5: a completed message cannot be settled again: 410 for every action', async () => {
    // prepare
    const q = await newQueue();
    await sendAll(q, ['once']);
    const [m] = await receive(q);
    expect((await settle(q, m!, 'complete')).status).toBe(204);
    // act
    const replies = await Promise.all(['complete', 'abandon', 'defer', 'deadletter', 'renew-lock'].map((a) => settle(q, m!, a)));
    // assess
    for (const r of replies) expectError(r, 410, 'MessageLockLost');
  });

  it('R5: a well-formed but unknown lock token gets 410 and the locked message stays locked', async () => {
    // prepare
    const q = await newQueue();
    await sendAll(q, ['held']);
    const [m] = await receive(q);
    const forged = m!.lockToken.slice(0, 24) + (m!.lockToken.slice(24, 25) === '0' ? '1' : '0') + m!.lockToken.slice(25);
    // act
    const complete = await settle(q, { ...m, lockToken: forged }, 'complete');
    const abandon = await settle(q, { ...m, lockToken: forged }, 'abandon');
    // assess
    expectError(complete, 410, 'MessageLockLost');
    expectError(abandon, 410, 'MessageLockLost');
    expect(await receive(q)).toEqual([]);
    expect((await settle(q, m!, 'complete')).status).toBe(204);
  });

  it('R5: settling one message with the lock token of another is 410, and both stay locked by their holders', async () => {
    // prepare
    const q = await newQueue();
    await sendAll(q, ['a', 'b']);
    const [a, b] = await receive(q, { maxMessages: 2 });
    // act
    const crossedComplete = await api('POST', `/queues/${q}/messages/${a!.sequenceNumber}/complete`, { lockToken: b!.lockToken });
    const crossedAbandon = await api('POST', `/queues/${q}/messages/${b!.sequenceNumber}/abandon`, { lockToken: a!.lockToken });
    const crossedRenew = await api('POST', `/queues/${q}/messages/${a!.sequenceNumber}/renew-lock`, { lockToken: b!.lockToken });
    // assess
    expectError(crossedComplete, 410, 'MessageLockLost');
    expectError(crossedAbandon, 410, 'MessageLockLost');
    expectError(crossedRenew, 410, 'MessageLockLost');
    expect(await receive(q)).toEqual([]);
    expect((await settle(q, a!, 'complete')).status).toBe(204);
    expect((await settle(q, b!, 'complete')).status).toBe(204);
    expect(await peek(q)).toEqual([]);
  });

  it('R4/R5: a lock token from another queue is 410', async () => {
    // prepare
    const q1 = await newQueue();
    const q2 = await newQueue();
    await sendAll(q1, ['in q1']);
    const [m] = await receive(q1);
    // act
    const wrongQueue = await api('POST', `/queues/${q2}/messages/${m!.sequenceNumber}/complete`, { lockToken: m!.lockToken });
    // assess
    expectError(wrongQueue, 410, 'MessageLockLost');
    expect((await settle(q1, m!, 'complete')).status).toBe(204);
  });

  it('R4: dead-letter moves the message to the dead-letter subqueue with the reason, description and modified properties', async () => {
    // prepare
    const q = await newQueue();
    const [seq] = await sendAll(q, ['poison']);
    const [m] = await receive(q);
    // act
    const dead = await settle(q, m!, 'deadletter', {
      deadLetterReason: 'Poison',
      deadLetterErrorDescription: 'cannot parse',
      propertiesToModify: { seen: true },
    });
    // assess
    expect(dead.status).toBe(204);
    expect(await peek(q)).toEqual([]);
    const dlq = await api('GET', `/queues/${q}/$deadletterqueue/messages`);
    expect(dlq.body.messages).toHaveLength(1);
    expect(dlq.body.messages[0]).toMatchObject({
      body: 'poison',
      deadLetterReason: 'Poison',
      deadLetterErrorDescription: 'cannot parse',
      enqueuedSequenceNumber: seq,
      applicationProperties: { seen: true },
    });
  });
});

describe('R7: deferred messages', () => {
  it('R7/R8: a deferred message is not returned by receive, shows as Deferred in peek, and is received locked by sequence number', async () => {
    // prepare
    const q = await newQueue();
    const [deferSeq, otherSeq] = await sendAll(q, ['deferred', 'other']);
    const [m] = await receive(q);
    // act
    const deferred = await settle(q, m!, 'defer', { propertiesToModify: { step: 2 } });
    const ordinary = await receive(q, { maxMessages: 10, mode: 'peekLock' });
    const none = await receive(q, { maxMessages: 10, mode: 'receiveAndDelete' });
    const peeked = await peek(q);
    const byNumber = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [deferSeq] });
    const twice = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [deferSeq] });
    // assess
    expect(deferred.status).toBe(204);
    expect(ordinary.map((x) => x.sequenceNumber)).toEqual([otherSeq]);
    expect(none).toEqual([]);
    expect(peeked.find((x) => x.sequenceNumber === deferSeq)).toMatchObject({ state: 'Deferred', applicationProperties: { step: 2 } });
    expect(byNumber.status).toBe(200);
    expect(byNumber.body.messages).toHaveLength(1);
    const got = byNumber.body.messages[0];
    expect(got).toMatchObject({ sequenceNumber: deferSeq, body: 'deferred', lockToken: expect.any(String), lockedUntil: iso(clock.now() + MINUTE) });
    // locked: not handed out twice while the lock holds
    expect(twice.status).toBe(200);
    expect(twice.body.messages).toEqual([]);
    expect((await settle(q, got, 'complete')).status).toBe(204);
    expect((await peek(q)).map((x) => x.sequenceNumber)).toEqual([otherSeq]);
  });

  it('R7: an abandoned deferred message stays deferred: still not returned by receive, still received by number', async () => {
    // prepare
    const q = await newQueue();
    const [seq] = await sendAll(q, ['d']);
    const [m] = await receive(q);
    expect((await settle(q, m!, 'defer')).status).toBe(204);
    const first = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [seq] });
    // act
    const abandoned = await settle(q, first.body.messages[0], 'abandon');
    const ordinary = await receive(q, { mode: 'receiveAndDelete' });
    const again = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [seq] });
    // assess
    expect(abandoned.status).toBe(204);
    expect(ordinary).toEqual([]);
    expect(again.body.messages.map((x: Msg) => x.sequenceNumber)).toEqual([seq]);
  });

  it('R7: an unknown or non-deferred sequence number is 404 MessageNotFound, and none of the listed messages is locked', async () => {
    // prepare
    const q = await newQueue();
    const [deferSeq, activeSeq] = await sendAll(q, ['deferred', 'active']);
    const [m] = await receive(q);
    expect((await settle(q, m!, 'defer')).status).toBe(204);
    // act
    const unknown = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: ['12345'] });
    const notDeferred = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [activeSeq] });
    const mixed = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [deferSeq, activeSeq] });
    // assess
    expectError(unknown, 404, 'MessageNotFound');
    expectError(notDeferred, 404, 'MessageNotFound');
    expectError(mixed, 404, 'MessageNotFound');
    // nothing was locked: the deferred one is still free to take, the active one still receivable
    const took = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [deferSeq] });
    expect(took.body.messages.map((x: Msg) => x.sequenceNumber)).toEqual([deferSeq]);
    expect(took.body.messages[0].deliveryCount).toBe(2);
    const active = await receive(q);
    expect(active.map((x) => x.sequenceNumber)).toEqual([activeSeq]);
    expect(active[0]!.deliveryCount).toBe(1);
  });
});

describe('R8: peek', () => {
  it('R8: peek returns messages from a sequence number on, at most maxMessages, without locking or counting a delivery', async () => {
    // prepare
    const q = await newQueue();
    const seqs = await sendAll(q, [0, 1, 2, 3, 4]);
    // act
    const all = await peek(q, '');
    const fromThird = await peek(q, `?fromSequenceNumber=${seqs[2]}&maxMessages=2`);
    const fromPastEnd = await peek(q, `?fromSequenceNumber=${BigInt(seqs[4]!) + 1n}`);
    const got = await receive(q, { maxMessages: 5 });
    // assess
    expect(all.map((m) => m.sequenceNumber)).toEqual(seqs);
    for (const m of all) {
      expect(m).not.toHaveProperty('lockToken');
      expect(m.deliveryCount).toBe(0);
    }
    expect(fromThird.map((m) => m.sequenceNumber)).toEqual([seqs[2], seqs[3]]);
    expect(fromPastEnd).toEqual([]);
    expect(got.map((m) => m.sequenceNumber)).toEqual(seqs);
    expect(got.map((m) => m.deliveryCount)).toEqual([1, 1, 1, 1, 1]);
  });

  it('R8: peek shows locked, scheduled and deferred messages with their state; maxMessages defaults to 10 and is bounded 1..100', async () => {
    // prepare
    const q = await newQueue();
    const [lockedSeq, deferSeq] = await sendAll(q, ['locked', 'deferred']);
    const scheduled = await api('POST', `/queues/${q}/messages`, { body: 'scheduled', scheduledEnqueueTime: iso(clock.now() + MINUTE) });
    await sendAll(
      q,
      Array.from({ length: 10 }, (_, i) => `filler-${i}`),
    );
    const [l, d] = await receive(q, { maxMessages: 2 });
    expect((await settle(q, d!, 'defer')).status).toBe(204);
    // act
    const page = await peek(q, '');
    const bad = await Promise.all(
      ['maxMessages=0', 'maxMessages=101', 'maxMessages=x', 'fromSequenceNumber=-1', 'fromSequenceNumber=12345678901234567890'].map((s) =>
        api('GET', `/queues/${q}/messages?${s}`),
      ),
    );
    // assess
    expect(page).toHaveLength(10);
    const bySeq = new Map(page.map((m) => [m.sequenceNumber, m]));
    expect(bySeq.get(lockedSeq!)).toMatchObject({ state: 'Active', deliveryCount: 1 });
    expect(bySeq.get(deferSeq!)).toMatchObject({ state: 'Deferred' });
    expect(bySeq.get(scheduled.body.sequenceNumber)).toMatchObject({ state: 'Scheduled' });
    expect(l!.sequenceNumber).toBe(lockedSeq);
    for (const [i, r] of bad.entries()) expectError(r, 400, 'BadRequest', i < 3 ? 'maxMessages' : 'fromSequenceNumber');
  });
});

describe('R9: batch settlement', () => {
  it('R9: batch complete with good, stale, used and unknown tokens answers a result per token, in order, and completes only the good ones', async () => {
    // prepare
    const q = await newQueue({ lockDuration: 'PT5S' });
    await sendAll(q, ['stale', 'used', 'good-1', 'good-2']);
    const [stale] = await receive(q);
    clock.advance(6 * SECOND); // `stale` loses its lock; it is receivable again
    // (found by body: the order of a message whose lock ran out is checked in the R2/R6 test)
    const four = new Map((await receive(q, { maxMessages: 4 })).map((m) => [m.body as string, m]));
    const [staleAgain, used, good1, good2] = ['stale', 'used', 'good-1', 'good-2'].map((b) => four.get(b));
    expect(staleAgain!.sequenceNumber).toBe(stale!.sequenceNumber);
    expect((await settle(q, used!, 'complete')).status).toBe(204);
    const unknown = '00000000-0000-0000-0000-000000000001';
    const tokens = [stale!.lockToken, good1!.lockToken, used!.lockToken, unknown, good2!.lockToken];
    // act
    const batch = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: tokens });
    // assess
    expect(batch.status).toBe(200);
    const results = batch.body.results as { lockToken: string; ok?: true; error?: { code: string } }[];
    expect(results.map((r) => r.lockToken)).toEqual(tokens);
    expect(results.map((r) => (r.ok ? 'ok' : r.error?.code))).toEqual(['MessageLockLost', 'ok', 'MessageLockLost', 'MessageLockLost', 'ok']);
    for (const r of results) if (r.error) expect(r.error).toMatchObject({ message: expect.any(String), retryable: false });
    // the stale token changed nothing: staleAgain is still locked by its holder, and only it is left
    expect(await receive(q)).toEqual([]);
    expect((await peek(q)).map((m) => m.sequenceNumber)).toEqual([stale!.sequenceNumber]);
    expect((await settle(q, staleAgain!, 'complete')).status).toBe(204);
  });

  it('R9: batch abandon releases the good tokens (available again at the head) and reports the bad ones', async () => {
    // prepare
    const q = await newQueue();
    const seqs = await sendAll(q, ['a', 'b', 'c']);
    const [a, b, c] = await receive(q, { maxMessages: 3 });
    expect((await settle(q, b!, 'complete')).status).toBe(204);
    // act
    const batch = await api('POST', `/queues/${q}/messages/abandon`, { lockTokens: [a!.lockToken, b!.lockToken, c!.lockToken] });
    // assess
    expect(batch.status).toBe(200);
    expect(batch.body.results.map((r: { ok?: true; error?: { code: string } }) => (r.ok ? 'ok' : r.error?.code))).toEqual(['ok', 'MessageLockLost', 'ok']);
    const again = await receive(q, { maxMessages: 10, mode: 'receiveAndDelete' });
    expect(again.map((m) => m.sequenceNumber)).toEqual([seqs[0], seqs[2]]);
    expect(again.map((m) => m.deliveryCount)).toEqual([2, 2]);
  });

  it('R9/B2: batch settlement takes a list of 1..100 tokens, otherwise 400 naming lockTokens; a malformed token gets its own error result; nothing is settled', async () => {
    // prepare
    const q = await newQueue();
    await sendAll(q, ['x']);
    const [m] = await receive(q);
    const many = Array.from({ length: 101 }, () => m!.lockToken);
    // act
    const empty = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: [] });
    const tooMany = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: many });
    const malformed = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: ['not-a-token'] });
    const notArray = await api('POST', `/queues/${q}/messages/abandon`, { lockTokens: m!.lockToken });
    // assess
    for (const r of [empty, tooMany, notArray]) expectError(r, 400, 'BadRequest', 'lockTokens');
    expect(malformed.status).toBe(200);
    expect(malformed.body.results).toEqual([
      { lockToken: 'not-a-token', error: { code: 'BadRequest', message: expect.stringContaining('lockTokens'), retryable: false } },
    ]);
    expect(await receive(q)).toEqual([]); // still locked: nothing was abandoned
    expect((await settle(q, m!, 'complete')).status).toBe(204);
  });
});
