/**
 * Maps an HTTP request to a broker operation (docs/http-api.md) through the route table
 * (lib/api/routes.ts): the path is matched against the table's templates, the body is parsed
 * against the schema the matched entry names (lib/requests/schemas.ts), and the entry's
 * `operation` picks one small handler below, which hands the broker the parsed request.
 * Adding a route is one table entry and, for a new operation, one handler.
 *
 * Entity names are validated as the path is parsed (`parseEntitySegments`), before any
 * template is tried, so a bad name is a 400 that names it wherever it stands.
 */
import { BrokerError, badRequest, methodNotAllowed } from '../../lib/errors.js';
import { decodeSegment, entityPathKey, parseEntitySegments, type EntityRef, type ReceiveTarget } from '../../lib/entities/paths.js';
import { routesAt, routeTable, type Operation, type Route, type RouteMatch } from '../../lib/api/routes.js';
import { NO_GRANT, presentAuthRule, scopeOf } from '../../lib/broker/authorization.js';
import type { Grant } from '../../lib/auth/index.js';
import type { Wire } from '../../lib/api/responses.js';
import type { Broker } from '../../lib/broker/index.js';
import {
  parsePeekQuery,
  parseRequest,
  parseSessionListQuery,
  parseSessionLockQuery,
  type RequestBodyName,
  type RequestOf,
} from '../../lib/requests/schemas.js';
import { parseSessionId } from '../../lib/messages/schema.js';
import { parseSequenceNumber } from '../../lib/validation.js';
import type { Settlement } from '../../lib/broker/settle.js';
import type { Subqueue } from '../../lib/entities/kinds.js';

export interface ApiRequest {
  method: string;
  path: string;
  query: Record<string, string | undefined>;
  body: unknown;
  /** What the request's token may do; operations that name a second entity in the body ask it (B3). None if absent. */
  grant?: Grant;
}

export interface ApiResponse {
  status: number;
  body?: unknown;
}

const ok = (body: unknown, status = 200): ApiResponse => ({ status, body });
const noContent: ApiResponse = { status: 204 };
const notFound = () => new BrokerError('EntityNotFound', 'no such resource');

/** What a handler is given: the matched route, its parameters, and the entity the path names. */
interface Call {
  broker: Broker;
  req: ApiRequest;
  route: Route;
  params: Record<string, string>;
  /** The entity the path names, its names validated; a blank queue for the namespace's routes, which never read it. */
  ref: EntityRef;
  target: ReceiveTarget;
  /** The body as the schema the route names reads it (`parseRequest`); undefined where the route takes none. */
  body: unknown;
}

type Handler = (call: Call) => Promise<ApiResponse>;

type ParsedEntity = NonNullable<ReturnType<typeof parseEntitySegments>>;

/**
 * The parsed body, typed as the schema the route table names for this route. A handler that
 * reads it as another schema than its route names is a bug, refused as one.
 */
function bodyOf<N extends RequestBodyName>(call: Call, ...names: N[]): RequestOf<N> {
  const named = call.route.body?.schema;
  if (named === undefined || !(names as readonly string[]).includes(named)) {
    throw new Error(`${call.route.operationId}: the route names ${named ?? 'no'} body; its handler reads ${names.join(' or ')}`);
  }
  return call.body as RequestOf<N>;
}

/**
 * Path parameters the broker reads before a body, checked before the body here too: a request
 * wrong in both is refused for its path, whichever route it is.
 */
const pathChecks: Record<string, (text: string) => unknown> = { sequenceNumber: parseSequenceNumber, sessionId: parseSessionId };

/** The last literal of the route's path: the settlement (`complete`, `deadletter`, ...). */
const action = (route: Route) => route.path.slice(route.path.lastIndexOf('/') + 1);

/** An entity's authorization rules are those of its current incarnation (A2); `/` is the namespace's. */
async function ruleScope({ broker, route, ref }: Call): Promise<[scope: string, eid: string | undefined]> {
  if (!route.entity) return ['/', undefined];
  const eid = await broker.incarnation(ref); // 404 for an absent entity
  return [scopeOf(entityPathKey(ref)), eid];
}

