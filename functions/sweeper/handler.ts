import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createBroker } from '../../lib/broker/index.js';

export type JobHandler = () => Promise<Record<string, unknown>>;

/** Every minute: expiry, max delivery and scheduled activation off the `due` index. */
export function createSweeperHandler(deps: Deps): JobHandler {
  const broker = createBroker(deps);
  return async () => ({ ...(await broker.sweep()) });
}

const real = lazy(() => createSweeperHandler(depsFromEnv()));
export const handler: JobHandler = () => real()();
