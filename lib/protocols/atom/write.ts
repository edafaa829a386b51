/**
 * Atom answers as Service Bus writes them, in the shapes every official admin client reads
 * (docs/service-bus-protocols.md lists what each one needs): default, unprefixed namespaces
 * on `entry`/`feed` and on the description; `<id>` is the entity's URL with `Subscriptions`
 * and `Rules` capitalised (the JS client takes names from it), `<title>` the leaf name (.NET
 * and Python take them from there); `CountDetails` with exactly one prefix (`d2p1`) on its
 * children; typed values as `i:type="d6p1:…"` (the JS client cuts a 5-character prefix);
 * unlimited durations as TimeSpan.MaxValue; feeds with a `self` link and, only when more
 * remain, a `next` link holding `$skip`, `$top` and `api-version`.
 */
import type { ActionSpec, FilterSpec, ParameterValue } from '../../filters/index.js';
import { element, escapeXml } from '../xml.js';
import { API_VERSION, ATOM_NS, COUNT_NS, ENTITY_ELEMENTS, RULES, SB_NS, SUBSCRIPTIONS, UNLIMITED_DURATION, XSD_NS, XSI_NS } from './elements.js';

export const ENTRY_CONTENT_TYPE = 'application/atom+xml;type=entry;charset=utf-8';
export const FEED_CONTENT_TYPE = 'application/atom+xml;type=feed;charset=utf-8';

/** Where answers point: the scheme and `host[:port]` the client used. */
export interface Origin {
  scheme: 'http' | 'https';
  host: string;
}

const base = (o: Origin) => `${o.scheme}://${o.host}`;
const url = (o: Origin, path: string, query = `api-version=${API_VERSION}`) => `${base(o)}/${path}?${query}`;

export const queuePath = (name: string) => name;
export const subscriptionPath = (topic: string, name: string) => `${topic}/${SUBSCRIPTIONS}/${name}`;
export const rulePath = (topic: string, sub: string, name: string) => `${subscriptionPath(topic, sub)}/${RULES}/${name}`;

/** A Sluice view of a queue, topic or subscription (lib/broker/entities.ts `presentEntity`). */
export type EntityView = Record<string, unknown> & { name: string; runtime: Record<string, unknown> };

const xmlDuration = (value: unknown) => (value === null || value === undefined ? UNLIMITED_DURATION : String(value));
const NEVER = '0001-01-01T00:00:00Z';

function propertyElement(name: string, view: EntityView, origin: Origin): string {
  const spec = ENTITY_ELEMENTS[name]!;
  const value = view[spec.key];
  switch (spec.type) {
    case 'duration':
    case 'unlimited':
      return element(name, xmlDuration(value));
    case 'forward':
      if (value === null || value === undefined) return '';
      return element(name, `sb://${origin.host}/${String(value).replace(/^(queues|topics)\//, '')}`);
    default:
      return element(name, value as string | number | boolean);
  }
}

function countDetails(runtime: Record<string, unknown>): string {
  const n = (key: string) => Number(runtime[key] ?? 0);
  const counts: [string, number][] = [
    // Deferred messages stay in the entity, as in Service Bus, where they count as active.
    ['ActiveMessageCount', n('activeMessageCount') + n('deferredMessageCount')],
    ['DeadLetterMessageCount', n('deadLetterMessageCount')],
    ['ScheduledMessageCount', n('scheduledMessageCount')],
    ['TransferMessageCount', 0],
    ['TransferDeadLetterMessageCount', n('transferDeadLetterMessageCount')],
  ];
  return `<CountDetails xmlns:d2p1="${COUNT_NS}">${counts.map(([k, v]) => `<d2p1:${k}>${v}</d2p1:${k}>`).join('')}</CountDetails>`;
}

const times = (runtime: Record<string, unknown>) =>
  element('CreatedAt', String(runtime.createdAt ?? NEVER)) +
  element('UpdatedAt', String(runtime.updatedAt ?? NEVER)) +
  element('AccessedAt', String(runtime.accessedAt ?? NEVER));

/** A queue's or topic's own shared access rules, as Service Bus lists them in its description. */
export interface AuthRuleView {
  keyName: string;
  rights: readonly string[];
  primaryKey: string;
  secondaryKey: string;
  createdAt: number;
  updatedAt: number;
}

export function authorizationRulesXml(rules: readonly AuthRuleView[]): string {
  if (rules.length === 0) return '<AuthorizationRules/>';
  const one = (r: AuthRuleView) =>
    `<AuthorizationRule i:type="SharedAccessAuthorizationRule">${element('ClaimType', 'SharedAccessKey')}${element('ClaimValue', 'None')}` +
    `<Rights>${r.rights.map((x) => element('AccessRights', x)).join('')}</Rights>` +
    `${element('CreatedTime', new Date(r.createdAt).toISOString())}${element('ModifiedTime', new Date(r.updatedAt).toISOString())}` +
    `${element('KeyName', r.keyName)}${element('PrimaryKey', r.primaryKey)}${element('SecondaryKey', r.secondaryKey)}</AuthorizationRule>`;
  return `<AuthorizationRules>${rules.map(one).join('')}</AuthorizationRules>`;
}

