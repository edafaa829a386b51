/**
 * Where a new message lands (F1-F4, S5, S8): in the entity itself; in every subscription
 * whose rules match when it is a topic; where `forwardTo` leads, one hop at a time, or in
 * the source's transfer dead-letter subqueue when forwarding cannot go on. Routing is decided
 * before anything is written, and the copies are written in one transaction when they fit
 * (100 items, 4 MB), so a send is acknowledged only when every copy is durable.
 */
import type { FilterMessage } from '../filters/index.js';
import { MAX_PROPERTIES_BYTES, optionalSystemProperties, propertiesSize, type MessageInput } from '../messages/schema.js';
import type { MessageItem } from '../messages/item.js';
import type { StoredBody } from '../messages/body.js';
import { entityPathDisplay, forwardCandidates } from '../entities/paths.js';
import { duplicateMarkerKey, RULE_SK_PREFIX, SUBSCRIPTION_SK_PREFIX, subscriptionOfSk } from '../store/keys.js';
import { readTopicPartition } from '../store/entities.js';
import { planCopies } from '../fate/fanout.js';
import { reasons } from '../fate/delivery.js';
import { type BrokerContext } from './context.js';
import { cancellationCodes, partFailedCondition } from '../store/outcomes.js';
import { putNewMessages } from '../store/messages.js';
import { duplicateMarkerPart, getDuplicateMarker, putDuplicateMarker, putScheduledCopies, type DuplicateMarker } from '../store/markers.js';
import { findEntity, getStats, holdUntil, touchEntity, type EntityItem } from './entities.js';
import { compiledRule, type RuleItem } from './filter-rules.js';
import { announceSessionMessages, buildMessageItem, putNewMessage, type BuildOptions, type SessionAnnouncements } from './message-items.js';
import { markReady } from './ready-marks.js';
import { isPositioned } from './layouts.js';
import { writeAfterCopies, writeApart } from './written-apart.js';
import { goesToPositions, numberedAtSend, writeWithPositions, type DrawTurn, type DuplicateCheck, type EntityGate } from './positioned-send.js';

/** F2: more than this many forwarding hops ends in the transfer dead-letter subqueue. */
export const MAX_HOPS = 4;

export interface Routed {
  items: MessageItem[];
  /** Subscriptions of a topic that got a copy. */
  subscriptions: string[];
  /** Entities a forwarded message reached: forwarding into them is use (I2). */
  forwardedTo?: EntityItem[];
  /** S6 on a topic: the number that cancels a scheduled message in every subscription. */
  scheduledSequenceNumber?: string;
}

interface RouteOptions {
  hops: number;
  /** A copy made inside the broker (fan-out, forwarding), not a client's direct send (S5, S8). */
  copied?: boolean;
  extraTimeToLive?: number | null;
  size: number;
  body: StoredBody;
  /** Filled in while routing: the incarnations a copy went into whose active subqueue is positioned (positioned-send.ts). */
  positioned?: Set<string>;
  /** Topics' subscriptions and rules as this request read them, by incarnation: read once for a whole batch. */
  children?: TopicReads;
}

/** A request's reads of topics' subscriptions and rules (`topicChildren`), by topic incarnation. */
export type TopicReads = Map<string, ReturnType<typeof topicChildren>>;

/** `topic`'s subscriptions and rules, read once a request (`reads`) or, without one, now. */
function childrenOf(ctx: BrokerContext, topic: EntityItem, reads: TopicReads | undefined): ReturnType<typeof topicChildren> {
  if (!reads) return topicChildren(ctx, topic);
  let read = reads.get(topic.eid);
  if (!read) reads.set(topic.eid, (read = topicChildren(ctx, topic)));
  return read;
}

const toFilterMessage = (m: MessageInput): FilterMessage => {
  const system: FilterMessage['system'] = {};
  for (const key of ['messageId', ...optionalSystemProperties] as const) {
    if (m[key] !== undefined) system[key] = m[key];
  }
  return { system, properties: { ...(m.applicationProperties ?? {}) } };
};

const fromFilterMessage = (original: MessageInput, f: FilterMessage): MessageInput => {
  const out: MessageInput = { ...original, applicationProperties: f.properties };
  for (const key of ['correlationId', 'subject', 'to', 'replyTo', 'replyToSessionId', 'contentType'] as const) {
    const v = f.system[key];
    if (v === undefined) delete out[key];
    else out[key] = v;
  }
  return out;
};

