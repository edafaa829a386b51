/**
 * Stream-consumer test support: raw table items (read past the API), Lambda
 * `DynamoDBStreamEvent` records built by hand from them, and a reader of the real stream of
 * a DynamoDB Local table delivered the way Lambda would deliver it.
 *
 * TTL removals come in two shapes (lib/broker/stream.ts `isTtlRemoval`):
 * - AWS: `eventName: 'REMOVE'` with `userIdentity: {type: 'Service', principalId: 'dynamodb.amazonaws.com'}`;
 * - DynamoDB Local: `eventName: 'UNKNOWN_TO_SDK_VERSION'`, no `userIdentity`, OldImage only.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Deps } from '../../lib/deps.js';
import type { StoredMessageItem } from '../../lib/store/message-layout.js';
import type { EntityItem } from '../../lib/broker/entities.js';
import { entityKey, messageKey, messagePk, positionedPk } from '../../lib/store/keys.js';
import type { Subqueue } from '../../lib/entities/kinds.js';
import { isPositioned } from '../../lib/broker/layouts.js';
import type { PositionedItem } from '../../lib/store/positions.js';
import { queryAll } from '../../lib/store/query.js';
import { localCredentials, localRegion } from '../../infra/local/dynamodb-local.js';
import { toLambdaStreamRecord } from '../../infra/local/stream-records.js';
import { workerEndpoint } from './emulator.js';

// ---------------------------------------------------------------------------------------
// Raw items

/** The queue's entity item (its `eid` keys its messages), or undefined. */
export async function queueItem(deps: Deps, name: string): Promise<EntityItem | undefined> {
  const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', name), ConsistentRead: true }));
  return got.Item as EntityItem | undefined;
}

/**
 * The stored item of one message of a (non-partitioned) queue, read past the API: as DynamoDB
 * holds it, without what its key holds (lib/store/message-layout.ts; `messageOfStored` reads it
 * as the broker does).
 */
export async function messageItem(deps: Deps, queue: string, subqueue: Subqueue, seq: string): Promise<StoredMessageItem | undefined> {
  const entity = await queueItem(deps, queue);
  if (!entity) throw new Error(`no queue ${queue}`);
  const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: messageKey(entity.eid, subqueue, 0, seq), ConsistentRead: true }));
  return got.Item as StoredMessageItem | undefined;
}

/**
 * Every stored message of a queue's subqueue, as stored, in sort-key order (all partitions):
 * its `msg/` items and, where the subqueue is positioned (a positioned queue's active one), its
 * live positioned items too (not a tombstone, not a ticketed queue's `done` marker). So a check
 * that a message is gone, or stored once, holds on either layout: a ticketed queue keeps
 * nothing but its scheduled and deferred messages under `msg/`.
 */
export async function messageItems(deps: Deps, queue: string, subqueue: Subqueue): Promise<StoredMessageItem[]> {
  const entity = await queueItem(deps, queue);
  if (!entity) throw new Error(`no queue ${queue}`);
  const out: StoredMessageItem[] = [];
  const partitions = subqueue === 'active' ? entity.partitions : 1;
  const positioned = subqueue === 'active' && isPositioned(entity);
  for (let p = 0; p < partitions; p++) {
    out.push(...(await wholePartition(deps, messagePk(entity.eid, subqueue, p))));
    if (positioned) {
      const items = (await wholePartition(deps, positionedPk(entity.eid, subqueue, p))) as (StoredMessageItem &
        Pick<PositionedItem, 'tomb'> & { done?: number })[];
      out.push(...items.filter((i) => !i.tomb && i.done === undefined));
    }
  }
  return out.sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
}

const wholePartition = (deps: Deps, pk: string): Promise<StoredMessageItem[]> =>
  queryAll<StoredMessageItem>(deps, { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true });

// ---------------------------------------------------------------------------------------
// Hand-made stream records

/** Stream sequence numbers increase across every record made here, as in one shard. */
let streamSeq = 10n ** 20n;
export const nextStreamSequence = (): string => (++streamSeq).toString().padStart(21, '0');

export type Image = Record<string, AttributeValue>;

/** An item as a stream image (DynamoDB JSON, as Lambda delivers it). */
export const imageOf = (item: object): Image =>
  marshall(item as Record<string, unknown>, { removeUndefinedValues: true, convertClassInstanceToMap: true }) as unknown as Image;

const keysOf = (item: { pk: string; sk: string }): Image => ({ pk: { S: item.pk }, sk: { S: item.sk } });

export interface RecordOptions {
  /** When the change happened (epoch ms), for ApproximateCreationDateTime. */
  at: number;
  /** The stream sequence number; a fresh increasing one when left out. */
  sequenceNumber?: string;
}