const handlers: Record<Exclude<Operation, `local.${string}`>, Handler> = {
  listEntities: async ({ broker, req, route, ref }) =>
    ok(await broker.listEntities(route.lists!, route.lists === 'subscription' ? ref.name : undefined, pageOf(req.query))),
  putEntity: async (call) => {
    const given = bodyOf(call, 'QueueProperties', 'TopicProperties', 'SubscriptionProperties');
    const { created, view } = await call.broker.putEntity(call.ref, given, call.req.grant ?? NO_GRANT);
    return ok(view, created ? 201 : 200);
  },
  describeEntity: async ({ broker, ref }) => ok(await broker.describeEntity(ref)),
  deleteEntity: async ({ broker, ref }) => {
    await broker.deleteEntity(ref);
    return noContent;
  },

  'auth.list': async (call) => {
    const [scope, eid] = await ruleScope(call);
    return ok({ items: (await call.broker.auth.list(scope, eid)).map(presentAuthRule), next: null } satisfies Wire<'AuthorizationRuleList'>);
  },
  'auth.put': async (call) => {
    const [scope, eid] = await ruleScope(call);
    const { created, rule } = await call.broker.auth.put(scope, call.params.name!, bodyOf(call, 'AuthorizationRuleProperties'), eid);
    return ok(presentAuthRule(rule), created ? 201 : 200);
  },
  'auth.get': async (call) => {
    const [scope, eid] = await ruleScope(call);
    return ok(presentAuthRule(await call.broker.auth.get(scope, call.params.name!, eid)));
  },
  'auth.remove': async (call) => {
    const [scope, eid] = await ruleScope(call);
    await call.broker.auth.remove(scope, call.params.name!, eid);
    return noContent;
  },
  'auth.regenerate': async (call) => {
    const [scope, eid] = await ruleScope(call);
    return ok(presentAuthRule(await call.broker.auth.regenerate(scope, call.params.name!, bodyOf(call, 'RegenerateKeyRequest'), eid)));
  },

  listRules: async ({ broker, ref }) => ok(await broker.listRules(ref.topic!, ref.name)),
  putRule: async (call) => {
    const { broker, ref, params } = call;
    const { created, rule } = await broker.putRule(ref.topic!, ref.name, params.r!, bodyOf(call, 'RuleProperties'));
    return ok(broker.presentRule(rule), created ? 201 : 200);
  },
  getRule: async ({ broker, ref, params }) => ok(await broker.getRule(ref.topic!, ref.name, params.r!)),
  deleteRule: async ({ broker, ref, params }) => {
    await broker.deleteRule(ref.topic!, ref.name, params.r!);
    return noContent;
  },

  send: async (call) => ok(await call.broker.send(call.ref, bodyOf(call, 'Message')), 201),
  sendBatch: async (call) => {
    const results = await call.broker.sendBatch(call.ref, bodyOf(call, 'MessageBatch'));
    return ok({ results } satisfies Wire<'BatchSendResult'>, results.every((r) => !('error' in r)) ? 201 : 207);
  },
  cancelScheduled: async ({ broker, ref, params }) => {
    await broker.cancelScheduled(ref, params.sequenceNumber!);
    return noContent;
  },

  receive: async (call) => ok({ messages: await call.broker.receive(call.target, bodyOf(call, 'ReceiveOptions')) } satisfies Wire<'MessageList'>),
  peek: async ({ broker, req, target }) => ok({ messages: await broker.peek(target, parsePeekQuery(req.query)) } satisfies Wire<'MessageList'>),
  notifications: async ({ broker, target }) => ok(await broker.notifications(target)),
  purge: async ({ broker, target }) => ok(await broker.purge(target)),
  settle: async (call) => {
    const body = bodyOf(call, 'CompleteRequest', 'AbandonRequest', 'DeferRequest', 'DeadLetterRequest');
    await call.broker.settle(call.target, call.params.sequenceNumber!, action(call.route) as Settlement, body);
    return noContent;
  },
  renewLock: async (call) => ok(await call.broker.renewLock(call.target, call.params.sequenceNumber!, bodyOf(call, 'RenewLockRequest'))),
  settleBatch: async (call) => {
    const results = await call.broker.settleBatch(call.target, action(call.route) as 'complete' | 'abandon', bodyOf(call, 'LockTokens'));
    return ok({ results } satisfies Wire<'SettleBatchResult'>);
  },
  receiveDeferred: async (call) =>
    ok({ messages: await call.broker.receiveDeferred(call.target, bodyOf(call, 'DeferredRequest')) } satisfies Wire<'MessageList'>),
  deleteMessages: async (call) => ok(await call.broker.deleteMessages(call.target, bodyOf(call, 'DeleteMessagesRequest'))),
  resubmit: async (call) => ok(await call.broker.resubmit(call.target, bodyOf(call, 'ResubmitRequest'), call.req.grant ?? NO_GRANT)),

  // Sessions (N1-N8): the table has them on the active subqueue of queues and subscriptions only.
  acceptSession: async (call) => ok(await call.broker.acceptSession(call.target, bodyOf(call, 'AcceptSessionRequest'))),
  listSessions: async ({ broker, req, target }) => ok(await broker.listSessions(target, parseSessionListQuery(req.query))),
  receiveFromSession: async (call) => {
    const messages = await call.broker.receiveFromSession(call.target, call.params.sessionId!, bodyOf(call, 'SessionReceiveOptions'));
    return ok({ messages } satisfies Wire<'MessageList'>);
  },
  renewSessionLock: async (call) => ok(await call.broker.renewSessionLock(call.target, call.params.sessionId!, bodyOf(call, 'SessionLockRequest'))),
  releaseSession: async (call) => {
    await call.broker.releaseSession(call.target, call.params.sessionId!, bodyOf(call, 'SessionLockRequest'));
    return noContent;
  },
  getSessionState: async ({ broker, req, target, params }) =>
    ok(await broker.getSessionState(target, params.sessionId!, parseSessionLockQuery(req.query.sessionLockToken))),
  setSessionState: async (call) => {
    await call.broker.setSessionState(call.target, call.params.sessionId!, bodyOf(call, 'SessionStateUpdate'));
    return noContent;
  },
  receiveDeferredFromSession: async (call) => {
    const messages = await call.broker.receiveDeferredFromSession(call.target, call.params.sessionId!, bodyOf(call, 'SessionDeferredRequest'));
    return ok({ messages } satisfies Wire<'MessageList'>);
  },
};

