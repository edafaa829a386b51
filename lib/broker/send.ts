/** Sending (S1-S6, T1-T3): validate, stamp, store durably, answer. */
import type { RequestOf } from '../requests/schemas.js';
import { BrokerError, entityNotFound, mayBeStored, saysMayBeStored, type ErrorCode } from '../errors.js';
import { entityPathDisplay, type EntityRef } from '../entities/paths.js';
import type { MessageInput } from '../messages/schema.js';
import type { MessageItem } from '../messages/item.js';
import { randomId, type BrokerContext } from './context.js';
import { isStoreBusy, isThrottled, mayHaveLanded } from '../store/outcomes.js';
import { takeBackNewMessage } from '../store/messages.js';
import {
  assertCanSend,
  currentEntityOnceMore,
  holdUntil,
  recentEntity,
  requireEntity,
  sameIncarnation,
  touchEntity,
  unchangedEntity,
  type EntityItem,
} from './entities.js';
import { deliver, type Routed, type TopicReads } from './deliver.js';
import { buildMessageItem, receiptOf, SessionAnnouncements, type SendReceipt } from './message-items.js';
import { isPositioned } from './layouts.js';
import { markReady } from './ready-marks.js';
import { DrawTurns, EntityGate, writePositionedBatch } from './positioned-send.js';

// Where they used to live; tests still import them from here.
export { assertCanReceive, assertCanSend } from './entities.js';
export { buildMessageItem, choosePartition, putNewMessage, receiptOf, type BuildOptions, type SendReceipt } from './message-items.js';

export type SendAnswer = SendReceipt | { messageId: string; subscriptions: string[]; sequenceNumber?: string };

type Outgoing = MessageInput & { messageId: string };

/** POST {send}/messages to a queue (stored, or forwarded: F2) or a topic (fanned out: F1). */
export async function send(ctx: BrokerContext, ref: EntityRef, { message, size, body: text }: RequestOf<'Message'>): Promise<SendAnswer> {
  const m: Outgoing = { ...message, messageId: message.messageId ?? randomId(16) };
  const assumed = assumedEntity(ctx, ref, m);
  if (assumed) return sendAhead(ctx, ref, assumed, m, size, text);
  return sendTo(ctx, await requireEntity(ctx, ref), m, size, text);
}

/**
 * Takes back a message written ahead; true when it stays: received meanwhile, or refused by
 * the store (throttled, in conflict) while its incarnation (`live`) lives. Any other failure
 * is the function's own and ends the request, as a crash after a put would.
 */
async function staysAfterTakeBack(ctx: BrokerContext, item: MessageItem, live: boolean): Promise<boolean> {
  try {
    return !(await takeBackNewMessage(ctx, item));
  } catch (e) {
    if (!isStoreBusy(e)) throw e;
    return live;
  }
}

/** A send to the entity as read for this request: refused by its status (E5) or sessions (S8), else delivered. */
async function sendTo(ctx: BrokerContext, entity: EntityItem, m: Outgoing, size: number, text: string): Promise<SendAnswer> {
  assertCanSend(entity);
  assertSession(entity, m);
  return answerOf(entity, m.messageId, await deliver(ctx, entity, m, size, text));
}

/**
 * The entity a send may write with before its own read answers: one seen by a read of this
 * process a moment ago, for a message that is one plain item in it. Everything else (topics,
 * forwarding, duplicate detection, scheduling, a status or session refusal) waits for the read.
 */
function assumedEntity(ctx: BrokerContext, ref: EntityRef, m: Outgoing): EntityItem | undefined {
  const entity = recentQueue(ctx, ref);
  return entity && mayWriteAhead(ctx, entity, m) ? entity : undefined;
}

/** The queue as a read of this process saw it a moment ago, if a send to it may be written ahead at all. */
function recentQueue(ctx: BrokerContext, ref: EntityRef): EntityItem | undefined {
  if (ref.kind !== 'queue') return undefined;
  const entity = recentEntity(ctx, ref);
  if (!entity || entity.forwardTo || entity.requiresDuplicateDetection) return undefined;
  if (entity.status === 'Disabled' || entity.status === 'SendDisabled') return undefined;
  return entity;
}

/** `m` is one plain item in `entity` that its status and sessions would not refuse. */
function mayWriteAhead(ctx: BrokerContext, entity: EntityItem, m: Outgoing): boolean {
  if (entity.requiresSession && m.sessionId === undefined) return false;
  return m.scheduledEnqueueTime === undefined || m.scheduledEnqueueTime <= ctx.clock.now();
}

