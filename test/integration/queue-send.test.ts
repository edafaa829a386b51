/**
 * Sending to a queue over the API handler: the answer (S1-S3), batches (S4), size limits
 * (S5) and scheduled messages (S6). The clock only moves when a test moves it.
 */
import { describe, expect, it } from 'vitest';
import { apiOnTable, type Json } from '../support/api.js';
import { ManualClock } from '../support/table.js';
import { expectError, queueMaker } from '../support/queue-helpers.js';

const clock = new ManualClock();

const api = apiOnTable(clock, 'qsend');

const KB = 1024;
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const newQueue = queueMaker(() => api, 's');

async function peekAll(queue: string) {
  const got = await api('GET', `/queues/${queue}/messages?maxMessages=100`);
  expect(got.status).toBe(200);
  return got.body.messages as Record<string, Json>[];
}

async function receive(queue: string, body: Record<string, unknown> = {}) {
  const got = await api('POST', `/queues/${queue}/messages/receive`, body);
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  return got.body.messages as Record<string, Json>[];
}

const asc = (seqs: string[]) => seqs.every((s, i) => i === 0 || BigInt(seqs[i - 1]!) < BigInt(s));

describe('S1-S3: the send answer', () => {
  it('S1/S2/S3: a send answers 201 with messageId, a decimal sequenceNumber, enqueuedTime = now and expiresAt null when unlimited', async () => {
    // prepare
    const q = await newQueue();
    // act
    const sent = await api('POST', `/queues/${q}/messages`, { body: { hello: 'world' }, messageId: 'given-id' });
    // assess
    expect(sent.status).toBe(201);
    expect(Object.keys(sent.body).sort()).toEqual(['enqueuedTime', 'expiresAt', 'messageId', 'sequenceNumber']);
    expect(sent.body).toEqual({ messageId: 'given-id', sequenceNumber: expect.stringMatching(/^\d{1,19}$/), enqueuedTime: iso(clock.now()), expiresAt: null });
    expect(BigInt(sent.body.sequenceNumber)).toBeLessThan(2n ** 63n);
    const [stored] = await peekAll(q);
    expect(stored).toMatchObject({
      messageId: 'given-id',
      sequenceNumber: sent.body.sequenceNumber,
      enqueuedTime: iso(clock.now()),
      expiresAt: null,
      timeToLive: null,
      state: 'Active',
    });
  });

  it('S3: a messageId is generated when the sender gives none, different for each message', async () => {
    // prepare
    const q = await newQueue();
    // act
    const a = await api('POST', `/queues/${q}/messages`, { body: 'a' });
    const b = await api('POST', `/queues/${q}/messages`, { body: 'b', messageId: null });
    const got = await receive(q, { mode: 'receiveAndDelete', maxMessages: 10 });
    // assess
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(a.body.messageId).toEqual(expect.any(String));
    expect(a.body.messageId.length).toBeGreaterThan(0);
    expect(b.body.messageId).toEqual(expect.any(String));
    expect(a.body.messageId).not.toBe(b.body.messageId);
    expect(got.map((m) => m.messageId)).toEqual([a.body.messageId, b.body.messageId]);
  });

  it('S2: sequence numbers are unique and increase in send order, also as the clock moves', async () => {
    // prepare
    const q = await newQueue();
    const seqs: string[] = [];
    // act
    for (let i = 0; i < 12; i++) {
      if (i % 3 === 0) clock.advance(i); // some in the same millisecond, some not
      const sent = await api('POST', `/queues/${q}/messages`, { body: i });
      expect(sent.status).toBe(201);
      seqs.push(sent.body.sequenceNumber);
    }
    // assess
    expect(new Set(seqs).size).toBe(12);
    expect(asc(seqs)).toBe(true);
    const peeked = await peekAll(q);
    expect(peeked.map((m) => m.sequenceNumber)).toEqual(seqs);
    expect(peeked.map((m) => m.body)).toEqual([...Array(12).keys()]);
  });

  it('S1/T2: expiresAt = enqueuedTime + the effective time to live when it is limited', async () => {
    // prepare
    const q = await newQueue({ defaultMessageTimeToLive: 'PT1H' });
    // act
    const own = await api('POST', `/queues/${q}/messages`, { body: 1, timeToLive: 'PT10M' });
    const lowered = await api('POST', `/queues/${q}/messages`, { body: 2, timeToLive: 'P1D' });
    const inherited = await api('POST', `/queues/${q}/messages`, { body: 3 });
    // assess
    expect(own.body.expiresAt).toBe(iso(clock.now() + 10 * MINUTE));
    expect(lowered.body.expiresAt).toBe(iso(clock.now() + 60 * MINUTE));
    expect(inherited.body.expiresAt).toBe(iso(clock.now() + 60 * MINUTE));
  });

  it('S1: the received message carries every field that was sent', async () => {
    // prepare
    const q = await newQueue();
    const message = {
      body: { nested: [1, 'two', { three: null }], ok: true },
      contentType: 'application/json',
      messageId: 'm-all',
      correlationId: 'c-1',
      replyTo: 'q2',
      replyToSessionId: 's-2',
      subject: 'order.created',
      to: 'x',
      partitionKey: 'p',
      applicationProperties: { color: 'red', n: 3, ok: true, none: null, pi: 3.5 },
    };
    // act
    const sent = await api('POST', `/queues/${q}/messages`, message);
    const [got] = await receive(q, { mode: 'receiveAndDelete' });
    // assess
    expect(sent.status).toBe(201);
    expect(got).toMatchObject({ ...message, sequenceNumber: sent.body.sequenceNumber, enqueuedTime: sent.body.enqueuedTime, state: 'Active' });
  });
});

