/**
 * Stream records the consumer keeps failing to handle for a reason other than load: the count
 * of their failures, and, once they failed often enough, the record itself, parked in the
 * table for the sweeper to apply later, so the shard moves on and nothing it said is lost.
 * What a record says is the broker's (lib/broker/stream.ts); here it is kept as it is given.
 *
 * Nothing here is written while nothing fails: a parked record is also its own entry in the
 * sweeper's agenda (the `due` index), so no poller looks for it.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { dueShardOf, parkedRecordKey, PARKED_PK, streamFailureKey, type Key } from './keys.js';
import { conditionally } from './outcomes.js';

export type StreamFailureStore = Pick<Deps, 'db' | 'tableName'>;

/** A parked stream record as stored. */
export interface ParkedRecord extends Key {
  /** The message item the record is about. */
  item: Key;
  /** The record's stream event id (the parked item's sort key). */
  eventId: string;
  /** What the record says, in the consumer's own shape. */
  record: Record<string, unknown>;
  /** When it was parked (epoch ms, the broker clock). */
  parkedAt: number;
  /** Failed attempts to apply it, the stream's included. */
  attempts: number;
  /** The last failure's message, for the operator. */
  lastError: string;
  /** Its agenda entry: the `due` shard and when the sweeper tries it next. */
  dpk: string;
  dsk: number;
}

/** No item has this key yet. */
const itemIsNew = 'attribute_not_exists(pk)';
/** The item is still there (the sweeper has not applied and removed it). */
const itemExists = 'attribute_exists(pk)';

/** A failure's message, short enough for an item and for a log line. */
const shortened = (error: string) => (error.length > 500 ? `${error.slice(0, 497)}...` : error);

/**
 * Counts one more failure of a record. Key: streamFailureKey(item, eventId). No condition (the
 * first failure creates the item); it lives until `ttl` (epoch seconds). Success: how many
 * failures the record has had, this one included. Errors throw.
 */
export async function noteStreamFailure(ctx: StreamFailureStore, item: Key, eventId: string, error: string, ttl: number): Promise<number> {
  const out = await ctx.db.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: streamFailureKey(item, eventId),
      UpdateExpression: 'ADD attempts :one SET #ttl = :ttl, lastError = :error',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: { ':one': 1, ':ttl': ttl, ':error': shortened(error) },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.attempts ?? 1);
}

/**
 * Parks a record, due for the sweeper at `dueAt`. Key: parkedRecordKey(eventId), in the `due`
 * index under dueShardOf of that key. Condition: `itemIsNew`, so a replay of a record parked
 * before parks nothing more. Success: true when parked now, false when it was already parked;
 * either way it is durably there. Errors throw (then nothing was written).
 */
export async function parkRecord(
  ctx: StreamFailureStore,
  parked: Pick<ParkedRecord, 'item' | 'eventId' | 'record' | 'parkedAt' | 'attempts' | 'lastError'>,
  dueAt: number,
): Promise<boolean> {
  const key = parkedRecordKey(parked.eventId);
  const item: ParkedRecord = { ...key, ...parked, lastError: shortened(parked.lastError), dpk: dueShardOf(`${key.pk}/${key.sk}`), dsk: dueAt };
  const written = await conditionally(ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: item, ConditionExpression: itemIsNew })));
  return written !== undefined;
}

/** A parked record, read consistently; undefined once applied. Key: parkedRecordKey(eventId). No condition. */
export async function getParkedRecord(ctx: StreamFailureStore, eventId: string): Promise<ParkedRecord | undefined> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: parkedRecordKey(eventId), ConsistentRead: true }));
  return got.Item as ParkedRecord | undefined;
}

/**
 * Counts a failed application of a parked record and makes it due again at `dueAt`. Key:
 * parkedRecordKey(eventId). Condition: `itemExists`. Success and a failed condition (another
 * sweeper applied and removed it meanwhile) both resolve; other errors throw.
 */
export async function postponeParkedRecord(ctx: StreamFailureStore, eventId: string, dueAt: number, error: string): Promise<void> {
  await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: parkedRecordKey(eventId),
        UpdateExpression: 'ADD attempts :one SET dsk = :at, lastError = :error',
        ConditionExpression: itemExists,
        ExpressionAttributeValues: { ':one': 1, ':at': dueAt, ':error': shortened(error) },
      }),
    ),
  );
}

/** Removes a parked record once applied. Key: parkedRecordKey(eventId). No condition (idempotent); errors throw. */
export async function removeParkedRecord(ctx: StreamFailureStore, eventId: string): Promise<void> {
  await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: parkedRecordKey(eventId) }));
}

/**
 * How many records are parked: a Query of the parked partition that counts (half a read unit
 * while it is empty). Key: `pk = parked`. No condition; errors throw.
 */
export async function countParkedRecords(ctx: StreamFailureStore): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': PARKED_PK },
        Select: 'COUNT',
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}
