import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createWorkers } from '../../lib/broker/workers.js';
import { jobBudget, type RemainingTime } from '../../lib/broker/budget.js';
import { hintLapsedLocks } from '../../lib/notifications/hints.js';
import { posterFromEnv } from '../../lib/notifications/poster.js';
import type { ConnectionPoster } from '../../lib/notifications/watchers.js';

/**
 * A scheduled job: EventBridge's event (unused) and Lambda's context, whose remaining time
 * bounds the run. The local runtime calls it without either.
 */
export type JobHandler = (event?: unknown, context?: Partial<RemainingTime>) => Promise<Record<string, unknown>>;

/** How far back a fresh instance looks for lapsed locks: a little more than one tick. */
const FIRST_LOOKBACK_MS = 2 * 60_000;

/**
 * Every minute: with the WebSocket API deployed, hints for locks that lapsed since the last
 * run; then expiry, max delivery and scheduled activation off the `due` index. The hints look
 * first (H1): in a quarter-hour minute the positioned pass takes lapsed locks back, and a lock
 * taken back is no longer on the counter or the leases where the look finds lapses.
 */
export function createSweeperHandler(deps: Deps, options: { poster?: ConnectionPoster } = {}): JobHandler {
  const jobs = createWorkers(deps);
  let lastRun: number | undefined;
  return async (_event, context) => {
    const hints: Record<string, unknown> = {};
    if (options.poster) {
      const now = deps.clock.now();
      try {
        hints.lapseHints = await hintLapsedLocks(jobs.ctx, options.poster, lastRun ?? now - FIRST_LOOKBACK_MS);
        lastRun = now;
      } catch (error) {
        hints.lapseHintError = (error as Error).message; // a hint is a hint: the next run looks again
      }
    }
    return { ...(await jobs.sweep(jobBudget(context))), ...hints };
  };
}

const real = lazy(() => createSweeperHandler(depsFromEnv(), { poster: posterFromEnv() }));
export const handler: JobHandler = (event, context) => real()(event, context);
