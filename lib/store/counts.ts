/**
 * An entity's runtime counts (E6) and the stream consumer's markers of the records it counted.
 * A record's marker and the counts it adds go in one transaction, so a replayed record adds
 * nothing (stream.ts in the broker decides what each record adds).
 */
import { BatchGetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { statsKey, type Key } from './keys.js';

export type CountsStore = Pick<Deps, 'db' | 'tableName'>;

export type Bucket = 'active' | 'deadLetter' | 'scheduled' | 'transfer' | 'deferred';
export type Counts = Record<Bucket | 'sizeInBytes', number>;

/** The record was not counted before (its marker is absent). */
const notCountedYet = 'attribute_not_exists(pk)';
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

/**
 * Writes the markers of counted records and adds each entity's sum to its counts, in one
 * transaction (at most 100 items: the caller chunks).
 *
 * Keys: each marker's (countedMarkerKey, sk 'counted'), then statsKey(eid) per entity, in that
 * order. Conditions: `notCountedYet` per marker, `statsExist` per entity. Success: resolves,
 * every record counted once. Failure: throws DynamoDB's error; a cancellation's reasons name
 * the markers counted before and the entities deleted (parts in the order above).
 */
export async function addCounts(ctx: CountsStore, markerPks: readonly string[], ttl: number, sums: ReadonlyMap<string, Counts>): Promise<void> {
  await ctx.db.send(
    new TransactWriteCommand({
      TransactItems: [
        ...markerPks.map((pk) => ({ Put: { TableName: ctx.tableName, Item: { pk, sk: 'counted', ttl }, ConditionExpression: notCountedYet } })),
        ...[...sums].map(([eid, sum]) => countsUpdate(ctx, eid, sum)),
      ],
    }),
  );
}

/**
 * The counts of `eids` (E6): BatchGetItem of their stats items, 100 keys a call (eventually
 * consistent), asking again for what DynamoDB leaves unprocessed. Keys: statsKey(eid). No
 * condition. Returns eid → its counts; an entity without a stats item is absent. Errors throw.
 */
export async function getCounts(ctx: CountsStore, eids: readonly string[]): Promise<Map<string, Partial<Counts>>> {
  const result = new Map<string, Partial<Counts>>();
  for (let i = 0; i < eids.length; i += 100) {
    const keys = eids.slice(i, i + 100).map(statsKey);
    let request: Record<string, { Keys: Key[] }> | undefined = { [ctx.tableName]: { Keys: keys } };
    while (request && Object.keys(request).length) {
      const out = await ctx.db.send(new BatchGetCommand({ RequestItems: request as never }));
      for (const item of out.Responses?.[ctx.tableName] ?? []) result.set(item.eid as string, item as Partial<Counts>);
      request = out.UnprocessedKeys as typeof request;
    }
  }
  return result;
}
