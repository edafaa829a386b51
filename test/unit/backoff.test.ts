/**
 * The one retry backoff (lib/backoff.ts): exponential, capped, jittered, and waited on the
 * injectable clock, so a test that moves the clock sees every wait and never sleeps.
 */
import { describe, expect, it } from 'vitest';
import { backoff, backoffDelay } from '../../lib/backoff.js';
import { ManualClock } from '../support/table.js';

const policy = { baseMs: 25, capMs: 1000 };

describe('backoffDelay', () => {
  it('doubles per attempt between half and all of the step', () => {
    for (const attempt of [0, 1, 2, 3, 4, 5]) {
      const step = policy.baseMs * 2 ** attempt;
      expect(backoffDelay(attempt, policy, () => 0)).toBe(Math.round(step / 2));
      expect(backoffDelay(attempt, policy, () => 0.999999)).toBe(Math.round(step));
    }
  });

  it('never waits longer than the cap, however many attempts', () => {
    for (const attempt of [6, 10, 40, 2000]) {
      expect(backoffDelay(attempt, policy, () => 0.999999)).toBe(policy.capMs);
      expect(backoffDelay(attempt, policy, () => 0)).toBe(policy.capMs / 2);
    }
  });

  it('spreads callers refused together (jitter), and always waits something', () => {
    const delays = Array.from({ length: 200 }, () => backoffDelay(3, policy));
    expect(new Set(delays).size).toBeGreaterThan(20);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...delays)).toBeLessThanOrEqual(200);
  });
});

describe('backoff', () => {
  it('waits on the clock it is given: a test clock moves by exactly the delay', async () => {
    const clock = new ManualClock(1_000_000);
    await backoff(clock, 2, policy, () => 0.5);
    expect(clock.now()).toBe(1_000_000 + backoffDelay(2, policy, () => 0.5));
    await backoff(clock, 50, policy, () => 1);
    expect(clock.now()).toBe(1_000_000 + 75 + 1000);
  });
});