describe('S4: batch send', () => {
  it('S4: a batch of 100 is stored (201) with one result per message, in request order, sequence numbers increasing', async () => {
    // prepare
    const q = await newQueue();
    const messages = Array.from({ length: 100 }, (_, i) => ({ body: { i }, messageId: `m-${i}` }));
    // act
    const sent = await api('POST', `/queues/${q}/messages/batch`, { messages });
    // assess
    expect(sent.status).toBe(201);
    const results = sent.body.results as { messageId: string; sequenceNumber: string; error?: unknown }[];
    expect(results).toHaveLength(100);
    expect(results.map((r) => r.messageId)).toEqual(messages.map((m) => m.messageId));
    for (const r of results) {
      expect(r.error).toBeUndefined();
      expect(r.sequenceNumber).toMatch(/^\d+$/);
    }
    const seqs = results.map((r) => r.sequenceNumber);
    expect(new Set(seqs).size).toBe(100);
    expect(asc(seqs)).toBe(true);
    const stored = await peekAll(q);
    expect(stored.map((m) => m.sequenceNumber)).toEqual(seqs);
    expect(stored.map((m) => m.body)).toEqual(messages.map((m) => m.body));
  });

  it('S4: a batch of 101 is refused with 400 naming messages, and nothing is stored', async () => {
    // prepare
    const q = await newQueue();
    const messages = Array.from({ length: 101 }, (_, i) => ({ body: i }));
    // act
    const refused = await api('POST', `/queues/${q}/messages/batch`, { messages });
    // assess
    expectError(refused, 400, 'BadRequest', 'messages');
    expect(await peekAll(q)).toEqual([]);
  });

  it('S4: an empty batch, a batch that is not an array, and a batch with extra fields are refused with 400', async () => {
    // prepare
    const q = await newQueue();
    // act
    const empty = await api('POST', `/queues/${q}/messages/batch`, { messages: [] });
    const notArray = await api('POST', `/queues/${q}/messages/batch`, { messages: { body: 1 } });
    const extra = await api('POST', `/queues/${q}/messages/batch`, { messages: [{ body: 1 }], atomic: true });
    const bare = await api('POST', `/queues/${q}/messages/batch`, [{ body: 1 }]);
    // assess
    expectError(empty, 400, 'BadRequest', 'messages');
    expectError(notArray, 400, 'BadRequest', 'messages');
    expectError(extra, 400, 'BadRequest', 'atomic');
    expectError(bare, 400, 'BadRequest');
    expect(await peekAll(q)).toEqual([]);
  });

  it('S4/B2: one invalid message refuses the whole batch with 400 naming it, and none is stored', async () => {
    // prepare
    const q = await newQueue();
    const messages: unknown[] = Array.from({ length: 5 }, (_, i) => ({ body: i }));
    messages[3] = { body: 3, timeToLive: 'soon' };
    // act
    const refused = await api('POST', `/queues/${q}/messages/batch`, { messages });
    // assess
    expectError(refused, 400, 'BadRequest', 'messages[3]');
    expect(refused.body.error.message).toContain('timeToLive');
    expect(await peekAll(q)).toEqual([]);
  });

  it('S4/S5: one oversized message refuses the whole batch with 413, and none is stored', async () => {
    // prepare
    const q = await newQueue();
    const messages = [{ body: 'small' }, { body: 'x'.repeat(257 * KB) }, { body: 'small too' }];
    // act
    const refused = await api('POST', `/queues/${q}/messages/batch`, { messages });
    // assess
    expectError(refused, 413, 'MessageSizeExceeded', 'messages[1]');
    expect(await peekAll(q)).toEqual([]);
  });
});

