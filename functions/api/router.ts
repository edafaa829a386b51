/**
 * Maps an HTTP request to a broker operation (API.md). A small hand-written matcher rather
 * than a route table: entity paths nest (`/topics/t/subscriptions/s/$deadletterqueue/...`),
 * carry `$` literally or as `%24`, and names must be validated as they are parsed.
 */
import { BrokerError, badRequest } from '../../lib/errors.js';
import { validateName } from '../../lib/names.js';
import { decodeSegment, entityPathKey, parseEntitySegments, type ReceiveTarget } from '../../lib/entities/paths.js';
import { NO_GRANT, presentAuthRule, scopeOf } from '../../lib/broker/authorization.js';
import type { Grant } from '../../lib/auth/index.js';
import type { Broker } from '../../lib/broker/index.js';
import type { Settlement } from '../../lib/broker/settle.js';

export interface ApiRequest {
  method: string;
  path: string;
  query: Record<string, string | undefined>;
  body: unknown;
  /** What the request's token may do; operations that name a second entity in the body ask it (#10.7). None if absent. */
  grant?: Grant;
}

export interface ApiResponse {
  status: number;
  body?: unknown;
}

const ok = (body: unknown, status = 200): ApiResponse => ({ status, body });
const noContent: ApiResponse = { status: 204 };
const notFound = () => new BrokerError('EntityNotFound', 'no such resource');
const methodNotAllowed = (method: string) => new BrokerError('BadRequest', `method ${method} is not allowed on this path`, { field: 'method' });

const settlements: Record<string, Settlement> = { complete: 'complete', abandon: 'abandon', deadletter: 'deadletter', defer: 'defer' };

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

export async function route(broker: Broker, req: ApiRequest): Promise<ApiResponse> {
  const segments = req.path.split('/').filter((s) => s.length > 0).map((s, i) => decodeSegment(s, `path segment ${i + 1}`));
  const m = req.method.toUpperCase();

  if (segments.length === 1 && (segments[0] === 'queues' || segments[0] === 'topics')) {
    if (m !== 'GET') throw methodNotAllowed(m);
    return ok(await broker.listEntities(segments[0] === 'queues' ? 'queue' : 'topic', undefined, pageOf(req.query)));
  }
  if (segments.length === 3 && segments[0] === 'topics' && segments[2] === 'subscriptions') {
    if (m !== 'GET') throw methodNotAllowed(m);
    return ok(await broker.listEntities('subscription', validateName('topic', segments[1]!, 'topicName'), pageOf(req.query)));
  }

  if (segments[0] === 'authorization-rules') return routeAuthRules(broker, m, '/', undefined, segments.slice(1), req.body);

  const parsed = parseEntitySegments(segments);
  if (!parsed) throw notFound();
  const { ref, subqueue, rest } = parsed;
  const target: ReceiveTarget = { ...ref, subqueue };
  // D8: a topic has no subqueues; only queues and subscriptions do.
  if (ref.kind === 'topic' && subqueue !== 'active') throw notFound();

  if (subqueue === 'active' && rest[0] === 'authorization-rules') {
    const eid = await broker.incarnation(ref); // 404 for an absent entity; its rules are this incarnation's (#10.8)
    return routeAuthRules(broker, m, scopeOf(entityPathKey(ref)), eid, rest.slice(1), req.body);
  }

  if (ref.kind === 'subscription' && subqueue === 'active' && rest[0] === 'rules') {
    return routeRules(broker, m, ref.topic ?? '', ref.name, rest.slice(1), req.body);
  }

  // Management of the entity itself.
  if (rest.length === 0 && subqueue === 'active') {
    if (m === 'PUT') {
      const { created, view } = await broker.putEntity(ref, req.body, req.grant ?? NO_GRANT);
      return ok(view, created ? 201 : 200);
    }
    if (m === 'GET') return ok(await broker.describeEntity(ref));
    if (m === 'DELETE') {
      await broker.deleteEntity(ref);
      return noContent;
    }
    throw methodNotAllowed(m);
  }

  if (rest.length === 1 && rest[0] === 'resubmit' && subqueue !== 'active') {
    if (m !== 'POST') throw methodNotAllowed(m);
    return ok(await broker.resubmit(target, req.body, req.grant ?? NO_GRANT));
  }

  if (rest[0] === 'sessions') return routeSessions(broker, m, target, rest.slice(1), req);

  if (rest[0] !== 'messages') throw notFound();
  const [, second, third] = rest;
  const isReceivePath = ref.kind !== 'topic';

  // Sending: queues and topics, never a subqueue (D5).
  if (rest.length === 1 && m === 'POST') {
    assertSendPath(target);
    return ok(await broker.send(ref, req.body), 201);
  }
  if (rest.length === 2 && second === 'batch' && m === 'POST') {
    assertSendPath(target);
    const results = await broker.sendBatch(ref, req.body);
    return ok({ results }, results.every((r) => !('error' in r)) ? 201 : 207);
  }
  if (rest.length === 3 && second === 'scheduled' && m === 'DELETE') {
    assertSendPath(target);
    await broker.cancelScheduled(ref, third!);
    return noContent;
  }

  if (!isReceivePath) throw notFound();
  if (rest.length === 1) {
    if (m === 'GET') return ok({ messages: await broker.peek(target, req.query) });
    if (m === 'DELETE') return ok(await broker.purge(target));
    throw methodNotAllowed(m);
  }
  if (rest.length === 2 && second === 'notifications') {
    if (m !== 'GET') throw methodNotAllowed(m);
    return ok(await broker.notifications(target));
  }
  if (m !== 'POST') throw methodNotAllowed(m);
  if (rest.length === 2) {
    if (second === 'receive') return ok({ messages: await broker.receive(target, req.body) });
    if (second === 'deferred') return ok({ messages: await broker.receiveDeferred(target, req.body) });
    if (second === 'delete') return ok(await broker.deleteMessages(target, req.body));
    if (second === 'complete' || second === 'abandon') return ok({ results: await broker.settleBatch(target, second, req.body) });
    throw notFound();
  }
  if (rest.length === 3) {
    const action = third!;
    if (action === 'renew-lock') return ok(await broker.renewLock(target, second!, req.body));
    const settlement = Object.hasOwn(settlements, action) ? settlements[action] : undefined;
    if (settlement) {
      await broker.settle(target, second!, settlement, req.body);
      return noContent;
    }
  }
  throw notFound();
}

