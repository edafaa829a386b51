/**
 * The one wait between retries of a refused call (throttling, a conflict, items left
 * unprocessed), on the injectable clock so that tests move time instead of sleeping, and
 * the local runtime's clock sees the same waits as Lambda's.
 *
 * Exponential, capped, with equal jitter: half of the step is always waited (so a retry
 * never comes at once after a refusal), the other half is random, so callers refused
 * together do not come back together and meet again.
 */
import type { Clock } from './clock.js';

export interface Backoff {
  /** The step before the first retry (attempt 0), in milliseconds. */
  baseMs: number;
  /** No wait is longer than this. */
  capMs: number;
}

/** Keys or items a batch call left unprocessed, or a page of a Query refused (throttling), are asked again after 50-100 ms, doubling up to 0.5-1 s. */
export const UNPROCESSED_BACKOFF: Backoff = { baseMs: 100, capMs: 1_000 };

/** How long to wait before retry `attempt` (0 for the first): between half and all of min(cap, base · 2^attempt). */
export function backoffDelay(attempt: number, policy: Backoff, random: () => number = Math.random): number {
  const step = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempt));
  return Math.round(step / 2 + (step / 2) * random());
}

/** Waits before retry `attempt` on `clock`. */
export function backoff(clock: Pick<Clock, 'sleep'>, attempt: number, policy: Backoff, random?: () => number): Promise<void> {
  return clock.sleep(backoffDelay(attempt, policy, random));
}
