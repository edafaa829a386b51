/**
 * Alarms on handler errors, stream iterator age, the stream failure queue, API 5xx
 * and dead-letter growth; a dashboard; an optional SNS topic for alarm actions.
 */
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { deadLetterLogLine, deadLetterMetricName, metricNamespace } from '../../infra/constructs/alarms.js';
import { SluiceStack } from '../../infra/stack.js';
import { testApp } from '../support/synth.js';

function synth(context: Record<string, unknown> = {}) {
  const app = testApp(context);
  const stack = new SluiceStack(app, 'Test');
  return { stack, template: Template.fromStack(stack) };
}

type AlarmProps = {
  MetricName?: string;
  Namespace?: string;
  Dimensions?: Array<{ Name: string; Value: unknown }>;
  Statistic?: string;
  Period?: number;
  Threshold: number;
  ComparisonOperator: string;
  EvaluationPeriods: number;
  TreatMissingData?: string;
  AlarmActions?: unknown[];
  OKActions?: unknown[];
  AlarmDescription?: string;
};

function alarms(template: Template): AlarmProps[] {
  return Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((r) => (r as { Properties: AlarmProps }).Properties);
}

const fnId = (stack: SluiceStack, fn: { node: { defaultChild?: unknown } }) => stack.getLogicalId(fn.node.defaultChild as CfnFunction);

let defaults: ReturnType<typeof synth>;
beforeAll(() => {
  // Both are opt-in (CloudWatch bills them by the month); these tests are about what they hold.
  defaults = synth({ alarms: 'true', dashboard: 'true' });
});

