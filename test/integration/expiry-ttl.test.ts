/**
 * Time to live through the API handler and the sweeper: T1-T4, T6, T7.
 * The clock starts years ahead of real time, so DynamoDB Local's own TTL never removes
 * anything behind the tests' back; only the ManualClock moves.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { apiClient } from '../support/api.js';
import { indexLayout, nextPositionedPass } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';
import { messageItems, queueItem } from '../support/stream.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
/** Creates queues in today's layout: for the test that expects the first sweeper run after expiry to move them (a positioned queue's pass may wait, T7). */
let indexApi: ReturnType<typeof apiClient>;
let sweep: ReturnType<typeof createSweeperHandler>;

beforeAll(async () => {
  deps = await testDeps(clock, 'expiry-ttl');
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
  sweep = createSweeperHandler(deps);
});

const { createQueue, send, receive, peek, dlq } = queueHelpers(() => api);
const { createQueue: createIndexQueue } = queueHelpers(() => indexApi);

describe('T1: effective time to live', () => {
  it('T1: a message TTL above the queue default is lowered and reported as the lowered timeToLive', async () => {
    // prepare
    await createQueue('t1-lowered', { defaultMessageTimeToLive: 'PT5M' });
    // act
    const sent = await send('t1-lowered', { body: 'x', timeToLive: 'PT1H' });
    const [peeked] = await peek('/queues/t1-lowered');
    const [received] = await receive('/queues/t1-lowered');
    // assess
    expect(Date.parse(sent.expiresAt) - Date.parse(sent.enqueuedTime)).toBe(5 * MINUTE);
    expect(peeked).toMatchObject({ timeToLive: 'PT5M', expiresAt: sent.expiresAt });
    expect(received).toMatchObject({ timeToLive: 'PT5M', expiresAt: sent.expiresAt });
  });

  it('T1: a message TTL below the queue default is kept', async () => {
    await createQueue('t1-kept', { defaultMessageTimeToLive: 'PT5M' });
    const sent = await send('t1-kept', { body: 'x', timeToLive: 'PT2M' });
    const [peeked] = await peek('/queues/t1-kept');
    expect(Date.parse(sent.expiresAt) - Date.parse(sent.enqueuedTime)).toBe(2 * MINUTE);
    expect(peeked.timeToLive).toBe('PT2M');
  });

  it('T1: without a message TTL the queue default applies and is reported', async () => {
    await createQueue('t1-default', { defaultMessageTimeToLive: 'PT5M' });
    const sent = await send('t1-default', { body: 'x' });
    const [peeked] = await peek('/queues/t1-default');
    expect(Date.parse(sent.expiresAt) - Date.parse(sent.enqueuedTime)).toBe(5 * MINUTE);
    expect(peeked.timeToLive).toBe('PT5M');
  });

  it("T1: a subscription's copy gets the smallest of message, subscription and topic TTL", async () => {
    // prepare: topic PT2M; subscription `long` PT10M, `open` unlimited, `short` PT1M
    expect((await api('PUT', '/topics/t1-topic', { defaultMessageTimeToLive: 'PT2M' })).status).toBe(201);
    for (const [name, ttl] of [
      ['long', 'PT10M'],
      ['open', null],
      ['short', 'PT1M'],
    ] as const) {
      expect((await api('PUT', `/topics/t1-topic/subscriptions/${name}`, { defaultMessageTimeToLive: ttl })).status).toBe(201);
    }
    // act
    const sent = await api('POST', '/topics/t1-topic/messages', { body: 'fan', timeToLive: 'PT1H' });
    // assess
    expect(sent.status).toBe(201);
    const ttlOf = async (sub: string) => {
      const [m] = await peek(`/topics/t1-topic/subscriptions/${sub}`);
      expect(Date.parse(m.expiresAt) - Date.parse(m.enqueuedTime)).toBe(m.timeToLive === 'PT1M' ? MINUTE : 2 * MINUTE);
      return m.timeToLive;
    };
    expect(await ttlOf('long')).toBe('PT2M');
    expect(await ttlOf('open')).toBe('PT2M');
    expect(await ttlOf('short')).toBe('PT1M');
  });

  it('T1/T2: unlimited on both sides: no timeToLive, no expiresAt', async () => {
    await createQueue('t1-unlimited');
    const sent = await send('t1-unlimited', { body: 'x' });
    const [peeked] = await peek('/queues/t1-unlimited');
    expect(sent.expiresAt).toBeNull();
    expect(peeked).toMatchObject({ timeToLive: null, expiresAt: null });
  });
});

