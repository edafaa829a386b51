import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';

export type JobHandler = () => Promise<Record<string, unknown>>;

/** STUB: replaced by the real reaper. */
export function createReaperHandler(_deps: Deps): JobHandler {
  return async () => ({});
}

const real = lazy(() => createReaperHandler(depsFromEnv()));
export const handler: JobHandler = () => real()();