function assertSendPath(target: ReceiveTarget) {
  if (target.subqueue !== 'active') {
    throw new BrokerError('BadRequest', 'messages cannot be sent to a dead-letter subqueue directly (D5)', { field: 'path' });
  }
  if (target.kind === 'subscription') throw new BrokerError('BadRequest', 'send to the topic, not to a subscription', { field: 'path' });
}

/** `{R}/sessions/...` (#13): the active subqueue of a queue or subscription. */
async function routeSessions(broker: Broker, m: string, target: ReceiveTarget, rest: string[], req: ApiRequest): Promise<ApiResponse> {
  if (target.kind === 'topic' || target.subqueue !== 'active') throw notFound();
  if (rest.length === 0) {
    if (m !== 'GET') throw methodNotAllowed(m);
    return ok(await broker.listSessions(target, req.query));
  }
  if (rest.length === 1 && rest[0] === 'accept') {
    if (m !== 'POST') throw methodNotAllowed(m);
    return ok(await broker.acceptSession(target, req.body));
  }
  if (rest.length !== 2) throw notFound();
  const [sessionId, action] = rest as [string, string];
  if (action === 'state') {
    if (m === 'GET') return ok(await broker.getSessionState(target, sessionId, req.query.sessionLockToken));
    if (m === 'PUT') {
      await broker.setSessionState(target, sessionId, req.body);
      return noContent;
    }
    throw methodNotAllowed(m);
  }
  if (!['receive', 'renew-lock', 'release', 'deferred'].includes(action)) throw notFound();
  if (m !== 'POST') throw methodNotAllowed(m);
  if (action === 'receive') return ok({ messages: await broker.receiveFromSession(target, sessionId, req.body) });
  if (action === 'deferred') return ok({ messages: await broker.receiveDeferredFromSession(target, sessionId, req.body) });
  if (action === 'renew-lock') return ok(await broker.renewSessionLock(target, sessionId, req.body));
  await broker.releaseSession(target, sessionId, req.body);
  return noContent;
}

async function routeRules(broker: Broker, m: string, topic: string, sub: string, rest: string[], body: unknown): Promise<ApiResponse> {
  if (rest.length === 0) {
    if (m !== 'GET') throw methodNotAllowed(m);
    return ok(await broker.listRules(topic, sub));
  }
  if (rest.length !== 1) throw notFound();
  const name = rest[0]!;
  if (m === 'PUT') {
    const { created, rule } = await broker.putRule(topic, sub, name, body);
    return ok(broker.presentRule(rule), created ? 201 : 200);
  }
  if (m === 'GET') return ok(await broker.getRule(topic, sub, name));
  if (m === 'DELETE') {
    await broker.deleteRule(topic, sub, name);
    return noContent;
  }
  throw methodNotAllowed(m);
}

async function routeAuthRules(broker: Broker, m: string, scope: string, eid: string | undefined, rest: string[], body: unknown): Promise<ApiResponse> {
  if (rest.length === 0) {
    if (m !== 'GET') throw methodNotAllowed(m);
    return ok({ items: (await broker.auth.list(scope, eid)).map(presentAuthRule), next: null });
  }
  const name = rest[0]!;
  if (rest.length === 2 && rest[1] === 'regenerate') {
    if (m !== 'POST') throw methodNotAllowed(m);
    return ok(presentAuthRule(await broker.auth.regenerate(scope, name, body, eid)));
  }
  if (rest.length !== 1) throw notFound();
  if (m === 'PUT') {
    const { created, rule } = await broker.auth.put(scope, name, body, eid);
    return ok(presentAuthRule(rule), created ? 201 : 200);
  }
  if (m === 'GET') return ok(presentAuthRule(await broker.auth.get(scope, name, eid)));
  if (m === 'DELETE') {
    await broker.auth.remove(scope, name, eid);
    return noContent;
  }
  throw methodNotAllowed(m);
}
