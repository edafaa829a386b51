/**
 * The route table of the HTTP API (docs/http-api.md): one entry per route, naming its
 * method, its path template, the right a token's rule needs for it (A2), the broker
 * operation that serves it, and its request body (its success answers, which only the
 * OpenAPI document reads, are in route-answers.ts, by operation). The authorizer
 * reads the right from here (`routeFor`), the router parses the body against the schema
 * named here before the broker is called (`parseRequest`), and the OpenAPI document is
 * written around these entries (infra/openapi/routes.ts adds the prose).
 *
 * Adding a route (CONTRIBUTING.md, "Adding a route"):
 * - to an operation that exists: one `add(...)` below, and its prose in infra/openapi/routes.ts;
 * - for a new operation, also: its request body's schema and parser in lib/requests/schemas.ts
 *   (when it takes a new one), the function in a lib/broker/ module, named in that module's
 *   `operations` (the broker binds those whole), its handler in functions/api/router.ts, and
 *   what it answers in lib/api/route-answers.ts. That is five files of code at most; a new
 *   answer shape adds its schema to lib/api/responses.ts, a new body its example to
 *   infra/openapi/examples.ts.
 * Then `npm run openapi` regenerates docs/openapi.json.
 *
 * Pure data with no imports from the broker (the body schemas are named, from
 * lib/requests/schemas.ts), so the authorizer (authorize.ts) can read it without a cycle.
 */
import type { Right } from '../auth/sas.js';
import type { EntityKind } from '../entities/kinds.js';
import { ENTITY_SHAPES, SUBQUEUE_SHAPES } from '../entities/paths.js';
import type { RequestBodyName } from '../requests/schemas.js';
import { matchTemplate, templateParts } from '../entities/templates.js';

export type Method = 'get' | 'put' | 'post' | 'delete';

/** The broker operation a route is served by (`auth.put` is `broker.auth.put`); `local.*` are the local runtime's. */
export type Operation =
  | 'listEntities'
  | 'putEntity'
  | 'describeEntity'
  | 'deleteEntity'
  | 'auth.list'
  | 'auth.put'
  | 'auth.get'
  | 'auth.remove'
  | 'auth.regenerate'
  | 'listRules'
  | 'putRule'
  | 'getRule'
  | 'deleteRule'
  | 'send'
  | 'sendBatch'
  | 'cancelScheduled'
  | 'receive'
  | 'peek'
  | 'notifications'
  | 'purge'
  | 'settle'
  | 'renewLock'
  | 'settleBatch'
  | 'receiveDeferred'
  | 'deleteMessages'
  | 'resubmit'
  | 'acceptSession'
  | 'listSessions'
  | 'receiveFromSession'
  | 'renewSessionLock'
  | 'releaseSession'
  | 'getSessionState'
  | 'setSessionState'
  | 'receiveDeferredFromSession'
  | 'local.getClock'
  | 'local.advanceClock'
  | 'local.runJob';

export interface Route {
  method: Method;
  /**
   * Path template (lib/entities/templates.ts): literal segments (lower-case; `$` literally) and
   * parameters `{q}`, `{t}`, `{s}`, `{r}`, `{name}`, `{sequenceNumber}`, `{sessionId}`, `{job}`.
   */
  path: string;
  /** Unique; the OpenAPI operationId. */
  operationId: string;
  /** The right a SharedAccessSignature's rule needs (A2); the local-only routes want Manage. */
  right: Right;
  operation: Operation;
  /** Served only by the local runtime (`npm start`), never deployed. */
  localOnly?: boolean;
  /**
   * Why a served route is left out of docs/openapi.json. Dead-lettering in a dead-letter
   * subqueue is routed (and needs Listen, like any settlement) so that the broker can answer
   * why it refuses (400, D5), but it is no operation to document.
   */
  undocumented?: string;
  /** For the entity routes: which kind of entity, and which subqueue (`''` for the entity itself). */
  entity?: EntityKind;
  subqueue?: '' | 'deadletter' | 'transfer';
  /**
   * The request body: its schema in lib/requests/schemas.ts (the router parses it), and whether it
   * is required: an absent one is then a 400 naming `body`, else it takes every default.
   */
  body?: { schema: RequestBodyName; required: boolean };
  /** For the listing routes: the kind of entity listed. */
  lists?: EntityKind;
}

const required = (schema: RequestBodyName) => ({ schema, required: true });
const optional = (schema: RequestBodyName) => ({ schema, required: false });

