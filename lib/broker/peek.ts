/** Peek (R8): messages from a sequence number on, read without locking them. */
import type { PeekQuery } from '../requests/schemas.js';
import type { ReceiveTarget } from '../entities/paths.js';
import { presentMessage, type MessageItem, type ReceivedMessage } from '../messages/item.js';
import { messagePk, padSeq, positionedPk, sessionKey } from '../store/keys.js';
import { readSession } from '../store/sessions.js';
import { peekPage } from '../store/message-pages.js';
import { messageOfStored, type StoredMessageItem } from '../store/message-layout.js';
import { peekPositions } from '../store/positions.js';
import { peekedDeliveryCount, readHeadCursor, type HeadCursor } from '../store/leases.js';
import { isPositionedSeq, positionedSeq, positionOfSeq } from '../store/sequence.js';
import { isPositioned } from './layouts.js';
import { AnswerBudget } from './answer-budget.js';
import type { BrokerContext } from './context.js';
import { requireEntity, touchEntity } from './entities.js';
import { partitionCount } from './message-items.js';

/** A message's place in sequence order, for either layout (a positioned item's `sk` is its position, not its number). */
const orderOf = (item: MessageItem) => padSeq(item.seq);

/**
 * The first position of partition `partition` whose sequence number is `from` or more;
 * undefined when `from` is past every positioned number (a time-based one, sequence.ts).
 */
function firstPositionFrom(from: bigint, partition: number): number | undefined {
  const position = positionOfSeq(from);
  if (!isPositionedSeq(positionedSeq(position, 0))) return undefined;
  return positionedSeq(position, partition) >= from ? position : position + 1;
}

/**
 * R8: from a sequence number on, without locking; scheduled and deferred included with their
 * state. A positioned queue's active subqueue shows its positioned messages (store/positions.ts
 * `peekPositions`: whole requests only, never a tombstone or a void request's message) and the
 * messages it keeps in today's layout (scheduled, deferred), all in sequence order: positioned
 * numbers are below time-based ones, so the positioned come first. Nothing is written but the
 * entity's use (I2).
 */
export async function peek(ctx: BrokerContext, target: ReceiveTarget, q: PeekQuery): Promise<ReceivedMessage[]> {
  const entity = await requireEntity(ctx, target);
  await touchEntity(ctx, entity);
  const from = padSeq(q.fromSequenceNumber);
  const found: MessageItem[] = [];
  // A partition's page may end early (DynamoDB's 1 MB a Query): nothing past its last entry
  // is answered, or the next peek, from the last one answered on, would skip its rest.
  let readTo: string | undefined;
  for (let p = 0; p < partitionCount(entity, target); p++) {
    const { items, more } = await peekPage(ctx, messagePk(entity.eid, target.subqueue, p), from, q.maxMessages);
    found.push(...items);
    const last = items.at(-1)?.sk;
    if (more && last !== undefined && (readTo === undefined || last < readTo)) readTo = last;
  }
  if (isPositioned(entity) && target.subqueue === 'active') {
    for (let p = 0; p < entity.partitions; p++) {
      const start = firstPositionFrom(BigInt(q.fromSequenceNumber), p);
      if (start === undefined) continue;
      const pk = positionedPk(entity.eid, 'active', p);
      let cursor: Promise<HeadCursor> | undefined;
      const cursorOf = () => (cursor ??= readHeadCursor(ctx, pk));
      const items = await peekPositions(ctx, pk, Math.max(1, start), q.maxMessages, async () => (await cursorOf()).pos);
      // R8: a delivery count lives in the take-backs and the leases, not the stored item, so
      // a partition that answers anything also reads its cursor (1 read unit; peek only).
      const at = items.length > 0 ? await cursorOf() : undefined;
      found.push(...items.map((i) => ({ ...messageOfStored(i as unknown as StoredMessageItem), deliveryCount: peekedDeliveryCount(i, at!) })));
    }
  }
  found.sort((a, b) => (orderOf(a) < orderOf(b) ? -1 : orderOf(a) > orderOf(b) ? 1 : 0));
  const now = ctx.clock.now();
  // R10: no more than the answer can carry; the caller peeks on from the last one.
  const budget = new AnswerBudget();
  const answer: ReceivedMessage[] = [];
  const shown = found.slice(0, q.maxMessages);
  const counts = entity.requiresSession && target.subqueue === 'active' ? await heldCounts(ctx, shown) : undefined;
  for (const item of shown) {
    if (readTo !== undefined && orderOf(item) > readTo) break;
    const message = presentMessage({ ...item, deliveryCount: counts?.get(item.sk) ?? item.deliveryCount }, now);
    if (!budget.addIfFits(message)) break;
    answer.push(message);
  }
  return answer;
}

/**
 * R8/R3: the delivery counts of session messages their session's record holds (session-lock.ts):
 * handed out one more than stored, until a settlement or a take-back writes it. One read of each
 * session item the page shows (peek only).
 */
async function heldCounts(ctx: BrokerContext, items: readonly MessageItem[]): Promise<Map<string, number>> {
  const ids = [...new Set(items.flatMap((i) => (i.sessionId !== undefined ? [i.sessionId] : [])))];
  const eid = items[0]?.eid;
  const sessions = new Map(await Promise.all(ids.map(async (id) => [id, await readSession(ctx, sessionKey(eid!, id))] as const)));
  const counts = new Map<string, number>();
  for (const item of items) {
    const entry = item.sessionId !== undefined ? sessions.get(item.sessionId)?.held?.m[item.sk] : undefined;
    if (entry && entry[0] === item.deliveryCount + 1) counts.set(item.sk, entry[0]);
  }
  return counts;
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { peek };