const outcomeOf = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/** The request's own entity read beside its write; with a gate, the write's puts wait for its verdict (E4). */
function readBeside(ctx: BrokerContext, ref: EntityRef, assumed: EntityItem, writing: Promise<unknown>, gate: EntityGate | undefined) {
  const read = outcomeOf(currentEntityOnceMore(ctx, ref, gate ? Promise.race([writing, gate.reached]) : writing));
  if (gate) void read.then((r) => gate.open(r.ok && unchangedEntity(assumed, r.value)));
  return read;
}

/**
 * E4/E5 with the entity read beside the write instead of before it: the message is written
 * with the entity `assumed`, and acknowledged only when the request's own read (started after
 * the request came) finds the same incarnation unchanged. Otherwise (deleted, re-created,
 * disabled, changed) the write is taken back and the send answered as if it had read first:
 * 404, EntityDisabled, or stored anew with the entity as it is now.
 *
 * In the same incarnation (its status or properties changed), a message a receive took before
 * it could be taken back was stored and delivered: the send is answered as stored. So is one
 * that a storage fault kept from being taken back: it stays, so the answer must not say it was
 * refused (S1, S4). A write into an incarnation that is gone is never acknowledged (E4): what
 * is left of it nothing reads, and the reaper removes it.
 *
 * A positioned queue's send draws its positions beside the read and puts its messages only
 * once the read agrees (`EntityGate`): the same one round trip after the draw that its put
 * takes anyway, and nothing to take back when the read disagrees.
 */
async function sendAhead(ctx: BrokerContext, ref: EntityRef, assumed: EntityItem, m: Outgoing, size: number, text: string): Promise<SendAnswer> {
  const gate = isPositioned(assumed) ? new EntityGate() : undefined;
  const writing = outcomeOf(deliver(ctx, assumed, m, size, text, gate ? { gate } : {}));
  const [written, read] = await Promise.all([writing, readBeside(ctx, ref, assumed, writing, gate)]);
  const current = read.ok ? read.value : undefined;
  const same = sameIncarnation(assumed, current);
  if (unchangedEntity(assumed, current)) {
    if (written.ok) return answerOf(assumed, m.messageId, written.value);
    throw written.error;
  }
  // Unread, the incarnation may be this one: a take-back the store refused leaves the message.
  const stays = written.ok && written.value.items[0] ? await staysAfterTakeBack(ctx, written.value.items[0], same || !read.ok) : false;
  // Another incarnation's message is never acknowledged (E4), whatever became of it.
  if (stays && same && written.ok) return answerOf(assumed, m.messageId, written.value);
  // Nor is one answered not stored while it stays (S1, S4).
  if (!read.ok) throw stays ? storedUnconfirmed() : read.error;
  if (!current || current.deleting) throw entityNotFound(entityPathDisplay(ref));
  return sendTo(ctx, current, m, size, text);
}

/** The answer to a send whose message stays while every read of its entity, which decides the answer (E4), was refused for load. */
const storedUnconfirmed = () => mayBeStored('the store was too busy to confirm its entity');

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

type Batched = Omit<RequestOf<'MessageBatch'>[number], 'message'> & { message: Outgoing };

/** One message of a batch as delivered: its answer, and the item stored for it (what a send ahead takes back). */
interface Delivered {
  result: BatchResult;
  item?: MessageItem;
  /** The failure of a message that may be stored all the same (outcomes.ts `mayHaveLanded`): no answer may say it is not (S4). */
  unsure?: unknown;
}

/**
 * S4: every message of the batch was validated before any is stored (bad input changes
 * nothing: `parseRequest('MessageBatch', ...)`); each is stored on its own and the answer says, per message, whether it was.
 * Written ahead of the entity read as a single send is (`sendBatchAhead`) when every message may be.
 */
export async function sendBatch(ctx: BrokerContext, ref: EntityRef, batch: RequestOf<'MessageBatch'>): Promise<BatchResult[]> {
  const messages: Batched[] = batch.map(({ message, ...sized }) => ({ message: { ...message, messageId: message.messageId ?? randomId(16) }, ...sized }));
  const assumed = assumedBatchEntity(ctx, ref, messages);
  if (assumed) return sendBatchAhead(ctx, ref, assumed, messages);
  return sendBatchTo(ctx, await requireEntity(ctx, ref), messages);
}

