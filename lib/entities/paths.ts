/**
 * Entity paths as the API spells them (docs/http-api.md, "Paths"). `$` may arrive as `%24`.
 * Pure: turns path segments into the entity and subqueue they name, and the rest.
 */
import { badRequest } from '../errors.js';
import { validateName, nameKey } from '../names.js';
import type { EntityKind, Subqueue } from './kinds.js';
import { matchTemplate, templateParts } from './templates.js';

export interface EntityRef {
  kind: EntityKind;
  name: string;
  /** The topic of a subscription. */
  topic?: string;
}

export interface ReceiveTarget extends EntityRef {
  subqueue: Subqueue;
}

/** An entity's path template: the route table builds the entity routes from these, and the parsers below read them. */
export interface EntityShape {
  kind: EntityKind;
  /** Management path M. */
  path: string;
  /** As in operation ids and the document's component names. */
  label: 'Queue' | 'Topic' | 'Subscription';
}

export const ENTITY_SHAPES: readonly EntityShape[] = [
  { kind: 'queue', path: '/queues/{q}', label: 'Queue' },
  { kind: 'topic', path: '/topics/{t}', label: 'Topic' },
  { kind: 'subscription', path: '/topics/{t}/subscriptions/{s}', label: 'Subscription' },
];

/** The subqueue suffixes of an entity path (`''` for the entity itself), with their labels in operation ids. */
export const SUBQUEUE_SHAPES = [
  { subqueue: '', segment: '', label: '' },
  { subqueue: 'deadletter', segment: '/$deadletterqueue', label: 'DeadLetter' },
  { subqueue: 'transfer', segment: '/$transferdeadletterqueue', label: 'TransferDeadLetter' },
] as const;

/** `queues/orders`, `topics/t`, `topics/t/subscriptions/s`: lower-case, the form stored on messages. */
export function entityPathKey(ref: EntityRef): string {
  if (ref.kind === 'queue') return `queues/${nameKey(ref.name)}`;
  if (ref.kind === 'topic') return `topics/${nameKey(ref.name)}`;
  return `topics/${nameKey(ref.topic ?? '')}/subscriptions/${nameKey(ref.name)}`;
}

/** The same path with the names as given, for answers and `deadLetterSource`. */
export function entityPathDisplay(ref: EntityRef): string {
  if (ref.kind === 'queue') return `queues/${ref.name}`;
  if (ref.kind === 'topic') return `topics/${ref.name}`;
  return `topics/${ref.topic ?? ''}/subscriptions/${ref.name}`;
}

export function decodeSegment(segment: string, field: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(field, 'is not valid percent-encoding');
  }
}

/** The entity path templates, most segments first, so a subscription is not read as its topic. */
const entityShapes = [...ENTITY_SHAPES].sort((a, b) => templateParts(b.path).length - templateParts(a.path).length);

const PARAMETER_KINDS: Record<string, EntityKind> = { q: 'queue', t: 'topic', s: 'subscription' };

/** The entity an entity template's parameters name; `validate` checks each name as it is read (E1, B2). */
function refOf(kind: EntityKind, params: Record<string, string>, validate: boolean): EntityRef {
  const names: Partial<Record<EntityKind, string>> = {};
  for (const [param, value] of Object.entries(params)) {
    const k = PARAMETER_KINDS[param]!;
    names[k] = validate ? validateName(k, value, `${k}Name`) : value;
  }
  return kind === 'subscription' ? { kind, topic: names.topic!, name: names.subscription! } : { kind, name: names[kind]! };
}

/**
 * Parses `queues/x/...` or `topics/t/subscriptions/s/...` from already decoded segments,
 * validating the names (400 naming `queueName`, `topicName` or `subscriptionName`), then
 * a subqueue segment (`$deadletterqueue` in any case). Returns undefined when the path names
 * no entity, so the router can answer 404.
 */
export function parseEntitySegments(segments: readonly string[]): { ref: EntityRef; subqueue: Subqueue; rest: string[] } | undefined {
  for (const shape of entityShapes) {
    const entity = matchTemplate(shape.path, segments, { prefix: true });
    if (!entity) continue;
    const ref = refOf(shape.kind, entity.params, true);
    for (const sub of SUBQUEUE_SHAPES) {
      if (!sub.subqueue) continue;
      const inSubqueue = matchTemplate(sub.segment, entity.rest, { prefix: true });
      if (inSubqueue) return { ref, subqueue: sub.subqueue, rest: inSubqueue.rest };
    }
    return { ref, subqueue: 'active', rest: entity.rest };
  }
  return undefined;
}

/** `queues/orders` or `topics/t/subscriptions/s` (as stored on messages) back to a reference. */
export function refFromPathKey(path: string): EntityRef | undefined {
  const segments = path.split('/');
  for (const shape of entityShapes) {
    const entity = matchTemplate(shape.path, segments);
    if (entity) return refOf(shape.kind, entity.params, false);
  }
  return undefined;
}

/**
 * The entities a `forwardTo` or `forwardDeadLetteredMessagesTo` value may lead to, in the
 * order they are tried: a path names one; a bare name is the queue of that name, else the
 * topic. Delivery and the check of the setter's rights (B3) both read it from here.
 */
export function forwardCandidates(named: string, field: string): EntityRef[] {
  if (named.includes('/')) return [parseEntityTarget(named, field)];
  return [
    { kind: 'queue', name: named },
    { kind: 'topic', name: named },
  ];
}

/** Parses a target written in a body, like `queues/other` or `topics/t` (resubmit `to`, forwardTo). */
export function parseEntityTarget(text: string, field: string): EntityRef {
  const parsed = parseEntitySegments(text.replace(/^\/+/, '').split('/').filter(Boolean));
  if (!parsed || parsed.rest.length > 0 || parsed.subqueue !== 'active') {
    throw badRequest(field, `'${text.slice(0, 80)}' must name a queue ("queues/q"), topic ("topics/t") or subscription`);
  }
  return parsed.ref;
}

/**
 * The field a path segment stands for, to name it in a 400 (B2): `queueName`, `topicName`
 * or `subscriptionName` where the segment is an entity's name, else `path segment N`
 * (1-based, as the router counts). Reads only the raw segments before it.
 */
export function pathSegmentField(rawPath: string, segment: number): string {
  const before = rawPath
    .split('/')
    .filter((s) => s.length > 0)
    .slice(0, segment - 1)
    .map((s) => s.toLowerCase());
  for (const shape of entityShapes) {
    const part = templateParts(shape.path)[segment - 1];
    if (part && 'param' in part && matchTemplate(shape.path, [...before, ''], { prefix: true })) return `${PARAMETER_KINDS[part.param]!}Name`;
  }
  // A session id (N1) follows `sessions`, past the entity.
  if (segment >= 4 && before[segment - 2] === 'sessions') return 'sessionId';
  return `path segment ${segment}`;
}
