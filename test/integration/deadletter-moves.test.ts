/**
 * Moving messages into the dead-letter subqueue, through the API handler and the sweeper:
 * D1 (reasons), D2 (max delivery count, by abandon and by lock expiry), D4 (what the
 * dead-lettered copy keeps and gets).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { messageItem, messageItems } from '../support/stream.js';
import { messageOfStored } from '../../lib/store/message-layout.js';
import { queueHelpers } from '../support/queue-helpers.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
let sweep: ReturnType<typeof createSweeperHandler>;

beforeAll(async () => {
  deps = await testDeps(clock, 'dlq-moves');
  api = apiClient(deps);
  sweep = createSweeperHandler(deps);
});

const { createQueue, send, receive, receiveOne, peek, settle, dlq } = queueHelpers(() => api);

describe('D1/D4: dead-lettering by the application', () => {
  it('D1/D4: the DLQ copy keeps body, properties and messageId, gets the reason, description, deadLetterSource, enqueuedSequenceNumber and a new sequence number', async () => {
    // prepare
    await createQueue('D4-Orders');
    const sent = await send('D4-Orders', {
      body: { order: 42, lines: [1, 2] },
      messageId: 'order-42',
      contentType: 'application/json',
      correlationId: 'corr-1',
      subject: 'order.created',
      replyTo: 'replies',
      to: 'fulfilment',
      applicationProperties: { color: 'red', n: 3, ok: true },
    });
    const locked = await receiveOne('/queues/d4-orders');
    // act
    const res = await settle('d4-orders', locked, 'deadletter', {
      deadLetterReason: 'InvalidOrder',
      deadLetterErrorDescription: 'line 2 has no product',
      propertiesToModify: { checkedBy: 'validator' },
    });
    // assess
    expect(res.status).toBe(204);
    expect(await receive('/queues/d4-orders')).toEqual([]);
    expect(await messageItems(deps, 'd4-orders', 'active')).toEqual([]);
    const dead = await peek(dlq('d4-orders'));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      body: { order: 42, lines: [1, 2] },
      messageId: 'order-42',
      contentType: 'application/json',
      correlationId: 'corr-1',
      subject: 'order.created',
      replyTo: 'replies',
      to: 'fulfilment',
      applicationProperties: { color: 'red', n: 3, ok: true, checkedBy: 'validator' },
      deadLetterReason: 'InvalidOrder',
      deadLetterErrorDescription: 'line 2 has no product',
      deadLetterSource: 'queues/D4-Orders',
      enqueuedSequenceNumber: sent.sequenceNumber,
    });
    expect(dead[0].sequenceNumber).toMatch(/^\d+$/);
    expect(dead[0].sequenceNumber).not.toBe(sent.sequenceNumber);
  });

  it('D1: a dead-letter without reason or description is accepted; the copy still names its source', async () => {
    await createQueue('d1-noreason');
    const sent = await send('d1-noreason', { body: 'x' });
    const res = await settle('d1-noreason', await receiveOne('/queues/d1-noreason'), 'deadletter');
    expect(res.status).toBe(204);
    const [dead] = await peek(dlq('d1-noreason'));
    expect(dead).toMatchObject({ messageId: sent.messageId, deadLetterSource: 'queues/d1-noreason', enqueuedSequenceNumber: sent.sequenceNumber });
  });

  it('D4: sequence numbers in the DLQ are new and increase in dead-letter order', async () => {
    await createQueue('d4-order');
    const sent = [];
    for (let i = 0; i < 3; i++) sent.push(await send('d4-order', { body: i }));
    const locked = await receive('/queues/d4-order', { maxMessages: 3 });
    expect(locked).toHaveLength(3);
    // dead-letter in reverse order
    for (const m of [...locked].reverse()) {
      clock.advance(5);
      expect((await settle('d4-order', m, 'deadletter', { deadLetterReason: 'r' })).status).toBe(204);
    }
    const dead = await peek(dlq('d4-order'));
    expect(dead.map((m) => m.enqueuedSequenceNumber)).toEqual(sent.map((s) => s.sequenceNumber).reverse());
    const seqs = dead.map((m) => BigInt(m.sequenceNumber));
    expect([...seqs].sort((a, b) => (a < b ? -1 : 1))).toEqual(seqs);
    expect(new Set(dead.map((m) => m.sequenceNumber)).size).toBe(3);
  });

  it('R5/D1: dead-lettering with a stale lock token fails with 410 and changes nothing', async () => {
    await createQueue('d1-stale', { lockDuration: 'PT5S' });
    const sent = await send('d1-stale', { body: 1 });
    const locked = await receiveOne('/queues/d1-stale');
    clock.advance(6 * SECOND);
    const res = await settle('d1-stale', locked, 'deadletter', { deadLetterReason: 'late' });
    expect(res.status).toBe(410);
    expect(await peek(dlq('d1-stale'))).toEqual([]);
    expect((await peek('/queues/d1-stale')).map((m) => m.messageId)).toEqual([sent.messageId]);
  });
});

describe('D2: max delivery count', () => {
  it('D2: abandoned maxDeliveryCount times, the message moves to the DLQ with MaxDeliveryCountExceeded and a description naming the count', async () => {
    // prepare
    await createQueue('d2-abandon', { maxDeliveryCount: 3 });
    const sent = await send('d2-abandon', { body: 'poison' });
    // act
    const counts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const m = await receiveOne('/queues/d2-abandon');
      counts.push(m.deliveryCount);
      expect((await settle('d2-abandon', m, 'abandon')).status).toBe(204);
    }
    // assess
    expect(counts).toEqual([1, 2, 3]);
    expect(await receive('/queues/d2-abandon')).toEqual([]);
    expect(await messageItems(deps, 'd2-abandon', 'active')).toEqual([]);
    const dead = await peek(dlq('d2-abandon'));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      messageId: sent.messageId,
      deadLetterReason: 'MaxDeliveryCountExceeded',
      deliveryCount: 3,
      enqueuedSequenceNumber: sent.sequenceNumber,
      deadLetterSource: 'queues/d2-abandon',
    });
    expect(dead[0].deadLetterErrorDescription).toMatch(/\b3\b/);
  });

  it('D2: below maxDeliveryCount an abandon makes the message available again', async () => {
    await createQueue('d2-below', { maxDeliveryCount: 3 });
    await send('d2-below', { body: 1 });
    for (let i = 0; i < 2; i++) expect((await settle('d2-below', await receiveOne('/queues/d2-below'), 'abandon')).status).toBe(204);
    expect(await peek(dlq('d2-below'))).toEqual([]);
    expect((await receiveOne('/queues/d2-below')).deliveryCount).toBe(3);
  });

  it('D2/T7: the last allowed lock running out moves the message to the DLQ once the sweeper runs, with nobody receiving', async () => {
    // prepare
    await createQueue('d2-lapse', { maxDeliveryCount: 2, lockDuration: 'PT5S' });
    const sent = await send('d2-lapse', { body: 'slow' });
    const first = await receiveOne('/queues/d2-lapse');
    clock.advance(6 * SECOND); // first lock runs out (R6)
    const second = await receiveOne('/queues/d2-lapse');
    expect([first.deliveryCount, second.deliveryCount]).toEqual([1, 2]);
    clock.current = Date.parse(second.lockedUntil) + SECOND; // the last lock runs out
    // act
    await sweep();
    // assess
    expect(await messageItems(deps, 'd2-lapse', 'active')).toEqual([]);
    const dead = await peek(dlq('d2-lapse'));
    expect(dead.map((m) => [m.messageId, m.deadLetterReason, m.deliveryCount])).toEqual([[sent.messageId, 'MaxDeliveryCountExceeded', 2]]);
    expect(dead[0].deadLetterErrorDescription).toMatch(/\b2\b/);
    expect((await settle('d2-lapse', second, 'complete')).status).toBe(410);
  });

  it('D2/R6: the last allowed lock running out: the next receive dead-letters it instead of delivering it again', async () => {
    await createQueue('d2-lapse-receive', { maxDeliveryCount: 1, lockDuration: 'PT5S' });
    const sent = await send('d2-lapse-receive', { body: 'slow' });
    await receiveOne('/queues/d2-lapse-receive');
    clock.advance(6 * SECOND);
    expect(await receive('/queues/d2-lapse-receive', { mode: 'receiveAndDelete' })).toEqual([]);
    expect((await peek(dlq('d2-lapse-receive'))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[sent.messageId, 'MaxDeliveryCountExceeded']]);
  });

  it('D2/T5: over-delivered and expired at abandon: D2 goes first, dead-lettered even without deadLetteringOnMessageExpiration', async () => {
    await createQueue('d2-before-expiry', { maxDeliveryCount: 1, lockDuration: 'PT5M', defaultMessageTimeToLive: 'PT1M' });
    const sent = await send('d2-before-expiry', { body: 'x' });
    const locked = await receiveOne('/queues/d2-before-expiry');
    clock.advance(2 * MINUTE);
    expect((await settle('d2-before-expiry', locked, 'abandon')).status).toBe(204);
    expect((await peek(dlq('d2-before-expiry'))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[sent.messageId, 'MaxDeliveryCountExceeded']]);
  });

  it('D2: the sweeper does not dead-letter a message whose last lock is still held', async () => {
    await createQueue('d2-held', { maxDeliveryCount: 1, lockDuration: 'PT1M' });
    await send('d2-held', { body: 'x' });
    const locked = await receiveOne('/queues/d2-held');
    clock.advance(30 * SECOND);
    await sweep();
    expect(await peek(dlq('d2-held'))).toEqual([]);
    expect((await settle('d2-held', locked, 'complete')).status).toBe(204);
    clock.advance(5 * MINUTE);
    await sweep();
    expect(await peek(dlq('d2-held'))).toEqual([]);
    expect(await messageItems(deps, 'd2-held', 'active')).toEqual([]);
  });

  it('D2/R7: a deferred message received by number on its last allowed delivery and abandoned is dead-lettered', async () => {
    await createQueue('d2-deferred-abandon', { maxDeliveryCount: 2 });
    const sent = await send('d2-deferred-abandon', { body: 'x' });
    expect((await settle('d2-deferred-abandon', await receiveOne('/queues/d2-deferred-abandon'), 'defer')).status).toBe(204);
    const got = await api('POST', '/queues/d2-deferred-abandon/messages/deferred', { sequenceNumbers: [sent.sequenceNumber] });
    expect(got.body.messages[0].deliveryCount).toBe(2);
    expect((await settle('d2-deferred-abandon', got.body.messages[0], 'abandon')).status).toBe(204);
    expect((await peek(dlq('d2-deferred-abandon'))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[sent.messageId, 'MaxDeliveryCountExceeded']]);
  });

  it('D2/R6/R7: a deferred message received by number on its last allowed delivery whose lock runs out is dead-lettered once the sweeper runs', async () => {
    // prepare
    await createQueue('d2-deferred-lapse', { maxDeliveryCount: 2, lockDuration: 'PT5S' });
    const sent = await send('d2-deferred-lapse', { body: 'x' });
    expect((await settle('d2-deferred-lapse', await receiveOne('/queues/d2-deferred-lapse'), 'defer')).status).toBe(204);
    const got = await api('POST', '/queues/d2-deferred-lapse/messages/deferred', { sequenceNumbers: [sent.sequenceNumber] });
    expect(got.body.messages[0].deliveryCount).toBe(2);
    // act: the last lock runs out; nobody abandons
    clock.advance(6 * SECOND);
    await sweep();
    // assess: as after an abandon (R6), D2 applies
    expect((await peek(dlq('d2-deferred-lapse'))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[sent.messageId, 'MaxDeliveryCountExceeded']]);
    expect(await messageItems(deps, 'd2-deferred-lapse', 'active')).toEqual([]);
  });

  it('D2: the DLQ copy of a max-delivery message carries no expiry and no agenda entry (T9)', async () => {
    await createQueue('d2-stored', { maxDeliveryCount: 1, defaultMessageTimeToLive: 'PT10M' });
    await send('d2-stored', { body: 'x' });
    expect((await settle('d2-stored', await receiveOne('/queues/d2-stored'), 'abandon')).status).toBe(204);
    const [dead] = await peek(dlq('d2-stored'));
    const stored = await messageItem(deps, 'd2-stored', 'deadletter', dead.sequenceNumber);
    expect(messageOfStored(stored!)).toMatchObject({ subqueue: 'deadletter', deadLetterReason: 'MaxDeliveryCountExceeded' });
    expect(stored?.ttl).toBeUndefined();
    expect(stored?.dpk).toBeUndefined();
    expect(stored?.expiresAt).toBeUndefined();
  });
});