describe('T2/T3: expiresAt in the send answer', () => {
  it('T2: expiresAt = enqueuedTime + timeToLive', async () => {
    // prepare
    await createQueue('t2-answer');
    const sentAt = clock.now();
    // act
    const sent = await send('t2-answer', { body: 'x', timeToLive: 'PT10M' });
    // assess
    expect(sent.enqueuedTime).toBe(new Date(sentAt).toISOString());
    expect(sent.expiresAt).toBe(new Date(sentAt + 10 * MINUTE).toISOString());
  });

  it('T3: scheduled 5 minutes ahead with a 10-minute TTL expires 15 minutes after the send', async () => {
    // prepare
    await createQueue('t3-scheduled');
    const sentAt = clock.now();
    // act
    const sent = await send('t3-scheduled', {
      body: 'later',
      timeToLive: 'PT10M',
      scheduledEnqueueTime: new Date(sentAt + 5 * MINUTE).toISOString(),
    });
    // assess
    expect(sent.enqueuedTime).toBe(new Date(sentAt + 5 * MINUTE).toISOString());
    expect(sent.expiresAt).toBe(new Date(sentAt + 15 * MINUTE).toISOString());
  });

  it('T3: the scheduled message is receivable until 15 minutes after the send, and not from then on', async () => {
    // prepare
    await createQueue('t3-window', { lockDuration: 'PT5S' });
    const sentAt = clock.now();
    await send('t3-window', { body: 'later', timeToLive: 'PT10M', scheduledEnqueueTime: new Date(sentAt + 5 * MINUTE).toISOString() });
    // act + assess: 14 minutes after the send it is still there (10 minutes after materializing would be 10)
    clock.current = sentAt + 14 * MINUTE;
    const got = await receive('/queues/t3-window');
    expect(got).toHaveLength(1);
    const abandon = await api('POST', `/queues/t3-window/messages/${got[0].sequenceNumber}/abandon`, { lockToken: got[0].lockToken });
    expect(abandon.status).toBe(204);
    clock.current = sentAt + 15 * MINUTE;
    expect(await receive('/queues/t3-window')).toHaveLength(0);
  });
});

describe('T4: past expiresAt, no receive returns the message', () => {
  it('T4: one millisecond before expiresAt the message is still received', async () => {
    await createQueue('t4-before');
    const sent = await send('t4-before', { body: 'x', timeToLive: 'PT1M' });
    clock.current = Date.parse(sent.expiresAt) - 1;
    const got = await receive('/queues/t4-before', { mode: 'receiveAndDelete' });
    expect(got.map((m) => m.messageId)).toEqual([sent.messageId]);
  });

  for (const mode of ['peekLock', 'receiveAndDelete'] as const) {
    for (const swept of [false, true]) {
      it(`T4: ${mode} returns no expired message (sweeper ${swept ? 'ran' : 'did not run'}), from exactly expiresAt on`, async () => {
        // prepare
        const q = `t4-${mode.toLowerCase()}-${swept ? 'swept' : 'lazy'}`;
        await createQueue(q, { defaultMessageTimeToLive: 'PT1M' });
        const batch = await api('POST', `/queues/${q}/messages/batch`, { messages: [1, 2, 3].map((n) => ({ body: n })) });
        expect(batch.status).toBe(201);
        const expiresAt = Math.max(...batch.body.results.map((r: Msg) => Date.parse(r.expiresAt)));
        clock.current = expiresAt; // the boundary: expired from expiresAt on
        if (swept) await sweep();
        // act
        const got = await receive(`/queues/${q}`, { mode, maxMessages: 10 });
        const again = await receive(`/queues/${q}`, { mode, maxMessages: 10, maxWaitTime: 'PT2S' });
        // assess
        expect(got).toEqual([]);
        expect(again).toEqual([]);
      });
    }
  }

  it('T4: expired messages at the head do not hide a live one behind them', async () => {
    // prepare
    await createQueue('t4-mixed');
    for (let i = 0; i < 3; i++) await send('t4-mixed', { body: `short-${i}`, timeToLive: 'PT1M' });
    const live = await send('t4-mixed', { body: 'long', timeToLive: 'PT1H' });
    clock.advance(2 * MINUTE);
    // act
    const got = await receive('/queues/t4-mixed', { maxMessages: 10 });
    // assess
    expect(got.map((m) => m.messageId)).toEqual([live.messageId]);
  });
});