/** The entity a batch may write with before its read answers: one every message of it may be sent ahead to (`assumedEntity`). */
function assumedBatchEntity(ctx: BrokerContext, ref: EntityRef, messages: Batched[]): EntityItem | undefined {
  const entity = recentQueue(ctx, ref);
  return entity && messages.every(({ message }) => mayWriteAhead(ctx, entity, message)) ? entity : undefined;
}

/** A batch to the entity as read for this request: refused whole by its status (E5) or sessions (S8), else delivered. */
async function sendBatchTo(ctx: BrokerContext, entity: EntityItem, messages: Batched[]): Promise<BatchResult[]> {
  assertCanSend(entity);
  messages.forEach(({ message }, i) => assertSession(entity, message, `messages[${i}].sessionId`));
  return (await deliverBatch(ctx, entity, messages)).map((d) => d.result);
}

/**
 * E4/E5 for a batch, as `sendAhead` for one message: the messages are written with the entity
 * `assumed` beside the request's own read, and acknowledged only when that read finds the same
 * incarnation unchanged. Otherwise every message written is taken back, and the batch answered
 * as if it had read first. A message a receive took before it could be taken back (or that a
 * storage fault kept), in the same incarnation, was stored: it is answered as stored, and the
 * rest of the batch is sent as the entity now is, each refused on its own if the entity now
 * refuses them (the answer is per message, S4). A message written into an incarnation that is
 * gone is never acknowledged (E4).
 */
async function sendBatchAhead(ctx: BrokerContext, ref: EntityRef, assumed: EntityItem, messages: Batched[]): Promise<BatchResult[]> {
  const gate = isPositioned(assumed) ? new EntityGate() : undefined;
  const writing = outcomeOf(deliverBatch(ctx, assumed, messages, gate));
  const [written, read] = await Promise.all([writing, readBeside(ctx, ref, assumed, writing, gate)]);
  const current = read.ok ? read.value : undefined;
  if (unchangedEntity(assumed, current)) {
    if (written.ok) return written.value.map((d) => d.result);
    throw written.error;
  }
  const same = sameIncarnation(assumed, current);
  const delivered: Delivered[] = written.ok ? written.value : [];
  // Unread, the incarnation may be this one: a take-back the store refused leaves the message.
  const stays = await Promise.all(delivered.map((d) => (d.item ? staysAfterTakeBack(ctx, d.item, same || !read.ok) : false)));
  // Another incarnation's message is never acknowledged (E4), whatever became of it.
  const kept = messages.map((_, i) => same && stays[i] === true);
  // Nor is one answered not stored while it stays (S1, S4).
  if (!read.ok) throw stays.includes(true) ? storedUnconfirmed() : read.error;
  if (!current || current.deleting) throw entityNotFound(entityPathDisplay(ref));
  if (!kept.includes(true)) return sendBatchTo(ctx, current, messages);
  const rest = messages.filter((_, i) => !kept[i]);
  let again: BatchResult[];
  try {
    again = rest.length > 0 ? await sendBatchTo(ctx, current, rest) : [];
  } catch (e) {
    if (!(e instanceof BrokerError)) throw e;
    again = rest.map(({ message }) => ({ messageId: message.messageId, error: { code: e.code, message: e.message, retryable: e.retryable } }));
  }
  let next = 0;
  return messages.map((_, i) => (kept[i] ? delivered[i]!.result : again[next++]!));
}

/** A message of a batch that was not stored, retryable (S4); `own`: a broker error says why (a positioned request's `retryLater`). */
function notStored(messageId: string, e: unknown, own = false): Delivered {
  // A write of it may have landed whose answer was lost and could not be read back, or some of
  // its copies did (`mayBeStored`); the broker's own refusals, the store's refusals for load and
  // the process's own failures wrote nothing.
  const unsure = mayHaveLanded(e) || saysMayBeStored(e) ? { unsure: e } : {};
  if (own && e instanceof BrokerError) return { result: { messageId, error: { code: e.code, message: e.message, retryable: e.retryable } }, ...unsure };
  const throttled = isThrottled(e);
  return {
    result: {
      messageId,
      error: {
        code: throttled ? 'Throttled' : 'InternalError',
        message: throttled ? 'the store is busy; send this message again' : 'the message was not stored; send it again',
        retryable: true,
      },
    },
    ...unsure,
  };
}