describe('S5: size limits', () => {
  it('S5: a message just under 256 KB is stored; one over 256 KB is refused with 413 MessageSizeExceeded and not stored', async () => {
    // prepare
    const q = await newQueue();
    // act
    const fits = await api('POST', `/queues/${q}/messages`, { body: 'x'.repeat(255 * KB), messageId: 'fits' });
    const over = await api('POST', `/queues/${q}/messages`, { body: 'y'.repeat(256 * KB), messageId: 'over' });
    // assess
    expect(fits.status).toBe(201);
    expectError(over, 413, 'MessageSizeExceeded');
    expect(over.body.error.retryable).toBe(false);
    const stored = await peekAll(q);
    expect(stored.map((m) => m.messageId)).toEqual(['fits']);
    expect((stored[0]!.body as string).length).toBe(255 * KB);
  });

  it('S5: body plus properties over 256 KB is refused with 413 although each part is under its own limit', async () => {
    // prepare
    const q = await newQueue();
    // act
    const over = await api('POST', `/queues/${q}/messages`, { body: 'b'.repeat(200 * KB), applicationProperties: { p: 'p'.repeat(60 * KB) } });
    // assess
    expectError(over, 413, 'MessageSizeExceeded');
    expect(await peekAll(q)).toEqual([]);
  });

  it('S5: properties over 64 KB are refused with 413 even when the message is small; under 64 KB they are stored', async () => {
    // prepare
    const q = await newQueue();
    // act
    const fits = await api('POST', `/queues/${q}/messages`, { body: 1, messageId: 'fits', applicationProperties: { p: 'p'.repeat(63 * KB) } });
    const over = await api('POST', `/queues/${q}/messages`, { body: 1, messageId: 'over', applicationProperties: { p: 'p'.repeat(64 * KB) } });
    const spread = await api('POST', `/queues/${q}/messages`, {
      body: 1,
      messageId: 'spread',
      applicationProperties: Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, 'v'.repeat(KB)])),
    });
    // assess
    expect(fits.status).toBe(201);
    expectError(over, 413, 'MessageSizeExceeded');
    expectError(spread, 413, 'MessageSizeExceeded');
    expect((await peekAll(q)).map((m) => m.messageId)).toEqual(['fits']);
  });
});

