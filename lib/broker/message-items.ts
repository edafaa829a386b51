/**
 * Message items (S1, S2): building the item for a new message or a dead-letter copy, giving
 * it a new sequence number after a collision, and the put that retries one. Below the
 * operations (send, deliver, resubmit, stream, settle), so none of them reaches up into another.
 */
import * as z from 'zod/mini';
import { checkSize, MAX_PROPERTIES_BYTES, optionalSystemProperties, propertiesSize, type MessageInput } from '../messages/schema.js';
import { applicationPropertiesOf, ttlSeconds, type MessageItem } from '../messages/item.js';
import { BrokerError } from '../errors.js';
import { packBody, type StoredBody } from '../messages/body.js';
import { dueShardOf, messageKey, readySortKey, sessionReadyPk } from '../store/keys.js';
import type { Subqueue } from '../entities/kinds.js';
import { effectiveTimeToLive, enqueueTime, expiresAt as expiryOf } from '../fate/ttl.js';
import { nextDueAt } from '../fate/delivery.js';
import { docSchema, sequenceNumberText } from '../validation.js';
import { randomId, type BrokerContext } from './context.js';
import { announceSession, bringSessionForward } from '../store/sessions.js';
import { putNewMessages } from '../store/messages.js';
import { storedMessage } from '../store/message-layout.js';
import type { EntityItem } from './entities.js';
import { noteEntity } from './ready-marks.js';

const instant = () => z.string().check(z.meta({ format: 'date-time', description: 'ISO 8601 UTC instant' }));

/** What a send to a queue answers (`receiptOf`); the OpenAPI document's `SendReceipt`. */
export const sendReceiptSchema = /* @__PURE__ */ docSchema(() =>
  z
    .object({
      messageId: z.string(),
      sequenceNumber: sequenceNumberText,
      enqueuedTime: instant().check(z.meta({ description: 'When it becomes visible (the schedule time for a scheduled message).' })),
      expiresAt: z.nullable(instant()),
    })
    .check(z.meta({ description: 'A message stored in a queue.' })),
);

export type SendReceipt = z.output<ReturnType<typeof sendReceiptSchema>>;

/** Spreads messages without a partition key evenly; a key always lands in the same partition. */
export function choosePartition(entity: Pick<EntityItem, 'partitions'>, m: Pick<MessageInput, 'partitionKey' | 'sessionId'>): number {
  if (entity.partitions <= 1) return 0;
  // A session's messages stay together (ordered within one partition), whatever partitionKey says.
  const key = m.sessionId ?? m.partitionKey;
  if (key === undefined) return Math.floor(Math.random() * entity.partitions);
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return (h >>> 0) % entity.partitions;
}

export interface BuildOptions {
  subqueue?: Subqueue;
  /** A TTL from the topic, for a subscription's copy (T1). */
  extraTimeToLive?: number | null;
  deadLetter?: { reason: string; description?: string; source: string; enqueuedSequenceNumber: string };
  hops?: number;
  size?: number;
  /** The stored body of the message this one copies (compressed or not), with its `size`. */
  body?: StoredBody;
}

/** The item for a new message in `entity` (before its sequence number is final). */
export function buildMessageItem(ctx: BrokerContext, entity: EntityItem, m: MessageInput, options: BuildOptions = {}): MessageItem {
  const now = ctx.clock.now();
  const subqueue = options.subqueue ?? 'active';
  const partition = subqueue === 'active' ? choosePartition(entity, m) : 0;
  const deadLettered = subqueue !== 'active';
  // T9: nothing in a dead-letter subqueue expires, and it is not scheduled again.
  const timeToLive = deadLettered ? null : effectiveTimeToLive(m.timeToLive, entity.defaultMessageTimeToLive, options.extraTimeToLive);
  const enqueuedAt = deadLettered ? now : enqueueTime(now, m.scheduledEnqueueTime);
  const expiresAt = expiryOf(enqueuedAt, timeToLive);
  const state = enqueuedAt > now ? 'Scheduled' : 'Active';
  const seq = ctx.sequences.next(now, partition);
  noteEntity(entity); // whoever writes the item marks its partition first
  const sized = options.body !== undefined && options.size !== undefined ? { body: options.body, size: options.size } : checkSize(m);
  const item: MessageItem = {
    ...messageKey(entity.eid, subqueue, partition, seq),
    seq: seq.toString(),
    eid: entity.eid,
    entity: entity.path,
    subqueue,
    partition,
    messageId: m.messageId ?? randomId(16),
    body: sized.body,
    enqueuedAt,
    state,
    deliveryCount: 0,
    size: sized.size,
    v: 0,
  };
  for (const key of optionalSystemProperties) if (m[key] !== undefined) item[key] = m[key];
  if (m.applicationProperties && Object.keys(m.applicationProperties).length) item.props = JSON.stringify(m.applicationProperties);
  if (timeToLive !== null) item.timeToLive = timeToLive;
  if (expiresAt !== null) {
    item.expiresAt = expiresAt;
    item.ttl = ttlSeconds(expiresAt);
  }
  if (options.hops) item.hops = options.hops;
  if (options.deadLetter) {
    item.deadLetterReason = options.deadLetter.reason;
    if (options.deadLetter.description !== undefined) item.deadLetterErrorDescription = options.deadLetter.description;
    item.deadLetterSource = options.deadLetter.source;
    item.enqueuedSequenceNumber = options.deadLetter.enqueuedSequenceNumber;
  }
  // N1: a session's messages are found through their session, never by a plain receive.
  item.rpk = subqueue === 'active' && entity.requiresSession && m.sessionId !== undefined ? sessionReadyPk(entity.eid, partition, m.sessionId) : item.pk;
  item.rsk = readySortKey(enqueuedAt, seq);
  const due = nextDueAt(item, now);
  if (due !== null) {
    item.dpk = dueShardOf(item.pk);
    item.dsk = due;
  }
  item.body = packBody(storedMessage(item), item.body);
  return item;
}

