/**
 * Marker items: small items that remember that something happened, so the broker does it
 * once or finds it again. Ready marks (a partition may hold receivable messages), duplicate
 * detection markers (S7), a topic's scheduled copies (S6) and the stream consumer's handled
 * TTL removals (T7). Keys in keys.ts; the decisions about them stay with their callers.
 */
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { duplicateMarkerKey, readyMarksKey, scheduledCopiesKey, type Key } from './keys.js';
import { conditionally } from './outcomes.js';
import type { TransactionPart } from './messages.js';

export type MarkerStore = Pick<Deps, 'db' | 'tableName'>;

/** The item exists: a ready-marks item that was created with its entity and not yet reaped. */
const itemExists = 'attribute_exists(pk)';
/** No item has this key (a marker not written before). */
const itemIsNew = 'attribute_not_exists(pk)';

const markAttribute = (partition: number) => `p${partition}`;

/** The item an entity that keeps ready marks is created with. */
export const readyMarksItem = (eid: string) => ({ ...readyMarksKey(eid), eid });

/**
 * Marks `partitions` of an incarnation as maybe holding receivable messages, at `now`.
 * Key: readyMarksKey(eid). Condition: `itemExists`. Success: true, the marks are durable.
 * Failure: false when the item is gone (the incarnation was reaped, E4); other errors throw.
 */
export async function setReadyMarks(ctx: MarkerStore, eid: string, partitions: readonly number[], now: number): Promise<boolean> {
  const names: Record<string, string> = {};
  for (const p of partitions) names[`#${markAttribute(p)}`] = markAttribute(p);
  const written = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: readyMarksKey(eid),
        UpdateExpression: `SET ${partitions.map((p) => `#${markAttribute(p)} = :now`).join(', ')}`,
        ConditionExpression: itemExists,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':now': now },
      }),
    ),
  );
  return written !== undefined;
}

/**
 * The marks of an incarnation: partition → when it was marked (an eventually consistent read,
 * 0.5 unit). Key: readyMarksKey(eid). No condition. An absent item answers no marks.
 */
export async function getReadyMarks(ctx: MarkerStore, eid: string): Promise<(partition: number) => number | undefined> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: readyMarksKey(eid) }));
  const item = got.Item ?? {};
  return (partition) => item[markAttribute(partition)] as number | undefined;
}

/**
 * Removes a partition's mark if it is still `mark`. Key: readyMarksKey(eid). Condition: the
 * mark equals `mark` (a newer mark stays: it may cover a message). Success and a failed
 * condition both resolve; other errors throw.
 */
export async function clearReadyMark(ctx: MarkerStore, eid: string, partition: number, mark: number): Promise<void> {
  await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: readyMarksKey(eid),
        UpdateExpression: 'REMOVE #p',
        ConditionExpression: '#p = :mark',
        ExpressionAttributeNames: { '#p': markAttribute(partition) },
        ExpressionAttributeValues: { ':mark': mark },
      }),
    ),
  );
}

/** S7's marker of a message id: until when it counts, and the first message's receipt. */
export type DuplicateMarker = Key & { expiresAt: number; ttl: number; seq?: string; enqueuedAt?: number; messageExpiresAt?: number };

/** A marker that no longer counts: its window ended at or before `now`. */
const markerLapsed = 'expiresAt <= :now';

/**
 * The transaction part that writes a duplicate marker with the messages it covers.
 * Key: duplicateMarkerKey. Condition: `itemIsNew` OR `markerLapsed`. A failed condition is
 * a duplicate within the window (the caller reads the marker for the first receipt).
 */
export const duplicateMarkerPart = (ctx: MarkerStore, marker: DuplicateMarker, now: number): TransactionPart => ({
  Put: {
    TableName: ctx.tableName,
    Item: marker,
    ConditionExpression: `${itemIsNew} OR ${markerLapsed}`,
    ExpressionAttributeValues: { ':now': now },
  },
});

/** The duplicate marker of a message id, read consistently; undefined when there is none. Key: duplicateMarkerKey. */
export async function getDuplicateMarker(ctx: MarkerStore, eid: string, messageId: string): Promise<Record<string, unknown> | undefined> {
  return (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: duplicateMarkerKey(eid, messageId), ConsistentRead: true }))).Item;
}

/** Writes a duplicate marker unconditionally (after copies too large for one transaction). Key: duplicateMarkerKey. */
export async function putDuplicateMarker(ctx: MarkerStore, marker: DuplicateMarker): Promise<void> {
  await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: marker }));
}

/**
 * S6 on a topic: where the copies of one scheduled send went, kept until `ttl` (epoch seconds).
 * Key: scheduledCopiesKey(topicEid, seq), a number no other send has. No condition; throws on failure.
 */
export async function putScheduledCopies(ctx: MarkerStore, topicEid: string, seq: bigint | string, copies: readonly Key[], ttl: number): Promise<void> {
  await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: { ...scheduledCopiesKey(topicEid, seq), copies, ttl } }));
}

/**
 * The transaction part that remembers a handled TTL removal (T7), written with what the removal
 * put back or dead-lettered. Key: handledMarkerKey. Condition: `itemIsNew`; a failed condition
 * means the removal was handled before.
 */
export const handledMarkerPart = (ctx: MarkerStore, marker: Key & { ttl: number }): TransactionPart => ({
  Put: { TableName: ctx.tableName, Item: marker, ConditionExpression: itemIsNew },
});

/**
 * Deletes an incarnation's ready-marks item (E4, after its partitions are empty): from then on
 * `setReadyMarks` fails for it. Key: readyMarksKey(eid). No condition (idempotent); errors throw.
 */
export async function deleteReadyMarks(ctx: MarkerStore, eid: string): Promise<void> {
  await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: readyMarksKey(eid) }));
}

/** S6 on a topic: where the copies of one scheduled send went (read consistently); none when the marker is gone. Key: scheduledCopiesKey. */
export async function getScheduledCopies(ctx: MarkerStore, topicEid: string, seq: bigint | string): Promise<Key[]> {
  const marker = (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: scheduledCopiesKey(topicEid, seq), ConsistentRead: true }))).Item;
  return (marker?.copies ?? []) as Key[];
}