function buildTable(): Route[] {
  const table: Route[] = [];
  const add = (method: Method, path: string, operationId: string, right: Right, operation: Operation, more: Partial<Route> = {}) =>
    table.push({ method, path, operationId, right, operation, ...more });

  // The order is the order of docs/openapi.json.
  add('get', '/queues', 'listQueues', 'Manage', 'listEntities', { lists: 'queue' });
  add('get', '/topics', 'listTopics', 'Manage', 'listEntities', { lists: 'topic' });
  add('get', '/topics/{t}/subscriptions', 'listSubscriptions', 'Manage', 'listEntities', { lists: 'subscription' });
  addAuthRules(add, '', 'Namespace');

  for (const e of ENTITY_SHAPES) {
    const at = { entity: e.kind, subqueue: '' } as const;
    add('put', e.path, `put${e.label}`, 'Manage', 'putEntity', { ...at, body: optional(`${e.label}Properties`) });
    add('get', e.path, `get${e.label}`, 'Manage', 'describeEntity', at);
    add('delete', e.path, `delete${e.label}`, 'Manage', 'deleteEntity', at);
    addAuthRules(add, e.path, e.label, at);
  }

  const rules = '/topics/{t}/subscriptions/{s}/rules';
  add('get', rules, 'listRules', 'Manage', 'listRules');
  add('put', `${rules}/{r}`, 'putRule', 'Manage', 'putRule', { body: optional('RuleProperties') });
  add('get', `${rules}/{r}`, 'getRule', 'Manage', 'getRule');
  add('delete', `${rules}/{r}`, 'deleteRule', 'Manage', 'deleteRule');

  // Sending: queues and topics, never a subqueue (D5).
  for (const e of ENTITY_SHAPES.filter((x) => x.kind !== 'subscription')) {
    const at = { entity: e.kind, subqueue: '' } as const;
    add('post', `${e.path}/messages`, `sendTo${e.label}`, 'Send', 'send', { ...at, body: required('Message') });
    add('post', `${e.path}/messages/batch`, `sendBatchTo${e.label}`, 'Send', 'sendBatch', { ...at, body: required('MessageBatch') });
    add('delete', `${e.path}/messages/scheduled/{sequenceNumber}`, `cancelScheduledOn${e.label}`, 'Send', 'cancelScheduled', at);
  }

  // Receiving: queues, subscriptions and their subqueues.
  for (const e of ENTITY_SHAPES.filter((x) => x.kind !== 'topic')) {
    for (const sub of SUBQUEUE_SHAPES) {
      const R = `${e.path}${sub.segment}`;
      const id = `${e.label}${sub.label}`;
      const at = { entity: e.kind, subqueue: sub.subqueue };
      add('post', `${R}/messages/receive`, `receiveFrom${id}`, 'Listen', 'receive', { ...at, body: optional('ReceiveOptions') });
      add('get', `${R}/messages`, `peek${id}`, 'Listen', 'peek', at);
      add('get', `${R}/messages/notifications`, `notificationsOf${id}`, 'Listen', 'notifications', at);
      add('delete', `${R}/messages`, `purge${id}`, 'Manage', 'purge', at);
      const settlements = [
        ['complete', 'complete', 'CompleteRequest'],
        ['abandon', 'abandon', 'AbandonRequest'],
        ['defer', 'defer', 'DeferRequest'],
        ['deadletter', 'deadLetter', 'DeadLetterRequest'],
      ] as const;
      for (const [action, op, body] of settlements) {
        // D5: a message in a dead-letter subqueue cannot be dead-lettered again.
        const refused = sub.subqueue && action === 'deadletter' ? { undocumented: 'the broker refuses it (D5)' } : {};
        add('post', `${R}/messages/{sequenceNumber}/${action}`, `${op}On${id}`, 'Listen', 'settle', { ...at, ...refused, body: required(body) });
      }
      add('post', `${R}/messages/{sequenceNumber}/renew-lock`, `renewLockOn${id}`, 'Listen', 'renewLock', { ...at, body: required('RenewLockRequest') });
      for (const action of ['complete', 'abandon']) {
        add('post', `${R}/messages/${action}`, `${action}BatchOn${id}`, 'Listen', 'settleBatch', { ...at, body: required('LockTokens') });
      }
      add('post', `${R}/messages/deferred`, `receiveDeferredFrom${id}`, 'Listen', 'receiveDeferred', { ...at, body: required('DeferredRequest') });
      add('post', `${R}/messages/delete`, `deleteMessagesFrom${id}`, 'Listen', 'deleteMessages', { ...at, body: required('DeleteMessagesRequest') });
      if (sub.subqueue) add('post', `${R}/resubmit`, `resubmitFrom${id}`, 'Manage', 'resubmit', { ...at, body: optional('ResubmitRequest') });
    }
  }

  // Sessions (N1-N8): the active subqueue of queues and subscriptions; a session's
  // messages settle through the settlement routes above. All are receives (Listen).
  for (const e of ENTITY_SHAPES.filter((x) => x.kind !== 'topic')) {
    const S = `${e.path}/sessions`;
    const at = { entity: e.kind, subqueue: '' } as const;
    add('post', `${S}/accept`, `acceptSessionOn${e.label}`, 'Listen', 'acceptSession', { ...at, body: optional('AcceptSessionRequest') });
    add('get', S, `listSessionsOf${e.label}`, 'Listen', 'listSessions', at);
    add('post', `${S}/{sessionId}/receive`, `receiveFrom${e.label}Session`, 'Listen', 'receiveFromSession', { ...at, body: required('SessionReceiveOptions') });
    add('post', `${S}/{sessionId}/renew-lock`, `renewSessionLockOn${e.label}`, 'Listen', 'renewSessionLock', { ...at, body: required('SessionLockRequest') });
    add('post', `${S}/{sessionId}/release`, `releaseSessionOn${e.label}`, 'Listen', 'releaseSession', { ...at, body: required('SessionLockRequest') });
    add('get', `${S}/{sessionId}/state`, `getSessionStateOf${e.label}`, 'Listen', 'getSessionState', at);
    add('put', `${S}/{sessionId}/state`, `setSessionStateOf${e.label}`, 'Listen', 'setSessionState', { ...at, body: required('SessionStateUpdate') });
    add('post', `${S}/{sessionId}/deferred`, `receiveDeferredFrom${e.label}Session`, 'Listen', 'receiveDeferredFromSession', {
      ...at,
      body: required('SessionDeferredRequest'),
    });
  }

  // The local runtime's own routes: management of the whole namespace.
  const local = { localOnly: true } as const;
  add('get', '/_local/clock', 'getLocalClock', 'Manage', 'local.getClock', local);
  add('post', '/_local/clock', 'advanceLocalClock', 'Manage', 'local.advanceClock', { ...local, body: required('ClockAdvance') });
  add('post', '/_local/jobs/{job}', 'runLocalJob', 'Manage', 'local.runJob', local);
  return table;
}