/** A message in its session's ready partition (N1): built for an entity that requires sessions. */
export const isSessionMessage = (item: Pick<MessageItem, 'subqueue' | 'sessionId' | 'rpk' | 'pk'>): item is MessageItem & { sessionId: string } =>
  item.subqueue === 'active' && item.sessionId !== undefined && item.rpk !== undefined && item.rpk !== item.pk;

/** How long after a send a session's hint may not be removed: its message may not be visible yet. */
export const SESSION_HINT_GRACE_MS = 60_000;

/**
 * After a release finds no message but a send came a moment ago, its message may not be in
 * the index yet: the session is looked at again this much after that send (and once more at
 * the end of the grace period), so a message sent during a release waits seconds, not a minute.
 */
export const SESSION_HINT_LAG_MS = 5_000;

/**
 * The session entries one batch has written: a batch of many messages to one session
 * writes its entry once, not once per message. A remembered entry covers later messages of
 * that session in the batch whose sort key is no earlier, for SESSION_HINT_LAG_MS: the entry
 * cannot be dropped within the grace period after its send, and a lock released meanwhile
 * points the entry at most SESSION_HINT_LAG_MS ahead, so skipping can delay a message that
 * much at worst, never hide it.
 */
export class SessionAnnouncements {
  private readonly written = new Map<string, { rsk: string; at: number }>();

  covers(key: string, rsk: string, now: number): boolean {
    const seen = this.written.get(key);
    return seen !== undefined && seen.rsk <= rsk && now < seen.at + SESSION_HINT_LAG_MS;
  }

  remember(key: string, rsk: string, at: number): void {
    this.written.set(key, { rsk, at });
  }
}

/**
 * Accept-next's hint (N2): a new message makes its session visible to accept-next no later
 * than the message itself. Written before the message, so a crash in between leaves only a
 * hint to a session without that message, which accept-next drops after the grace period.
 * One write per message (two when a scheduled message further out came first), or one per
 * session of a batch (`announced`). Every path that puts a new message calls this first:
 * send, batch, fan-out, forwarding, resubmit, the dead-letter forwarding of moves and of TTL
 * removals.
 */
export async function announceSessionMessages(ctx: BrokerContext, items: readonly MessageItem[], announced?: SessionAnnouncements): Promise<void> {
  const now = ctx.clock.now();
  const earliest = new Map<string, MessageItem & { sessionId: string }>();
  for (const item of items) {
    if (!isSessionMessage(item) || item.state === 'Deferred') continue;
    const key = `${item.eid}\n${item.sessionId}`;
    if (announced?.covers(key, item.rsk!, now)) continue;
    const seen = earliest.get(key);
    if (!seen || item.rsk! < seen.rsk!) earliest.set(key, item);
  }
  await Promise.all(
    [...earliest].map(async ([key, item]) => {
      await announce(ctx, item);
      announced?.remember(key, item.rsk!, now);
    }),
  );
}

async function announce(ctx: BrokerContext, item: MessageItem & { sessionId: string }): Promise<void> {
  const now = ctx.clock.now();
  const rsk = item.rsk!;
  const session = await announceSession(ctx, { eid: item.eid, sessionId: item.sessionId, entity: item.entity, rsk, now });
  const locked = session?.lockedUntil !== undefined && session.lockedUntil > now;
  if (!session?.rsk || session.rsk <= rsk || locked) return;
  // A later message (scheduled further out) set the hint first: bring it forward, unless a
  // receiver holds the session now (its release recomputes the hint from the messages).
  await bringSessionForward(ctx, item.eid, item.sessionId, rsk, now);
}

/** S1: success only once the put is durable; a sequence collision is retried with the next number. */
export async function putNewMessage(ctx: BrokerContext, item: MessageItem, announced?: SessionAnnouncements): Promise<MessageItem> {
  await announceSessionMessages(ctx, [item], announced);
  const [stored] = await putNewMessages(ctx, [item]);
  return stored!;
}

export const receiptOf = (item: MessageItem): SendReceipt => ({
  messageId: item.messageId,
  sequenceNumber: item.seq,
  enqueuedTime: new Date(item.enqueuedAt).toISOString(),
  expiresAt: item.expiresAt !== undefined ? new Date(item.expiresAt).toISOString() : null,
});

/** How many partitions a subqueue of the entity has: the active one its own, a dead-letter subqueue one. */
export const partitionCount = (entity: Pick<EntityItem, 'partitions'>, target: { subqueue: Subqueue }) =>
  target.subqueue === 'active' ? entity.partitions : 1;

/** R4: the message with its application properties after a settlement's `propertiesToModify`, within the size limit. */
export function modified<T extends MessageItem>(item: T, changes: Record<string, unknown> | undefined): T {
  if (!changes || Object.keys(changes).length === 0) return item;
  const props = { ...applicationPropertiesOf(item), ...changes };
  const next = { ...item, props: JSON.stringify(props) };
  if (propertiesSize({ ...next, applicationProperties: props as never }) > MAX_PROPERTIES_BYTES) {
    throw new BrokerError('MessageSizeExceeded', `propertiesToModify: the properties would exceed ${MAX_PROPERTIES_BYTES} bytes`, {
      field: 'propertiesToModify',
    });
  }
  return next;
}
