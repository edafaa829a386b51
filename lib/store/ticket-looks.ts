/**
 * Looks at a ticketed partition without taking anything (design.md, "A claim that cannot lose",
 * cause 4): what a claimer that takes only what a predicate accepts (the sweeper's expiry pass,
 * bulk delete with a cutoff) reads before it decides whether to take at all. A ticket takes
 * positions whatever they hold (tickets.ts `takeTicket`), and what it took and does not remove
 * must be given back and taken back (a write each, and `g` raised): so the head is read first,
 * and a partition whose head the predicate refuses costs reads only.
 *
 * Every read here is eventually consistent (half the units): a stale replica shows the counter
 * and the positions as they were a moment ago, so the worst it does is make the caller take a
 * position another taker took meanwhile (the take then gets later positions, which the caller
 * reads consistently enough through `readTicket` and gives back) or miss a message put a moment
 * ago (the next pass sees it).
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { cursorKey, padPosition, positionCounterKey, positionOfSk } from './keys.js';
import type { CursorItem } from './leases.js';
import type { PositionedItem, PositionStore } from './positions.js';
import { counterView, type CounterView } from './tickets.js';

export interface PartitionLook {
  /** The cursor as stored (undefined: none yet, so nothing was ever claimed or marked ticketed). */
  cursor?: CursorItem;
  /** The counter: drawn (`next`), taken (`taken`) and the tickets in flight. */
  counter: CounterView;
}

/**
 * The cursor and the counter of a partition, side by side. Keys: `cursorKey`,
 * `positionCounterKey`. Two GetItems, eventually consistent: half a read unit each (both items
 * are small). No condition, no write.
 */
export async function lookAtPartition(ctx: PositionStore, partitionPk: string): Promise<PartitionLook> {
  const [cursor, counter] = await Promise.all([
    ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: cursorKey(partitionPk) })),
    ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk) })),
  ]);
  return {
    ...(cursor.Item ? { cursor: cursor.Item as CursorItem } : {}),
    counter: counterView(counter.Item as Record<string, unknown> | undefined),
  };
}

/**
 * The head as a look sees it: positions `taken + 1` to `taken + max` (no further than `next`),
 * by position; a position absent from the map holds nothing (yet). Key: the partition's
 * positions, one Query of the range, eventually consistent, `Limit` `max` (0.5 read units a
 * started 4 KB). No condition, no write. Nothing to read (an empty head): no call.
 */
export async function readHeadPositions(ctx: PositionStore, partitionPk: string, counter: CounterView, max: number): Promise<Map<number, PositionedItem>> {
  const found = new Map<number, PositionedItem>();
  const first = counter.taken + 1;
  const last = Math.min(counter.next, counter.taken + max);
  if (last < first) return found;
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
      ExpressionAttributeValues: { ':pk': partitionPk, ':lo': padPosition(first), ':hi': padPosition(last) },
      Limit: last - first + 1,
    }),
  );
  for (const item of (out.Items ?? []) as PositionedItem[]) found.set(positionOfSk(item.sk), item);
  return found;
}
