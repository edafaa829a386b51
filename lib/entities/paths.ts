/**
 * Entity paths as the API spells them (API.md "Entity paths"). `$` may arrive as `%24`.
 * Pure: turns path segments into the entity and subqueue they name, and the rest.
 */
import { badRequest } from '../errors.js';
import { validateName, nameKey } from '../names.js';
import type { Subqueue } from '../store/keys.js';
import type { EntityKind } from './properties.js';

export interface EntityRef {
  kind: EntityKind;
  name: string;
  /** The topic of a subscription. */
  topic?: string;
}

export interface ReceiveTarget extends EntityRef {
  subqueue: Subqueue;
}

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

export const subqueueNames: Record<string, Subqueue> = {
  $deadletterqueue: 'deadletter',
  $transferdeadletterqueue: 'transfer',
};

export function decodeSegment(segment: string, field: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(field, 'is not valid percent-encoding');
  }
}

/**
 * Parses `queues/x/...` or `topics/t/subscriptions/s/...` from already decoded segments.
 * Returns undefined when the path names no entity, so the router can answer 404.
 */
export function parseEntitySegments(segments: string[]): { ref: EntityRef; subqueue: Subqueue; rest: string[] } | undefined {
  const [root, first, second, third, ...tail] = segments;
  let ref: EntityRef;
  let rest: string[];
  if (root === 'queues' && first !== undefined) {
    ref = { kind: 'queue', name: validateName('queue', first, 'queueName') };
    rest = segments.slice(2);
  } else if (root === 'topics' && first !== undefined) {
    if (second === 'subscriptions' && third !== undefined) {
      ref = {
        kind: 'subscription',
        topic: validateName('topic', first, 'topicName'),
        name: validateName('subscription', third, 'subscriptionName'),
      };
      rest = tail;
    } else {
      ref = { kind: 'topic', name: validateName('topic', first, 'topicName') };
      rest = segments.slice(2);
    }
  } else {
    return undefined;
  }
  let subqueue: Subqueue = 'active';
  const maybeSub = rest[0]?.toLowerCase();
  if (maybeSub && Object.hasOwn(subqueueNames, maybeSub)) {
    subqueue = subqueueNames[maybeSub]!;
    rest = rest.slice(1);
  }
  return { ref, subqueue, rest };
}

/**
 * The entities a `forwardTo` or `forwardDeadLetteredMessagesTo` value may lead to, in the
 * order they are tried: a path names one; a bare name is the queue of that name, else the
 * topic. Delivery and the check of the setter's rights (#10.7) both read it from here.
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
  const raw = rawPath.split('/').filter((s) => s.length > 0);
  const root = raw[0]?.toLowerCase();
  if (root === 'queues' && segment === 2) return 'queueName';
  if (root === 'topics' && segment === 2) return 'topicName';
  if (root === 'topics' && segment === 4 && raw[2]?.toLowerCase() === 'subscriptions') return 'subscriptionName';
  if (segment >= 4 && raw[segment - 2]?.toLowerCase() === 'sessions') return 'sessionId';
  return `path segment ${segment}`;
}
