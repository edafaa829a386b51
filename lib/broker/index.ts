/**
 * The broker's operations, bound to one set of dependencies. Handlers call only this. A
 * module's plain operations are listed beside them (`operations`) and bound here whole, so a
 * new one needs no line in this file; what combines several, or adds to one, is written here.
 */
import type { Deps } from '../deps.js';
import type { EntityProperties } from '../entities/properties.js';
import type { EntityRef, ReceiveTarget } from '../entities/paths.js';
import { bindOperations, brokerContext } from './context.js';
import { ruleStore, scopeOf } from './authorization.js';
import { entityPathKey } from '../entities/paths.js';
import * as entities from './entities.js';
import * as send from './send.js';
import * as receive from './receive.js';
import * as settle from './settle.js';
import * as sessions from './sessions.js';
import * as bulkDelete from './bulk-delete.js';
import * as cancelScheduled from './cancel-scheduled.js';
import * as peek from './peek.js';
import * as resubmit from './resubmit.js';
import * as filterRules from './filter-rules.js';
import { workerOperations } from './workers.js';
import type { Grant } from '../auth/grants.js';
import { BrokerError } from '../errors.js';

/**
 * The operations of the HTTP API and the Service Bus protocols: what functions/api and the
 * bootstrap call. The jobs (sweep, reap, the stream) are apart (`workers.ts`), so the api's
 * bundle does not carry them nor they the api's.
 */
export function createApiBroker(deps: Deps) {
  const ctx = brokerContext(deps);
  const auth = ruleStore(ctx);
  return {
    ctx,
    auth,
    /** PUT {M}: creates or updates, and answers with the same view as GET (runtime included). */
    /** `grant`: what the request's token may do, for the forwarding targets in the body (B3). */
    putEntity: async (ref: EntityRef, given: Partial<EntityProperties>, grant: Grant) => {
      const { created, entity } = await entities.putEntity(ctx, ref, given, grant);
      const stats = await entities.getStats(ctx, [entity]);
      return { created, entity, view: entities.presentEntity(entity, stats.get(entity.eid)) };
    },
    // Typed by the entity view schemas in entities.ts; left open here because tests read one kind's fields.
    describeEntity: (ref: EntityRef): Promise<Record<string, unknown>> => entities.describeEntity(ctx, ref),
    /** The live entity's incarnation id (404 when absent): its authorization rules are bound to it (A2). */
    incarnation: async (ref: EntityRef) => (await entities.requireEntity(ctx, ref)).eid,
    deleteEntity: async (ref: EntityRef) => {
      await entities.deleteEntity(ctx, ref);
      await auth.removeScope(scopeOf(entityPathKey(ref)));
    },
    listEntities: (kind: EntityRef['kind'], topic: string | undefined, page: { next?: string; top?: number }) => entities.listEntities(ctx, kind, topic, page),
    presentEntity: entities.presentEntity,
    // The modules' own operations, each bound to ctx as it is declared beside it (`operations`).
    ...bindOperations(ctx, send.operations),
    ...bindOperations(ctx, filterRules.operations),
    ...bindOperations(ctx, cancelScheduled.operations),
    ...bindOperations(ctx, receive.operations),
    ...bindOperations(ctx, peek.operations),
    ...bindOperations(ctx, settle.operations),
    ...bindOperations(ctx, bulkDelete.operations),
    ...bindOperations(ctx, resubmit.operations),
    getRule: (t: string, s: string, r: string) => filterRules.getRule(ctx, t, s, r).then(filterRules.presentRule),
    presentRule: filterRules.presentRule,
    // Sessions (N1-N8): all on the active subqueue of an entity that requires sessions.
    ...bindOperations(ctx, sessions.operations),
    /** Where a consumer waits for availability hints instead of long-polling (H1). */
    notifications: async (target: ReceiveTarget) => {
      await entities.requireEntity(ctx, target);
      const url = deps.notificationsUrl?.();
      if (!url) throw new BrokerError('EntityNotFound', 'this deployment has no notifications endpoint; long-poll with maxWaitTime instead');
      return { url };
    },
  };
}

export type Broker = ReturnType<typeof createApiBroker>;

/** Every operation, the jobs' too, on one context: for the local runtime's tests and tools that drive both. */
export function createBroker(deps: Deps) {
  const broker = createApiBroker(deps);
  return { ...broker, ...workerOperations(broker.ctx) };
}