function deadLettered(
  ctx: BrokerContext,
  entity: EntityItem,
  m: MessageInput,
  subqueue: 'deadletter' | 'transfer',
  reason: string,
  description: string,
  o: RouteOptions,
): MessageItem {
  const build: BuildOptions = {
    subqueue,
    size: o.size,
    body: o.body,
    deadLetter: { reason, description, source: entityPathDisplay(entity), enqueuedSequenceNumber: '0' },
    hops: o.hops,
  };
  const item = buildMessageItem(ctx, entity, m, build);
  item.enqueuedSequenceNumber = item.seq; // a copy made here has no earlier number of its own
  return item;
}

/** A queue or topic named as `queues/q`, `topics/t`, or a bare name (a queue, else a topic). */
export async function resolveTarget(ctx: BrokerContext, named: string, field: string): Promise<EntityItem | undefined> {
  for (const ref of forwardCandidates(named, field)) {
    const found = await findEntity(ctx, ref);
    if (found) return found;
  }
  return undefined;
}

/**
 * A copy the broker dead-letters while routing (F4, S5, S8): into the entity's dead-letter
 * subqueue, or (F3) on to its `forwardDeadLetteredMessagesTo` target with the reason.
 */
async function deadLetterRouted(
  ctx: BrokerContext,
  entity: EntityItem,
  m: MessageInput,
  reason: string,
  description: string,
  o: RouteOptions,
): Promise<MessageItem[]> {
  const own = deadLettered(ctx, entity, m, 'deadletter', reason, description, o);
  const named = entity.forwardDeadLetteredMessagesTo;
  if (!named) return [own];
  const target = await resolveTarget(ctx, named, 'forwardDeadLetteredMessagesTo').catch(() => undefined);
  if (!target || target.status === 'Disabled' || target.status === 'SendDisabled') return [own];
  const routed = await route(ctx, target, m, { ...o, hops: o.hops + 1, copied: true, extraTimeToLive: null });
  return routed.items.map((i) => ({
    ...i,
    deadLetterReason: reason,
    deadLetterErrorDescription: description,
    deadLetterSource: own.deadLetterSource,
    enqueuedSequenceNumber: own.enqueuedSequenceNumber,
  }));
}

export async function route(ctx: BrokerContext, entity: EntityItem, m: MessageInput, o: RouteOptions): Promise<Routed> {
  if (entity.kind === 'topic') return fanOut(ctx, entity, m, o);
  if (o.copied && entity.requiresSession && m.sessionId === undefined) {
    // S8: a forwarded or fanned-out copy without a session id.
    return {
      items: await deadLetterRouted(ctx, entity, m, reasons.sessionIdNull, 'The entity requires sessions and the message has no session id.', o),
      subscriptions: [],
    };
  }
  if (entity.forwardTo) return forward(ctx, entity, m, o);
  if (isPositioned(entity)) o.positioned?.add(entity.eid);
  return {
    items: [buildMessageItem(ctx, entity, m, { hops: o.hops, size: o.size, body: o.body, extraTimeToLive: o.extraTimeToLive ?? null })],
    subscriptions: [],
  };
}

/** F2: on to the target, or into this entity's transfer dead-letter subqueue with the reason. */
async function forward(ctx: BrokerContext, source: EntityItem, m: MessageInput, o: RouteOptions): Promise<Routed> {
  const transfer = (reason: string, description: string) => ({ items: [deadLettered(ctx, source, m, 'transfer', reason, description, o)], subscriptions: [] });
  if (o.hops + 1 > MAX_HOPS) return transfer(reasons.maxHops, `The message passed more than ${MAX_HOPS} forwarding hops.`);
  const named = source.forwardTo ?? '';
  const target = await resolveTarget(ctx, named, 'forwardTo').catch(() => undefined);
  if (!target) return transfer('MessagingEntityNotFound', `The forwarding target '${named}' does not exist.`);
  return forwardInto(ctx, target, m, o, transfer);
}

