/**
 * Two sweeper runs at once. The deployment reserves no concurrency for the sweeper (a new
 * account's quota has none to give), and EventBridge delivers a scheduled event at least
 * once, so two runs can overlap. Every move they make is conditional on the version each
 * read, so whichever run is second finds nothing left to do: nothing is dead-lettered,
 * activated or removed twice.
 */
import { describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { indexLayout } from '../support/default-layout.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';

const MINUTE = 60_000;

describe('T6/D2/S6: two sweeper runs at once', () => {
  it('T6/D2/S6: two runs started together over expired, over-delivered and scheduled messages move each exactly once', async () => {
    // prepare
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
    // Today's sweeper, which moves at every run; a positioned queue's pass runs each quarter hour
    // (T7 lets removal wait) and has its own racing-pass tests (ticket-sweep-d2.test.ts).
    const deps = { ...(await testDeps(clock, 'sweeper-twice')), ...indexLayout };
    const api = apiClient(deps);
    const { createQueue, send, receive, peek, dlq } = queueHelpers(() => api);
    await createQueue('twice', { lockDuration: 'PT30S', maxDeliveryCount: 1, deadLetteringOnMessageExpiration: true });
    await createQueue('gone', { defaultMessageTimeToLive: 'PT1M' });
    const batch = async (queue: string, messages: object[]) => {
      const res = await api('POST', `/queues/${queue}/messages/batch`, { messages });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    };
    // Locked on their only delivery: D2 dead-letters them once the locks lapse.
    await batch(
      'twice',
      Array.from({ length: 20 }, (_, i) => ({ body: `locked-${i}` })),
    );
    const locked = await receive('/queues/twice', { maxMessages: 20 });
    expect(locked).toHaveLength(20);
    // Expiring (T6 dead-letters them), and scheduled (S6 activates them).
    await batch(
      'twice',
      Array.from({ length: 30 }, (_, i) => ({ body: `expiring-${i}`, timeToLive: 'PT1M' })),
    );
    await batch(
      'twice',
      Array.from({ length: 10 }, (_, i) => ({ body: `scheduled-${i}`, scheduledEnqueueTime: new Date(clock.now() + MINUTE).toISOString() })),
    );
    // Expiring without dead-lettering: removed.
    await batch(
      'gone',
      Array.from({ length: 10 }, (_, i) => ({ body: `gone-${i}` })),
    );
    for (let i = 0; i < 5; i++) await send('gone', { body: `more-${i}` });
    clock.advance(2 * MINUTE);

    // act: two handlers, as two Lambda instances would be
    const [a, b] = await Promise.all([createSweeperHandler(deps)(), createSweeperHandler(deps)()]);

    // assess: the moves add up to one of each, whichever run made them
    const total = (key: string) => Number(a[key] ?? 0) + Number(b[key] ?? 0);
    expect(total('deadLettered') + total('expired')).toBe(20 + 30 + 15);
    expect(total('activated')).toBe(10);
    const bodies = (messages: Msg[]) => messages.map((m) => m.body as string).sort();
    const deadLettered = await peek(dlq('twice'));
    expect(bodies(deadLettered)).toEqual(
      [...Array.from({ length: 20 }, (_, i) => `locked-${i}`), ...Array.from({ length: 30 }, (_, i) => `expiring-${i}`)].sort(),
    );
    expect(new Set(deadLettered.map((m) => m.sequenceNumber)).size).toBe(50);
    const active = await receive('/queues/twice', { maxMessages: 100 });
    expect(bodies(active)).toEqual(Array.from({ length: 10 }, (_, i) => `scheduled-${i}`).sort());
    expect(await peek('/queues/gone')).toEqual([]);
    expect(await peek(dlq('gone'))).toEqual([]);
    // A third run finds nothing left.
    const again = await createSweeperHandler(deps)();
    expect([again.deadLettered, again.expired, again.activated]).toEqual([0, 0, 0]);
  });
});
