/** The broker's operations, bound to one set of dependencies. Handlers call only this. */
import type { Deps } from '../deps.js';
import type { PeekQuery, RequestOf, SessionListQuery, SessionLockQuery, SettleRequest } from '../api/schemas.js';
import type { EntityProperties } from '../entities/properties.js';
import type { EntityRef, ReceiveTarget } from '../entities/paths.js';
import { brokerContext } from './context.js';
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
import { sweep } from './sweeper.js';
import { reap } from './reaper.js';
import type { TimeBudget } from './budget.js';
import { processStream } from './stream.js';
import type { DynamoDBRecord } from 'aws-lambda';
import type { Grant } from '../auth/grants.js';
import { BrokerError } from '../errors.js';

export function createBroker(deps: Deps) {
  const ctx = brokerContext(deps);
  const auth = ruleStore(ctx);
  return {
    ctx,
    auth,
    /** PUT {M}: creates or updates, and answers with the same view as GET (runtime included). */
    /** `grant`: what the request's token may do, for the forwarding targets in the body (B3). */
    putEntity: async (ref: EntityRef, given: Partial<EntityProperties>, grant: Grant) => {
      const { created, entity } = await entities.putEntity(ctx, ref, given, grant);
      const stats = await entities.getStats(ctx, [entity.eid]);
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
    send: (ref: EntityRef, body: RequestOf<'Message'>) => send.send(ctx, ref, body),
    sendBatch: (ref: EntityRef, body: RequestOf<'MessageBatch'>) => send.sendBatch(ctx, ref, body),
    putRule: (t: string, s: string, r: string, body: RequestOf<'RuleProperties'>) => filterRules.putRule(ctx, t, s, r, body),
    getRule: (t: string, s: string, r: string) => filterRules.getRule(ctx, t, s, r).then(filterRules.presentRule),
    deleteRule: (t: string, s: string, r: string) => filterRules.deleteRule(ctx, t, s, r),
    listRules: (t: string, s: string) => filterRules.listRules(ctx, t, s),
    presentRule: filterRules.presentRule,
    cancelScheduled: (ref: EntityRef, seq: string) => cancelScheduled.cancelScheduled(ctx, ref, seq),
    receive: (target: ReceiveTarget, body: RequestOf<'ReceiveOptions'>) => receive.receive(ctx, target, body),
    peek: (target: ReceiveTarget, query: PeekQuery) => peek.peek(ctx, target, query),
    settle: (target: ReceiveTarget, seq: string, action: settle.Settlement, body: SettleRequest) => settle.settle(ctx, target, seq, action, body),
    renewLock: (target: ReceiveTarget, seq: string, body: RequestOf<'RenewLockRequest'>) => settle.renewLock(ctx, target, seq, body),
    settleBatch: (target: ReceiveTarget, action: 'complete' | 'abandon', body: RequestOf<'LockTokens'>) => settle.settleBatch(ctx, target, action, body),
    receiveDeferred: (target: ReceiveTarget, body: RequestOf<'DeferredRequest'>) => settle.receiveDeferred(ctx, target, body),
    // Sessions (N1-N8): all on the active subqueue of an entity that requires sessions.
    acceptSession: (target: ReceiveTarget, body: RequestOf<'AcceptSessionRequest'>) => sessions.acceptSession(ctx, target, body),
    listSessions: (target: ReceiveTarget, query: SessionListQuery) => sessions.listSessions(ctx, target, query),
    receiveFromSession: (target: ReceiveTarget, sessionId: string, body: RequestOf<'SessionReceiveOptions'>) =>
      sessions.receiveFromSession(ctx, target, sessionId, body),
    renewSessionLock: (target: ReceiveTarget, sessionId: string, body: RequestOf<'SessionLockRequest'>) =>
      sessions.renewSessionLock(ctx, target, sessionId, body),
    releaseSession: (target: ReceiveTarget, sessionId: string, body: RequestOf<'SessionLockRequest'>) => sessions.releaseSession(ctx, target, sessionId, body),
    getSessionState: (target: ReceiveTarget, sessionId: string, sessionLockToken: SessionLockQuery) =>
      sessions.getSessionState(ctx, target, sessionId, sessionLockToken),
    setSessionState: (target: ReceiveTarget, sessionId: string, body: RequestOf<'SessionStateUpdate'>) =>
      sessions.setSessionState(ctx, target, sessionId, body),
    receiveDeferredFromSession: (target: ReceiveTarget, sessionId: string, body: RequestOf<'SessionDeferredRequest'>) =>
      sessions.receiveDeferredFromSession(ctx, target, sessionId, body),
    purge: (target: ReceiveTarget) => bulkDelete.purge(ctx, target),
    deleteMessages: (target: ReceiveTarget, body: RequestOf<'DeleteMessagesRequest'>) => bulkDelete.deleteMessages(ctx, target, body),
    resubmit: (target: ReceiveTarget, body: RequestOf<'ResubmitRequest'>, grant: Grant) => resubmit.resubmit(ctx, target, body, grant),
    /** Where a consumer waits for availability hints instead of long-polling (H1). */
    notifications: async (target: ReceiveTarget) => {
      await entities.requireEntity(ctx, target);
      const url = deps.notificationsUrl?.();
      if (!url) throw new BrokerError('EntityNotFound', 'this deployment has no notifications endpoint; long-poll with maxWaitTime instead');
      return { url };
    },
    sweep: (budget?: TimeBudget) => sweep(ctx, budget),
    reap: (budget?: TimeBudget) => reap(ctx, budget),
    processStream: (records: DynamoDBRecord[]) => processStream(ctx, records),
  };
}

export type Broker = ReturnType<typeof createBroker>;
