/**
 * The local runtime's stand-in for Lambda's DynamoDB event source mapping: pure functions
 * from the records GetRecords returns (AWS SDK v3 shapes) to the `DynamoDBStreamEvent`
 * records Lambda delivers, and from a handler's `batchItemFailures` to where the shard
 * resumes.
 */
import type { AttributeValue as SdkAttributeValue, _Record as SdkRecord } from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBBatchResponse, DynamoDBRecord, StreamRecord } from 'aws-lambda';

export { streamBatchSize } from '../../lib/store/stream-filter.js';

/** Attribute values as Lambda delivers them: raw DynamoDB JSON, binaries base64-encoded. */
export function toLambdaAttributeValue(value: SdkAttributeValue): AttributeValue {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.SS !== undefined) return { SS: [...value.SS] };
  if (value.NS !== undefined) return { NS: [...value.NS] };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (value.L !== undefined) return { L: value.L.map(toLambdaAttributeValue) };
  if (value.M !== undefined) return { M: toLambdaImage(value.M) };
  // The streams client deserializes an empty map ({"M": {}}) to a value with no member.
  if (Object.keys(value).filter((k) => k !== '$unknown').length === 0) return { M: {} };
  throw new Error(`unsupported attribute value: ${JSON.stringify(value)}`);
}

export function toLambdaImage(image: Record<string, SdkAttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(image)) out[name] = toLambdaAttributeValue(value);
  return out;
}

function toEpochSeconds(value: Date | number | string): number {
  if (value instanceof Date) return value.getTime() / 1000;
  if (typeof value === 'number') return value;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? Number(value) : parsed / 1000;
}

/**
 * One stream record as Lambda delivers it. `eventName` is passed through exactly as the
 * stream reports it: DynamoDB Local reports TTL removals as `UNKNOWN_TO_SDK_VERSION`
 * without `userIdentity`, and the stream handler recognizes that. `userIdentity` (AWS:
 * `{PrincipalId, Type}` on the stream API) comes out as Lambda spells it:
 * `{principalId, type}`.
 */
export function toLambdaStreamRecord(record: SdkRecord, streamArn: string): DynamoDBRecord {
  const source = record.dynamodb ?? {};
  const dynamodb: StreamRecord = {};
  if (source.ApproximateCreationDateTime !== undefined) {
    dynamodb.ApproximateCreationDateTime = toEpochSeconds(source.ApproximateCreationDateTime as Date | number | string);
  }
  if (source.Keys) dynamodb.Keys = toLambdaImage(source.Keys);
  if (source.NewImage) dynamodb.NewImage = toLambdaImage(source.NewImage);
  if (source.OldImage) dynamodb.OldImage = toLambdaImage(source.OldImage);
  if (source.SequenceNumber !== undefined) dynamodb.SequenceNumber = source.SequenceNumber;
  if (source.SizeBytes !== undefined) dynamodb.SizeBytes = source.SizeBytes;
  if (source.StreamViewType !== undefined) dynamodb.StreamViewType = source.StreamViewType as StreamRecord['StreamViewType'];

  const out: DynamoDBRecord = {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion,
    eventSource: record.eventSource ?? 'aws:dynamodb',
    awsRegion: record.awsRegion,
    dynamodb,
    eventSourceARN: streamArn,
  };
  if (record.userIdentity) {
    const identity: Record<string, string> = {};
    if (record.userIdentity.Type !== undefined) identity.type = record.userIdentity.Type;
    if (record.userIdentity.PrincipalId !== undefined) identity.principalId = record.userIdentity.PrincipalId;
    out.userIdentity = identity;
  }
  for (const key of Object.keys(out) as (keyof DynamoDBRecord)[]) if (out[key] === undefined) delete out[key];
  return out;
}

function compareSequenceNumbers(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Index in `batch` of the record the shard resumes at after the handler answered
 * `response`, as Lambda does with ReportBatchItemFailures: `null` when the whole batch
 * succeeded; the failed record with the lowest sequence number otherwise; 0 (the whole
 * batch again) when an item identifier is empty or names no record of the batch.
 */
export function resumeIndex(batch: readonly DynamoDBRecord[], response: DynamoDBBatchResponse | void | null | undefined): number | null {
  const failures = response?.batchItemFailures ?? [];
  if (failures.length === 0) return null;
  let lowest: string | null = null;
  for (const failure of failures) {
    const id = failure?.itemIdentifier;
    if (typeof id !== 'string' || !/^\d+$/.test(id)) return 0;
    if (lowest === null || compareSequenceNumbers(id, lowest) < 0) lowest = id;
  }
  const target = lowest;
  const index = batch.findIndex((record) => {
    const seq = record.dynamodb?.SequenceNumber;
    return seq !== undefined && target !== null && compareSequenceNumbers(seq, target) === 0;
  });
  return index < 0 ? 0 : index;
}
