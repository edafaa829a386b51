/**
 * The stream consumer: runtime counts (E6) and DynamoDB TTL removals (T7's backstop).
 *
 * Counts: each message insert, change or removal moves one message between the buckets
 * of E6. Deltas are summed per entity and added in one update, with a watermark per
 * message partition (the last stream sequence number applied), so a replayed batch adds
 * nothing twice and counts never drift permanently.
 *
 * TTL removals: DynamoDB deleted an expired message. If its entity dead-letters on
 * expiration (T6), the message is put into the dead-letter subqueue under a sequence
 * number derived from the stream record, so a replay finds it there and adds no second copy.
 * Locked, deferred or dead-lettered messages carry no TTL; should one be removed anyway,
 * it is put back.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { itemOfImage } from '../store/stream-image.js';
import type { AttributeValue as StreamAttributeValue, DynamoDBRecord } from 'aws-lambda';
import type { MessageItem } from '../messages/item.js';
import { parseMessagePk, statsKey } from '../store/keys.js';
import { reasons } from '../rules/delivery.js';
import { conditionally, type BrokerContext } from './context.js';
import { entityResolver } from './lookup.js';
import { deadLetterTargets, expiryDescription } from './moves.js';
import { announceSessionMessages, renumber } from './message-items.js';

/** On AWS: a REMOVE by the DynamoDB service principal. DynamoDB Local names the event itself. */
export function isTtlRemoval(record: DynamoDBRecord): boolean {
  if (record.eventName === 'REMOVE') return record.userIdentity?.type === 'Service' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com';
  return (record.eventName as string) === 'UNKNOWN_TO_SDK_VERSION' && !record.dynamodb?.NewImage && !!record.dynamodb?.OldImage;
}

const image = (i: Record<string, StreamAttributeValue> | undefined) => itemOfImage<MessageItem>(i);

type Bucket = 'active' | 'deadLetter' | 'scheduled' | 'transfer' | 'deferred';

export function bucketOf(m: Pick<MessageItem, 'subqueue' | 'state'>): Bucket {
  if (m.subqueue === 'deadletter') return 'deadLetter';
  if (m.subqueue === 'transfer') return 'transfer';
  if (m.state === 'Deferred') return 'deferred';
  if (m.state === 'Scheduled') return 'scheduled';
  return 'active';
}

const padStreamSeq = (s: string) => s.padStart(40, '0');

interface Delta {
  counts: Record<Bucket | 'sizeInBytes', number>;
  /** per message partition: first and last stream sequence numbers in this batch */
  partitions: Map<string, { records: { seq: string; delta: Record<Bucket | 'sizeInBytes', number> }[] }>;
  firstSeq: string;
}

const zero = (): Record<Bucket | 'sizeInBytes', number> => ({ active: 0, deadLetter: 0, scheduled: 0, transfer: 0, deferred: 0, sizeInBytes: 0 });

export function deltaOf(oldImage: MessageItem | undefined, newImage: MessageItem | undefined) {
  const d = zero();
  if (oldImage) {
    d[bucketOf(oldImage)] -= 1;
    d.sizeInBytes -= oldImage.size ?? 0;
  }
  if (newImage) {
    d[bucketOf(newImage)] += 1;
    d.sizeInBytes += newImage.size ?? 0;
  }
  return d;
}

export async function processStream(ctx: BrokerContext, records: DynamoDBRecord[]): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> {
  const failures: string[] = [];
  const resolve = entityResolver(ctx);
  const byEntity = new Map<string, Delta>();
  for (const record of records) {
    const keys = record.dynamodb?.Keys;
    const pk = keys?.pk?.S;
    const seq = record.dynamodb?.SequenceNumber;
    if (!pk || !seq || !parseMessagePk(pk)) continue;
    const oldImage = image(record.dynamodb?.OldImage);
    const newImage = image(record.dynamodb?.NewImage);
    const eid = (newImage ?? oldImage)?.eid;
    if (!eid) continue;
    if (isTtlRemoval(record) && oldImage) {
      try {
        await handleTtlRemoval(ctx, record, oldImage, resolve);
      } catch {
        // Lambda retries from here; nothing after it may be counted yet, or the
        // watermark would pass this record and its retry would not be counted.
        failures.push(seq);
        break;
      }
    }
    let delta = byEntity.get(eid);
    if (!delta) {
      delta = { counts: zero(), partitions: new Map(), firstSeq: seq };
      byEntity.set(eid, delta);
    }
    const part = pk.split('/').slice(2).join('/');
    const list = delta.partitions.get(part) ?? { records: [] };
    list.records.push({ seq: padStreamSeq(seq), delta: deltaOf(oldImage, newImage) });
    delta.partitions.set(part, list);
  }
  for (const [eid, delta] of byEntity) {
    try {
      await applyCounts(ctx, eid, delta);
    } catch {
      failures.push(delta.firstSeq);
    }
  }
  // Lambda retries from the earliest failure; everything applied is protected by watermarks.
  failures.sort((a, b) => (padStreamSeq(a) < padStreamSeq(b) ? -1 : 1));
  return { batchItemFailures: failures.length ? [{ itemIdentifier: failures[0]! }] : [] };
}

type Watermarks = Record<string, string>;

/**
 * The conditional update that adds this batch's records to the counts and moves the
 * watermarks. With `marks` read from the stats item, only records newer than them count and
 * each watermark must still be what was read; without, every record is assumed new and
 * each watermark must be older than the batch (the common case: no replay, no read).
 * Undefined when nothing is left to add.
 */
