/**
 * How the CLI names things, and the HTTP paths they map to (docs/http-api.md, "Paths").
 *
 *   orders                          a queue (for send: a queue, else a topic of that name)
 *   queues/orders, topics/events    explicit
 *   events/subscriptions/audit      a subscription, as Service Bus writes its entity path
 *   events/audit                    the same, shorter
 *   .../$deadletterqueue            a dead-letter subqueue (or pass --dead-letter)
 */
import { usageError } from './errors.js';

export type Kind = 'queue' | 'topic' | 'subscription';

export interface EntityName {
  /** undefined: a bare name, a queue or (when sending) a topic. */
  kind: Kind | undefined;
  name: string;
  topic?: string;
}

export interface Target extends EntityName {
  deadLetter: boolean;
}

// Service Bus entity names: letters, digits, '.', '-', '_', starting and ending alphanumeric.
const namePattern = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

export function checkName(name: string, what: string): string {
  if (!namePattern.test(name) || name.length > 260) {
    throw usageError(`bad ${what} name "${name}"`, 'use letters, digits, ".", "-" and "_", starting and ending with a letter or digit');
  }
  return name;
}

export function parseTarget(text: string, deadLetterFlag = false): Target {
  let rest = text.replace(/^\/+|\/+$/g, '');
  let deadLetter = deadLetterFlag;
  const dlq = /\/(?:\$|%24)deadletterqueue$/i;
  if (dlq.test(rest)) {
    deadLetter = true;
    rest = rest.replace(dlq, '');
  }
  const parts = rest.split('/');
  const named = ((): EntityName | undefined => {
    if (parts.length === 1) return { kind: undefined, name: checkName(parts[0]!, 'entity') };
    if (parts.length === 2 && parts[0] === 'queues') return { kind: 'queue', name: checkName(parts[1]!, 'queue') };
    if (parts.length === 2 && parts[0] === 'topics') return { kind: 'topic', name: checkName(parts[1]!, 'topic') };
    const sub = parts[0] === 'topics' ? parts.slice(1) : parts;
    if (sub.length === 3 && sub[1] === 'subscriptions')
      return { kind: 'subscription', topic: checkName(sub[0]!, 'topic'), name: checkName(sub[2]!, 'subscription') };
    if (sub.length === 2) return { kind: 'subscription', topic: checkName(sub[0]!, 'topic'), name: checkName(sub[1]!, 'subscription') };
    return undefined;
  })();
  if (!named) throw usageError(`cannot tell what "${text}" names`, 'write QUEUE, TOPIC, or TOPIC/subscriptions/SUBSCRIPTION');
  return { ...named, deadLetter };
}

const seg = encodeURIComponent;

/** The management path of an entity; a bare name is a queue. */
export function entityPath(e: EntityName): string {
  if (e.kind === 'subscription') return `/topics/${seg(e.topic!)}/subscriptions/${seg(e.name)}`;
  if (e.kind === 'topic') return `/topics/${seg(e.name)}`;
  return `/queues/${seg(e.name)}`;
}

/** Where messages are read: the entity or its dead-letter subqueue (a topic has none). */
export function receivePath(t: Target): string {
  if (t.kind === 'topic') throw usageError(`a topic holds no messages`, `read one of its subscriptions: ${t.name}/subscriptions/NAME`);
  return `${entityPath(t)}${t.deadLetter ? '/$deadletterqueue' : ''}`;
}

export function describeTarget(t: Target): string {
  const base = t.kind === 'subscription' ? `${t.topic}/subscriptions/${t.name}` : t.name;
  return t.deadLetter ? `${base}/$deadletterqueue` : base;
}