async function forwardInto(
  ctx: BrokerContext,
  target: EntityItem,
  m: MessageInput,
  o: RouteOptions,
  transfer: (r: string, d: string) => Routed,
): Promise<Routed> {
  if (target.status === 'Disabled' || target.status === 'SendDisabled') {
    return transfer('MessagingEntityDisabled', `The forwarding target '${entityPathDisplay(target)}' is ${target.status}.`);
  }
  if (target.kind === 'queue' && (await isFull(ctx, target, o.size))) {
    return transfer('QuotaExceeded', `The forwarding target '${entityPathDisplay(target)}' is full (maxSizeInMegabytes ${target.maxSizeInMegabytes}).`);
  }
  const routed = await route(ctx, target, m, { ...o, hops: o.hops + 1, copied: true, extraTimeToLive: null });
  return { ...routed, forwardedTo: [target, ...(routed.forwardedTo ?? [])] };
}

/** F2: a target is full when its stored bytes (E6, from the stream) leave no room for the message. */
async function isFull(ctx: BrokerContext, target: EntityItem, size: number): Promise<boolean> {
  const stats = (await getStats(ctx, [target])).get(target.eid);
  return (stats?.sizeInBytes ?? 0) + size > target.maxSizeInMegabytes * 1024 * 1024;
}

/** F1: a copy for every subscription whose rules match; nothing stays at topic level. */
async function fanOut(ctx: BrokerContext, topic: EntityItem, m: MessageInput, o: RouteOptions): Promise<Routed> {
  const children = await childrenOf(ctx, topic, o.children);
  const view = toFilterMessage(m);
  const items: MessageItem[] = [];
  const reached: string[] = [];
  for (const sub of children.subscriptions) {
    if (sub.status === 'Disabled') continue;
    const rules = (children.rules.get(subscriptionOfSk(sub.sk)) ?? []).map(compiledRule);
    const plans = planCopies(rules, view, sub.deadLetteringOnFilterEvaluationExceptions);
    if (plans.length === 0) continue;
    reached.push(sub.name);
    const so: RouteOptions = { ...o, copied: true, extraTimeToLive: topic.defaultMessageTimeToLive };
    for (const plan of plans) {
      if (plan.kind === 'filterError') {
        items.push(...(await deadLetterRouted(ctx, sub, m, 'FilterEvaluationException', plan.description, so)));
        continue;
      }
      const copy = fromFilterMessage(m, plan.message);
      if (propertiesSize(copy) > MAX_PROPERTIES_BYTES) {
        // S5: a copy made inside the broker that outgrows the header limit.
        items.push(
          ...(await deadLetterRouted(
            ctx,
            sub,
            copy,
            reasons.headerSize,
            `The message properties exceed ${MAX_PROPERTIES_BYTES} bytes after rule actions.`,
            so,
          )),
        );
        continue;
      }
      const size = o.size - propertiesSize(m) + propertiesSize(copy);
      items.push(...(await route(ctx, sub, copy, { ...so, size })).items);
    }
  }
  return { items, subscriptions: reached };
}

async function topicChildren(ctx: BrokerContext, topic: EntityItem) {
  const subscriptions: EntityItem[] = [];
  const rules = new Map<string, RuleItem[]>();
  for (const item of await readTopicPartition<EntityItem | RuleItem>(ctx, topic.name)) {
    const sk = item.sk;
    if (sk.startsWith(SUBSCRIPTION_SK_PREFIX)) subscriptions.push(item as EntityItem);
    else if (sk.startsWith(RULE_SK_PREFIX)) {
      const sub = subscriptionOfSk(sk);
      rules.set(sub, [...(rules.get(sub) ?? []), item as RuleItem]);
    }
  }
  return { subscriptions, rules };
}

const TRANSACTION_ITEMS = 100;
const TRANSACTION_BYTES = 4 * 1024 * 1024 - 64 * 1024;

export const fitsOneTransaction = (items: MessageItem[], extra = 0) =>
  items.length + extra <= TRANSACTION_ITEMS && items.reduce((n, i) => n + i.size + 1024, 0) <= TRANSACTION_BYTES;

/** S7's record of a message id: until when it counts, and the first message's receipt. */
function duplicateMarker(entity: EntityItem, messageId: string, first: MessageItem | undefined, now: number): DuplicateMarker {
  const windowEnd = now + entity.duplicateDetectionHistoryTimeWindow;
  return {
    ...duplicateMarkerKey(entity.eid, messageId),
    expiresAt: windowEnd,
    ttl: Math.ceil(windowEnd / 1000) + 1,
    ...(first ? { seq: first.seq, enqueuedAt: first.enqueuedAt, ...(first.expiresAt !== undefined ? { messageExpiresAt: first.expiresAt } : {}) } : {}),
  };
}

