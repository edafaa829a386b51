/** Sending (S1-S6, T1-T3): validate, stamp, store durably, answer. */
import type { RequestOf } from '../api/schemas.js';
import { BrokerError, type ErrorCode } from '../errors.js';
import { entityPathDisplay, type EntityRef } from '../entities/paths.js';
import type { MessageInput } from '../messages/schema.js';
import type { MessageItem } from '../messages/item.js';
import { randomId, type BrokerContext } from './context.js';
import { isThrottled } from '../store/outcomes.js';
import { assertCanSend, requireEntity, touchEntity, type EntityItem } from './entities.js';
import { deliver, type Routed } from './deliver.js';
import { receiptOf, SessionAnnouncements, type SendReceipt } from './message-items.js';

// Where they used to live; tests still import them from here.
export { assertCanReceive, assertCanSend } from './entities.js';
export { buildMessageItem, choosePartition, putNewMessage, receiptOf, type BuildOptions, type SendReceipt } from './message-items.js';

export type SendAnswer = SendReceipt | { messageId: string; subscriptions: string[]; sequenceNumber?: string };

/** POST {send}/messages to a queue (stored, or forwarded: F2) or a topic (fanned out: F1). */
export async function send(ctx: BrokerContext, ref: EntityRef, { message, size, body: text }: RequestOf<'Message'>): Promise<SendAnswer> {
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

export type BatchResult = SendAnswer | { messageId?: string; error: { code: ErrorCode; message: string; retryable: boolean } };

/**
 * S4: every message of the batch was validated before any is stored (bad input changes
 * nothing: `parseRequest('MessageBatch', ...)`); each is stored on its own and the answer says, per message, whether it was.
 */
export async function sendBatch(ctx: BrokerContext, ref: EntityRef, batch: RequestOf<'MessageBatch'>): Promise<BatchResult[]> {
  const messages = batch.map(({ message, ...sized }) => ({ message: { ...message, messageId: message.messageId ?? randomId(16) }, ...sized }));
  const entity = await requireEntity(ctx, ref);
  assertCanSend(entity);
  messages.forEach(({ message }, i) => assertSession(entity, message, `messages[${i}].sessionId`));
  await touchEntity(ctx, entity); // once for the batch (I2), before anything is stored
  const announced = new SessionAnnouncements();
  const deliverOne = async ({ message, size, body: text }: (typeof messages)[number]): Promise<BatchResult> => {
    try {
      return answerOf(entity, message.messageId, await deliver(ctx, entity, message, size, text, { touched: true, announced }));
    } catch (e) {
      const throttled = isThrottled(e);
      return {
        messageId: message.messageId,
        error: {
          code: throttled ? 'Throttled' : 'InternalError',
          message: throttled ? 'the store is busy; send this message again' : 'the message was not stored; send it again',
          retryable: true,
        },
      };
    }
  };
  // N3: the messages of one session are stored one after another, in batch order, so their
  // sequence numbers keep that order also where a topic fans each out on its own; different
  // sessions, and messages without one, go concurrently.
  const results: BatchResult[] = new Array(messages.length);
  const chains = new Map<string, Promise<void>>();
  messages.forEach((m, i) => {
    const key = m.message.sessionId !== undefined ? `s:${m.message.sessionId}` : `i:${i}`;
    const run = (chains.get(key) ?? Promise.resolve()).then(async () => {
      results[i] = await deliverOne(m);
    });
    chains.set(key, run);
  });
  await Promise.all(chains.values());
  return results;
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { send, sendBatch };
