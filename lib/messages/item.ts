/**
 * A message as stored in DynamoDB, and its API form. Times are epoch ms; the sequence
 * number is a decimal string (S2). `rpk`/`rsk` put it in the ready index (receivable),
 * `dpk`/`dsk` on the sweeper's agenda, `ttl` under DynamoDB's garbage collector. `body` is
 * the JSON text, or its compression when that saves a write unit (body.ts).
 */
import * as z from 'zod/mini';
import { formatDuration } from '../durations.js';
import { bodyTextOf, type StoredBody } from './body.js';
import { LOCK_TOKEN_PATTERN } from './lock-token.js';
import type { Subqueue } from '../entities/kinds.js';
import { docSchema, sequenceNumberText } from '../validation.js';
import { applicationPropertiesSchema, optionalSystemProperties, type ApplicationProperties, type OptionalSystemProperties } from './schema.js';

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
  /** A session message's lock (N4): the session lock token it was received under. */
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

const instant = (description = 'ISO 8601 UTC instant') => z.string().check(z.meta({ format: 'date-time', description }));
const deadLetterNote = 'Present on messages in a dead-letter subqueue (and on messages that once were); null when not set.';
const deadLetterField = (more = '') => z.optional(z.nullable(z.string()).check(z.meta({ description: `${deadLetterNote}${more}` })));

/** A message as received or peeked (`presentMessage`); the OpenAPI document's `ReceivedMessage`. */
export const receivedMessageSchema = /* @__PURE__ */ docSchema(() =>
  z
    .object({
      body: z.unknown().check(z.meta({ description: 'The payload as sent.' })),
      messageId: z.string(),
      contentType: z.optional(z.string()),
      correlationId: z.optional(z.string()),
      sessionId: z.optional(z.string()),
      replyTo: z.optional(z.string()),
      replyToSessionId: z.optional(z.string()),
      subject: z.optional(z.string()),
      to: z.optional(z.string().check(z.meta({ description: 'Application routing hint; not used by the broker.' }))),
      partitionKey: z.optional(z.string()),
      applicationProperties: applicationPropertiesSchema,
      sequenceNumber: sequenceNumberText,
      enqueuedTime: instant(),
      scheduledEnqueueTime: z.optional(instant('Only while the message is scheduled (state Scheduled).')),
      expiresAt: z.nullable(z.string().check(z.meta({ format: 'date-time', description: 'null when the message never expires.' }))),
      timeToLive: z.nullable(z.string().check(z.meta({ format: 'duration', description: 'The effective time to live (T1); null when unlimited.' }))),
      deliveryCount: z.number().check(z.int(), z.minimum(0)),
      state: z.enum(['Active', 'Scheduled', 'Deferred']),
      lockToken: z.optional(
        z.string().check(z.regex(new RegExp(LOCK_TOKEN_PATTERN)), z.meta({ description: 'Under peek-lock only: settle the message with it.' })),
      ),
      lockedUntil: z.optional(instant('Under peek-lock only: when the lock runs out.')),
      deadLetterReason: deadLetterField(),
      deadLetterErrorDescription: deadLetterField(),
      deadLetterSource: deadLetterField(' The entity path the message was dead-lettered from.'),
      enqueuedSequenceNumber: deadLetterField(' Its sequence number before it was dead-lettered.'),
    })
    .check(z.meta({ description: 'A message as received or peeked (docs/http-api.md, "Messages").' })),
);

/** A message as the API shows it: the wire form of `receivedMessageSchema`. */
export type ReceivedMessage = z.input<ReturnType<typeof receivedMessageSchema>>;

type SystemProperties = Pick<ReceivedMessage, (typeof optionalSystemProperties)[number]>;

/**
 * The API form of a received or peeked message (docs/http-api.md, "Messages"). Typed by
 * `receivedMessageSchema`, not checked against it: receives present up to 100 messages.
 * The fields are written in this order on the wire.
 */
export function presentMessage(item: MessageItem, now: number, options: { lock?: boolean } = {}): ReceivedMessage {
  const system: SystemProperties = {};
  for (const key of optionalSystemProperties) if (item[key] !== undefined) system[key] = item[key];
  const locked = options.lock && item.lockToken && item.lockedUntil !== undefined;
  const deadLettered = item.subqueue !== 'active' || item.deadLetterReason !== undefined;
  return {
    body: JSON.parse(bodyTextOf(item.body)) as unknown,
    messageId: item.messageId,
    ...system,
    applicationProperties: applicationPropertiesOf(item),
    sequenceNumber: item.seq,
    enqueuedTime: iso(item.enqueuedAt),
    ...(item.state === 'Scheduled' ? { scheduledEnqueueTime: iso(item.enqueuedAt) } : {}),
    expiresAt: item.expiresAt !== undefined ? iso(item.expiresAt) : null,
    timeToLive: item.timeToLive !== undefined ? formatDuration(item.timeToLive) : null,
    deliveryCount: item.deliveryCount,
    state: visibleState(item, now),
    ...(locked ? { lockToken: item.lockToken, lockedUntil: iso(item.lockedUntil!) } : {}),
    ...(deadLettered
      ? {
          deadLetterReason: item.deadLetterReason ?? null,
          deadLetterErrorDescription: item.deadLetterErrorDescription ?? null,
          deadLetterSource: item.deadLetterSource ?? null,
          enqueuedSequenceNumber: item.enqueuedSequenceNumber ?? null,
        }
      : {}),
  };
}
