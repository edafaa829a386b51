import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { createLog, type Log } from '../../lib/log.js';
import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import type { Clock } from '../../lib/clock.js';
import { createApiBroker } from '../../lib/broker/index.js';
import { ROOT_RULE } from '../../lib/broker/authorization.js';
import { isStoreBusy } from '../../lib/store/outcomes.js';

/**
 * What the onEvent handler of a custom resource Provider answers. Deliberately no `Data`:
 * whatever a custom resource returns there can be read with `Fn::GetAtt` and lands in
 * CloudFormation's events and the provider framework's logs. The key stays in the table.
 */
export interface BootstrapResponse {
  PhysicalResourceId: string;
}

export type BootstrapHandler = (event: CloudFormationCustomResourceEvent) => Promise<BootstrapResponse>;

const logger = createLog('sluice-bootstrap');

/** Names the table, never the key: a table name is no secret. */
export const physicalIdOf = (tableName: string) => `${tableName}|${ROOT_RULE}`;

/**
 * The deploy-time root key (A2, A4): a CloudFormation custom resource (Provider framework)
 * calls this on Create and Update; it creates the RootManageSharedAccessKey rule, with
 * random 256-bit keys, unless the table already holds one (an existing key is never
 * changed, so an update or a redeploy does not lock clients out). Rules an older deployment
 * kept in the data table are moved to the keys table first. Delete does nothing: the rule
 * goes with the keys table, or stays with it when the table is retained.
 */
export function createBootstrapHandler(deps: Deps, log: Pick<Log, 'info'> = logger): BootstrapHandler {
  const broker = createApiBroker(deps);
  return async (event) => {
    const physicalId = physicalIdOf(deps.tableName);
    if (event.RequestType === 'Delete') {
      log.info('root rule left in place', { requestType: event.RequestType, tableName: deps.tableName });
      return { PhysicalResourceId: event.PhysicalResourceId };
    }
    // A deployment from before the keys table: its rules (the root key too) move first.
    const adopted = await untilPropagated(deps.clock, () => broker.auth.adoptLegacyRules(), log);
    const rule = await untilPropagated(deps.clock, () => broker.auth.ensureRoot(), log);
    // The rule's name and rights only: its keys are never logged (A4).
    log.info('root rule ready', { requestType: event.RequestType, tableName: deps.tableName, keyName: rule.keyName, rights: rule.rights, adopted });
    return { PhysicalResourceId: physicalId };
  };
}

/** How long a refusal that may pass is retried: IAM propagation takes seconds, rarely more. */
export const PROPAGATION_WINDOW_MS = 30_000;

/**
 * AccessDenied right after a deploy: CREATE_COMPLETE of a role's policy does not mean IAM has
 * propagated it. Throttling passes too. Anything else is a real failure.
 */
const mayPass = (e: unknown) => (e instanceof Error && /AccessDenied/.test(e.name)) || isStoreBusy(e);

/**
 * Runs `act` again, with backoff, while it fails with a refusal that may pass, for at most
 * PROPAGATION_WINDOW_MS, so a first deploy does not roll back on IAM propagation.
 */
async function untilPropagated<T>(clock: Clock, act: () => Promise<T>, log: Pick<Log, 'info'>): Promise<T> {
  const deadline = clock.now() + PROPAGATION_WINDOW_MS;
  for (let wait = 500; ; wait = Math.min(wait * 2, 4_000)) {
    try {
      return await act();
    } catch (e) {
      if (!mayPass(e) || clock.now() + wait > deadline) throw e;
      log.info('root rule write refused; retrying', { error: (e as Error).name, retryInMs: wait });
      await clock.sleep(wait);
    }
  }
}

const real = lazy(() => createBootstrapHandler(depsFromEnv()));
export const handler: BootstrapHandler = (event) => real()(event);