/** The answer to a duplicate: the receipt of the message first sent with that id. */
function firstReceipt(seen: Record<string, unknown>, messageId: string, now: number): MessageItem {
  return {
    messageId,
    seq: (seen.seq as string | undefined) ?? '0',
    enqueuedAt: (seen.enqueuedAt as number | undefined) ?? now,
    ...(seen.messageExpiresAt !== undefined ? { expiresAt: seen.messageExpiresAt as number } : {}),
  } as MessageItem;
}

/** S7's marker for a request with positioned copies (positioned-send.ts), as `writeOnce` and `writeOnceLarge` keep it. */
function duplicateCheck(ctx: BrokerContext, entity: EntityItem, messageId: string): DuplicateCheck {
  const now = ctx.clock.now();
  return {
    part: (numbered) => duplicateMarkerPart(ctx, duplicateMarker(entity, messageId, numbered[0], now), now),
    first: async () => firstReceipt((await getDuplicateMarker(ctx, entity.eid, messageId)) ?? {}, messageId, now),
    seen: async () => {
      const seen = await getDuplicateMarker(ctx, entity.eid, messageId);
      return seen && (seen.expiresAt as number) > now ? firstReceipt(seen, messageId, now) : undefined;
    },
    record: (numbered) => writeAfterCopies(ctx, 'duplicate marker', () => putDuplicateMarker(ctx, duplicateMarker(entity, messageId, numbered[0], now))),
  };
}

/**
 * S7 when the copies do not fit one transaction: check the marker, write the copies, then the
 * marker. A crash in between can only let a retry through as a duplicate, never lose it; so can
 * a marker the store keeps refusing, which answers the send `mayBeStored` (written-apart.ts).
 */
async function writeOnceLarge(
  ctx: BrokerContext,
  entity: EntityItem,
  messageId: string,
  items: MessageItem[],
  announced?: SessionAnnouncements,
): Promise<MessageItem | undefined> {
  const now = ctx.clock.now();
  const seen = await getDuplicateMarker(ctx, entity.eid, messageId);
  if (seen && (seen.expiresAt as number) > now) return firstReceipt(seen, messageId, now);
  const stored = await writeAll(ctx, items, announced);
  await writeAfterCopies(ctx, 'duplicate marker', () => putDuplicateMarker(ctx, duplicateMarker(entity, messageId, stored[0], now)));
  return undefined;
}

/** Writes every copy; atomically when they fit one transaction. Returns the items as stored. */
export async function writeAll(ctx: BrokerContext, items: MessageItem[], announced?: SessionAnnouncements): Promise<MessageItem[]> {
  if (items.length === 0) return items;
  if (items.length === 1) return [await putNewMessage(ctx, items[0]!, announced)];
  if (!fitsOneTransaction(items)) {
    // Too large for one transaction: each copy on its own (design.md); once one is stored, a
    // failure of another answers that the message may be stored (written-apart.ts).
    return writeApart(items.map((i) => () => putNewMessage(ctx, i, announced)));
  }
  await announceSessionMessages(ctx, items, announced);
  return putNewMessages(ctx, items);
}