export function queueDescription(view: EntityView, origin: Origin, authRules = '<AuthorizationRules/>'): string {
  const p = (name: string) => propertyElement(name, view, origin);
  const r = view.runtime;
  return (
    `<QueueDescription xmlns="${SB_NS}" xmlns:i="${XSI_NS}">` +
    p('LockDuration') +
    p('MaxSizeInMegabytes') +
    p('RequiresDuplicateDetection') +
    p('RequiresSession') +
    p('DefaultMessageTimeToLive') +
    p('DeadLetteringOnMessageExpiration') +
    p('DuplicateDetectionHistoryTimeWindow') +
    p('MaxDeliveryCount') +
    element('EnableBatchedOperations', true) +
    element('SizeInBytes', Number(r.sizeInBytes ?? 0)) +
    element('MessageCount', Number(r.totalMessageCount ?? 0)) +
    element('IsAnonymousAccessible', false) +
    authRules +
    p('Status') +
    p('ForwardTo') +
    times(r) +
    element('SupportOrdering', true) +
    countDetails(r) +
    p('AutoDeleteOnIdle') +
    p('EnablePartitioning') +
    element('EntityAvailabilityStatus', 'Available') +
    p('ForwardDeadLetteredMessagesTo') +
    element('EnableExpress', false) +
    element('MaxMessageSizeInKilobytes', 256) +
    '</QueueDescription>'
  );
}

export function topicDescription(view: EntityView, origin: Origin, subscriptionCount: number, authRules = '<AuthorizationRules/>'): string {
  const p = (name: string) => propertyElement(name, view, origin);
  const r = view.runtime;
  return (
    `<TopicDescription xmlns="${SB_NS}" xmlns:i="${XSI_NS}">` +
    p('DefaultMessageTimeToLive') +
    p('MaxSizeInMegabytes') +
    p('RequiresDuplicateDetection') +
    p('DuplicateDetectionHistoryTimeWindow') +
    element('EnableBatchedOperations', true) +
    element('SizeInBytes', Number(r.sizeInBytes ?? 0)) +
    element('FilteringMessagesBeforePublishing', false) +
    element('IsAnonymousAccessible', false) +
    authRules +
    p('Status') +
    times(r) +
    element('SupportOrdering', true) +
    countDetails(r) +
    element('SubscriptionCount', subscriptionCount) +
    p('AutoDeleteOnIdle') +
    p('EnablePartitioning') +
    element('EntityAvailabilityStatus', 'Available') +
    element('EnableSubscriptionPartitioning', false) +
    element('EnableExpress', false) +
    element('MaxMessageSizeInKilobytes', 256) +
    '</TopicDescription>'
  );
}

export function subscriptionDescription(view: EntityView, origin: Origin): string {
  const p = (name: string) => propertyElement(name, view, origin);
  const r = view.runtime;
  return (
    `<SubscriptionDescription xmlns="${SB_NS}" xmlns:i="${XSI_NS}">` +
    p('LockDuration') +
    p('RequiresSession') +
    p('DefaultMessageTimeToLive') +
    p('DeadLetteringOnMessageExpiration') +
    p('DeadLetteringOnFilterEvaluationExceptions') +
    element('MessageCount', Number(r.totalMessageCount ?? 0)) +
    p('MaxDeliveryCount') +
    element('EnableBatchedOperations', true) +
    p('Status') +
    p('ForwardTo') +
    times(r) +
    countDetails(r) +
    p('AutoDeleteOnIdle') +
    p('ForwardDeadLetteredMessagesTo') +
    element('EntityAvailabilityStatus', 'Available') +
    '</SubscriptionDescription>'
  );
}

/** A typed value: `int` when it fits 32 bits, else `double` (never `long`, which the JS client refuses). */
function keyValues(tag: string, values: Readonly<Record<string, ParameterValue>> | undefined): string {
  if (values === undefined || Object.keys(values).length === 0) return '';
  const pairs = Object.entries(values).map(([key, value]) => {
    const type =
      typeof value === 'string'
        ? 'string'
        : typeof value === 'boolean'
          ? 'boolean'
          : Number.isInteger(value) && Math.abs(value) <= 2_147_483_647
            ? 'int'
            : 'double';
    return `<KeyValueOfstringanyType><Key>${escapeXml(key)}</Key><Value i:type="d6p1:${type}" xmlns:d6p1="${XSD_NS}">${escapeXml(String(value))}</Value></KeyValueOfstringanyType>`;
  });
  return `<${tag}>${pairs.join('')}</${tag}>`;
}

