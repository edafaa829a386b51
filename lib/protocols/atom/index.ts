/**
 * The Atom/XML management plane, as Service Bus serves it to every official admin client:
 *
 *   GET  /$namespaceinfo
 *   GET  /$Resources/Queues | /$Resources/Topics           ($skip, $top)
 *   GET|PUT|DELETE /{queue or topic}                          (PUT + If-Match: * updates)
 *   GET  /{t}/Subscriptions                                   ($skip, $top)
 *   GET|PUT|DELETE /{t}/Subscriptions/{s}
 *   GET  /{t}/Subscriptions/{s}/Rules                         ($skip, $top)
 *   GET|PUT|DELETE /{t}/Subscriptions/{s}/Rules/{r}
 *
 * Paths match case-insensitively with or without a trailing `/`; `api-version`, `enrich`
 * and other query parameters are accepted and ignored. Each route maps onto the broker's own
 * operation, after `requireGrant` on the Sluice entity the path resolves to.
 *
 * Service Bus keeps queue and topic names in one space; Sluice in two. So `GET /{name}`
 * answers the queue, else the topic; creating a queue or topic whose name the other kind
 * holds is a 409, as in Service Bus. An update (`If-Match: *`) replaces: properties it does
 * not carry go back to their defaults, as Service Bus documents.
 */
import { BrokerError, badRequest, methodNotAllowed } from '../../errors.js';
import { validateName } from '../../names.js';
import { defaults, parseEntityProperties, presentProperties, visibleProperties, type EntityKind } from '../../entities/properties.js';
import { parseRequest } from '../../requests/schemas.js';
import { entityPathKey, type EntityRef } from '../../entities/paths.js';
import { grantAllows } from '../../auth/index.js';
import type { Broker } from '../../broker/index.js';
import { requireGrant } from '../sas.js';
import type { ProtocolAnswer } from '../errors.js';
import type { ProtocolModule, ProtocolRequest } from '../types.js';
import { readAuthorizationRules, readDescription, readEntityProperties, readRule } from './read.js';
import { scopeOf } from '../../broker/authorization.js';
import {
  ENTRY_CONTENT_TYPE,
  authorizationRulesXml,
  FEED_CONTENT_TYPE,
  entryXml,
  feedXml,
  namespaceInfo,
  queueDescription,
  ruleDescription,
  rulePath,
  subscriptionDescription,
  subscriptionPath,
  topicDescription,
  type EntityView,
  type EntryParts,
  type Origin,
  type RuleView,
} from './write.js';
import { RULES, SUBSCRIPTIONS } from './elements.js';

const DEFAULT_RULE = '$Default';
const MAX_PAGE = 100;

export const atomProtocol: ProtocolModule = {
  right: ({ segments }) => (segments.length === 1 && segments[0]!.toLowerCase() === '$namespaceinfo' ? 'Any' : 'Manage'),
  serve: serveAtom,
};

const notFound = (what: string) => new BrokerError('EntityNotFound', `The messaging entity '${what}' could not be found`);
const exists = (what: string) => new BrokerError('EntityAlreadyExists', `The messaging entity '${what}' already exists`);

const entry = (body: string, status = 200): ProtocolAnswer => ({ status, headers: { 'content-type': ENTRY_CONTENT_TYPE }, body });
const emptyOk: ProtocolAnswer = { status: 200, headers: { 'content-type': ENTRY_CONTENT_TYPE }, body: '' };