/** Sends one validated message to a queue or topic, touching the entities it uses (I2). */
export async function deliver(
  ctx: BrokerContext,
  entity: EntityItem,
  m: MessageInput & { messageId: string },
  size: number,
  body: string,
  options: { touched?: boolean; announced?: SessionAnnouncements; gate?: EntityGate; turn?: DrawTurn; children?: TopicReads } = {},
): Promise<Routed & { duplicateOf?: MessageItem }> {
  // Touch first: a send the reaper races is refused (404), never acknowledged into a deleted entity.
  if (!options.touched) await touchEntity(ctx, entity);
  const positioned = new Set<string>();
  // S2: a batch's requests are numbered in batch order, each after the one before it has routed
  // (a topic's fan-out and a forward read before they number their copies); only their writes overlap.
  await options.turn?.wait;
  const routed = await route(ctx, entity, m, { hops: 0, size, body, positioned, ...(options.children ? { children: options.children } : {}) });
  const at = m.scheduledEnqueueTime;
  if (at !== undefined && at > ctx.clock.now() && routed.items.length > 0) {
    // I2: a scheduled message keeps the queue or topic it was sent to (and every queue or
    // topic it was forwarded into) alive until it is due; subscriptions only receive it. Held
    // before anything is written: a hold refused refuses the send, which then stored nothing
    // (S4); a send refused after it leaves the entity held a while longer, which is harmless.
    for (const held of [entity, ...(routed.forwardedTo ?? [])]) {
      if (held.kind !== 'subscription') await holdUntil(ctx, held, at);
    }
  }
  const drawing = routed.items.some((i) => goesToPositions(i, positioned) || numberedAtSend(i, positioned));
  // Nothing to draw: the batch's next request need not wait for this one (S2).
  if (!drawing) options.turn?.end();
  // The partitions the copies go into are marked first, so no receive can miss them.
  await markReady(ctx, routed.items);
  if (drawing) {
    const written = await writeWithPositions(ctx, routed.items, positioned, {
      ...(entity.requiresDuplicateDetection ? { duplicate: duplicateCheck(ctx, entity, m.messageId) } : {}),
      ...(options.announced ? { announced: options.announced } : {}),
      ...(options.gate ? { gate: options.gate } : {}),
      ...(options.turn ? { turn: options.turn } : {}),
      fits: fitsOneTransaction,
    });
    if (written.duplicateOf) return { items: [], subscriptions: [], duplicateOf: written.duplicateOf };
    routed.items = written.items;
  } else if (entity.requiresDuplicateDetection) {
    const first = await writeOnce(ctx, entity, m.messageId, routed.items, options.announced);
    if (first) return { items: [], subscriptions: [], duplicateOf: first };
  } else {
    routed.items = await writeAll(ctx, routed.items, options.announced);
  }
  for (const target of routed.forwardedTo ?? []) await touchEntity(ctx, target).catch(() => undefined);
  if (entity.kind === 'topic' && m.scheduledEnqueueTime !== undefined && m.scheduledEnqueueTime > ctx.clock.now() && routed.items.length > 0) {
    routed.scheduledSequenceNumber = await rememberScheduledCopies(ctx, entity, m.scheduledEnqueueTime, routed.items);
  }
  return routed;
}

/**
 * S6 on a topic: one sequence number for a scheduled send, remembering where its copies went,
 * so that cancelling it removes every copy still scheduled. Written after the copies: a crash
 * in between leaves copies that are delivered on time but cannot be cancelled by number. A
 * record the store keeps refusing answers the send `mayBeStored` (written-apart.ts), since its
 * copies are stored.
 */
async function rememberScheduledCopies(ctx: BrokerContext, topic: EntityItem, at: number, items: MessageItem[]): Promise<string> {
  const seq = ctx.sequences.next(ctx.clock.now(), 0);
  const copies = items.map((i) => ({ pk: i.pk, sk: i.sk }));
  // Kept a day past the schedule, then DynamoDB's TTL removes it.
  await writeAfterCopies(ctx, 'cancel record', () => putScheduledCopies(ctx, topic.eid, seq, copies, Math.ceil(at / 1000) + 24 * 3600));
  return seq.toString();
}

/**
 * S7: the copies and a marker for the message id go in one transaction; a marker still within
 * the history window cancels it, and the send is acknowledged with the first message's receipt.
 */
async function writeOnce(
  ctx: BrokerContext,
  entity: EntityItem,
  messageId: string,
  items: MessageItem[],
  announced?: SessionAnnouncements,
): Promise<MessageItem | undefined> {
  if (!fitsOneTransaction(items, 1)) return writeOnceLarge(ctx, entity, messageId, items, announced);
  const now = ctx.clock.now();
  const marker = (numbered: readonly MessageItem[]) => duplicateMarker(entity, messageId, numbered[0], now);
  await announceSessionMessages(ctx, items, announced);
  try {
    await putNewMessages(ctx, items, {
      before: (numbered) => [duplicateMarkerPart(ctx, marker(numbered), now)],
    });
    return undefined;
  } catch (e) {
    if (!partFailedCondition(cancellationCodes(e), 0)) throw e;
    return firstReceipt((await getDuplicateMarker(ctx, entity.eid, messageId)) ?? {}, messageId, now);
  }
}