describe('T6: expired messages are dead-lettered or deleted', () => {
  it('T6: with deadLetteringOnMessageExpiration a receive that finds an expired message moves it to the DLQ with TTLExpiredException', async () => {
    // prepare
    await createQueue('t6-on', { deadLetteringOnMessageExpiration: true });
    const sent = await send('t6-on', { body: { order: 1 }, timeToLive: 'PT1M', applicationProperties: { color: 'red' } });
    clock.advance(MINUTE);
    // act
    const got = await receive('/queues/t6-on');
    // assess
    expect(got).toEqual([]);
    expect(await peek('/queues/t6-on')).toEqual([]);
    const dead = await peek(dlq('t6-on'));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      messageId: sent.messageId,
      body: { order: 1 },
      applicationProperties: { color: 'red' },
      deadLetterReason: 'TTLExpiredException',
      deadLetterSource: 'queues/t6-on',
      enqueuedSequenceNumber: sent.sequenceNumber,
      expiresAt: null,
    });
    expect(typeof dead[0].deadLetterErrorDescription).toBe('string');
  });

  it('T6: without deadLetteringOnMessageExpiration the expired message is deleted', async () => {
    // prepare
    await createQueue('t6-off');
    await send('t6-off', { body: 1, timeToLive: 'PT1M' });
    clock.advance(MINUTE);
    // act
    const got = await receive('/queues/t6-off', { mode: 'receiveAndDelete' });
    // assess
    expect(got).toEqual([]);
    expect(await peek('/queues/t6-off')).toEqual([]);
    expect(await peek(dlq('t6-off'))).toEqual([]);
    expect(await messageItems(deps, 't6-off', 'active')).toEqual([]);
  });
});

describe('T7: the sweeper removes expired messages when nobody receives', () => {
  it('T7/T6: the sweeper dead-letters expired messages of a queue with deadLetteringOnMessageExpiration, without any receive', async () => {
    // prepare
    await createIndexQueue('t7-on', { deadLetteringOnMessageExpiration: true, defaultMessageTimeToLive: 'PT2M' });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await send('t7-on', { body: i })).messageId);
    clock.advance(2 * MINUTE + SECOND);
    // act
    await sweep();
    // assess
    expect(await messageItems(deps, 't7-on', 'active')).toEqual([]);
    const dead = await peek(dlq('t7-on'));
    expect(dead.map((m) => m.messageId).sort()).toEqual([...ids].sort());
    expect(dead.every((m) => m.deadLetterReason === 'TTLExpiredException')).toBe(true);
  });

  it('T7/T6: the sweeper deletes expired messages of a queue without deadLetteringOnMessageExpiration', async () => {
    await createIndexQueue('t7-off', { defaultMessageTimeToLive: 'PT2M' });
    for (let i = 0; i < 4; i++) await send('t7-off', { body: i });
    clock.advance(3 * MINUTE);
    await sweep();
    expect(await messageItems(deps, 't7-off', 'active')).toEqual([]);
    expect(await peek(dlq('t7-off'))).toEqual([]);
  });

  it('T7/T6 on a ticketed queue: the quarter-hourly pass deletes expired messages of a queue without deadLetteringOnMessageExpiration', async () => {
    await createQueue('t7-off-ticketed', { defaultMessageTimeToLive: 'PT2M' });
    expect(await queueItem(deps, 't7-off-ticketed')).toMatchObject({ layout: 'positions', ticketed: true });
    for (let i = 0; i < 4; i++) await send('t7-off-ticketed', { body: i });
    expect(await messageItems(deps, 't7-off-ticketed', 'active')).toHaveLength(4); // the check below sees a ticketed queue's messages
    clock.current = nextPositionedPass(clock.now() + 3 * MINUTE);
    await sweep();
    expect(await messageItems(deps, 't7-off-ticketed', 'active')).toEqual([]);
    expect(await peek('/queues/t7-off-ticketed')).toEqual([]);
    expect(await peek(dlq('t7-off-ticketed'))).toEqual([]);
  });

  it('T7: the sweeper leaves unexpired messages alone, and a second run changes nothing', async () => {
    // prepare
    await createQueue('t7-early', { deadLetteringOnMessageExpiration: true });
    const sent = await send('t7-early', { body: 'x', timeToLive: 'PT10M' });
    clock.advance(5 * MINUTE);
    // act
    await sweep();
    await sweep();
    // assess
    expect((await peek('/queues/t7-early')).map((m) => m.messageId)).toEqual([sent.messageId]);
    expect(await peek(dlq('t7-early'))).toEqual([]);
    const got = await receive('/queues/t7-early', { mode: 'receiveAndDelete' });
    expect(got.map((m) => m.messageId)).toEqual([sent.messageId]);
  });

  it('T7/T3: a scheduled message that expires before anyone receives it is dead-lettered by the sweeper', async () => {
    await createQueue('t7-scheduled', { deadLetteringOnMessageExpiration: true });
    const sentAt = clock.now();
    const sent = await send('t7-scheduled', { body: 'x', timeToLive: 'PT10M', scheduledEnqueueTime: new Date(sentAt + 5 * MINUTE).toISOString() });
    clock.current = sentAt + 6 * MINUTE;
    await sweep(); // activates it
    expect(await peek(dlq('t7-scheduled'))).toEqual([]);
    clock.current = sentAt + 15 * MINUTE;
    await sweep(); // expires it
    expect(await messageItems(deps, 't7-scheduled', 'active')).toEqual([]);
    expect((await peek(dlq('t7-scheduled'))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[sent.messageId, 'TTLExpiredException']]);
  });
});
