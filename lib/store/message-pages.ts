/**
 * Page reads and page deletes of message partitions: peek's pages, bulk deletion's candidates
 * and their guarded deletes, resubmit's pages of a dead-letter subqueue, and the key pages the
 * reaper deletes what a deleted entity left behind through, and the cancel of scheduled messages (S6). Keys in keys.ts; which pages to
 * read and what to do with them stays with the broker.
 */
import { BatchWriteCommand, DeleteCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import type { MessageItem } from '../messages/item.js';
import { tableIndex, TIME_DIGITS, type Key } from './keys.js';
import { messageOfStored, type StoredMessageItem } from './message-layout.js';
import { conditionally, isConflict } from './outcomes.js';
import { queryPages } from './query.js';
import { backoff, UNPROCESSED_BACKOFF } from '../backoff.js';

export type PageStore = Pick<Deps, 'db' | 'tableName' | 'clock'>;

/** One partition's (pk) items. */
const inPartition = 'pk = :pk';
/** One partition's items from a sort key on. */
const inPartitionFrom = 'pk = :pk AND sk >= :from';

/**
 * Peek's page (R8): up to `limit` items of partition `pk` from sort key `from` on, an eventually
 * consistent Query. No condition. Returns the items and whether the page ended early (a
 * LastEvaluatedKey: more may follow its last item).
 */
export async function peekPage(ctx: PageStore, pk: string, from: string, limit: number): Promise<{ items: MessageItem[]; more: boolean }> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: inPartitionFrom,
      ExpressionAttributeValues: { ':pk': pk, ':from': from },
      Limit: limit,
    }),
  );
  return { items: ((out.Items ?? []) as StoredMessageItem[]).map(messageOfStored), more: out.LastEvaluatedKey !== undefined };
}

/** What bulk deletion reads of a message: enough to tell whether it may take it (R11). */
export interface BulkCandidate {
  pk: string;
  sk: string;
  slk?: string;
  sessionId?: string;
  deliveryCount?: number;
}

/** What bulk deletion may take (R11), as a condition: the expression with its names and values. */
export interface BulkEligibility {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** Not deferred and not locked at :now (R11). */
const notDeferredNorLocked = '#state <> :deferred AND (attribute_not_exists(lockedUntil) OR lockedUntil <= :now)';
/** Enqueued before :before. */
const enqueuedBefore = 'enqueuedAt < :before';

/** R11's eligibility at `now`, with `before` when given. */
export function bulkEligibility(now: number, before?: number): BulkEligibility {
  return {
    expression: `${notDeferredNorLocked}${before !== undefined ? ` AND ${enqueuedBefore}` : ''}`,
    names: { '#state': 'state' },
    values: { ':deferred': 'Deferred', ':now': now, ...(before !== undefined ? { ':before': before } : {}) },
  };
}

/**
 * Bulk deletion's candidates in partition `pk`, pages of up to 250 read (eventually consistent),
 * filtered by `eligible`, projected to BulkCandidate. No condition.
 */
export function bulkCandidatePages(ctx: PageStore, pk: string, eligible: BulkEligibility): AsyncGenerator<BulkCandidate[]> {
  return queryPages<BulkCandidate>(ctx, {
    KeyConditionExpression: inPartition,
    FilterExpression: eligible.expression,
    ExpressionAttributeNames: eligible.names,
    ExpressionAttributeValues: { ':pk': pk, ...eligible.values },
    ProjectionExpression: 'pk, sk, slk, sessionId, deliveryCount',
    Limit: 250,
  });
}

/**
 * Deletes one candidate if it is still eligible. Key: the candidate's. Condition: `eligible`
 * (the facts the read filtered on). Success: true. Failure: false when the condition did not
 * hold (locked or gone meanwhile); other errors throw.
 */
export async function deleteIfEligible(ctx: PageStore, key: Key, eligible: BulkEligibility): Promise<boolean> {
  const out = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: { pk: key.pk, sk: key.sk },
        ConditionExpression: eligible.expression,
        ExpressionAttributeNames: eligible.names,
        ExpressionAttributeValues: eligible.values,
      }),
    ),
  );
  return out !== undefined;
}