async function serveAtom(broker: Broker, req: ProtocolRequest): Promise<ProtocolAnswer> {
  const s = req.segments;
  const lower = s.map((x) => x.toLowerCase());
  const origin: Origin = { scheme: req.scheme, host: req.host };
  const m = req.method === 'HEAD' ? 'GET' : req.method;
  const call = { broker, req, origin, method: m };

  if (lower.length === 1 && lower[0] === '$namespaceinfo') {
    if (m !== 'GET') throw methodNotAllowed(m);
    return namespace(call);
  }
  if (lower.length === 2 && lower[0] === '$resources' && (lower[1] === 'queues' || lower[1] === 'topics')) {
    if (m !== 'GET') throw methodNotAllowed(m);
    return listQueuesOrTopics(call, lower[1] === 'queues' ? 'queue' : 'topic');
  }
  if (lower[0]?.startsWith('$') || s.length === 0) throw notFound(s.join('/') || '/');
  const name = s[0]!;
  if (s.length === 1) return queueOrTopic(call, name);
  if (lower[1] !== 'subscriptions' || s.length > 5) throw notFound(s.join('/'));
  const topic = validateName('topic', name, 'topicName');
  if (s.length === 2) {
    if (m !== 'GET') throw methodNotAllowed(m);
    return listSubscriptions(call, topic);
  }
  const sub = validateName('subscription', s[2]!, 'subscriptionName');
  if (s.length === 3) return subscription(call, topic, sub);
  if (lower[3] !== 'rules') throw notFound(s.join('/'));
  if (s.length === 4) {
    if (m !== 'GET') throw methodNotAllowed(m);
    return listRules(call, topic, sub);
  }
  return rule(call, topic, sub, s[4]!);
}

interface Call {
  broker: Broker;
  req: ProtocolRequest;
  origin: Origin;
  method: string;
}

const manage = (req: ProtocolRequest, path: string) => requireGrant(req.grant, path, 'Manage');
const isUpdate = (req: ProtocolRequest) => req.headers['if-match'] !== undefined;

async function namespace({ broker, origin }: Call): Promise<ProtocolAnswer> {
  const rules = await broker.auth.list('/');
  const created = Math.min(...rules.map((r) => r.createdAt).filter((t) => typeof t === 'number'), broker.ctx.clock.now());
  const name = origin.host.replace(/:\d+$/, '');
  const at = new Date(created).toISOString();
  return entry(entryXml(origin, { path: '$namespaceinfo', title: name, published: at, updated: at, author: name, content: namespaceInfo(name, at) }));
}

/** `$skip` and `$top` (B2: a bad one is a 400 naming it); `$top` at most 100, as Service Bus pages. */
function page(req: ProtocolRequest): { skip: number; top: number } {
  const read = (key: string, fallback: number) => {
    const text = Object.entries(req.query).find(([k]) => k.toLowerCase() === key)?.[1];
    if (text === undefined || text === '') return fallback;
    if (!/^\d{1,9}$/.test(text)) throw badRequest(key, 'must be a whole number');
    return Number(text);
  };
  const skip = read('$skip', 0);
  const top = Math.min(read('$top', MAX_PAGE), MAX_PAGE);
  if (top < 1) throw badRequest('$top', 'must be at least 1');
  return { skip, top };
}

/** Entities of a kind in name order, from `skip`, at most `top`, and whether more remain. Service Bus pages by offset; Sluice's pages are walked to it. */
async function entitiesPage(broker: Broker, kind: EntityKind, topic: string | undefined, skip: number, top: number) {
  const wanted = skip + top + 1;
  const items: EntityView[] = [];
  let next: string | undefined;
  do {
    const out = await broker.listEntities(kind, topic, { top: MAX_PAGE, ...(next ? { next } : {}) });
    items.push(...(out.items as EntityView[]));
    next = out.next ?? undefined;
  } while (next && items.length < wanted);
  return { items: items.slice(skip, skip + top), more: items.length > skip + top };
}

async function countSubscriptions(broker: Broker, topic: string): Promise<number> {
  let count = 0;
  let next: string | undefined;
  do {
    const out = await broker.listEntities('subscription', topic, { top: MAX_PAGE, ...(next ? { next } : {}) });
    count += out.items.length;
    next = out.next ?? undefined;
  } while (next);
  return count;
}

/** A feed's `updated`: the broker's time, like every other time it shows. */
const now = (broker: Broker) => new Date(broker.ctx.clock.now()).toISOString();

