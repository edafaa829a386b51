/**
 * What each route of the HTTP API answers when it succeeds: each status, and its body's schema
 * in lib/api/responses.ts (none for an empty body), by the route's broker operation. Only the
 * OpenAPI document (infra/openapi/routes.ts) and the tests read it, never the router, so it
 * stands apart from the route table (lib/api/routes.ts) and out of the api's Lambda bundle.
 */
import type { EntityKind } from '../entities/kinds.js';
import { ENTITY_SHAPES, type EntityShape } from '../entities/paths.js';
import type { ResponseSchemaName } from './responses.js';
import type { Operation, Route } from './routes.js';

export interface Answer {
  status: 200 | 201 | 204 | 207;
  schema?: ResponseSchemaName;
}

type Label = EntityShape['label'];

const done: readonly Answer[] = [{ status: 204 }];
const one = (schema: ResponseSchemaName): readonly Answer[] => [{ status: 200, schema }];
/** A PUT answers 201 when it created, 200 when it changed what was there. */
const upsert = (schema: ResponseSchemaName): readonly Answer[] => [
  { status: 200, schema },
  { status: 201, schema },
];

/** What each operation answers with when it succeeds; `label` is the entity kind the route is on (or lists). */
const answers: Record<Operation, (label: Label | undefined) => readonly Answer[]> = {
  listEntities: (label) => one(`${kindOf(label)}List`),
  putEntity: (label) => upsert(kindOf(label)),
  describeEntity: (label) => one(kindOf(label)),
  deleteEntity: () => done,
  'auth.list': () => one('AuthorizationRuleList'),
  'auth.put': () => upsert('AuthorizationRule'),
  'auth.get': () => one('AuthorizationRule'),
  'auth.remove': () => done,
  'auth.regenerate': () => one('AuthorizationRule'),
  listRules: () => one('RuleList'),
  putRule: () => upsert('Rule'),
  getRule: () => one('Rule'),
  deleteRule: () => done,
  send: (label) => [{ status: 201, schema: label === 'Topic' ? 'TopicSendReceipt' : 'QueueSendResult' }],
  // S4: 207 when some of the messages were not stored.
  sendBatch: () => [
    { status: 201, schema: 'BatchSendResult' },
    { status: 207, schema: 'BatchSendResult' },
  ],
  cancelScheduled: () => done,
  receive: () => one('MessageList'),
  peek: () => one('MessageList'),
  notifications: () => one('NotificationsEndpoint'),
  purge: () => one('PurgeResult'),
  settle: () => done,
  renewLock: () => one('LockRenewal'),
  settleBatch: () => one('SettleBatchResult'),
  receiveDeferred: () => one('MessageList'),
  deleteMessages: () => one('DeleteMessagesResult'),
  resubmit: () => one('ResubmitResult'),
  acceptSession: () => one('AcceptedSession'),
  listSessions: () => one('SessionList'),
  receiveFromSession: () => one('MessageList'),
  renewSessionLock: () => one('LockRenewal'),
  releaseSession: () => done,
  getSessionState: () => one('SessionState'),
  setSessionState: () => done,
  receiveDeferredFromSession: () => one('MessageList'),
  'local.getClock': () => one('Clock'),
  'local.advanceClock': () => one('Clock'),
  'local.runJob': () => one('JobReport'),
};

const labelOf = (kind: EntityKind | undefined): Label | undefined => ENTITY_SHAPES.find((e) => e.kind === kind)?.label;
function kindOf(label: Label | undefined): Label {
  if (label === undefined) throw new Error('an entity operation on a route that names no entity');
  return label;
}

/** The success answers of `route`. */
export const responsesOf = (route: Route): readonly Answer[] => answers[route.operation](labelOf(route.lists ?? route.entity));