/** The session whose record may hold a candidate: its item's key, at `now`. */
export interface HoldingSession {
  key: Key;
  now: number;
}

/**
 * How many session messages one group delete takes: the check's condition names each, and a
 * condition expression may be 4 KB long (also well under a transaction's 100 items and 4 MB).
 */
export const SESSION_GROUP_MAX = 40;

/**
 * Deletes up to SESSION_GROUP_MAX messages of one session if each is still eligible and no live
 * lock of the session holds any of them by its record (R11, N3), in one transaction: the
 * deletes, and one check of the session item, so the group costs one check, not one a message.
 * A receive under the session lock records what it hands out before it reads it, so for each
 * message either the record came first (the check fails) or the delete did (the receive finds
 * nothing to hand out). Keys: each
 * candidate's, then `session.key`. Conditions: `eligible` AND the count read, on each message;
 * on the session item, the lock not live, or the record another lock's, or no entry of the
 * group at its message's count + 1. Success: true (all deleted). Failure: false when any
 * condition did not hold, or when a group of more than one met another transaction (nothing
 * deleted; the caller takes the group one by one). Throttling, and a conflict on a group of
 * one, throw the store's error (retryable): such a message is not held, only not deleted yet.
 */
export async function deleteGroupIfEligibleAndUnheld(
  ctx: PageStore,
  group: (Key & { deliveryCount?: number })[],
  eligible: BulkEligibility,
  session: HoldingSession,
): Promise<boolean> {
  if (group.length === 0 || group.length > SESSION_GROUP_MAX) throw new Error(`a session group holds 1 to ${SESSION_GROUP_MAX} messages`);
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':now': session.now };
  const unheld = group.map((c, i) => {
    names[`#s${i}`] = c.sk;
    values[`:h${i}`] = (c.deliveryCount ?? 0) + 1;
    return `attribute_not_exists(held.m.#s${i}) OR held.m.#s${i}[0] <> :h${i}`;
  });
  // DynamoDB refuses parentheses it finds redundant, so a group of one names its message bare.
  const noneHeld = unheld.length === 1 ? unheld[0]! : `(${unheld.map((u) => `(${u})`).join(' AND ')})`;
  const deleting = conditionally(
    ctx.db.send(
      new TransactWriteCommand({
        TransactItems: [
          ...group.map((c) => ({
            Delete: {
              TableName: ctx.tableName,
              Key: { pk: c.pk, sk: c.sk },
              ConditionExpression: `${eligible.expression} AND deliveryCount = :count`,
              ExpressionAttributeNames: eligible.names,
              ExpressionAttributeValues: { ...eligible.values, ':count': c.deliveryCount ?? 0 },
            },
          })),
          {
            ConditionCheck: {
              TableName: ctx.tableName,
              Key: session.key,
              ConditionExpression: `attribute_not_exists(lockedUntil) OR lockedUntil <= :now OR held.t <> lockToken OR ${noneHeld}`,
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: values,
            },
          },
        ],
      }),
    ),
  );
  try {
    return (await deleting) !== undefined;
  } catch (e) {
    if (group.length > 1 && isConflict(e)) return false;
    throw e;
  }
}

/**
 * Deletes one session message if it is still eligible and no live session lock's record holds
 * it (R11, N3): `deleteGroupIfEligibleAndUnheld` of a group of one (its delete and a check of
 * the session item, in one transaction). Success: true. Failure: false when either condition
 * did not hold, or the transaction met another write of either item; other errors throw.
 */
export const deleteIfEligibleAndUnheld = (ctx: PageStore, c: Key & { deliveryCount?: number }, eligible: BulkEligibility, session: HoldingSession) =>
  deleteGroupIfEligibleAndUnheld(ctx, [c], eligible, session);

/** Every item of partition `pk`, in pages of up to 100 (eventually consistent). No condition. */
export async function* messagePages(ctx: PageStore, pk: string): AsyncGenerator<MessageItem[]> {
  for await (const page of queryPages<StoredMessageItem>(ctx, { KeyConditionExpression: inPartition, ExpressionAttributeValues: { ':pk': pk }, Limit: 100 }))
    yield page.map(messageOfStored);
}

/**
 * One page of the keys under `pk` (up to `limit`, consistent when asked), deleted. Key: each
 * item's. No condition. Returns how many were deleted (0: nothing is left); errors throw.
 */
