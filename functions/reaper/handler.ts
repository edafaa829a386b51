import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createWorkers } from '../../lib/broker/workers.js';
import { jobBudget } from '../../lib/broker/budget.js';
import type { JobHandler } from '../sweeper/handler.js';

export type { JobHandler };

/** Every minute: remove what deleted entities left, and entities idle too long. */
export function createReaperHandler(deps: Deps): JobHandler {
  const jobs = createWorkers(deps);
  return async (_event, context) => ({ ...(await jobs.reap(jobBudget(context))) });
}

const real = lazy(() => createReaperHandler(depsFromEnv()));
export const handler: JobHandler = (event, context) => real()(event, context);