function record(
  eventName: string,
  key: { pk: string; sk: string },
  images: { old?: object | undefined; new?: object | undefined },
  options: RecordOptions,
  extra: Partial<DynamoDBRecord> = {},
): DynamoDBRecord {
  const sequenceNumber = options.sequenceNumber ?? nextStreamSequence();
  return {
    eventID: `ev-${sequenceNumber}`,
    eventName: eventName as DynamoDBRecord['eventName'],
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'local',
    dynamodb: {
      ApproximateCreationDateTime: Math.floor(options.at / 1000),
      Keys: keysOf(key),
      ...(images.new ? { NewImage: imageOf(images.new) } : {}),
      ...(images.old ? { OldImage: imageOf(images.old) } : {}),
      SequenceNumber: sequenceNumber,
      SizeBytes: 100,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
    eventSourceARN: 'arn:aws:dynamodb:local:000000000000:table/test/stream/2030-01-01T00:00:00.000',
    ...extra,
  };
}

export const insertRecord = (item: StoredMessageItem, options: RecordOptions) => record('INSERT', item, { new: item }, options);
export const modifyRecord = (before: StoredMessageItem, after: StoredMessageItem, options: RecordOptions) =>
  record('MODIFY', after, { old: before, new: after }, options);
/** A deletion by a user (the broker): no service principal, so never a TTL removal. */
export const userRemoveRecord = (item: StoredMessageItem, options: RecordOptions) => record('REMOVE', item, { old: item }, options);

export type TtlShape = 'aws' | 'local';
export const ttlShapes: TtlShape[] = ['aws', 'local'];

/** A deletion by DynamoDB's TTL, as AWS or as DynamoDB Local reports it. */
export function ttlRemovalRecord(item: StoredMessageItem, shape: TtlShape, options: RecordOptions): DynamoDBRecord {
  if (shape === 'aws') {
    return record('REMOVE', item, { old: item }, options, { userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' } });
  }
  return record('UNKNOWN_TO_SDK_VERSION', item, { old: item }, options);
}

export const streamEvent = (...records: DynamoDBRecord[]): DynamoDBStreamEvent => ({ Records: records });

// ---------------------------------------------------------------------------------------
// The real stream of a DynamoDB Local table

export function streamsClient(endpoint = workerEndpoint()): DynamoDBStreamsClient {
  return new DynamoDBStreamsClient({ endpoint, region: localRegion, credentials: localCredentials });
}

/**
 * Reads the table's stream from the beginning, shard by shard; each `read()` returns the
 * records written since the previous one, converted to what Lambda delivers.
 */
export class TableStreamReader {
  private readonly streams = streamsClient();
  private arn: string | undefined;
  private readonly iterators = new Map<string, string | undefined>();

  constructor(private readonly deps: Deps & { client: DynamoDBClient }) {}

  async read(): Promise<DynamoDBRecord[]> {
    if (!this.arn) {
      const table = await this.deps.client.send(new DescribeTableCommand({ TableName: this.deps.tableName }));
      this.arn = table.Table?.LatestStreamArn;
      if (!this.arn) throw new Error('the table has no stream');
    }
    const description = await this.streams.send(new DescribeStreamCommand({ StreamArn: this.arn }));
    const out: DynamoDBRecord[] = [];
    for (const shard of description.StreamDescription?.Shards ?? []) {
      const id = shard.ShardId!;
      let iterator = this.iterators.get(id);
      if (!this.iterators.has(id)) {
        const got = await this.streams.send(new GetShardIteratorCommand({ StreamArn: this.arn, ShardId: id, ShardIteratorType: 'TRIM_HORIZON' }));
        iterator = got.ShardIterator;
      }
      while (iterator) {
        const page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
        const records = page.Records ?? [];
        out.push(...records.map((r) => toLambdaStreamRecord(r, this.arn!)));
        const next = page.NextShardIterator;
        if (records.length === 0) {
          iterator = next;
          break;
        }
        iterator = next;
      }
      this.iterators.set(id, iterator);
    }
    return out;
  }
}

/** Feeds records to a stream handler in Lambda-sized batches, as the event source mapping would. */
export async function deliver(
  handler: (event: DynamoDBStreamEvent) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }>,
  records: DynamoDBRecord[],
  batchSize = 100,
): Promise<void> {
  for (let i = 0; i < records.length; i += batchSize) {
    const result = await handler(streamEvent(...records.slice(i, i + batchSize)));
    if (result.batchItemFailures.length) throw new Error(`stream batch failed at ${result.batchItemFailures[0]!.itemIdentifier}`);
  }
}
