/** Sending (S1-S6, T1-T3): validate, stamp, store durably, answer. */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { BrokerError, badRequest } from '../errors.js';
import { entityPathDisplay, type EntityRef } from '../entities/paths.js';
import { checkSize, optionalSystemProperties, parseMessage, type MessageInput } from '../messages/schema.js';
import { ttlSeconds, type MessageItem } from '../messages/item.js';
import { dueShardOf, messageKey, readySortKey, type Subqueue } from '../store/keys.js';
import { effectiveTimeToLive, enqueueTime, expiresAt as expiryOf } from '../rules/ttl.js';
import { nextDueAt } from '../rules/delivery.js';
import { isConditionFailure, randomId, type BrokerContext } from './context.js';
import { requireEntity, touchEntity, type EntityItem } from './entities.js';
import { deliver, type Routed } from './deliver.js';

export interface SendReceipt {
  messageId: string;
  sequenceNumber: string;
  enqueuedTime: string;
  expiresAt: string | null;
}

/** E5: the entity's status may refuse sends. */
export function assertCanSend(entity: EntityItem): void {
  if (entity.status === 'Disabled' || entity.status === 'SendDisabled') {
    throw new BrokerError('EntityDisabled', `entity '${entityPathDisplay(entity)}' is ${entity.status}: sends are refused`);
  }
}

export function assertCanReceive(entity: EntityItem, subqueue: Subqueue): void {
  if (entity.status === 'Disabled' || (entity.status === 'ReceiveDisabled' && subqueue === 'active')) {
    throw new BrokerError('EntityDisabled', `entity '${entityPathDisplay(entity)}' is ${entity.status}: receives are refused`);
  }
}

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
  body?: string;
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
  item.rpk = item.pk;
  item.rsk = readySortKey(enqueuedAt, seq);
  const due = nextDueAt(item, now);
  if (due !== null) {
    item.dpk = dueShardOf(item.pk);
    item.dsk = due;
  }
  return item;
}

/** Gives the item the next sequence number of its partition (after a collision). */
export function renumber(ctx: BrokerContext, item: MessageItem): MessageItem {
  const seq = ctx.sequences.next(ctx.clock.now(), item.partition);
  return { ...item, sk: messageKey(item.eid, item.subqueue, item.partition, seq).sk, seq: seq.toString(), rsk: readySortKey(item.enqueuedAt, seq) };
}

/** S1: success only once the put is durable; a sequence collision is retried with the next number. */
export async function putNewMessage(ctx: BrokerContext, item: MessageItem): Promise<MessageItem> {
  for (let attempt = 0; ; attempt++) {
    try {
      await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
      return item;
    } catch (e) {
      if (!isConditionFailure(e) || attempt >= 5) throw e;
      item = renumber(ctx, item);
    }
  }
}

export const receiptOf = (item: MessageItem): SendReceipt => ({
  messageId: item.messageId,
  sequenceNumber: item.seq,
  enqueuedTime: new Date(item.enqueuedAt).toISOString(),
  expiresAt: item.expiresAt !== undefined ? new Date(item.expiresAt).toISOString() : null,
});

export type SendAnswer = SendReceipt | { messageId: string; subscriptions: string[]; sequenceNumber?: string };

/** POST {send}/messages to a queue (stored, or forwarded: F2) or a topic (fanned out: F1). */
export async function send(ctx: BrokerContext, ref: EntityRef, body: unknown): Promise<SendAnswer> {
  const message = parseMessage(body);
  const { size, body: text } = checkSize(message);
  const entity = await requireEntity(ctx, ref);
  assertCanSend(entity);
  assertSession(entity, message);
  const messageId = message.messageId ?? randomId(16);
  return answerOf(entity, messageId, await deliver(ctx, entity, { ...message, messageId }, size, text));
}

/** S8: a direct send to a session entity must name its session. */
function assertSession(entity: EntityItem, m: MessageInput, field = 'sessionId'): void {
  if (entity.requiresSession && m.sessionId === undefined) {
    throw new BrokerError('BadRequest', `${field}: is required; '${entityPathDisplay(entity)}' requires sessions`, { field });
  }
}

function answerOf(entity: EntityItem, messageId: string, routed: Routed & { duplicateOf?: MessageItem }): SendAnswer {
  if (entity.kind === 'topic') {
    return { messageId, subscriptions: routed.subscriptions, ...(routed.scheduledSequenceNumber ? { sequenceNumber: routed.scheduledSequenceNumber } : {}) };
  }
  const stored = routed.duplicateOf ?? routed.items[0];
  return stored ? receiptOf(stored) : { messageId, subscriptions: [] };
}

export const MAX_BATCH = 100;

export function parseBatch(body: unknown): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('body', 'must be {"messages": [...]}');
  const keys = Object.keys(body);
  const unknown = keys.find((k) => k !== 'messages');
  if (unknown) throw badRequest(unknown, 'unknown field');
  const messages = (body as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) throw badRequest('messages', 'must be an array of messages');
  if (messages.length < 1 || messages.length > MAX_BATCH) throw badRequest('messages', `must hold 1-${MAX_BATCH} messages`);
  return messages;
}

export type BatchResult = SendAnswer | { messageId?: string; error: { code: string; message: string; retryable: boolean } };

/**
 * S4: every message is validated before any is stored (bad input changes nothing); then each
 * is stored on its own and the answer says, per message, whether it was.
 */
export async function sendBatch(ctx: BrokerContext, ref: EntityRef, body: unknown): Promise<BatchResult[]> {
  const raw = parseBatch(body);
  const messages = raw.map((m, i) => {
    const parsed = parseMessage(m, `messages[${i}]`);
    const sized = checkSize(parsed, `messages[${i}]`);
    return { message: { ...parsed, messageId: parsed.messageId ?? randomId(16) }, ...sized };
  });
  const entity = await requireEntity(ctx, ref);
  assertCanSend(entity);
  messages.forEach(({ message }, i) => assertSession(entity, message, `messages[${i}].sessionId`));
  await touchEntity(ctx, entity); // once for the batch (I2), before anything is stored
  return Promise.all(
    messages.map(async ({ message, size, body: text }): Promise<BatchResult> => {
      try {
        return answerOf(entity, message.messageId, await deliver(ctx, entity, message, size, text, { touched: true }));
      } catch (e) {
        const err = e as Error;
        const throttled = /Throttl|ProvisionedThroughput|RequestLimit/.test(err.name);
        return {
          messageId: message.messageId,
          error: {
            code: throttled ? 'Throttled' : 'InternalError',
            message: throttled ? 'the store is busy; send this message again' : 'the message was not stored; send it again',
            retryable: true,
          },
        };
      }
    }),
  );
}
