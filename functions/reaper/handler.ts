import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createBroker } from '../../lib/broker/index.js';

export type JobHandler = () => Promise<Record<string, unknown>>;

/** Every minute: remove what deleted entities left, and entities idle too long. */
export function createReaperHandler(deps: Deps): JobHandler {
  const broker = createBroker(deps);
  return async () => ({ ...(await broker.reap()) });
}

const real = lazy(() => createReaperHandler(depsFromEnv()));
export const handler: JobHandler = () => real()();
