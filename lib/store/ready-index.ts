/**
 * Reads of the `ready` index (what a receive may take, oldest visible first) and of the `due`
 * index (the sweeper's agenda). Each operation is one Query page: the caller decides whether
 * to read on, so a read that has enough stops paying for more.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { tableIndex } from './keys.js';

type IndexStore = Pick<Deps, 'db' | 'tableName'>;

/** One page of an index Query: its items as the key condition selects them, and where the next page starts. */
export interface IndexPage<T> {
  items: T[];
  next?: Record<string, unknown>;
}

/** A `ready` partition's entries, all of them (`rpk = :pk`). */
const readyPartition = 'rpk = :pk';
/** A `ready` partition's entries visible at `upper` (their sort key at or before it). */
const readyUpTo = 'rpk = :pk AND rsk <= :upper';
/** A `ready` partition's entries that became visible in a window. */
const readyBetween = 'rpk = :pk AND rsk BETWEEN :from AND :to';
/** An agenda shard's entries due at `now`. */
const dueUpTo = 'dpk = :shard AND dsk <= :now';

/**
 * One page of a `ready` partition, oldest visibility first. Key: `rpk = pk`; with `upper`,
 * only entries with `rsk <= upper` (visible then); without, every entry (locked and scheduled
 * ones after the visible). Eventually consistent, `limit` entries at most, from `start`.
 * No condition; returns the page (empty when there is nothing).
 */
export async function readReadyPage<T>(
  ctx: IndexStore,
  read: { pk: string; upper?: string; limit: number; start?: Record<string, unknown> },
): Promise<IndexPage<T>> {
  const bounded = read.upper !== undefined;
  const result = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.ready,
      KeyConditionExpression: bounded ? readyUpTo : readyPartition,
      ExpressionAttributeValues: bounded ? { ':pk': read.pk, ':upper': read.upper } : { ':pk': read.pk },
      Limit: read.limit,
      ExclusiveStartKey: read.start,
    }),
  );
  return { items: (result.Items ?? []) as T[], next: result.LastEvaluatedKey };
}

/**
 * The first sort key of a `ready` partition (its oldest entry, in flight, scheduled or deferred
 * ones included). Key: `rpk = pk`. One eventually consistent Query, Limit 1, projected to rsk.
 * No condition. Returns the sort key, or undefined when the partition is empty.
 */
export async function firstReadySortKey(ctx: IndexStore, pk: string): Promise<string | undefined> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.ready,
      KeyConditionExpression: readyPartition,
      ExpressionAttributeValues: { ':pk': pk },
      ProjectionExpression: 'rsk',
      Limit: 1,
    }),
  );
  return out.Items?.[0]?.rsk as string | undefined;
}

/**
 * Whether a `ready` partition has an entry that became visible between `from` and `to`
 * (sort keys, inclusive). Key: `rpk = pk`, `rsk BETWEEN from AND to`. One eventually
 * consistent Query with Limit 1, so an idle partition costs one empty read.
 */
export async function anyReadyBetween(ctx: IndexStore, pk: string, from: string, to: string): Promise<boolean> {
  const page = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.ready,
      KeyConditionExpression: readyBetween,
      ExpressionAttributeValues: { ':pk': pk, ':from': from, ':to': to },
      Limit: 1,
    }),
  );
  return (page.Items ?? []).length > 0;
}

/**
 * One page of an agenda shard's entries due at `now`. Key: `dpk = shard`, `dsk <= now`.
 * Eventually consistent, 100 entries at most, from `start`. Rows carry the table's key and
 * the index's; returns the page.
 */
export async function readDuePage(
  ctx: IndexStore,
  shard: string,
  now: number,
  start?: Record<string, unknown>,
): Promise<IndexPage<{ pk: string; sk: string }>> {
  const page = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.due,
      KeyConditionExpression: dueUpTo,
      ExpressionAttributeValues: { ':shard': shard, ':now': now },
      Limit: 100,
      ExclusiveStartKey: start,
    }),
  );
  return { items: (page.Items ?? []) as { pk: string; sk: string }[], next: page.LastEvaluatedKey };
}
