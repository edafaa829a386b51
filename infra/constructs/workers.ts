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

/** The stream consumer's retries: without limit (-1), see the mapping. */
export const STREAM_RETRY_ATTEMPTS = -1;
/** The age at which a record still failing goes to the failure queue: half the stream's 24 hours. */
export const STREAM_MAX_RECORD_AGE = Duration.hours(12);

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
  /** Where the stream consumer's records go when they still fail at 12 hours old (shard and sequence numbers). */
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

    // What can still reach it (see the mapping below): a record that failed for 12 hours. The
    // queue keeps the batch's shard and sequence range, readable from the stream for the 12
    // hours it still keeps them; without it they would be dropped unseen.
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
        // A batch whose function failed (a crash, a timeout) is halved before it is retried,
        // so one record that kills the function holds back only itself; halving costs no retry.
        bisectBatchOnError: true,
        // No retry limit: a record reported failed is failing for load (a throttle episode of
        // any length, conflicts, the network), and retrying it loses nothing. A record that
        // fails for any other reason is parked in the table by the consumer after 3 failures
        // (lib/broker/stream.ts), so it never holds its shard for long.
        retryAttempts: STREAM_RETRY_ATTEMPTS,
        // What no retry and no parking got through (a crash on every try, the table refusing
        // for half a day) goes to the failure queue at this age, while the stream still keeps
        // it for another 12 hours to be replayed, instead of leaving the stream unseen at 24.
        maxRecordAge: STREAM_MAX_RECORD_AGE,
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