/** The deployed API's routes; the local runtime serves its own (`/_local/...`) before this router. */
const servedRoutes = routeTable.filter((r) => !r.localOnly);

/** The operations that put messages into an entity: a queue or a topic, never a subqueue (D5). */
const sendOperations = new Set<Operation>(['send', 'sendBatch', 'cancelScheduled']);

export async function route(broker: Broker, req: ApiRequest): Promise<ApiResponse> {
  const segments = req.path
    .split('/')
    .filter((s) => s.length > 0)
    .map((s, i) => decodeSegment(s, `path segment ${i + 1}`));
  const m = req.method.toLowerCase();
  const entity = parseEntitySegments(segments);
  const matches = routesAt(segments, servedRoutes);
  const hit = matches.find((x) => x.route.method === m);
  if (hit) {
    const ref = entity?.ref ?? { kind: 'queue', name: '' };
    const subqueue: Subqueue = entity?.subqueue ?? 'active';
    const { route, params } = hit;
    for (const [name, check] of Object.entries(pathChecks)) if (params[name] !== undefined) check(params[name]);
    const body = route.body ? parseRequest(route.body.schema, req.body) : undefined;
    return handlers[route.operation as keyof typeof handlers]({ broker, req, route, params, ref, target: { ...ref, subqueue }, body });
  }
  if (entity) refuseSendingHere(entity, m);
  throw unrouted(entity, m, matches);
}

/**
 * A send to a subscription's or a queue's subqueue is no route, but the answer says why
 * rather than 404: it is what the same request would be on a queue.
 */
function refuseSendingHere(entity: ParsedEntity, method: string) {
  const { ref, subqueue, rest } = entity;
  if (ref.kind === 'topic' || (ref.kind === 'queue' && subqueue === 'active')) return;
  const asQueue = routesAt(['queues', ref.name, ...rest], servedRoutes);
  if (!asQueue.some((x) => x.route.method === method && sendOperations.has(x.route.operation))) return;
  if (subqueue !== 'active') {
    throw new BrokerError('BadRequest', 'messages cannot be sent to a dead-letter subqueue directly (D5)', { field: 'path' });
  }
  throw new BrokerError('BadRequest', 'send to the topic, not to a subscription', { field: 'path' });
}

/**
 * The answer to a request no route takes: 400 naming `method` when the path is a route's
 * under another method, else 404. Under an entity's `messages` the API has always answered
 * by a simpler rule, kept so that no answer changes: on a queue or subscription every
 * operation there but peek, purge and notifications is a POST, so any other method is the
 * wrong method; on a topic only sends live there, and anything else is 404.
 */
function unrouted(entity: ParsedEntity | undefined, method: string, matches: readonly RouteMatch[]): BrokerError {
  if (entity?.rest[0] === 'messages') {
    if (entity.ref.kind === 'topic') return notFound();
    if (method !== 'post') return methodNotAllowed(method.toUpperCase());
    matches = matches.filter((x) => !sendOperations.has(x.route.operation));
  }
  return matches.length > 0 ? methodNotAllowed(method.toUpperCase()) : notFound();
}

function pageOf(query: ApiRequest['query']): { next?: string; top?: number } {
  const page: { next?: string; top?: number } = {};
  const next = query.next ?? query.continuationToken;
  if (next) page.next = next;
  const top = query.top ?? query.maxItems ?? query.$top;
  if (top !== undefined) {
    if (!/^\d+$/.test(top) || Number(top) < 1 || Number(top) > 100) throw badRequest('top', 'must be a whole number from 1 to 100');
    page.top = Number(top);
  }
  return page;
}