async function entityEntry(broker: Broker, origin: Origin, kind: EntityKind, view: EntityView): Promise<EntryParts> {
  const r = view.runtime;
  const common = { published: String(r.createdAt), updated: String(r.updatedAt), author: origin.host.replace(/:\d+$/, '') };
  if (kind === 'queue') {
    const rules = await entityAuthRules(broker, { kind, name: view.name });
    return { path: view.name, title: view.name, ...common, content: queueDescription(view, origin, rules) };
  }
  if (kind === 'topic') {
    const [count, rules] = await Promise.all([countSubscriptions(broker, view.name), entityAuthRules(broker, { kind, name: view.name })]);
    return { path: view.name, title: view.name, ...common, content: topicDescription(view, origin, count, rules) };
  }
  const topic = String(view.topicName);
  return { path: subscriptionPath(topic, view.name), title: view.name, ...common, content: subscriptionDescription(view, origin) };
}

async function listQueuesOrTopics({ broker, req, origin }: Call, kind: 'queue' | 'topic'): Promise<ProtocolAnswer> {
  // No entity to check: the first check (lib/protocols/sas.ts) let only a token for
  // `$Resources/{Queues|Topics}`, or a namespace-wide one, with Manage, reach here.
  const { skip, top } = page(req);
  const { items, more } = await entitiesPage(broker, kind, undefined, skip, top);
  const entries = await Promise.all(items.map((v) => entityEntry(broker, origin, kind, v)));
  const title = kind === 'queue' ? 'Queues' : 'Topics';
  return feed(origin, { path: `$Resources/${title}`, title, skip, top, more, entries, updated: now(broker) });
}

async function listSubscriptions({ broker, req, origin }: Call, topic: string): Promise<ProtocolAnswer> {
  manage(req, `topics/${topic}/subscriptions`);
  const { skip, top } = page(req);
  const { items, more } = await entitiesPage(broker, 'subscription', topic, skip, top);
  const entries = await Promise.all(items.map((v) => entityEntry(broker, origin, 'subscription', v)));
  return feed(origin, { path: `${topic}/${SUBSCRIPTIONS}`, title: SUBSCRIPTIONS, skip, top, more, entries, updated: now(broker) });
}

function feed(origin: Origin, parts: Parameters<typeof feedXml>[1]): ProtocolAnswer {
  return { status: 200, headers: { 'content-type': FEED_CONTENT_TYPE }, body: feedXml(origin, parts) };
}

const isNotFound = (e: unknown) => e instanceof BrokerError && e.code === 'EntityNotFound';

