/**
 * How long a scheduled job may keep going. On Lambda that is the invocation's
 * remaining time less a margin, so the job ends on its own, with a report, instead of being
 * killed half-way through a page; elsewhere (the local runtime, tests) a fixed allowance.
 */
export interface TimeBudget {
  /** Milliseconds the job may still start new work in. */
  remainingMs(): number;
}

/** The part of Lambda's context a job reads. */
export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}

/**
 * Left for what is in flight when the budget runs out: a batch of concurrent moves (each a
 * read and a transaction, retried by the SDK under throttling) and the report.
 */
export const SAFETY_MARGIN_MS = 8_000;

/** The invocation's remaining time less the margin; without a context, `fallbackMs` from now. */
export function jobBudget(context?: Partial<RemainingTime> | null, fallbackMs = 42_000): TimeBudget {
  if (typeof context?.getRemainingTimeInMillis === 'function') {
    const remaining = context.getRemainingTimeInMillis.bind(context);
    return { remainingMs: () => remaining() - SAFETY_MARGIN_MS };
  }
  const end = performance.now() + fallbackMs;
  return { remainingMs: () => end - performance.now() };
}

export const exhausted = (budget: TimeBudget) => budget.remainingMs() <= 0;

/**
 * Runs `work` over `items` with at most `limit` at once, starting nothing once `stop()` says
 * so or an item failed; whatever was started finishes before this returns (or rethrows the
 * first failure). Returns how many items were started.
 */
export async function boundedEach<T>(items: readonly T[], limit: number, stop: () => boolean, work: (item: T) => Promise<void>): Promise<number> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < items.length && !failed && !stop()) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const rejected = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (rejected) throw rejected.reason;
  return next;
}

/** Time one API call may spend on a long purge or resubmit before answering (API Gateway allows 30 s). */
export const API_WORK_BUDGET_MS = 20_000;
