import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { _Record } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { StreamPoller } from '../../infra/local/stream-poller.js';

/** A DynamoDB stream in memory, answering the four calls the poller makes. */
class FakeStream {
  readonly arn = 'arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/1';
  shards: { id: string; parent?: string; records: _Record[]; closed: boolean }[] = [];
  expireNext = false;
  private seq = 0;

  addShard(id: string, parent?: string) {
    this.shards.push({ id, parent, records: [], closed: false });
  }

  write(shardId: string, key: string) {
    const shard = this.shards.find((s) => s.id === shardId)!;
    this.seq++;
    shard.records.push({
      eventID: `e${this.seq}`,
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'ddblocal',
      dynamodb: { Keys: { pk: { S: key }, sk: { S: '1' } }, SequenceNumber: String(this.seq).padStart(21, '0'), SizeBytes: 10 },
    });
  }

  private iterator(shardId: string, index: number) {
    return JSON.stringify({ shardId, index });
  }

  readonly ddb = {
    send: async (command: { constructor: { name: string } }) => {
      if (command.constructor.name !== 'DescribeTableCommand') throw new Error(command.constructor.name);
      return { Table: { TableStatus: 'ACTIVE', LatestStreamArn: this.arn, StreamSpecification: { StreamEnabled: true } } };
    },
  };

  readonly streams = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const input = command.input;
      switch (command.constructor.name) {
        case 'DescribeStreamCommand':
          return {
            StreamDescription: {
              StreamArn: this.arn,
              Shards: this.shards.map((s) => ({ ShardId: s.id, ParentShardId: s.parent })),
            },
          };
        case 'GetShardIteratorCommand': {
          const shard = this.shards.find((s) => s.id === input.ShardId)!;
          const at = shard.records.findIndex((r) => r.dynamodb!.SequenceNumber === input.SequenceNumber);
          const index = input.ShardIteratorType === 'TRIM_HORIZON' ? 0 : input.ShardIteratorType === 'AT_SEQUENCE_NUMBER' ? at : at + 1;
          return { ShardIterator: this.iterator(shard.id, index) };
        }
        case 'GetRecordsCommand': {
          if (this.expireNext) {
            this.expireNext = false;
            throw Object.assign(new Error('expired'), { name: 'ExpiredIteratorException' });
          }
          const { shardId, index } = JSON.parse(input.ShardIterator as string) as { shardId: string; index: number };
          const shard = this.shards.find((s) => s.id === shardId)!;
          const records = shard.records.slice(index, index + Number(input.Limit ?? 1000));
          const next = index + records.length;
          return {
            Records: records,
            NextShardIterator: shard.closed && next >= shard.records.length ? undefined : this.iterator(shardId, next),
          };
        }
        default:
          throw new Error(command.constructor.name);
      }
    },
  };
}

function keysOf(event: DynamoDBStreamEvent) {
  return event.Records.map((r) => r.dynamodb!.Keys!.pk!.S!);
}

describe('stream poller', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function poller(stream: FakeStream, handler: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>, checkpointFile?: string) {
    return new StreamPoller({
      ddb: stream.ddb as never,
      streams: stream.streams as never,
      tableName: 't',
      handler,
      checkpointFile,
      batchSize: 2,
      log: () => {},
    });
  }

  it('reads a closed parent shard to its end before its child, in batches', async () => {
    // prepare
    const stream = new FakeStream();
    stream.addShard('parent');
    stream.addShard('child', 'parent');
    stream.write('parent', 'p1');
    stream.write('parent', 'p2');
    stream.write('parent', 'p3');
    stream.shards[0]!.closed = true;
    stream.write('child', 'c1');
    const batches: string[][] = [];
    const p = poller(stream, async (event) => {
      batches.push(keysOf(event));
      return { batchItemFailures: [] };
    });
    // act
    const report = await p.drain();
    // assess
    expect(batches).toEqual([['p1', 'p2'], ['p3'], ['c1']]);
    expect(report).toMatchObject({ records: 4, batches: 3, shards: 2, finishedShards: 1, caughtUp: true });
    // new records on the open child only
    stream.write('child', 'c2');
    expect(await p.drain()).toMatchObject({ records: 1 });
    expect(batches.at(-1)).toEqual(['c2']);
    await p.stop();
  });

  it('waits for an open parent before reading its child', async () => {
    const stream = new FakeStream();
    stream.addShard('parent');
    stream.addShard('child', 'parent');
    stream.write('parent', 'p1');
    stream.write('child', 'c1');
    const seen: string[] = [];
    const p = poller(stream, async (event) => {
      seen.push(...keysOf(event));
      return { batchItemFailures: [] };
    });
    await p.drain();
    expect(seen).toEqual(['p1']);
    stream.shards[0]!.closed = true;
    await p.drain();
    expect(seen).toEqual(['p1', 'c1']);
    await p.stop();
  });

  it('gets a new iterator when one expires', async () => {
    const stream = new FakeStream();
    stream.addShard('s');
    stream.write('s', 'a');
    const seen: string[] = [];
    const p = poller(stream, async (event) => {
      seen.push(...keysOf(event));
      return { batchItemFailures: [] };
    });
    await p.drain();
    stream.write('s', 'b');
    stream.expireNext = true;
    await p.drain();
    expect(seen).toEqual(['a', 'b']);
    await p.stop();
  });

  it('resumes from its checkpoint file, and from the failed record after a partial failure', async () => {
    // prepare
    const dir = mkdtempSync(join(tmpdir(), 'sluice-poller-'));
    dirs.push(dir);
    const file = join(dir, 'stream-checkpoint.json');
    const stream = new FakeStream();
    stream.addShard('s');
    for (const k of ['a', 'b', 'c']) stream.write('s', k);
    const seen: string[] = [];
    let failOn: string | null = 'b';
    const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
      seen.push(...keysOf(event));
      const failed = event.Records.find((r) => r.dynamodb!.Keys!.pk!.S === failOn);
      return { batchItemFailures: failed ? [{ itemIdentifier: failed.dynamodb!.SequenceNumber! }] : [] };
    };

    // act: 'a' succeeds, 'b' fails
    const first = poller(stream, handler, file);
    expect(await first.drain()).toMatchObject({ records: 1, failedBatches: 1, caughtUp: false });
    await first.stop();
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { streamArn: string; shards: Record<string, unknown> };
    expect(saved).toEqual({
      streamArn: stream.arn,
      shards: { s: { position: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: '000000000000000000002' } } },
    });

    // act: a new poller (a restart) picks up at 'b'
    failOn = null;
    const second = poller(stream, handler, file);
    expect(await second.drain()).toMatchObject({ records: 2, failedBatches: 0, caughtUp: true });
    await second.stop();

    // assess
    expect(seen).toEqual(['a', 'b', 'b', 'c']);
  });

  it('polls in the background until stopped', async () => {
    const stream = new FakeStream();
    stream.addShard('s');
    stream.write('s', 'a');
    const seen: string[] = [];
    const p = poller(stream, async (event) => {
      seen.push(...keysOf(event));
      return { batchItemFailures: [] };
    });
    p.start(10);
    for (let i = 0; i < 100 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(seen).toEqual(['a']);
    await p.stop();
    stream.write('s', 'b');
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual(['a']);
  });
});
