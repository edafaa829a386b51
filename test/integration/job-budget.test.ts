/**
 * The sweeper and the reaper stop on their own, inside a page, when the invocation's
 * remaining time (less the margin) runs out, and report that work is left; the next run
 * finishes it. Expired messages are moved several at a time, each move still crash-safe:
 * every message ends in exactly one place. Lambda's context is faked; its remaining time
 * follows the injectable clock, which each DynamoDB call moves on by 50 ms.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { SAFETY_MARGIN_MS } from '../../lib/broker/budget.js';
import { SWEEP_CONCURRENCY } from '../../lib/broker/sweeper.js';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { messageItems } from '../support/stream.js';

const MINUTE = 60_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
/**
 * Creates queues in today's layout: for the sweeper tests, which count its msg/ items and expect
 * each run to expire what is due (a positioned queue's pass may wait, T7).
 */
let indexApi: ReturnType<typeof apiClient>;

/** The same table, through a client whose every call takes 50 ms of the clock; counts calls in flight. */
function slowDeps() {
  const inFlight = { now: 0, max: 0 };
  const real = deps.db;
  const db = new Proxy(real, {
    get(target, prop) {
      if (prop === 'send') {
        return async (command: never) => {
          inFlight.now++;
          inFlight.max = Math.max(inFlight.max, inFlight.now);
          clock.advance(50);
          try {
            return await target.send(command);
          } finally {
            inFlight.now--;
          }
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as DynamoDBDocumentClient;
  return { deps: { ...deps, db }, inFlight };
}

/** Lambda's context for an invocation with `ms` left now, counted down by the clock. */
function contextWith(ms: number) {
  const end = clock.now() + ms;
  return { getRemainingTimeInMillis: () => end - clock.now() };
}

beforeAll(async () => {
  deps = await testDeps(clock, 'job-budget');
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
});

async function sendMany(queue: string, count: number, extra: Record<string, unknown> = {}) {
  for (let n = 0; n < count; n += 50) {
    const messages = Array.from({ length: Math.min(50, count - n) }, (_, i) => ({ body: { n: n + i }, ...extra }));
    const res = await api('POST', `/queues/${queue}/messages/batch`, { messages });
    expect(res.status).toBe(201);
  }
}

describe('the sweeper stops on its own', () => {
  it(
    'runs out of remaining time inside a page, reports what is left, moves several at once; the next run finishes; every message in exactly one place',
    { timeout: 120_000 },
    async () => {
      // prepare: 150 messages that expire into the dead-letter subqueue
      await indexApi('PUT', '/queues/budget', { deadLetteringOnMessageExpiration: true, defaultMessageTimeToLive: 'PT1M' });
      await sendMany('budget', 150);
      clock.advance(2 * MINUTE);
      const slow = slowDeps();
      const sweep = createSweeperHandler(slow.deps);

      // act: 12 s of budget past the margin, 50 ms a call
      const first = await sweep({}, contextWith(SAFETY_MARGIN_MS + 12_000));

      // assess: stopped on its own with work left, and moved several at once
      expect(first.complete).toBe(false);
      expect((first.unfinishedShards as string[]).length).toBeGreaterThan(0);
      expect(first.expired).toBeGreaterThan(0);
      expect(first.expired).toBeLessThan(150);
      expect(slow.inFlight.max).toBeGreaterThan(1);
      expect(slow.inFlight.max).toBeLessThanOrEqual(SWEEP_CONCURRENCY);
      const active = await messageItems(deps, 'budget', 'active');
      const dead = await messageItems(deps, 'budget', 'deadletter');
      expect(dead).toHaveLength(first.expired as number);
      expect(active.length + dead.length).toBe(150);

      // act: a run with time enough
      const second = await sweep({}, contextWith(5 * MINUTE));

      // assess
      expect(second.complete).toBe(true);
      expect(second.unfinishedShards).toEqual([]);
      expect((first.expired as number) + (second.expired as number)).toBe(150);
      const deadAfter = await messageItems(deps, 'budget', 'deadletter');
      expect(await messageItems(deps, 'budget', 'active')).toEqual([]);
      expect(new Set(deadAfter.map((m) => m.messageId)).size).toBe(150);
    },
  );

  it('an invocation with no time past the margin starts nothing', async () => {
    const sweep = createSweeperHandler(deps);
    await indexApi('PUT', '/queues/budget-none', { defaultMessageTimeToLive: 'PT1M' });
    await sendMany('budget-none', 3);
    clock.advance(2 * MINUTE);

    const report = await sweep({}, contextWith(SAFETY_MARGIN_MS - 1));

    expect(report).toMatchObject({ examined: 0, complete: false });
    expect(await messageItems(deps, 'budget-none', 'active')).toHaveLength(3);
  });
});

describe('the reaper stops on its own', () => {
  it('checks the remaining time between entities of one page, reports what is left; the next run finishes', { timeout: 120_000 }, async () => {
    // prepare: 12 idle queues past their deadline
    for (let i = 0; i < 12; i++) expect((await api('PUT', `/queues/idle-${i}`, { autoDeleteOnIdle: 'PT5M' })).status).toBe(201);
    clock.advance(10 * MINUTE);
    const slow = slowDeps();
    const reap = createReaperHandler(slow.deps);

    // act: one page of 12 due entities, time for a few of them
    const first = await reap({}, contextWith(SAFETY_MARGIN_MS + 1_500));

    // assess
    expect(first.complete).toBe(false);
    const deletedFirst = first.entitiesDeleted as string[];
    expect(deletedFirst.length).toBeGreaterThan(0);
    expect(deletedFirst.length).toBeLessThan(12);

    // act
    const second = await reap({}, contextWith(5 * MINUTE));

    // assess: every idle queue deleted exactly once over the two runs
    expect(second.complete).toBe(true);
    const all = [...deletedFirst, ...(second.entitiesDeleted as string[])].filter((p) => p.includes('idle-'));
    expect(new Set(all).size).toBe(12);
    expect(all).toHaveLength(12);
    for (let i = 0; i < 12; i++) expect((await api('GET', `/queues/idle-${i}`)).status).toBe(404);
  });
});