export async function deleteKeyPage(ctx: PageStore, pk: string, page: { limit: number; consistentRead?: boolean }): Promise<number> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: inPartition,
      ExpressionAttributeValues: { ':pk': pk },
      ProjectionExpression: 'pk, sk',
      Limit: page.limit,
      ...(page.consistentRead ? { ConsistentRead: true } : {}),
    }),
  );
  return deleteKeys(ctx, (out.Items ?? []) as Key[]);
}

/**
 * Deletes `keys` by BatchWriteItem, 25 a call, retrying what DynamoDB leaves unprocessed (with
 * backoff) until none is. No condition. Returns how many keys; errors throw.
 */
export async function deleteKeys(ctx: PageStore, keys: readonly Key[]): Promise<number> {
  for (let i = 0; i < keys.length; i += 25) {
    let request: Record<string, unknown[]> | undefined = {
      [ctx.tableName]: keys.slice(i, i + 25).map((k) => ({ DeleteRequest: { Key: { pk: k.pk, sk: k.sk } } })),
    };
    for (let attempt = 0; request && Object.keys(request).length; attempt++) {
      if (attempt > 0) await backoff(ctx.clock, attempt - 1, UNPROCESSED_BACKOFF);
      const out = await ctx.db.send(new BatchWriteCommand({ RequestItems: request as never }));
      request = out.UnprocessedItems as typeof request;
    }
  }
  return keys.length;
}

/** Still scheduled at :now: not yet due (S6). */
const stillScheduled = '#state = :scheduled AND enqueuedAt > :now';
const scheduledNames = { '#state': 'state' };
const scheduledValues = (now: number) => ({ ':scheduled': 'Scheduled', ':now': now });

/**
 * Cancels one scheduled message (S6). Key: `key`. Condition: `stillScheduled` at `now`.
 * Success: the message as it was. Failure: undefined when it is not (or no longer) scheduled;
 * other errors throw.
 */
export async function deleteScheduled(ctx: PageStore, key: Key, now: number): Promise<MessageItem | undefined> {
  const out = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: key,
        ConditionExpression: stillScheduled,
        ExpressionAttributeNames: scheduledNames,
        ExpressionAttributeValues: scheduledValues(now),
        ReturnValues: 'ALL_OLD',
      }),
    ),
  );
  return out ? messageOfStored(out.Attributes as StoredMessageItem) : undefined;
}

/**
 * Cancels a topic's scheduled copies (S6), at most 99 with the marker, in one transaction.
 * Keys: each copy's, then `marker` when given (deleted unconditionally). Condition:
 * `stillScheduled` at `now` on each copy. Success: resolves, all gone. Failure: throws
 * DynamoDB's error (read it with outcomes.ts); nothing was deleted.
 */
export async function deleteScheduledCopies(ctx: PageStore, copies: readonly Key[], now: number, marker?: Key): Promise<void> {
  await ctx.db.send(
    new TransactWriteCommand({
      TransactItems: [
        ...copies.map((Key) => ({
          Delete: {
            TableName: ctx.tableName,
            Key,
            ConditionExpression: stillScheduled,
            ExpressionAttributeNames: scheduledNames,
            ExpressionAttributeValues: scheduledValues(now),
          },
        })),
        ...(marker ? [{ Delete: { TableName: ctx.tableName, Key: marker } }] : []),
      ],
    }),
  );
}

/**
 * The latest time ahead in partition `pk` of the ready index: one newest-first read (Limit 1,
 * projected to rsk) of the entries above `upper`. No condition. Returns that entry's time, or
 * 0 when there is none.
 */
export async function latestReadyAbove(ctx: PageStore, pk: string, upper: string): Promise<number> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.ready,
      KeyConditionExpression: 'rpk = :pk AND rsk > :upper',
      ExpressionAttributeValues: { ':pk': pk, ':upper': upper },
      ProjectionExpression: 'rsk',
      ScanIndexForward: false,
      Limit: 1,
    }),
  );
  const rsk = out.Items?.[0]?.rsk as string | undefined;
  return rsk ? Number(rsk.slice(0, TIME_DIGITS)) : 0;
}
