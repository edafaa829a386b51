/**
 * An entity's runtime counts (E6) and the stream consumer's markers of the records it counted.
 * A marker belongs to one message item and holds the event ids of that item's records that were
 * counted; it is written in the same transaction as the counts those records add, so a replayed
 * record adds nothing (stream.ts in the broker decides what each record adds).
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetItems } from './batch-get.js';
import type { Deps } from '../deps.js';
import { countedMarkerKey, statsKey, type Key } from './keys.js';
import { conditionally } from './outcomes.js';

export type CountsStore = Pick<Deps, 'db' | 'tableName'>;

export type Bucket = 'active' | 'deadLetter' | 'scheduled' | 'transfer' | 'deferred';
export type Counts = Record<Bucket | 'sizeInBytes', number>;

/** None of the records is counted yet: no event id in the item's marker (an absent marker holds none). */
const noneCountedYet = (events: readonly string[]) => events.map((_, i) => `NOT contains(#events, :e${i})`).join(' AND ');
/** The entity's stats item exists (deleting an entity removes its counts with it). */
const statsExist = 'attribute_exists(pk)';

/** The transaction item that adds `sum` to an entity's counts, while its stats item exists. */
function countsUpdate(ctx: CountsStore, eid: string, sum: Counts) {
  // Counter names go through aliases: some (`deferred`) are DynamoDB reserved words.
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const adds = (Object.keys(sum) as (keyof Counts)[]).map((k) => {
    values[`:${k}`] = sum[k];
    names[`#c_${k}`] = k;
    return `#c_${k} :${k}`;
  });
  return {
    Update: {
      TableName: ctx.tableName,
      Key: statsKey(eid),
      UpdateExpression: `ADD ${adds.join(', ')}`,
      ConditionExpression: statsExist,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/** The records of one message item counted together: the item's key and their stream event ids. */
export interface ItemRecords {
  item: Key;
  events: readonly string[];
}

/** The transaction item that adds `events` to the marker of their message item, while none of them is in it. */
function markerUpdate(ctx: CountsStore, { item, events }: ItemRecords, ttl: number) {
  const values: Record<string, unknown> = { ':events': new Set(events), ':ttl': ttl };
  events.forEach((e, i) => (values[`:e${i}`] = e));
  return {
    Update: {
      TableName: ctx.tableName,
      Key: countedMarkerKey(item),
      UpdateExpression: 'ADD #events :events SET #ttl = :ttl',
      ConditionExpression: noneCountedYet(events),
      ExpressionAttributeNames: { '#events': 'events', '#ttl': 'ttl' },
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * Marks the records as counted, per message item, and adds each entity's sum to its counts, in
 * one transaction (at most 100 items: the caller chunks, one marker per item).
 *
 * A marker per message item, not per record: an item's insert and removal that arrive in one
 * batch (a message life shorter than the stream's batching window) cost one small write, not
 * two, and a record is still recognised in whatever batch it comes again.
 *
 * Keys: countedMarkerKey(item) per item, then statsKey(eid) per entity, in that order.
 * Conditions: `noneCountedYet` per marker, `statsExist` per entity. Success: resolves, every
 * record counted once; each marker lives until `ttl` (epoch seconds). Failure: throws
 * DynamoDB's error; a cancellation's reasons name the markers that already hold one of their
 * records (read them with `countedEvents`) and the entities deleted (parts in the order above).
 */
export async function addCounts(ctx: CountsStore, items: readonly ItemRecords[], ttl: number, sums: ReadonlyMap<string, Counts>): Promise<void> {
  await ctx.db.send(
    new TransactWriteCommand({
      TransactItems: [...items.map((i) => markerUpdate(ctx, i, ttl)), ...[...sums].map(([eid, sum]) => countsUpdate(ctx, eid, sum))],
    }),
  );
}

/**
 * Marks one message item's records as counted when together they move no count (a message
 * sent and removed within one batch): with nothing to add, the marker needs no transaction and
 * costs 1 write unit instead of 2.
 *
 * Key: countedMarkerKey(item). Condition: `noneCountedYet`. Success: true, the records are
 * counted. Failure: false when one of them was counted before (their sum is then not what is
 * owed: the caller counts them with `addCounts`); other errors throw.
 */
export async function markCountedAlone(ctx: CountsStore, records: ItemRecords, ttl: number): Promise<boolean> {
  return (await conditionally(ctx.db.send(new UpdateCommand(markerUpdate(ctx, records, ttl).Update)))) !== undefined;
}

/**
 * The event ids counted for one message item (a consistent read of its marker; none when it is
 * absent). Key: countedMarkerKey(item). No condition; errors throw.
 */
export async function countedEvents(ctx: CountsStore, item: Key): Promise<ReadonlySet<string>> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: countedMarkerKey(item), ConsistentRead: true }));
  return new Set((got.Item?.events as Set<string> | undefined) ?? []);
}

/**
 * The counts of `eids` (E6): their stats items by key (batch-get.ts, eventually consistent,
 * asking again for what DynamoDB leaves unprocessed until it answers). Keys: statsKey(eid). No
 * condition. Returns eid → its counts; an entity without a stats item is absent. Errors throw.
 */
export async function getCounts(ctx: Pick<Deps, 'db' | 'tableName' | 'clock'>, eids: readonly string[]): Promise<Map<string, Partial<Counts>>> {
  const { items } = await batchGetItems<Partial<Counts> & { eid: string }>(ctx, eids.map(statsKey));
  return new Map(items.map((item) => [item.eid, item]));
}
