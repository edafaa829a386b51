/**
 * Message items' store operations: putting new messages, and giving one a new sequence
 * number after a collision. Every path that creates a message (send, batch, fan-out,
 * forwarding, moves, dead-lettering, TTL removals) puts it through `putNewMessages`.
 */
import { PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import type { MessageItem } from '../messages/item.js';
import { messageKey, readySortKey, TIME_DIGITS } from './keys.js';
import { cancellationCodes, CONDITION_FAILED, isConditionFailure } from './outcomes.js';
import type { SequenceGenerator } from './sequence.js';

/** What the message operations need: the table, the clock and this instance's sequence numbers. */
export type MessageStore = Pick<Deps, 'db' | 'tableName' | 'clock'> & { sequences: SequenceGenerator };

/** A new message's condition: no item has its key (its sequence number is not taken). */
export const messageIsNew = 'attribute_not_exists(pk)';

/** How often a sequence collision is retried with the next number before the error is thrown. */
const COLLISION_RETRIES = 5;

/**
 * Gives the item the next sequence number of its partition (after a collision, S2). Only the
 * number changes: the item keeps its partition, its `ready` partition and its place in time
 * (the time part of `rsk`: its enqueue time when active, the time it was dead-lettered in a
 * dead-letter subqueue), so a collision never moves a message in its entity's order.
 */
export function renumber(ctx: Pick<MessageStore, 'sequences' | 'clock'>, item: MessageItem): MessageItem {
  const seq = ctx.sequences.next(ctx.clock.now(), item.partition);
  const key = messageKey(item.eid, item.subqueue, item.partition, seq);
  const since = item.rsk !== undefined ? Number(item.rsk.slice(0, TIME_DIGITS)) : item.enqueuedAt;
  return { ...item, ...key, seq: seq.toString(), rpk: item.rpk ?? key.pk, rsk: readySortKey(since, seq) };
}

/** A part of the same transaction that is not a message put: a marker, a guarded delete, a lock check. */
export type TransactionPart = Record<string, unknown>;

export interface PutNewOptions {
  /** Parts written before the messages, built from the messages as they are numbered now (a marker naming the first). */
  before?: (items: readonly MessageItem[]) => TransactionPart[];
  /** Parts written after the messages. */
  after?: TransactionPart[];
  /** Collision retries; 0 puts the items as they are (an item put back under its own number). */
  retries?: number;
}

/**
 * Puts new message items (S1), atomically with `before` and `after`.
 *
 * Key: each item's (pk, sk). Condition: `messageIsNew` on each message; the other parts
 * bring their own. One item with no other part is a single PutItem; anything more is one
 * TransactWriteItems, in the order before, messages, after.
 *
 * Success: the items as stored (renumbered where they collided), durable. A collision (a
 * message failed `messageIsNew` while every other part was fine) is retried with the
 * colliding items renumbered, up to `retries` times. Failure: throws DynamoDB's error as it
 * came (read it with outcomes.ts: which part failed its condition, a conflict, throttling);
 * nothing was written.
 */
export async function putNewMessages(ctx: MessageStore, items: readonly MessageItem[], options: PutNewOptions = {}): Promise<MessageItem[]> {
  let current = [...items];
  const retries = options.retries ?? COLLISION_RETRIES;
  for (let attempt = 0; ; attempt++) {
    const before = options.before?.(current) ?? [];
    const after = options.after ?? [];
    try {
      if (current.length === 1 && before.length === 0 && after.length === 0) {
        await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: current[0], ConditionExpression: messageIsNew }));
      } else {
        await ctx.db.send(
          new TransactWriteCommand({
            TransactItems: [
              ...before,
              ...current.map((Item) => ({ Put: { TableName: ctx.tableName, Item, ConditionExpression: messageIsNew } })),
              ...after,
            ] as never,
          }),
        );
      }
      return current;
    } catch (e) {
      if (attempt >= retries) throw e;
      const collided = collisions(e, current.length, before.length);
      if (!collided) throw e;
      current = current.map((item, i) => (collided[i] ? renumber(ctx, item) : item));
    }
  }
}

/** Which messages collided, when only messages failed (on their condition); undefined for any other refusal. */
function collisions(e: unknown, count: number, offset: number): boolean[] | undefined {
  if (count === 1 && offset === 0 && !cancellationCodes(e)) return isConditionFailure(e) ? [true] : undefined;
  const codes = cancellationCodes(e);
  if (!codes) return undefined;
  const isMessage = (i: number) => i >= offset && i < offset + count;
  if (codes.some((c, i) => c !== 'None' && !(isMessage(i) && c === CONDITION_FAILED))) return undefined;
  const collided = Array.from({ length: count }, (_, i) => codes[offset + i] === CONDITION_FAILED);
  return collided.some(Boolean) ? collided : undefined;
}