function countsUpdate(ctx: BrokerContext, eid: string, delta: Delta, marks?: Watermarks) {
  const sum = zero();
  // Counter names go through aliases: some (`deferred`) are DynamoDB reserved words.
  const names: Record<string, string> = { '#wm': 'wm' };
  const values: Record<string, unknown> = {};
  const conditions = ['attribute_exists(#wm)'];
  const sets: string[] = [];
  let i = 0;
  for (const [part, { records }] of delta.partitions) {
    const mark = marks?.[part];
    const fresh = records.filter((r) => mark === undefined || r.seq > mark);
    if (fresh.length === 0) continue;
    for (const r of fresh) for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += r.delta[k];
    names[`#p${i}`] = part;
    values[`:m${i}`] = fresh[fresh.length - 1]!.seq;
    sets.push(`#wm.#p${i} = :m${i}`);
    if (marks === undefined) {
      values[`:first${i}`] = fresh[0]!.seq;
      conditions.push(`(attribute_not_exists(#wm.#p${i}) OR #wm.#p${i} < :first${i})`);
    } else if (mark === undefined) {
      conditions.push(`attribute_not_exists(#wm.#p${i})`);
    } else {
      values[`:o${i}`] = mark;
      conditions.push(`#wm.#p${i} = :o${i}`);
    }
    i++;
  }
  if (sets.length === 0) return undefined;
  const adds = (Object.keys(sum) as (keyof typeof sum)[]).map((k) => {
    values[`:${k}`] = sum[k];
    names[`#c_${k}`] = k;
    return `#c_${k} :${k}`;
  });
  return new UpdateCommand({
    TableName: ctx.tableName,
    Key: statsKey(eid),
    UpdateExpression: `SET ${sets.join(', ')} ADD ${adds.join(', ')}`,
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  });
}

/** False when the update's condition failed. */
async function tryUpdate(ctx: BrokerContext, update: UpdateCommand): Promise<boolean> {
  return (await conditionally(ctx.db.send(update))) !== undefined;
}

async function applyCounts(ctx: BrokerContext, eid: string, delta: Delta): Promise<void> {
  const optimistic = countsUpdate(ctx, eid, delta);
  if (!optimistic || (await tryUpdate(ctx, optimistic))) return;
  // A replay, a racing consumer, or no stats item: read the watermarks and add what is new.
  for (let attempt = 0; attempt < 5; attempt++) {
    const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: statsKey(eid), ConsistentRead: true }));
    if (!got.Item) return; // entity deleted: its counts went with it
    if (!got.Item.wm) {
      // A stats item without the watermark map (made before it existed): add it, then go on.
      await tryUpdate(
        ctx,
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: statsKey(eid),
          UpdateExpression: 'SET #wm = if_not_exists(#wm, :empty)',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#wm': 'wm' },
          ExpressionAttributeValues: { ':empty': {} },
        }),
      );
      continue;
    }
    const update = countsUpdate(ctx, eid, delta, got.Item.wm as Watermarks);
    if (!update || (await tryUpdate(ctx, update))) return;
  }
  throw new Error(`counts for ${eid} kept conflicting`);
}

/** How long a TTL removal is remembered as handled: longer than the stream keeps records (24 h). */
const HANDLED_MEMORY_S = 2 * 24 * 3600;

async function handleTtlRemoval(ctx: BrokerContext, record: DynamoDBRecord, item: MessageItem, resolve: ReturnType<typeof entityResolver>) {
  const entity = await resolve(item.entity, item.eid);
  if (!entity) return; // orphan of a deleted entity (E4): nothing to keep
  const removedAt = (record.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000;
  const protectedItem = item.subqueue !== 'active' || item.state === 'Deferred' || (item.lockedUntil !== undefined && item.lockedUntil > removedAt);
  let targets: MessageItem[];
  if (protectedItem) {
    // T5, T8, T9, D6: never removed by TTL. Should it happen, the message comes back as it was.
    const { ttl: _ttl, ...restored } = item;
    targets = [restored as MessageItem];
  } else if (entity.deadLetteringOnMessageExpiration) {
    targets = await deadLetterTargets(ctx, entity, item, { reason: reasons.expired, description: expiryDescription });
  } else {
    return; // T6: deleted
  }
  // The marker and the copies in one transaction: a replayed record finds the marker and
  // adds nothing, even after the copy was received and completed (D3).
  const marker = {
    pk: `handled/${item.pk}`,
    sk: record.eventID ?? `${item.sk}@${removedAt}`,
    ttl: Math.floor(ctx.clock.now() / 1000) + HANDLED_MEMORY_S,
  };
  await announceSessionMessages(ctx, targets);
  for (let attempt = 0; ; attempt++) {
    try {
      await ctx.db.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: ctx.tableName, Item: marker, ConditionExpression: 'attribute_not_exists(pk)' } },
            ...targets.map((Item) => ({ Put: { TableName: ctx.tableName, Item, ConditionExpression: 'attribute_not_exists(pk)' } })),
          ],
        }),
      );
      return;
    } catch (e) {
      const codes = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons?.map((r) => r.Code);
      if (!codes) throw e;
      if (codes[0] === 'ConditionalCheckFailed') return; // handled before
      if (protectedItem || attempt >= 5 || !codes.slice(1).includes('ConditionalCheckFailed')) throw e;
      targets = targets.map((t) => renumber(ctx, t)); // a sequence number collided
    }
  }
}
