/**
 * The local runtime's DynamoDB stream consumer: what Lambda's event source mapping does on
 * AWS, against DynamoDB Local's stream.
 *
 * - Shards: every shard DescribeStream lists is tracked; a child shard is read only once
 *   its parent is read to its end (closed shards are followed until NextShardIterator is
 *   null), so records of one item arrive in order.
 * - Batches: up to 1,000 records per GetRecords, handed to the stream handler as one
 *   `DynamoDBStreamEvent`. A shard's batches are handed over strictly one after another.
 * - Failures (ReportBatchItemFailures): the shard resumes at the failed record with the
 *   lowest sequence number; a thrown error or an unknown item identifier retries the whole
 *   batch. Retries go on until the handler succeeds (Lambda's default for streams); the
 *   background poller backs off on a failing shard, an explicit drain does not wait.
 * - Checkpoints: the position of every shard lives in memory and, with a checkpoint file,
 *   on disk after each batch, so a restart resumes where it left off (a shard without a
 *   checkpoint starts at TRIM_HORIZON; replaying is harmless, the handler is idempotent).
 * - Serialization: one background cycle or drain at a time, so the handler never runs
 *   concurrently on a shard.
 */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type DynamoDBStreamsClient, type Shard } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBStreamEvent, DynamoDBBatchResponse } from 'aws-lambda';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Serial } from './serial.js';
import { resumeIndex, streamBatchSize, toLambdaStreamRecord } from './stream-records.js';

export type StreamHandlerFn = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;

export type ShardPosition = { type: 'TRIM_HORIZON' } | { type: 'AFTER_SEQUENCE_NUMBER' | 'AT_SEQUENCE_NUMBER'; sequenceNumber: string };

interface ShardState {
  shardId: string;
  parentShardId?: string | undefined;
  /** Where reading (re)starts when there is no iterator: everything before is processed. */
  position: ShardPosition;
  iterator?: string | undefined;
  /** Closed and read to the end. */
  finished: boolean;
  /** Consecutive failed batches, and when the background poller may try again. */
  failures: number;
  retryAt: number;
}

interface CheckpointFile {
  streamArn: string;
  shards: Record<string, { position: ShardPosition; finished?: boolean }>;
}

export interface StreamPollReport {
  /** Records the handler processed successfully. */
  records: number;
  /** Handler invocations. */
  batches: number;
  /** Invocations that reported failures or threw; their records are retried. */
  failedBatches: number;
  /** Shards known, and how many of those are closed and fully read. */
  shards: number;
  finishedShards: number;
  /** False when a drain stopped at its limit, or on a failure, before reading everything. */
  caughtUp: boolean;
  streamArn: string | null;
}

export interface StreamPollerOptions {
  ddb: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  tableName: string;
  handler: StreamHandlerFn;
  /** Persist shard positions here (JSON); none: memory only. */
  checkpointFile?: string | undefined;
  batchSize?: number;
  log?: (message: string, error?: unknown) => void;
}

const errorName = (error: unknown) => (error as { name?: string } | null)?.name ?? '';

export class StreamPoller {
  private readonly serial = new Serial();
  private readonly shards = new Map<string, ShardState>();
  private streamArn: string | null = null;
  private checkpoint: CheckpointFile | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private warnedNoStream = false;
  private lastError = '';
  private lastErrorAt = 0;
  private readonly batchSize: number;

  constructor(private readonly options: StreamPollerOptions) {
    this.batchSize = options.batchSize ?? streamBatchSize;
    this.checkpoint = this.readCheckpoint();
  }

