/**
 * The dead-letter subqueue as a receivable entity (D5) that nothing empties on its own (D6).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';
import { messageItems } from '../support/stream.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
let sweep: ReturnType<typeof createSweeperHandler>;

beforeAll(async () => {
  deps = await testDeps(clock, 'dlq-sub');
  api = apiClient(deps);
  sweep = createSweeperHandler(deps);
});

const { createQueue, receive, peek, dlq, settleAt } = queueHelpers(() => api);

/** Sends `n` messages and dead-letters them all; answers the DLQ messages as peeked. */
async function deadLettered(queue: string, n: number, props: Record<string, unknown> = {}): Promise<Msg[]> {
  await createQueue(queue, props);
  const batch = await api('POST', `/queues/${queue}/messages/batch`, {
    messages: Array.from({ length: n }, (_, i) => ({ body: { i }, messageId: `${queue}-${i}`, applicationProperties: { i } })),
  });
  expect(batch.status).toBe(201);
  const locked = await receive(`/queues/${queue}`, { maxMessages: n });
  expect(locked).toHaveLength(n);
  for (const m of locked) expect((await settleAt(`/queues/${queue}`, m, 'deadletter', { deadLetterReason: 'test' })).status).toBe(204);
  const dead = await peek(dlq(queue));
  expect(dead).toHaveLength(n);
  return dead;
}