describe('S6: scheduled messages', () => {
  it('S6/T3: a scheduled message gets a sequence number, shows as Scheduled in peek, and is not receivable before its time', async () => {
    // prepare
    const q = await newQueue();
    const at = clock.now() + 5 * MINUTE;
    // act
    const sent = await api('POST', `/queues/${q}/messages`, { body: 'later', scheduledEnqueueTime: iso(at) });
    const peeked = await peekAll(q);
    const early = await receive(q, { maxMessages: 10 });
    clock.advance(5 * MINUTE - 1);
    const stillEarly = await receive(q, { maxMessages: 10, mode: 'receiveAndDelete' });
    clock.advance(1);
    const onTime = await receive(q, { maxMessages: 10 });
    // assess
    expect(sent.status).toBe(201);
    expect(sent.body.sequenceNumber).toMatch(/^\d+$/);
    expect(sent.body.enqueuedTime).toBe(iso(at));
    expect(peeked).toHaveLength(1);
    expect(peeked[0]).toMatchObject({ sequenceNumber: sent.body.sequenceNumber, state: 'Scheduled', body: 'later' });
    expect(early).toEqual([]);
    expect(stillEarly).toEqual([]);
    expect(onTime).toHaveLength(1);
    expect(onTime[0]).toMatchObject({ sequenceNumber: sent.body.sequenceNumber, state: 'Active', body: 'later', deliveryCount: 1 });
  });

  it('S6: once its time has come a scheduled message is delivered with the active ones, each exactly once', async () => {
    // prepare
    const q = await newQueue();
    const scheduled = await api('POST', `/queues/${q}/messages`, { body: 'scheduled', scheduledEnqueueTime: iso(clock.now() + MINUTE) });
    const now1 = await api('POST', `/queues/${q}/messages`, { body: 'now' });
    clock.advance(2 * MINUTE);
    const later = await api('POST', `/queues/${q}/messages`, { body: 'later' });
    // act
    const got = await receive(q, { maxMessages: 10, mode: 'receiveAndDelete' });
    // assess
    // The order of a schedule against messages sent meanwhile is not fixed by the rules; only that each comes once.
    expect(got.map((m) => m.body).sort()).toEqual(['later', 'now', 'scheduled']);
    expect(got.map((m) => m.sequenceNumber).sort()).toEqual([now1.body.sequenceNumber, scheduled.body.sequenceNumber, later.body.sequenceNumber].sort());
    expect(await receive(q, { maxMessages: 10 })).toEqual([]);
  });

  it('S6: cancelling by sequence number answers 204, a second cancel 404, and the message is never delivered', async () => {
    // prepare
    const q = await newQueue();
    const keep = await api('POST', `/queues/${q}/messages`, { body: 'keep', scheduledEnqueueTime: iso(clock.now() + MINUTE) });
    const drop = await api('POST', `/queues/${q}/messages`, { body: 'drop', scheduledEnqueueTime: iso(clock.now() + MINUTE) });
    // act
    const cancelled = await api('DELETE', `/queues/${q}/messages/scheduled/${drop.body.sequenceNumber}`);
    const again = await api('DELETE', `/queues/${q}/messages/scheduled/${drop.body.sequenceNumber}`);
    const peeked = await peekAll(q);
    clock.advance(10 * MINUTE);
    const got = await receive(q, { maxMessages: 10, mode: 'receiveAndDelete' });
    // assess
    expect(cancelled.status).toBe(204);
    expect(cancelled.body).toBeUndefined();
    expectError(again, 404, 'MessageNotFound');
    expect(peeked.map((m) => m.sequenceNumber)).toEqual([keep.body.sequenceNumber]);
    expect(got.map((m) => m.body)).toEqual(['keep']);
  });

  it('S6: cancelling a message that is not scheduled (active, or whose time has come) is 404 and leaves it', async () => {
    // prepare
    const q = await newQueue();
    const active = await api('POST', `/queues/${q}/messages`, { body: 'active' });
    const due = await api('POST', `/queues/${q}/messages`, { body: 'due', scheduledEnqueueTime: iso(clock.now() + MINUTE) });
    clock.advance(MINUTE);
    // act
    const cancelActive = await api('DELETE', `/queues/${q}/messages/scheduled/${active.body.sequenceNumber}`);
    const cancelDue = await api('DELETE', `/queues/${q}/messages/scheduled/${due.body.sequenceNumber}`);
    const unknown = await api('DELETE', `/queues/${q}/messages/scheduled/12345`);
    // assess
    expectError(cancelActive, 404, 'MessageNotFound');
    expectError(cancelDue, 404, 'MessageNotFound');
    expectError(unknown, 404, 'MessageNotFound');
    const got = await receive(q, { maxMessages: 10, mode: 'receiveAndDelete' });
    expect(got.map((m) => m.body)).toEqual(['active', 'due']);
  });

  it('S6: a scheduledEnqueueTime in the past means now: receivable at once, state Active', async () => {
    // prepare
    const q = await newQueue();
    // act
    const sent = await api('POST', `/queues/${q}/messages`, { body: 'past', scheduledEnqueueTime: iso(clock.now() - MINUTE) });
    const got = await receive(q, { mode: 'receiveAndDelete' });
    // assess
    expect(sent.status).toBe(201);
    expect(sent.body.enqueuedTime).toBe(iso(clock.now()));
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ body: 'past', state: 'Active' });
  });

  it('S6/B2: a scheduledEnqueueTime that is not an ISO instant is refused with 400 naming it', async () => {
    // prepare
    const q = await newQueue();
    // act
    const words = await api('POST', `/queues/${q}/messages`, { body: 1, scheduledEnqueueTime: 'tomorrow' });
    const number = await api('POST', `/queues/${q}/messages`, { body: 1, scheduledEnqueueTime: clock.now() + MINUTE });
    const badDate = await api('POST', `/queues/${q}/messages`, { body: 1, scheduledEnqueueTime: '2026-13-45T25:61:00Z' });
    // assess
    expectError(words, 400, 'BadRequest', 'scheduledEnqueueTime');
    expectError(number, 400, 'BadRequest', 'scheduledEnqueueTime');
    expectError(badDate, 400, 'BadRequest', 'scheduledEnqueueTime');
    expect(await peekAll(q)).toEqual([]);
  });
});
