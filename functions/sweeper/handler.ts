import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createBroker } from '../../lib/broker/index.js';
import { jobBudget, type RemainingTime } from '../../lib/broker/budget.js';

/**
 * A scheduled job: EventBridge's event (unused) and Lambda's context, whose remaining time
 * bounds the run (#10.2). The local runtime calls it without either.
 */
export type JobHandler = (event?: unknown, context?: Partial<RemainingTime>) => Promise<Record<string, unknown>>;

/** Every minute: expiry, max delivery and scheduled activation off the `due` index. */
export function createSweeperHandler(deps: Deps): JobHandler {
  const broker = createBroker(deps);
  return async (_event, context) => ({ ...(await broker.sweep(jobBudget(context))) });
}

const real = lazy(() => createSweeperHandler(depsFromEnv()));
export const handler: JobHandler = (event, context) => real()(event, context);