  /** Polls every `intervalMs` in the background until `stop()`. */
  start(intervalMs: number): void {
    const schedule = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.serial
          .run(() => this.cycle({ drain: false }))
          .catch((error) => {
            // The same failure every 250 ms (DynamoDB Local gone, say) is logged twice a minute.
            const message = (error as Error | null)?.message ?? String(error);
            if (this.stopped || (message === this.lastError && Date.now() - this.lastErrorAt < 30_000)) return;
            this.lastError = message;
            this.lastErrorAt = Date.now();
            this.log('stream poll failed', error);
          })
          .finally(schedule);
      }, intervalMs);
    };
    schedule();
  }

  /** Reads every shard until GetRecords has nothing more, handing each batch to the handler. */
  drain(options: { maxBatches?: number; maxMs?: number } = {}): Promise<StreamPollReport> {
    return this.serial.run(() => this.cycle({ drain: true, ...options }));
  }

  /** Stops the background poller and waits for a batch in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.serial.idle();
    this.saveCheckpoint();
  }

  private log(message: string, error?: unknown) {
    if (this.options.log) this.options.log(message, error);
    else if (error === undefined) console.error(`[sluice] ${message}`);
    else console.error(`[sluice] ${message}`, error);
  }

  private async cycle(mode: { drain: boolean; maxBatches?: number; maxMs?: number }): Promise<StreamPollReport> {
    const report: StreamPollReport = {
      records: 0,
      batches: 0,
      failedBatches: 0,
      shards: 0,
      finishedShards: 0,
      caughtUp: true,
      streamArn: null,
    };
    if (this.stopped && !mode.drain) return report;
    await this.refreshShards();
    report.streamArn = this.streamArn;
    // A drain goes on until everything is read (within generous limits, in case the
    // handler's own writes keep the stream busy); a background cycle reads a few batches
    // per shard and leaves the rest to the next one, so a drain never waits long.
    const maxBatches = mode.maxBatches ?? (mode.drain ? 10_000 : 20);
    const deadline = Date.now() + (mode.maxMs ?? (mode.drain ? 60_000 : 5_000));
    const failed = new Set<string>();

    // Parents before children: keep going while a pass finishes a shard (its children
    // become readable) until every readable shard is caught up.
    for (let progress = true; progress;) {
      progress = false;
      for (const shard of [...this.shards.values()]) {
        if (!this.readable(shard) || failed.has(shard.shardId)) continue;
        if (!mode.drain && shard.retryAt > Date.now()) continue;
        for (;;) {
          if (this.stopped && !mode.drain) return this.finishReport(report);
          if (report.batches >= maxBatches || Date.now() > deadline) {
            report.caughtUp = false;
            return this.finishReport(report);
          }
          const step = await this.step(shard, report);
          if (step === 'failed') {
            // Retried on the next cycle or drain, never twice in one.
            failed.add(shard.shardId);
            report.caughtUp = false;
            break;
          }
          if (step === 'finished') progress = true;
          if (step !== 'more') break;
        }
      }
    }
    return this.finishReport(report);
  }

  private finishReport(report: StreamPollReport): StreamPollReport {
    report.shards = this.shards.size;
    report.finishedShards = [...this.shards.values()].filter((s) => s.finished).length;
    return report;
  }

  private readable(shard: ShardState): boolean {
    if (shard.finished) return false;
    const parent = shard.parentShardId ? this.shards.get(shard.parentShardId) : undefined;
    return !parent || parent.finished;
  }

  /** Reads one batch of a shard: `more` (records were read), `caughtUp`, `finished` or `failed`. */
  private async step(shard: ShardState, report: StreamPollReport): Promise<'more' | 'caughtUp' | 'finished' | 'failed'> {
    const streamArn = this.streamArn;
    if (!streamArn) return 'caughtUp';
    let output;
    for (let attempt = 0; ; attempt++) {
      try {
        shard.iterator ??= await this.iteratorFor(streamArn, shard);
        if (!shard.iterator) {
          this.markFinished(shard);
          return 'finished';
        }
        output = await this.options.streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: this.batchSize }));
        break;
      } catch (error) {
        shard.iterator = undefined;
        const name = errorName(error);
        if (name === 'ExpiredIteratorException' && attempt < 2) continue;
        if (name === 'TrimmedDataAccessException' && attempt < 2) {
          // The checkpoint points before what the stream still holds (24 h retention).
          shard.position = { type: 'TRIM_HORIZON' };
          continue;
        }
        if (name === 'ResourceNotFoundException') {
          this.shards.delete(shard.shardId);
          return 'caughtUp';
        }
        throw error;
      }
    }

    const records = output.Records ?? [];
    if (records.length === 0) {
      shard.iterator = output.NextShardIterator;
      if (!output.NextShardIterator) {
        this.markFinished(shard);
        return 'finished';
      }
      return 'caughtUp';
    }

    const batch = records.map((record) => toLambdaStreamRecord(record, streamArn));
    let resumeAt: number | null;
    report.batches++;
    try {
      const response = await this.options.handler({ Records: batch });
      resumeAt = resumeIndex(batch, response);
      if (resumeAt !== null) {
        // Lambda only retries; locally, say so, since the handler may have swallowed the cause.
        const from = batch[resumeAt]!.dynamodb?.SequenceNumber;
        this.log(
          `stream handler reported ${response?.batchItemFailures?.length ?? 0} failed record(s) on ${shard.shardId}; ` +
            `retrying from sequence number ${from} (${batch.length - resumeAt} record(s))`,
        );
      }
    } catch (error) {
      this.log(`stream handler failed on ${shard.shardId}; the batch of ${batch.length} will be retried`, error);
      resumeAt = 0;
    }

    if (resumeAt === null) {
      report.records += batch.length;
      shard.failures = 0;
      shard.retryAt = 0;
      shard.position = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: batch[batch.length - 1]!.dynamodb!.SequenceNumber! };
      shard.iterator = output.NextShardIterator;
      if (!output.NextShardIterator) {
        this.markFinished(shard);
        return 'finished';
      }
      this.saveCheckpoint();
      return 'more';
    }

    // Everything before the first failed record is done; retry from that record.
    report.records += resumeAt;
    report.failedBatches++;
    if (resumeAt > 0) {
      shard.position = { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: batch[resumeAt]!.dynamodb!.SequenceNumber! };
      shard.failures = 0;
    } else {
      shard.failures++;
    }
    shard.iterator = undefined;
    shard.retryAt = Date.now() + Math.min(250 * 2 ** Math.min(shard.failures, 8), 30_000);
    this.saveCheckpoint();
    return 'failed';
  }

  private markFinished(shard: ShardState) {
    shard.finished = true;
    shard.iterator = undefined;
    this.saveCheckpoint();
  }

  private async iteratorFor(streamArn: string, shard: ShardState): Promise<string | undefined> {
    const position = shard.position;
    const output = await this.options.streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shard.shardId,
        ShardIteratorType: position.type,
        SequenceNumber: position.type === 'TRIM_HORIZON' ? undefined : position.sequenceNumber,
      }),
    );
    return output.ShardIterator;
  }

  /** Follows the table's current stream and its shard list (new children included). */
  private async refreshShards(): Promise<void> {
    const table = await this.options.ddb.send(new DescribeTableCommand({ TableName: this.options.tableName }));
    const arn = table.Table?.StreamSpecification?.StreamEnabled === false ? undefined : table.Table?.LatestStreamArn;
    if (!arn) {
      if (!this.warnedNoStream) this.log(`table ${this.options.tableName} has no stream; nothing to consume`);
      this.warnedNoStream = true;
      this.streamArn = null;
      this.shards.clear();
      return;
    }
    if (arn !== this.streamArn) {
      // A new stream (the table was re-created): positions in the old one mean nothing.
      this.streamArn = arn;
      this.shards.clear();
      if (this.checkpoint && this.checkpoint.streamArn !== arn) this.checkpoint = null;
    }

    const listed: Shard[] = [];
    let start: string | undefined;
    do {
      const page = await this.options.streams.send(new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: start }));
      listed.push(...(page.StreamDescription?.Shards ?? []));
      start = page.StreamDescription?.LastEvaluatedShardId;
    } while (start);

    const seen = new Set<string>();
    for (const shard of listed) {
      if (!shard.ShardId) continue;
      seen.add(shard.ShardId);
      if (this.shards.has(shard.ShardId)) continue;
      const saved = this.checkpoint?.shards[shard.ShardId];
      this.shards.set(shard.ShardId, {
        shardId: shard.ShardId,
        parentShardId: shard.ParentShardId,
        position: saved?.position ?? { type: 'TRIM_HORIZON' },
        finished: saved?.finished ?? false,
        failures: 0,
        retryAt: 0,
      });
    }
    // Shards past the stream's retention are gone for good.
    for (const id of [...this.shards.keys()]) if (!seen.has(id)) this.shards.delete(id);
  }

  private readCheckpoint(): CheckpointFile | null {
    const file = this.options.checkpointFile;
    if (!file) return null;
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as CheckpointFile;
      if (typeof parsed?.streamArn !== 'string' || typeof parsed.shards !== 'object' || parsed.shards === null) return null;
      return parsed;
    } catch (error) {
      if ((error as NodeJS.ErrnoException | null)?.code !== 'ENOENT') {
        this.log(`ignoring unreadable stream checkpoint ${file}; starting from TRIM_HORIZON`, error);
      }
      return null;
    }
  }

  private saveCheckpoint(): void {
    const file = this.options.checkpointFile;
    if (!file || !this.streamArn) return;
    const data: CheckpointFile = { streamArn: this.streamArn, shards: {} };
    for (const shard of this.shards.values()) {
      data.shards[shard.shardId] = shard.finished ? { position: shard.position, finished: true } : { position: shard.position };
    }
    this.checkpoint = data;
    try {
      mkdirSync(dirname(file), { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`);
      renameSync(tmp, file);
    } catch (error) {
      this.log(`could not save the stream checkpoint ${file}`, error);
    }
  }
}