/**
 * S4: a batch's answers, message by message; or, when a message may be stored though its send
 * failed, that failure, which answers the whole batch as a failed single send is answered (a
 * 500: it may have been stored), since its own answer could say neither.
 */
function answered(delivered: Delivered[]): Delivered[] {
  const unsure = delivered.find((d) => d.unsure !== undefined);
  if (unsure) throw unsure.unsure;
  return delivered;
}

/**
 * Whether a batch's messages go to a positioned queue together: one draw per partition for all,
 * scheduled ones numbered around its positions in batch order (positioned-send.ts
 * `writePositionedBatch`). All of a batch or none: a message sent on its own would draw apart.
 */
const positionedTogether = (entity: EntityItem) => isPositioned(entity) && !entity.forwardTo && !entity.requiresDuplicateDetection;

/**
 * A batch to a positioned queue: its messages stored per partition whole or not at all (S1, S4),
 * its scheduled ones each on its own, then the queue held until the last is due (I2, as `deliver`
 * holds it for one); `gate` as a single send's.
 */
async function deliverPositioned(ctx: BrokerContext, entity: EntityItem, messages: Batched[], gate?: EntityGate): Promise<Delivered[]> {
  if (messages.length === 0) return [];
  let items;
  try {
    items = messages.map(({ message, size, body }) => buildMessageItem(ctx, entity, message, { size, body, extraTimeToLive: null }));
    await holdForScheduled(ctx, entity, items);
    await markReady(ctx, items);
  } catch (e) {
    gate?.open(false);
    return messages.map(({ message }) => notStored(message.messageId, e, true));
  }
  try {
    const outcomes = await writePositionedBatch(ctx, items, gate);
    return outcomes.map((o, i) => ('stored' in o ? { result: receiptOf(o.stored), item: o.stored } : notStored(messages[i]!.message.messageId, o.error, true)));
  } catch (e) {
    // Withdrawn (the entity read disagreed: nothing was put) or a draw the store refused: nothing of the batch is stored.
    return messages.map(({ message }) => notStored(message.messageId, e, true));
  }
}

/**
 * I2 for a batch's scheduled messages: the queue held until the last one is due, as `deliver`
 * holds it for one, and as there before anything is written: a hold refused refuses the batch,
 * which then stored nothing (S4).
 */
async function holdForScheduled(ctx: BrokerContext, entity: EntityItem, items: readonly MessageItem[]): Promise<void> {
  const due = Math.max(...items.map((i) => (i.state === 'Scheduled' ? i.enqueuedAt : 0)));
  if (due > ctx.clock.now()) await holdUntil(ctx, entity, due);
}

/** Stores each message of a batch into `entity`, the entity's use recorded once first (I2). */
async function deliverBatch(ctx: BrokerContext, entity: EntityItem, messages: Batched[], gate?: EntityGate): Promise<Delivered[]> {
  await touchEntity(ctx, entity); // once for the batch (I2), before anything is stored
  if (positionedTogether(entity)) return answered(await deliverPositioned(ctx, entity, messages, gate));
  const announced = new SessionAnnouncements();
  // S2: requests are numbered (and draw positions) in batch order, in turn; their writes overlap.
  const turns = new DrawTurns(messages.length);
  // A topic's subscriptions and rules, read once for the batch rather than once a message.
  const children: TopicReads = new Map();
  const deliverOne = async ({ message, size, body: text }: Batched, i: number): Promise<Delivered> => {
    const turn = turns.turn(i);
    try {
      const routed = await deliver(ctx, entity, message, size, text, { touched: true, announced, turn, children });
      return { result: answerOf(entity, message.messageId, routed), ...(routed.items[0] ? { item: routed.items[0] } : {}) };
    } catch (e) {
      return notStored(message.messageId, e);
    } finally {
      turn.end();
    }
  };
  // N3: the messages of one session are stored one after another, in batch order, so their
  // sequence numbers keep that order also where a topic fans each out on its own; different
  // sessions, and messages without one, go concurrently.
  const results: Delivered[] = new Array(messages.length);
  const chains = new Map<string, Promise<void>>();
  messages.forEach((m, i) => {
    const key = m.message.sessionId !== undefined ? `s:${m.message.sessionId}` : `i:${i}`;
    const run = (chains.get(key) ?? Promise.resolve()).then(async () => {
      results[i] = await deliverOne(m, i);
    });
    chains.set(key, run);
  });
  await Promise.all(chains.values());
  return answered(results);
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { send, sendBatch };