async function find(broker: Broker, ref: EntityRef): Promise<EntityView | undefined> {
  try {
    return (await broker.describeEntity(ref)) as EntityView;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/**
 * The body of a PUT: for an update, every property the kind has, from its default unless the
 * description carries it (Service Bus replaces on update); the two that cannot change keep
 * the entity's value when absent, so an update that does not mention them changes nothing.
 */
function putBody(kind: EntityKind, given: Record<string, unknown>, existing: EntityView | undefined): Record<string, unknown> {
  if (!existing) return given;
  const base: Record<string, unknown> = { ...presentProperties(kind, defaults) };
  for (const fixed of ['requiresSession', 'enablePartitioning']) if (fixed in existing) base[fixed] = existing[fixed];
  const body = { ...base, ...given };
  for (const key of Object.keys(body)) if (!(visibleProperties[kind] as string[]).includes(key)) delete body[key];
  return body;
}

/** A queue's or topic's own authorization rules (Sluice's `/queues/{q}/authorization-rules`), as XML. */
async function entityAuthRules(broker: Broker, ref: EntityRef): Promise<string> {
  try {
    const eid = await broker.incarnation(ref);
    return authorizationRulesXml(await broker.auth.list(scopeOf(entityPathKey(ref)), eid));
  } catch (e) {
    if (isNotFound(e)) return authorizationRulesXml([]); // deleted meanwhile
    throw e;
  }
}

/**
 * `<AuthorizationRules>` in a PUT is the entity's whole set of rules: each named one is put
 * (rights as given, keys Sluice's own), any other is removed. Absent, the rules stay.
 */
async function applyAuthRules(broker: Broker, ref: EntityRef, wanted: ReturnType<typeof readAuthorizationRules>): Promise<void> {
  if (wanted === undefined) return;
  const scope = scopeOf(entityPathKey(ref));
  const eid = await broker.incarnation(ref);
  const keep = new Set(wanted.map((r) => r.keyName.toLowerCase()));
  for (const r of wanted) await broker.auth.put(scope, r.keyName, parseRequest('AuthorizationRuleProperties', { rights: r.rights }), eid);
  for (const r of await broker.auth.list(scope, eid)) if (!keep.has(r.keyName.toLowerCase())) await broker.auth.remove(scope, r.keyName, eid);
}

/**
 * A forward names a queue or a topic by name alone; Service Bus's names are one space, so it
 * is whichever exists (the queue first, as Sluice reads a bare name). Written as Sluice's
 * `queues/x` or `topics/x`, the Send check (B3) asks about that entity only. A name
 * that is neither stays bare: Send is then needed on both.
 */
async function resolveForwards(broker: Broker, given: Record<string, unknown>): Promise<Record<string, unknown>> {
  for (const key of ['forwardTo', 'forwardDeadLetteredMessagesTo']) {
    const name = given[key];
    if (typeof name !== 'string' || name.includes('/')) continue;
    for (const kind of ['queue', 'topic'] as const) {
      if (await find(broker, { kind, name })) {
        given[key] = `${kind}s/${name}`;
        break;
      }
    }
  }
  return given;
}

async function queueOrTopic(call: Call, rawName: string): Promise<ProtocolAnswer> {
  const { broker, req, origin, method } = call;
  if (method === 'PUT') {
    const { kind: xmlKind, description } = readDescription(req.body.toString('utf8'));
    if (xmlKind !== 'Queue' && xmlKind !== 'Topic') throw badRequest('body', `a ${xmlKind}Description cannot be put at /${rawName.slice(0, 60)}`);
    const kind: EntityKind = xmlKind === 'Queue' ? 'queue' : 'topic';
    const name = validateName(kind, rawName, `${kind}Name`);
    const ref: EntityRef = { kind, name };
    manage(req, entityPathKey(ref));
    const existing = await find(broker, ref);
    if (isUpdate(req)) {
      if (!existing) throw notFound(name);
    } else {
      if (existing) throw exists(name);
      const other = await find(broker, { kind: kind === 'queue' ? 'topic' : 'queue', name });
      if (other) throw new BrokerError('EntityAlreadyExists', `The name '${name}' is already used by a ${kind === 'queue' ? 'topic' : 'queue'}`);
    }
    const given = await resolveForwards(broker, readEntityProperties(xmlKind, description));
    const authRules = readAuthorizationRules(description);
    const { created, view } = await broker.putEntity(ref, parseEntityProperties(kind, putBody(kind, given, existing)), req.grant);
    await applyAuthRules(broker, ref, authRules);
    return entry(entryXml(origin, await entityEntry(broker, origin, kind, view as EntityView)), created ? 201 : 200);
  }
  // GET and DELETE: the queue of that name, else the topic; only kinds the token reaches are looked at.
  const name = validateName('queue', rawName, 'queueName');
  const kinds = (['queue', 'topic'] as const).filter((kind) => grantAllows(req.grant, entityPathKey({ kind, name }), 'Manage'));
  if (kinds.length === 0) manage(req, `queues/${name}`); // throws the 401
  for (const kind of kinds) {
    const ref: EntityRef = { kind, name };
    const view = await find(broker, ref);
    if (!view) continue;
    if (method === 'GET') return entry(entryXml(origin, await entityEntry(broker, origin, kind, view)));
    if (method === 'DELETE') {
      await broker.deleteEntity(ref);
      return emptyOk;
    }
    throw methodNotAllowed(method);
  }
  if (method !== 'GET' && method !== 'DELETE') throw methodNotAllowed(method);
  throw notFound(name);
}

async function subscription(call: Call, topic: string, name: string): Promise<ProtocolAnswer> {
  const { broker, req, origin, method } = call;
  const ref: EntityRef = { kind: 'subscription', topic, name };
  manage(req, entityPathKey(ref));
  if (method === 'GET') {
    const view = await find(broker, ref);
    if (!view) throw notFound(`${topic}/${SUBSCRIPTIONS}/${name}`);
    return entry(entryXml(origin, await entityEntry(broker, origin, 'subscription', view)));
  }
  if (method === 'DELETE') {
    await broker.deleteEntity(ref);
    return emptyOk;
  }
  if (method !== 'PUT') throw methodNotAllowed(method);
  const { kind: xmlKind, description } = readDescription(req.body.toString('utf8'));
  if (xmlKind !== 'Subscription') throw badRequest('body', `a ${xmlKind}Description cannot be put at a subscription's path`);
  const given = await resolveForwards(broker, readEntityProperties('Subscription', description));
  const defaultRuleElement = description.children.find((c) => c.name === 'DefaultRuleDescription');
  const defaultRule = defaultRuleElement ? readRule(defaultRuleElement) : undefined;
  const existing = await find(broker, ref);
  if (isUpdate(req)) {
    if (!existing) throw notFound(`${topic}/${SUBSCRIPTIONS}/${name}`);
  } else if (existing) {
    throw exists(`${topic}/${SUBSCRIPTIONS}/${name}`);
  }
  const { created, view } = await broker.putEntity(ref, parseEntityProperties('subscription', putBody('subscription', given, existing)), req.grant);
  if (created && defaultRule) {
    // F1 gives a new subscription `$Default`; a DefaultRuleDescription takes its place.
    const ruleName = defaultRule.name ?? DEFAULT_RULE;
    await broker.putRule(topic, name, ruleName, parseRequest('RuleProperties', defaultRule.body));
    if (ruleName.toLowerCase() !== DEFAULT_RULE.toLowerCase()) await broker.deleteRule(topic, name, DEFAULT_RULE);
  }
  return entry(entryXml(origin, await entityEntry(broker, origin, 'subscription', view as EntityView)), created ? 201 : 200);
}

const ruleEntry = (origin: Origin, topic: string, sub: string, r: RuleView): EntryParts => ({
  path: rulePath(topic, sub, r.name),
  title: r.name,
  published: r.createdAt,
  updated: r.createdAt,
  author: origin.host.replace(/:\d+$/, ''),
  content: ruleDescription(r),
});

async function listRules({ broker, req, origin }: Call, topic: string, sub: string): Promise<ProtocolAnswer> {
  manage(req, `topics/${topic}/subscriptions/${sub}/rules`);
  const { skip, top } = page(req);
  const all = (await broker.listRules(topic, sub)).items as RuleView[];
  const entries = all.slice(skip, skip + top).map((r) => ruleEntry(origin, topic, sub, r));
  return feed(origin, {
    path: `${subscriptionPath(topic, sub)}/${RULES}`,
    title: RULES,
    skip,
    top,
    more: all.length > skip + top,
    entries,
    updated: now(broker),
  });
}

async function rule(call: Call, topic: string, sub: string, name: string): Promise<ProtocolAnswer> {
  const { broker, req, origin, method } = call;
  manage(req, `topics/${topic}/subscriptions/${sub}/rules/${name}`);
  const current = async () => {
    try {
      return (await broker.getRule(topic, sub, name)) as RuleView;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  };
  const what = `${rulePath(topic, sub, name)}`;
  if (method === 'GET') {
    const r = await current();
    if (!r) throw notFound(what);
    return entry(entryXml(origin, ruleEntry(origin, topic, sub, r)));
  }
  if (method === 'DELETE') {
    await broker.deleteRule(topic, sub, name);
    return emptyOk;
  }
  if (method !== 'PUT') throw methodNotAllowed(method);
  const { kind, description } = readDescription(req.body.toString('utf8'));
  if (kind !== 'Rule') throw badRequest('body', `a ${kind}Description cannot be put at a rule's path`);
  const { body } = readRule(description);
  const existing = await current();
  if (isUpdate(req)) {
    if (!existing) throw notFound(what);
  } else if (existing) {
    throw exists(what);
  }
  const { created, rule: stored } = await broker.putRule(topic, sub, name, parseRequest('RuleProperties', body));
  return entry(entryXml(origin, ruleEntry(origin, topic, sub, broker.presentRule(stored) as RuleView)), created ? 201 : 200);
}