describe('alarms and dashboard are opt-in', () => {
  it('a default deployment has no alarm, no dashboard, no metric filter and no topic', () => {
    const { stack, template } = synth();
    expect(stack.monitoring).toBeUndefined();
    for (const type of ['AWS::CloudWatch::Alarm', 'AWS::CloudWatch::Dashboard', 'AWS::Logs::MetricFilter', 'AWS::SNS::Topic'])
      template.resourceCountIs(type, 0);
    expect(Object.keys(template.findOutputs('Dashboard'))).toEqual([]);
  });

  it('-c alarms=true makes the alarms without the dashboard; -c dashboard=true the dashboard without alarms', () => {
    const withAlarms = synth({ alarms: 'true' }).template;
    expect(alarms(withAlarms)).toHaveLength(8);
    withAlarms.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    const withDashboard = synth({ dashboard: true }).template;
    expect(alarms(withDashboard)).toHaveLength(0);
    withDashboard.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('an alarmEmail turns the alarms on, and refuses -c alarms=false beside it', () => {
    expect(alarms(synth({ alarmEmail: 'ops@example.com' }).template)).toHaveLength(8);
    expect(() => synth({ alarmEmail: 'ops@example.com', alarms: 'false' })).toThrow(/alarmEmail/);
  });
});

describe('alarms and dashboard', () => {
  it('alarms on errors of each of the four handlers', () => {
    // act
    const { stack, template } = defaults;

    // assess
    const errors = alarms(template).filter((a) => a.MetricName === 'Errors');
    const fns = [stack.api.fn, stack.workers.stream, stack.workers.sweeper, stack.workers.reaper].map((fn) => fnId(stack, fn));
    expect(errors.map((a) => (a.Dimensions![0]!.Value as { Ref: string }).Ref).sort()).toEqual([...fns].sort());
    for (const a of errors) {
      expect(a).toMatchObject({
        Namespace: 'AWS/Lambda',
        Statistic: 'Sum',
        Period: 300,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('alarms when the stream consumer lags more than 5 minutes', () => {
    // act
    const { stack, template } = defaults;

    // assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'IteratorAge',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId(stack, stack.workers.stream) } }],
      Statistic: 'Maximum',
      Threshold: 300_000,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms as soon as a stream batch lands in the failure queue', () => {
    // act
    const { stack, template } = defaults;

    // assess
    const queueId = stack.getLogicalId(stack.workers.streamFailures.node.defaultChild as never);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms on API 5xx answers', () => {
    // act
    const { stack, template } = defaults;

    // assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
      Dimensions: [{ Name: 'ApiId', Value: { Ref: stack.getLogicalId(stack.api.httpApi.node.defaultChild as never) } }],
      Statistic: 'Sum',
      Threshold: 0,
    });
  });

  it('counts dead-lettered messages from the stream consumer log line and alarms above the threshold', () => {
    // act
    const { stack, template } = defaults;

    // assess: the filter reads the stream consumer's own log group
    const logGroupId = stack.getLogicalId(stack.workers.stream.logGroup.node.defaultChild as never);
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      LogGroupName: { Ref: logGroupId },
      FilterPattern: `{ $.${deadLetterLogLine.field} = "${deadLetterLogLine.value}" }`,
      MetricTransformations: [
        { MetricNamespace: metricNamespace('Test'), MetricName: deadLetterMetricName, MetricValue: `$.${deadLetterLogLine.countField}`, Unit: 'Count' },
      ],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'Sluice/Test',
      MetricName: 'DeadLettered',
      Statistic: 'Sum',
      Period: 300,
      Threshold: 10,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(alarms(template)).toHaveLength(8);
  });

  it('takes the dead-letter threshold from context deadLetterAlarmThreshold', () => {
    // act: `-c deadLetterAlarmThreshold=3` arrives as a string
    const { template } = synth({ alarms: 'true', deadLetterAlarmThreshold: '3' });

    // assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'DeadLettered', Threshold: 3 });
    expect(() => synth({ deadLetterAlarmThreshold: 'many' })).toThrow(/deadLetterAlarmThreshold/);
  });

  it('has no topic and no alarm actions unless context alarmEmail is given', () => {
    // act
    const { template } = defaults;

    // assess
    template.resourceCountIs('AWS::SNS::Topic', 0);
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    for (const a of alarms(template)) {
      expect(a.AlarmActions).toBeUndefined();
      expect(a.AlarmDescription!.length).toBeGreaterThan(20);
    }
  });

  it('mails every alarm to context alarmEmail through an SNS topic CloudWatch may publish to', () => {
    // act
    const { stack, template } = synth({ alarmEmail: 'ops@example.com' });

    // assess
    template.resourceCountIs('AWS::SNS::Topic', 1);
    const topicId = stack.getLogicalId(stack.monitoring!.topic!.node.defaultChild as never);
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
      TopicArn: { Ref: topicId },
    });
    const all = alarms(template);
    expect(all).toHaveLength(8);
    for (const a of all) {
      expect(a.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(a.OKActions).toEqual([{ Ref: topicId }]);
    }
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }),
          }),
        ]),
      },
    });
  });

  it('refuses an alarmEmail that is not an email address', () => {
    expect(() => synth({ alarmEmail: 'true' })).toThrow(/alarmEmail/);
    expect(() => synth({ alarmEmail: 42 })).toThrow(/alarmEmail/);
  });

  it('draws one dashboard with API, function, stream and dead-letter widgets', () => {
    // act
    const { template } = defaults;

    // assess
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Array<{ Properties: { DashboardBody: unknown } }>;
    const body = JSON.stringify(dashboard!.Properties.DashboardBody);
    for (const title of [
      'API requests',
      'API 4xx / 5xx',
      'API latency (ms)',
      'Function errors',
      'Function duration p99 (ms)',
      'Stream iterator age (ms)',
      'Dead-lettered messages',
      'Stream failure queue',
    ]) {
      expect(body).toContain(title);
    }
    for (const metric of [
      '"Count"',
      '"4xx"',
      '"5xx"',
      '"Latency"',
      '"Errors"',
      '"Duration"',
      '"IteratorAge"',
      '"DeadLettered"',
      '"ApproximateNumberOfMessagesVisible"',
    ]) {
      expect(body).toContain(metric.replace(/"/g, '\\"'));
    }
    template.hasOutput('Dashboard', { Value: { Ref: Match.anyValue() } });
  });
});
