/**
 * What one positioned partition holds (E6), read only when counts are asked for: nothing on the
 * send, receive or settle path writes for it, and the stream never sees positioned items.
 *
 * A partition's messages are of two kinds (positions.ts, leases.ts):
 * - below the cursor's `pos`: every position was taken or passed, so what is still there is a
 *   message some lease holds (lapsed or not), one taken back and waiting in `back`, or, after a
 *   crash between a claim's cursor write and its clean-up, a passed void request's message
 *   (its request's tombstone is below the cursor too). A complete deletes its message, so this
 *   Query finds exactly the messages not settled: it reads the locked ones (and tombstones,
 *   about 60 bytes, for a day), never the backlog;
 * - from `pos` on: drawn (the counter's `next`) but not yet claimed. The first `HEAD_SAMPLE`
 *   positions are read; past them each drawn position counts as a message, of their mean size.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { cursorKey, padPosition, positionCounterKey, positionOfSk } from './keys.js';
import { TICKETED } from './leases.js';
import { messagesOfVoidRequests, type PositionedItem, type PositionStore } from './positions.js';
import { queryAll } from './query.js';

/** How many positions from the cursor on are read: a queue holding no more is counted exactly. */
export const HEAD_SAMPLE = 10;

export interface PartitionTally {
  /** Messages not yet settled: unclaimed, locked (lapsed or not) or taken back (E6's active). */
  active: number;
  sizeInBytes: number;
  /** Of `active`, those under a lease or in `back`, found below the cursor. */
  held: number;
  /** Of `active`, drawn positions past the sample counted without being read. */
  unread: number;
}

type Sized = PositionedItem & { size?: number };

/** The messages of `items`, leaving out tombstones, `done` markers (a ticketed partition's completes) and the messages of a request with a tombstone among `items`. */
function messagesOf(items: readonly Sized[]): Sized[] {
  const voided = new Set(messagesOfVoidRequests(items));
  return items.filter((i) => !i.tomb && i.done === undefined && !voided.has(i));
}

const bytesOf = (items: readonly Sized[]) => items.reduce((sum, i) => sum + (i.size ?? 0), 0);

/**
 * Reads the partition: its counter and cursor by key, side by side, then two Queries side by
 * side, the positions below the cursor (every page) and `HEAD_SAMPLE` from it. Keys:
 * `positionCounterKey`, `cursorKey`, the partition's own. No condition; eventually
 * consistent. Cost: 0.5 read unit each key, and each Query 0.5 a started 4 KB of the items it
 * reads: the messages held and the sample, never the backlog past it. Errors throw.
 *
 * What it reports, against what the partition holds at one instant:
 * - exact while nothing moves and no more than `HEAD_SAMPLE` messages wait unclaimed
 *   (tombstones, void requests and holes in the sample are left out);
 * - a message completed or taken back since a replica last saw it may still count, for the
 *   second an eventually consistent read lags;
 * - past the sample, a drawn position counts as a message of the sample's mean size even when
 *   it is a hole a sender left, a position whose put is still on its way, a tombstone or a
 *   message of a void request: an overcount until a claim (or the sweeper's expiry pass) passes
 *   it, and a size that is an estimate;
 * - an expired message counts until it is removed (T7).
 */
export async function tallyPartition(ctx: PositionStore, partitionPk: string): Promise<PartitionTally> {
  const [counter, cursor] = await Promise.all([
    ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk) })),
    ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: cursorKey(partitionPk) })),
  ]);
  const next = Number((counter.Item as { next?: number } | undefined)?.next ?? 0);
  const taken = Number((counter.Item as { taken?: number } | undefined)?.taken ?? 0);
  const cursorPos = Number((cursor.Item as { pos?: number } | undefined)?.pos ?? 1);
  // A ticketed partition's cursor stands past every position: its head starts past `taken`, and
  // what is left below it is held by a ticket, queued in `back` or a `done` marker (E6).
  const pos = cursorPos === TICKETED ? taken + 1 : cursorPos;
  const [below, sample] = await Promise.all([heldBelow(ctx, partitionPk, pos), next >= pos ? headSample(ctx, partitionPk, pos) : undefined]);
  const held = messagesOf(below);
  const sampled = sample ? messagesOf(sample.items) : [];
  // Past the last position read, every drawn position counts (there are none when the Query reached the end).
  const unread = sample?.more ? Math.max(0, next - sample.last) : 0;
  const known = [...sampled, ...held];
  const mean = known.length > 0 ? bytesOf(known) / known.length : 0;
  return {
    active: held.length + sampled.length + unread,
    sizeInBytes: Math.round(bytesOf(known) + unread * mean),
    held: held.length,
    unread,
  };
}

const COUNTED_ATTRIBUTES = { ProjectionExpression: 'sk, tomb, done, rf, rn, #size', ExpressionAttributeNames: { '#size': 'size' } };

/** The items below position `pos`, every page. */
async function heldBelow(ctx: PositionStore, partitionPk: string, pos: number): Promise<Sized[]> {
  return queryAll<Sized>(ctx, {
    KeyConditionExpression: 'pk = :pk AND sk < :pos',
    ExpressionAttributeValues: { ':pk': partitionPk, ':pos': padPosition(pos) },
    ...COUNTED_ATTRIBUTES,
  });
}

/** Up to `HEAD_SAMPLE` items from position `pos` on; `more` when the partition goes on past `last`. */
async function headSample(ctx: PositionStore, partitionPk: string, pos: number): Promise<{ items: Sized[]; more: boolean; last: number }> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk AND sk >= :pos',
      ExpressionAttributeValues: { ':pk': partitionPk, ':pos': padPosition(pos) },
      ...COUNTED_ATTRIBUTES,
      Limit: HEAD_SAMPLE,
    }),
  );
  const items = (out.Items ?? []) as Sized[];
  return { items, more: out.LastEvaluatedKey !== undefined, last: out.LastEvaluatedKey ? positionOfSk(String(out.LastEvaluatedKey.sk)) : pos - 1 };
}
