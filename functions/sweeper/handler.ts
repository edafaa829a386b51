import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';

export type JobHandler = () => Promise<Record<string, unknown>>;

/** STUB: replaced by the real sweeper. */
export function createSweeperHandler(_deps: Deps): JobHandler {
  return async () => ({});
}

const real = lazy(() => createSweeperHandler(depsFromEnv()));
export const handler: JobHandler = () => real()();
