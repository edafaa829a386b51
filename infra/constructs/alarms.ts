import { Aws, CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import type { SluiceApi } from './api.js';
import type { SluiceFunction } from './function.js';
import type { SluiceWorkers } from './workers.js';

/**
 * The log line the stream consumer writes once per batch in which it saw messages arrive in
 * a dead-letter subqueue: one JSON object on one line of its log, with `count` > 0, e.g.
 * `{"level":"INFO","message":"dead-lettered","metric":"DeadLettered","count":3,...}` (other
 * fields, such as Powertools Logger's, are allowed beside these two). A metric filter turns
 * it into the DeadLettered metric. Every dead-lettering (expiry, max delivery, an
 * application's dead-letter settlement, filter and header errors) lands in a subqueue as a
 * new message item, which the stream consumer sees; so one place counts them all.
 */
export const deadLetterLogLine = { field: 'metric', value: 'DeadLettered', countField: 'count' } as const;
export const deadLetterMetricName = 'DeadLettered';

/** Each deployment (`-c stackName=...`) gets its own namespace, so two stacks never add up. */
export const metricNamespace = (stackName: string) => `Sluice/${stackName}`;

/** How long the stream consumer may lag behind the table before the alarm fires. */
export const iteratorAgeLimit = Duration.minutes(5);

export interface SluiceAlarmsProps {
  api: SluiceApi;
  workers: SluiceWorkers;
  /** The alarms (default true). */
  alarms?: boolean;
  /** The dashboard (default true). */
  dashboard?: boolean;
  /** Dead-lettered messages in 5 minutes above which the dead-letter alarm fires. */
  deadLetterThreshold: number;
  /** Subscribed by email to an SNS topic that every alarm notifies; no topic when absent. */
  alarmEmail?: string;
}

/**
 * What an operator watches: an alarm per function on Lambda errors, on the stream
 * consumer's iterator age, on batches parked in the stream failure queue, on API 5xx
 * answers and on dead-letter growth; one dashboard with the same metrics. Alarms,
 * dashboard, metric filter and topic all go with the stack on `cdk destroy`.
 */
export class SluiceAlarms extends Construct {
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly deadLettered: cloudwatch.Metric;
  readonly dashboard?: cloudwatch.Dashboard;
  topic?: sns.Topic;

  constructor(scope: Construct, id: string, props: SluiceAlarmsProps) {
    super(scope, id);
    const { api, workers } = props;
    const fiveMinutes = Duration.minutes(5);
    const functions: Array<[string, SluiceFunction]> = [
      ['Api', api.fn],
      ['Stream', workers.stream],
      ['Sweeper', workers.sweeper],
      ['Reaper', workers.reaper],
    ];

    // Dead-letter growth: Sluice publishes no metric of its own; the stream consumer logs
    // a line per batch (deadLetterLogLine) and this filter sums its `count`.
    const namespace = metricNamespace(Stack.of(this).stackName);
    new logs.MetricFilter(this, 'DeadLetteredFilter', {
      logGroup: workers.stream.logGroup,
      filterPattern: logs.FilterPattern.stringValue(`$.${deadLetterLogLine.field}`, '=', deadLetterLogLine.value),
      metricNamespace: namespace,
      metricName: deadLetterMetricName,
      metricValue: `$.${deadLetterLogLine.countField}`,
      unit: cloudwatch.Unit.COUNT,
    });
    this.deadLettered = new cloudwatch.Metric({
      namespace,
      metricName: deadLetterMetricName,
      statistic: cloudwatch.Stats.SUM,
      period: fiveMinutes,
    });

    if (props.alarms ?? true) this.addAlarms(props, functions);
    if (props.dashboard ?? true) {
      this.dashboard = this.buildDashboard(props, functions);
      new CfnOutput(scope, 'Dashboard', {
        value: this.dashboard.dashboardName,
        description: 'CloudWatch dashboard of this Sluice deployment',
      });
    }
  }

  private addAlarms(props: SluiceAlarmsProps, functions: Array<[string, SluiceFunction]>) {
    const { api, workers } = props;
    const fiveMinutes = Duration.minutes(5);
    for (const [name, fn] of functions) {
      this.add(`${name}Errors`, fn.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }), {
        alarmDescription: `The Sluice ${name.toLowerCase()} function failed (an uncaught error, a timeout or running out of memory) in the last 5 minutes.`,
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      });
    }
    this.add('StreamIteratorAge', workers.stream.metric('IteratorAge', { period: fiveMinutes, statistic: cloudwatch.Stats.MAXIMUM }), {
      alarmDescription:
        'The stream consumer is more than 5 minutes behind the table: counts, forwarding and ' +
        'dead-lettering of TTL removals lag, and records older than 24 hours leave the stream.',
      threshold: iteratorAgeLimit.toMilliseconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    });
    this.add('StreamFailures', workers.streamFailures.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: cloudwatch.Stats.MAXIMUM }), {
      alarmDescription:
        'A stream batch still failed at 12 hours old and went to the stream failure queue: its ' +
        'records (shard and sequence range) must be replayed within the next 12 hours.',
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    });
    this.add('Api5xx', api.httpApi.metricServerError({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }), {
      alarmDescription: 'The Sluice HTTP API answered 5xx (internal errors or store throttling) in the last 5 minutes.',
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    });
    this.add('DeadLetterGrowth', this.deadLettered, {
      alarmDescription: `More than ${props.deadLetterThreshold} messages were dead-lettered in the last 5 minutes (context deadLetterAlarmThreshold).`,
      threshold: props.deadLetterThreshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    });

    if (props.alarmEmail !== undefined) {
      this.topic = new sns.Topic(this, 'Topic', {
        displayName: 'Sluice alarms',
        enforceSSL: true,
      });
      // enforceSSL gives the topic a policy of its own, which replaces the default one; so
      // CloudWatch needs saying that it may publish, and only for this account's alarms.
      this.topic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'AllowCloudWatchAlarms',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [this.topic.topicArn],
          conditions: {
            StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
            ArnLike: { 'aws:SourceArn': `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*` },
          },
        }),
      );
      this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
      const action = new SnsAction(this.topic);
      for (const a of this.alarms) {
        a.addAlarmAction(action);
        a.addOkAction(action);
      }
      NagSuppressions.addResourceSuppressions(this.topic, [
        {
          id: 'AwsSolutions-SNS2',
          reason:
            'The topic carries only CloudWatch alarm notifications (alarm name, state, metric), ' +
            'no message data; CloudWatch cannot publish to a topic encrypted with the AWS managed ' +
            'SNS key, and a customer managed key would cost more than the rest of an idle broker.',
        },
      ]);
    }
  }

  /** One alarm on one 5-minute datapoint; missing data is good news (no errors, no traffic). */
  private add(id: string, metric: cloudwatch.Metric, options: Omit<cloudwatch.CreateAlarmOptions, 'evaluationPeriods'>): cloudwatch.Alarm {
    const made = metric.createAlarm(this, id, {
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      ...options,
      evaluationPeriods: 1,
    });
    this.alarms.push(made);
    return made;
  }

  private buildDashboard(props: SluiceAlarmsProps, functions: Array<[string, SluiceFunction]>): cloudwatch.Dashboard {
    const { api, workers } = props;
    const period = Duration.minutes(5);
    const sum = { period, statistic: cloudwatch.Stats.SUM };
    const perFunction = (make: (fn: SluiceFunction) => cloudwatch.Metric) => functions.map(([name, fn]) => make(fn).with({ label: name.toLowerCase() }));
    const width = 8;

    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
    });
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'API requests',
        width,
        left: [api.httpApi.metricCount({ ...sum, label: 'requests' })],
      }),
      new cloudwatch.GraphWidget({
        title: 'API 4xx / 5xx',
        width,
        left: [api.httpApi.metricClientError({ ...sum, label: '4xx' }), api.httpApi.metricServerError({ ...sum, label: '5xx' })],
      }),
      new cloudwatch.GraphWidget({
        title: 'API latency (ms)',
        width,
        left: [
          api.httpApi.metricLatency({ period, statistic: cloudwatch.Stats.p(50), label: 'p50' }),
          api.httpApi.metricLatency({ period, statistic: cloudwatch.Stats.p(99), label: 'p99' }),
          api.httpApi.metricIntegrationLatency({ period, statistic: cloudwatch.Stats.p(99), label: 'integration p99' }),
        ],
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Function errors',
        width,
        left: perFunction((fn) => fn.metricErrors(sum)),
      }),
      new cloudwatch.GraphWidget({
        title: 'Function duration p99 (ms)',
        width,
        left: perFunction((fn) => fn.metricDuration({ period, statistic: cloudwatch.Stats.p(99) })),
      }),
      new cloudwatch.GraphWidget({
        title: 'Function throttles',
        width,
        left: perFunction((fn) => fn.metricThrottles(sum)),
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Stream iterator age (ms)',
        width,
        left: [workers.stream.metric('IteratorAge', { period, statistic: cloudwatch.Stats.MAXIMUM, label: 'max' })],
        leftAnnotations: [{ value: iteratorAgeLimit.toMilliseconds(), label: 'alarm' }],
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead-lettered messages',
        width,
        left: [this.deadLettered.with({ label: 'dead-lettered' })],
        leftAnnotations: [{ value: props.deadLetterThreshold, label: 'alarm' }],
      }),
      new cloudwatch.GraphWidget({
        title: 'Stream failure queue',
        width,
        left: [workers.streamFailures.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'parked batches' })],
      }),
    );
    if (this.alarms.length > 0) {
      dashboard.addWidgets(
        new cloudwatch.AlarmStatusWidget({
          title: 'Alarms',
          width: 24,
          alarms: this.alarms,
        }),
      );
    }
    return dashboard;
  }
}