describe('D5: a dead-letter subqueue is receivable like any queue', () => {
  it('D5/R8: peek lists dead-lettered messages with their dead-letter fields, without locking them', async () => {
    // prepare
    await deadLettered('d5-peek', 3);
    // act
    const first = await peek(dlq('d5-peek'));
    const second = await peek(dlq('d5-peek'));
    // assess
    expect(first.map((m) => m.messageId)).toEqual(['d5-peek-0', 'd5-peek-1', 'd5-peek-2']);
    expect(second).toEqual(first);
    for (const m of first) {
      expect(m).toMatchObject({ deadLetterReason: 'test', deadLetterSource: 'queues/d5-peek', state: 'Active' });
      expect(m.lockToken).toBeUndefined();
    }
  });

  it('D5: the `%24deadletterqueue` spelling is the same subqueue', async () => {
    await deadLettered('d5-encoded', 1);
    const res = await api('GET', '/queues/d5-encoded/%24deadletterqueue/messages');
    expect(res.status).toBe(200);
    expect(res.body.messages.map((m: Msg) => m.messageId)).toEqual(['d5-encoded-0']);
  });

  it('D5/R1: peek-lock from the DLQ, then complete removes the message', async () => {
    // prepare
    await deadLettered('d5-complete', 1);
    // act
    const [m] = await receive(dlq('d5-complete'));
    const done = await settleAt(dlq('d5-complete'), m, 'complete');
    // assess
    expect(m).toMatchObject({ messageId: 'd5-complete-0', deadLetterReason: 'test' });
    expect(m.lockToken).toBeTruthy();
    expect(done.status).toBe(204);
    expect(await peek(dlq('d5-complete'))).toEqual([]);
  });

  it('D5/R4: a locked DLQ message is hidden from other receivers; abandon makes it available again and it stays in the DLQ', async () => {
    await deadLettered('d5-abandon', 1, { maxDeliveryCount: 1 });
    const [m] = await receive(dlq('d5-abandon'));
    expect(await receive(dlq('d5-abandon'))).toEqual([]);
    expect((await settleAt(dlq('d5-abandon'), m, 'abandon')).status).toBe(204);
    // maxDeliveryCount 1 does not apply inside a DLQ (nothing dead-letters a dead letter)
    const [again] = await receive(dlq('d5-abandon'));
    expect(again.messageId).toBe('d5-abandon-0');
    expect(again.deliveryCount).toBeGreaterThan(m.deliveryCount);
    expect((await settleAt(dlq('d5-abandon'), again, 'abandon')).status).toBe(204);
    expect((await peek(dlq('d5-abandon'))).map((x) => x.messageId)).toEqual(['d5-abandon-0']);
  });

  it('D5/R4: renew-lock on a DLQ message extends lockedUntil to now + lockDuration', async () => {
    await deadLettered('d5-renew', 1, { lockDuration: 'PT30S' });
    const [m] = await receive(dlq('d5-renew'));
    clock.advance(20 * SECOND);
    const renewed = await settleAt(dlq('d5-renew'), m, 'renew-lock');
    expect(renewed.status).toBe(200);
    expect(renewed.body.lockedUntil).toBe(new Date(clock.now() + 30 * SECOND).toISOString());
    clock.advance(20 * SECOND); // past the first lock, inside the renewed one
    expect(await receive(dlq('d5-renew'))).toEqual([]);
    expect((await settleAt(dlq('d5-renew'), m, 'complete')).status).toBe(204);
  });

  it('D5/R7: defer in the DLQ: out of ordinary receives, received by sequence number, then completed', async () => {
    await deadLettered('d5-defer', 1);
    const [m] = await receive(dlq('d5-defer'));
    expect((await settleAt(dlq('d5-defer'), m, 'defer')).status).toBe(204);
    expect(await receive(dlq('d5-defer'))).toEqual([]);
    const [peeked] = await peek(dlq('d5-defer'));
    expect(peeked.state).toBe('Deferred');
    const got = await api('POST', `${dlq('d5-defer')}/messages/deferred`, { sequenceNumbers: [m.sequenceNumber] });
    expect(got.status).toBe(200);
    expect(got.body.messages.map((x: Msg) => x.messageId)).toEqual(['d5-defer-0']);
    expect((await settleAt(dlq('d5-defer'), got.body.messages[0], 'complete')).status).toBe(204);
    expect(await peek(dlq('d5-defer'))).toEqual([]);
  });

  it('D5/R1: receive-and-delete from the DLQ hands the messages out once and removes them', async () => {
    await deadLettered('d5-rad', 3);
    const got = await receive(dlq('d5-rad'), { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(got.map((m) => m.messageId).sort()).toEqual(['d5-rad-0', 'd5-rad-1', 'd5-rad-2']);
    expect(got.every((m) => m.deadLetterReason === 'test')).toBe(true);
    expect(await receive(dlq('d5-rad'), { mode: 'receiveAndDelete' })).toEqual([]);
    expect(await messageItems(deps, 'd5-rad', 'deadletter')).toEqual([]);
  });

  it('D5: nothing can be sent to a DLQ directly (single, batch, either spelling): 400, nothing stored', async () => {
    // prepare
    await createQueue('d5-nosend');
    // act
    const single = await api('POST', '/queues/d5-nosend/$deadletterqueue/messages', { body: 'x' });
    const encoded = await api('POST', '/queues/d5-nosend/%24deadletterqueue/messages', { body: 'x' });
    const batch = await api('POST', '/queues/d5-nosend/$deadletterqueue/messages/batch', { messages: [{ body: 'x' }] });
    // assess
    for (const res of [single, encoded, batch]) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('BadRequest');
    }
    expect(await messageItems(deps, 'd5-nosend', 'deadletter')).toEqual([]);
    expect(await messageItems(deps, 'd5-nosend', 'active')).toEqual([]);
  });

  it('D5: dead-lettering a DLQ message is refused with 400 and changes nothing (the lock still holds)', async () => {
    // prepare
    await deadLettered('d5-nodl', 1);
    const [m] = await receive(dlq('d5-nodl'));
    // act
    const res = await settleAt(dlq('d5-nodl'), m, 'deadletter', { deadLetterReason: 'again' });
    // assess
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BadRequest');
    const [still] = await peek(dlq('d5-nodl'));
    expect(still).toMatchObject({ messageId: 'd5-nodl-0', deadLetterReason: 'test' });
    expect(await receive(dlq('d5-nodl'))).toEqual([]); // still locked
    expect((await settleAt(dlq('d5-nodl'), m, 'complete')).status).toBe(204);
  });
});

describe('D6: nothing leaves a dead-letter subqueue on its own', () => {
  it('D6/T9: dead-lettered messages of a queue with a short default TTL stay through years of sweeper runs', async () => {
    // prepare
    await deadLettered('d6-stay', 5, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    // act
    for (const step of [MINUTE, DAY, 365 * DAY, 5 * 365 * DAY]) {
      clock.advance(step);
      await sweep();
    }
    // assess
    const dead = await peek(dlq('d6-stay'));
    expect(dead.map((m) => m.messageId)).toEqual(['d6-stay-0', 'd6-stay-1', 'd6-stay-2', 'd6-stay-3', 'd6-stay-4']);
    const items = await messageItems(deps, 'd6-stay', 'deadletter');
    expect(items.filter((i) => i.ttl !== undefined || i.dpk !== undefined)).toEqual([]);
    const got = await receive(dlq('d6-stay'), { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(got).toHaveLength(5);
  });

  it('D6: a DLQ message whose lock ran out after years is available again, not removed', async () => {
    await deadLettered('d6-lapse', 1, { lockDuration: 'PT5S', defaultMessageTimeToLive: 'PT1M', maxDeliveryCount: 1 });
    await receive(dlq('d6-lapse'));
    clock.advance(2 * 365 * DAY);
    await sweep();
    const [again] = await receive(dlq('d6-lapse'));
    expect(again?.messageId).toBe('d6-lapse-0');
  });
});
