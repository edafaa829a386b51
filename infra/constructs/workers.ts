import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { streamBatchSize, streamFilterPatterns } from '../../lib/store/stream-filter.js';
import { grantTableAccess, tableAccess } from './access.js';
import { SluiceFunction } from './function.js';
import type { SluiceTable } from './table.js';

/** A reservation of `n` executions; none for 0. */
const reserve = (n: number | undefined) => (n !== undefined && n > 0 ? { reservedConcurrency: n } : {});

export interface SluiceWorkersProps {
  table: SluiceTable;
  /**
   * Executions reserved for the functions off the request path, so a flood of long-polling
   * receives cannot starve them; 0 reserves none (the default: a new account's concurrency
   * quota of 10 has nothing to reserve, as Lambda keeps 100 unreserved). The stream consumer
   * runs one invocation per stream shard (parallelization factor 1), so its reservation
   * should follow the shard count. The jobs are safe to run twice at once (the sweeper's
   * moves and the reaper's deletes are conditional), so theirs is room, not correctness.
   */
  concurrency?: { stream: number; jobs: number };
}

/**
 * Everything that runs off the request path: the stream consumer (counts, forwarding,
 * dead-lettering of TTL removals) and the two one-minute jobs (sweeper: expired and
 * over-delivered messages; reaper: idle entities).
 */
export class SluiceWorkers extends Construct {
  readonly stream: SluiceFunction;
  readonly sweeper: SluiceFunction;
  readonly reaper: SluiceFunction;
  /** Where the stream consumer's batches go when every retry failed (shard and sequence numbers). */
  readonly streamFailures: sqs.Queue;
  private readonly jobConcurrency: number;

  constructor(scope: Construct, id: string, props: SluiceWorkersProps) {
    super(scope, id);
    const { table } = props;
    this.jobConcurrency = props.concurrency?.jobs ?? 0;
    const tableName = table.table.tableName;

    this.stream = new SluiceFunction(this, 'Stream', {
      name: 'stream',
      description: 'Sluice stream consumer: counts, forwarding, TTL removals to dead letters',
      tableName,
      // A batch of 1,000 records of expired messages is 1,000 dead-letter moves, one after
      // another; a timeout would only halve the batch and do the same work again.
      timeout: Duration.minutes(5),
      ...reserve(props.concurrency?.stream),
    });
    grantTableAccess(this.stream, table, tableAccess.stream);

    // Without a failure destination, a batch that keeps failing is dropped once retries run
    // out, and with it any TTL removal it should have dead-lettered. The queue keeps the
    // batch's shard and sequence range, readable from the stream for its 24 hours.
    this.streamFailures = new sqs.Queue(this, 'StreamFailures', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    NagSuppressions.addResourceSuppressions(this.streamFailures, [
      {
        id: 'AwsSolutions-SQS3',
        reason:
          'This queue is itself the failure destination of the stream consumer; nothing consumes ' +
          'it automatically, so a further dead-letter queue would never receive anything.',
      },
    ]);

    this.stream.addEventSource(
      new DynamoEventSource(table.table, {
        // Start from the oldest record still in the stream, so nothing written before the
        // mapping existed (or while it was disabled) is missed.
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: streamBatchSize,
        // At low traffic every API call would invoke the consumer on its own, and each
        // invocation updates the counts: waiting up to 5 s lets one update carry a whole
        // message life. Counts may lag by seconds (E6).
        maxBatchingWindow: Duration.seconds(5),
        // A poison record is isolated by halving the batch instead of blocking the shard.
        bisectBatchOnError: true,
        retryAttempts: 10,
        // The handler names the records it failed; Lambda retries from the earliest of them
        // rather than redoing the whole batch.
        reportBatchItemFailures: true,
        // Invoked only for message items and TTL removals; the rest cost nothing.
        filters: streamFilterPatterns.map((pattern) => lambda.FilterCriteria.filter(pattern)),
        onFailure: new SqsDlq(this.streamFailures),
      }),
    );

    // The grant lands in the role's default policy; the role sits beside the function.
    NagSuppressions.addResourceSuppressions(
      this.stream.role ?? this.stream,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'dynamodb:ListStreams supports no resource-level permissions, so IAM only accepts it ' +
            'on "*"; DynamoEventSource grants it beside DescribeStream, GetRecords and ' +
            'GetShardIterator, which are scoped to this table’s stream ARN.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );

    this.sweeper = this.everyMinute('Sweeper', {
      name: 'sweeper',
      tableName,
      description: 'Sluice sweeper: expired and over-delivered messages to dead letters',
    });
    this.reaper = this.everyMinute('Reaper', {
      name: 'reaper',
      tableName,
      description: 'Sluice reaper: deletes entities idle past autoDeleteOnIdle',
    });
    grantTableAccess(this.sweeper, table, tableAccess.sweeper);
    grantTableAccess(this.reaper, table, tableAccess.reaper);
  }

  private everyMinute(id: string, props: { name: 'sweeper' | 'reaper'; description: string; tableName: string }): SluiceFunction {
    const fn = new SluiceFunction(this, id, {
      ...props,
      // Finish before the next tick starts another run.
      timeout: Duration.seconds(50),
      // The next tick is the retry: a failed or stale run is not worth repeating.
      retryAttempts: 0,
      maxEventAge: Duration.minutes(1),
      ...reserve(this.jobConcurrency),
    });
    new events.Rule(this, `${id}Schedule`, {
      description: `Runs the Sluice ${props.name} every minute`,
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.LambdaFunction(fn)],
    });
    return fn;
  }
}
