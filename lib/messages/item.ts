/**
 * A message as stored in DynamoDB, and its API form. Times are epoch ms; the sequence
 * number is a decimal string (S2). `rpk`/`rsk` put it in the ready index (receivable),
 * `dpk`/`dsk` on the sweeper's agenda, `ttl` under DynamoDB's garbage collector. `body` is
 * the JSON text, or its compression when that saves a write unit (body.ts).
 */
import { formatDuration } from '../durations.js';
import { bodyTextOf, type StoredBody } from './body.js';
import type { Subqueue } from '../store/keys.js';
import { optionalSystemProperties, type ApplicationProperties, type OptionalSystemProperties } from './schema.js';

export type MessageState = 'Active' | 'Scheduled' | 'Deferred';

export interface MessageItem extends OptionalSystemProperties {
  pk: string;
  sk: string;
  seq: string;
  eid: string;
  /** API path of the owning entity, lower-case (`queues/orders`), for the stream and sweeper. */
  entity: string;
  subqueue: Subqueue;
  partition: number;
  messageId: string;
  body: StoredBody;
  props?: string;
  timeToLive?: number;
  enqueuedAt: number;
  expiresAt?: number;
  state: MessageState;
  deliveryCount: number;
  lockToken?: string;
  lockedUntil?: number;
  /** A session message's lock (#13): the session lock token it was received under. */
  slk?: string;
  /** The generation of that session lock: a later lock may take the message again (N3). */
  sgen?: number;
  deadLetterReason?: string;
  deadLetterErrorDescription?: string;
  deadLetterSource?: string;
  enqueuedSequenceNumber?: string;
  hops?: number;
  size: number;
  /** Bumped by every change, so a move can insist on the version it read (D3). */
  v?: number;
  rpk?: string;
  rsk?: string;
  dpk?: string;
  dsk?: number;
  ttl?: number;
}

export const applicationPropertiesOf = (item: Pick<MessageItem, 'props'>): ApplicationProperties =>
  item.props ? (JSON.parse(item.props) as ApplicationProperties) : {};

/** DynamoDB TTL is in epoch seconds; rounding up keeps it from acting before `expiresAt`. */
export const ttlSeconds = (expiresAt: number) => Math.ceil(expiresAt / 1000) + 1;

const iso = (ms: number) => new Date(ms).toISOString();

/** State as a client sees it: a schedule whose time has come is Active (S6). */
export const visibleState = (item: Pick<MessageItem, 'state' | 'enqueuedAt'>, now: number): MessageState =>
  item.state === 'Scheduled' && item.enqueuedAt <= now ? 'Active' : item.state;

/** The API form of a received or peeked message (API.md "Messages"). */
export function presentMessage(item: MessageItem, now: number, options: { lock?: boolean } = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { body: JSON.parse(bodyTextOf(item.body)) as unknown };
  out.messageId = item.messageId;
  for (const key of optionalSystemProperties) if (item[key] !== undefined) out[key] = item[key];
  out.applicationProperties = applicationPropertiesOf(item);
  out.sequenceNumber = item.seq;
  out.enqueuedTime = iso(item.enqueuedAt);
  if (item.state === 'Scheduled') out.scheduledEnqueueTime = iso(item.enqueuedAt);
  out.expiresAt = item.expiresAt !== undefined ? iso(item.expiresAt) : null;
  out.timeToLive = item.timeToLive !== undefined ? formatDuration(item.timeToLive) : null;
  out.deliveryCount = item.deliveryCount;
  out.state = visibleState(item, now);
  if (options.lock && item.lockToken && item.lockedUntil !== undefined) {
    out.lockToken = item.lockToken;
    out.lockedUntil = iso(item.lockedUntil);
  }
  if (item.subqueue !== 'active' || item.deadLetterReason !== undefined) {
    out.deadLetterReason = item.deadLetterReason ?? null;
    out.deadLetterErrorDescription = item.deadLetterErrorDescription ?? null;
    out.deadLetterSource = item.deadLetterSource ?? null;
    out.enqueuedSequenceNumber = item.enqueuedSequenceNumber ?? null;
  }
  return out;
}