const CORRELATION_ORDER: [string, string][] = [
  ['correlationId', 'CorrelationId'],
  ['messageId', 'MessageId'],
  ['to', 'To'],
  ['replyTo', 'ReplyTo'],
  ['subject', 'Label'],
  ['sessionId', 'SessionId'],
  ['replyToSessionId', 'ReplyToSessionId'],
  ['contentType', 'ContentType'],
];

export function filterXml(filter: FilterSpec): string {
  if ('true' in filter) return '<Filter i:type="TrueFilter"><SqlExpression>1=1</SqlExpression><CompatibilityLevel>20</CompatibilityLevel></Filter>';
  if ('false' in filter) return '<Filter i:type="FalseFilter"><SqlExpression>1=0</SqlExpression><CompatibilityLevel>20</CompatibilityLevel></Filter>';
  if ('sql' in filter) {
    return `<Filter i:type="SqlFilter">${element('SqlExpression', filter.sql)}${keyValues('Parameters', filter.parameters)}<CompatibilityLevel>20</CompatibilityLevel></Filter>`;
  }
  const c = filter.correlation as Record<string, unknown>;
  const fields = CORRELATION_ORDER.map(([key, name]) => (typeof c[key] === 'string' ? element(name, c[key] as string) : '')).join('');
  return `<Filter i:type="CorrelationFilter">${fields}${keyValues('Properties', filter.correlation.properties)}</Filter>`;
}

export function actionXml(action: ActionSpec | null | undefined): string {
  if (!action) return '<Action i:type="EmptyRuleAction"/>';
  return `<Action i:type="SqlRuleAction">${element('SqlExpression', action.sql)}${keyValues('Parameters', action.parameters)}<CompatibilityLevel>20</CompatibilityLevel></Action>`;
}

export interface RuleView {
  name: string;
  filter: FilterSpec;
  action: ActionSpec | null;
  createdAt: string;
}

export function ruleDescription(rule: RuleView): string {
  return `<RuleDescription xmlns="${SB_NS}" xmlns:i="${XSI_NS}">${filterXml(rule.filter)}${actionXml(rule.action)}${element('CreatedAt', rule.createdAt)}${element('Name', rule.name)}</RuleDescription>`;
}

export interface EntryParts {
  /** The entity's path below the host: `orders`, `t/Subscriptions/s`, `$namespaceinfo`. */
  path: string;
  title: string;
  published: string;
  updated: string;
  author: string;
  content: string;
}

/** One `<entry>`; `standalone` adds the Atom namespace (an entry in a feed inherits it). */
export function entryXml(origin: Origin, parts: EntryParts, standalone = true): string {
  const href = escapeXml(url(origin, parts.path));
  return (
    `<entry${standalone ? ` xmlns="${ATOM_NS}"` : ''}><id>${href}</id><title type="text">${escapeXml(parts.title)}</title>` +
    `${element('published', parts.published)}${element('updated', parts.updated)}<author>${element('name', parts.author)}</author>` +
    `<link rel="self" href="${href}"/><content type="application/xml">${parts.content}</content></entry>`
  );
}

export interface FeedParts {
  /** `$Resources/Queues`, `t/Subscriptions`, `t/Subscriptions/s/Rules`. */
  path: string;
  title: string;
  skip: number;
  top: number;
  more: boolean;
  entries: EntryParts[];
  updated: string;
}

const pageQuery = (skip: number, top: number) => `%24skip=${skip}&%24top=${top}&api-version=${API_VERSION}`;

export function feedXml(origin: Origin, parts: FeedParts): string {
  const self = escapeXml(url(origin, parts.path, pageQuery(parts.skip, parts.top)));
  const next = parts.more ? `<link rel="next" href="${escapeXml(url(origin, parts.path, pageQuery(parts.skip + parts.top, parts.top)))}"/>` : '';
  return (
    `<feed xmlns="${ATOM_NS}"><title type="text">${escapeXml(parts.title)}</title><id>${self}</id>${element('updated', parts.updated)}` +
    `<link rel="self" href="${self}"/>${next}${parts.entries.map((e) => entryXml(origin, e, false)).join('')}</feed>`
  );
}

export function namespaceInfo(name: string, created: string): string {
  return (
    `<NamespaceInfo xmlns="${SB_NS}" xmlns:i="${XSI_NS}">${element('CreatedTime', created)}${element('MessagingSKU', 'Standard')}` +
    `${element('ModifiedTime', created)}${element('Name', name)}${element('NamespaceType', 'Messaging')}</NamespaceInfo>`
  );
}
