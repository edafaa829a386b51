import { describe, expect, it } from 'vitest';
import type { _Record } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { resumeIndex, toLambdaAttributeValue, toLambdaStreamRecord } from '../../infra/local/stream-records.js';
import { durationToMs } from '../../infra/local/duration.js';

const streamArn = 'arn:aws:dynamodb:ddblocal:000000000000:table/sluice/stream/2026-11-20T12:00:00.000';

describe('stream record -> Lambda DynamoDBStreamEvent record', () => {
  it('converts an INSERT as Lambda delivers it', () => {
    // prepare: what GetRecords returns through the AWS SDK v3
    const record: _Record = {
      eventID: 'e-1',
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'ddblocal',
      dynamodb: {
        ApproximateCreationDateTime: new Date('2026-11-20T12:00:00.000Z'),
        Keys: { pk: { S: 'msg/q/0' }, sk: { S: '00001' } },
        NewImage: {
          pk: { S: 'msg/q/0' },
          sk: { S: '00001' },
          n: { N: '42' },
          bin: { B: new Uint8Array([1, 2, 3]) },
          bins: { BS: [new Uint8Array([255])] },
          ok: { BOOL: true },
          nothing: { NULL: true },
          tags: { SS: ['a', 'b'] },
          nums: { NS: ['1', '2'] },
          list: { L: [{ S: 'x' }, { M: { deep: { B: new Uint8Array([0]) } } }] },
        },
        SequenceNumber: '000000000000000000001',
        SizeBytes: 120,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    };
    // act
    const out = toLambdaStreamRecord(record, streamArn);
    // assess
    expect(out).toEqual({
      eventID: 'e-1',
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'ddblocal',
      eventSourceARN: streamArn,
      dynamodb: {
        ApproximateCreationDateTime: Date.UTC(2026, 10, 20, 12) / 1000,
        Keys: { pk: { S: 'msg/q/0' }, sk: { S: '00001' } },
        NewImage: {
          pk: { S: 'msg/q/0' },
          sk: { S: '00001' },
          n: { N: '42' },
          bin: { B: 'AQID' },
          bins: { BS: ['/w=='] },
          ok: { BOOL: true },
          nothing: { NULL: true },
          tags: { SS: ['a', 'b'] },
          nums: { NS: ['1', '2'] },
          list: { L: [{ S: 'x' }, { M: { deep: { B: 'AA==' } } }] },
        },
        SequenceNumber: '000000000000000000001',
        SizeBytes: 120,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    });
    expect(out).not.toHaveProperty('userIdentity');
    // Lambda's event is plain JSON.
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
  });

  it("passes DynamoDB Local's TTL removal through unchanged (eventName UNKNOWN_TO_SDK_VERSION, no userIdentity)", () => {
    const record: _Record = {
      eventID: 'e-2',
      eventName: 'UNKNOWN_TO_SDK_VERSION' as _Record['eventName'],
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'ddblocal',
      dynamodb: {
        ApproximateCreationDateTime: new Date('2026-11-20T12:01:00.000Z'),
        Keys: { pk: { S: 'msg/q/0' }, sk: { S: '00002' } },
        OldImage: { pk: { S: 'msg/q/0' }, sk: { S: '00002' }, ttl: { N: '1795000000' } },
        SequenceNumber: '000000000000000000007',
        SizeBytes: 40,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    };
    const out = toLambdaStreamRecord(record, streamArn);
    expect(out.eventName).toBe('UNKNOWN_TO_SDK_VERSION');
    expect(out).not.toHaveProperty('userIdentity');
    expect(out.dynamodb).not.toHaveProperty('NewImage');
    expect(out.dynamodb?.OldImage).toEqual({ pk: { S: 'msg/q/0' }, sk: { S: '00002' }, ttl: { N: '1795000000' } });
  });

  it("spells an AWS TTL removal's userIdentity as Lambda does", () => {
    const record: _Record = {
      eventID: 'e-3',
      eventName: 'REMOVE',
      userIdentity: { PrincipalId: 'dynamodb.amazonaws.com', Type: 'Service' },
      dynamodb: { Keys: { pk: { S: 'a' }, sk: { S: 'b' } }, SequenceNumber: '9' },
    };
    const out = toLambdaStreamRecord(record, streamArn);
    expect(out.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
    expect(out.eventSource).toBe('aws:dynamodb');
  });
});

describe('batchItemFailures -> where the shard resumes', () => {
  const batch: DynamoDBRecord[] = ['0001', '0002', '0003', '0004'].map((seq) => ({ dynamodb: { SequenceNumber: seq } }));

  it('is null when nothing failed', () => {
    expect(resumeIndex(batch, { batchItemFailures: [] })).toBeNull();
    expect(resumeIndex(batch, undefined)).toBeNull();
  });

  it('resumes at the failed record with the lowest sequence number', () => {
    expect(resumeIndex(batch, { batchItemFailures: [{ itemIdentifier: '0004' }, { itemIdentifier: '0002' }] })).toBe(1);
    // Sequence numbers compare as numbers, not strings.
    expect(resumeIndex(batch, { batchItemFailures: [{ itemIdentifier: '3' }] })).toBe(2);
  });

  it('retries the whole batch on an empty or unknown identifier', () => {
    expect(resumeIndex(batch, { batchItemFailures: [{ itemIdentifier: '' }] })).toBe(0);
    expect(resumeIndex(batch, { batchItemFailures: [{ itemIdentifier: '0099' }] })).toBe(0);
    expect(resumeIndex(batch, { batchItemFailures: [{ itemIdentifier: 'x' }] })).toBe(0);
  });
});

describe('ISO 8601 durations for /_local/clock', () => {
  const from = Date.UTC(2026, 0, 31, 12);
  it('converts durations to milliseconds', () => {
    expect(durationToMs('PT6M', from)).toBe(6 * 60_000);
    expect(durationToMs('PT0.5S', from)).toBe(500);
    expect(durationToMs('P1DT2H', from)).toBe(26 * 3600_000);
    expect(durationToMs('P1W', from)).toBe(7 * 24 * 3600_000);
    expect(durationToMs('PT0S', from)).toBe(0);
    // Calendar months: 31 Jan + 1 month = 3 Mar (2026 is not a leap year).
    expect(durationToMs('P1M', from)).toBe(Date.UTC(2026, 2, 3, 12) - from);
  });

  it('refuses negative and malformed durations', () => {
    for (const bad of ['-PT6M', 'PT-6M', 'P', 'PT', '6M', 'PT6', 'xPT6M', 'PT6Mx', 'P1.5M', '', 'pt6m']) {
      expect(() => durationToMs(bad, from), bad).toThrow(RangeError);
    }
  });
});

describe("B2: the clock advance reads the API's one duration parser", () => {
  it('B2: refuses durations with junk around them or negative parts', () => {
    const from = Date.UTC(2026, 0, 31, 12);
    for (const bad of ['PT30Sbanana', 'xPT30S', 'PT30S PT1H', 'P1DT-23H', 'PT5M-1S', 'P1DT', ' PT1S', 'PT1S\n', 'P-1D']) {
      expect(() => durationToMs(bad, from), bad).toThrow(RangeError);
    }
    expect(durationToMs('P1Y', from)).toBe(Date.UTC(2027, 0, 31, 12) - from);
    expect(durationToMs('PT0,5S', from)).toBe(500);
  });
});

describe('empty maps', () => {
  it('E6: an empty map (a rule\'s {"true": {}} filter) does not stop the stream', () => {
    // The streams client hands `{"M": {}}` back as a value with no member at all.
    expect(toLambdaAttributeValue({} as never)).toEqual({ M: {} });
    expect(toLambdaAttributeValue({ M: { true: {} as never } })).toEqual({ M: { true: { M: {} } } });
  });
});