function addAuthRules(
  add: (method: Method, path: string, operationId: string, right: Right, operation: Operation, more?: Partial<Route>) => void,
  prefix: string,
  label: string,
  at: Partial<Route> = {},
) {
  const base = `${prefix}/authorization-rules`;
  add('get', base, `list${label}AuthorizationRules`, 'Manage', 'auth.list', at);
  add('put', `${base}/{name}`, `put${label}AuthorizationRule`, 'Manage', 'auth.put', { ...at, body: required('AuthorizationRuleProperties') });
  add('get', `${base}/{name}`, `get${label}AuthorizationRule`, 'Manage', 'auth.get', at);
  add('delete', `${base}/{name}`, `delete${label}AuthorizationRule`, 'Manage', 'auth.remove', at);
  add('post', `${base}/{name}/regenerate`, `regenerate${label}AuthorizationRuleKey`, 'Manage', 'auth.regenerate', {
    ...at,
    body: required('RegenerateKeyRequest'),
  });
}

export const routeTable: readonly Route[] = buildTable();

const DIGITS = /^[0-9]+$/;

export interface RouteMatch {
  route: Route;
  /** The path parameters as sent (decoded); names and sequence numbers are not yet validated. */
  params: Record<string, string>;
}

/**
 * A table's routes by how many segments their template has, each list in table order: a path
 * is matched against the templates of its own length only (every request does it twice, for
 * the authorizer and for the router).
 */
const byLength = new WeakMap<readonly Route[], Map<number, Route[]>>();
function routesOfLength(table: readonly Route[], length: number): readonly Route[] {
  let lengths = byLength.get(table);
  if (!lengths) {
    lengths = new Map();
    for (const route of table) {
      const n = templateParts(route.path).length;
      lengths.set(n, [...(lengths.get(n) ?? []), route]);
    }
    byLength.set(table, lengths);
  }
  return lengths.get(length) ?? [];
}

/** Every route whose path template `segments` (decoded) match, under any method, in table order. */
export function routesAt(segments: readonly string[], table: readonly Route[] = routeTable): RouteMatch[] {
  const found: RouteMatch[] = [];
  for (const route of routesOfLength(table, segments.length)) {
    const match = matchTemplate(route.path, segments);
    if (match) found.push({ route, params: match.params });
  }
  return found;
}

/**
 * The route `method` on `segments` (decoded, lower-case, as `resourceSegments` gives them)
 * is, if any: the authorizer's reading. A `{sequenceNumber}` must be digits here, so a
 * request the broker will refuse as malformed asks for the safe default right, not the
 * route's; names are taken as they stand.
 */
export function routeFor(method: string, segments: readonly string[]): Route | undefined {
  const m = method.toLowerCase();
  return routesAt(segments).find((x) => x.route.method === m && (x.params.sequenceNumber === undefined || DIGITS.test(x.params.sequenceNumber)))?.route;
}
