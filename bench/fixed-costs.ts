/**
 * What a deployment costs by the month whatever its traffic: every resource of a synthesized
 * template priced by its type (us-east-1 list prices, as if the account's free tier of 10
 * alarms and 3 dashboards were already used by something else). A type without an entry here
 * fails the pricing, so a new kind of resource cannot join the stack unpriced.
 *
 * What an idle deployment does (the jobs' runs, their logs) is priced from measurements in
 * prices.ts `idlePerMonth`; this is the rest.
 */
import { App } from 'aws-cdk-lib';
import { SluiceStack } from '../infra/stack.js';
import { HOURS_PER_MONTH, prices } from './prices.js';

export const fixedPrices = {
  /** A standard-resolution alarm on one metric, a month. */
  alarmMonth: 0.1,
  /** A dashboard, a month. */
  dashboardMonth: 3.0,
  /** A customer managed KMS key, a month. */
  kmsKeyMonth: 1.0,
  /** A Secrets Manager secret, a month. */
  secretMonth: 0.4,
  /** Alarms Application Auto Scaling makes for each target-tracking policy (high and low). */
  alarmsPerTargetTrackingPolicy: 2,
} as const;

/** Types that cost nothing while nothing happens, and why. */
const freeWhenIdle: Record<string, string> = {
  'AWS::ApiGatewayV2::Api': 'billed per request and connection-minute',
  'AWS::ApiGatewayV2::Integration': 'part of the API',
  'AWS::ApiGatewayV2::IntegrationResponse': 'part of the API',
  'AWS::ApiGatewayV2::Route': 'part of the API',
  'AWS::ApiGatewayV2::RouteResponse': 'part of the API',
  'AWS::ApiGatewayV2::Stage': 'part of the API',
  'AWS::ApplicationAutoScaling::ScalableTarget': 'no charge of its own',
  'AWS::Events::Rule': 'scheduled rules are free (the runs they start are priced as idle jobs)',
  'AWS::IAM::Policy': 'free',
  'AWS::IAM::Role': 'free',
  'AWS::Lambda::EventInvokeConfig': 'free',
  'AWS::Lambda::EventSourceMapping': 'reading a DynamoDB stream is free; invocations are priced with traffic',
  'AWS::Lambda::Function': 'billed per invocation and GB-second',
  'AWS::Lambda::Permission': 'free',
  'AWS::Logs::LogGroup': 'billed per GB ingested and stored (the idle jobs’ log lines are priced with them)',
  'AWS::Logs::MetricFilter': 'its metric is billed only in hours it is published (a dead-lettering)',
  'AWS::SNS::Subscription': 'email notifications are free up to 1,000 a month',
  'AWS::SNS::Topic': 'billed per publish',
  'AWS::SNS::TopicPolicy': 'free',
  'AWS::SQS::Queue': 'billed per request; nothing polls the failure queue',
  'AWS::SQS::QueuePolicy': 'free',
  'AWS::CloudFormation::CustomResource': 'runs at deploy time only',
  'Custom::SluiceRootKey': 'runs at deploy time only',
  'AWS::CDK::Metadata': 'free',
};

export interface FixedItem {
  id: string;
  type: string;
  dollarsPerMonth: number;
  why: string;
}

export interface FixedCost {
  total: number;
  items: FixedItem[];
  /** Sums by resource type, for the report. */
  byType: Record<string, number>;
}

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
}

interface Throughput {
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
}

/** Provisioned capacity bills every hour: the table's and each index's units at their floor. */
function tablePrice(properties: Record<string, unknown>): { dollars: number; why: string } {
  // CloudFormation's default billing mode is PROVISIONED (CDK leaves it out then).
  if (properties.BillingMode === 'PAY_PER_REQUEST') {
    return { dollars: 0, why: 'on demand: billed per request and GB stored (an idle table stores almost nothing)' };
  }
  const units = [properties.ProvisionedThroughput as Throughput | undefined];
  for (const index of (properties.GlobalSecondaryIndexes ?? []) as { ProvisionedThroughput?: Throughput }[]) units.push(index.ProvisionedThroughput);
  const reads = units.reduce((n, u) => n + (u?.ReadCapacityUnits ?? 0), 0);
  const writes = units.reduce((n, u) => n + (u?.WriteCapacityUnits ?? 0), 0);
  const dollars = HOURS_PER_MONTH * (reads * prices.provisionedReadUnitHour + writes * prices.provisionedWriteUnitHour);
  return { dollars, why: `provisioned: ${reads} RCU + ${writes} WCU (table and indexes) × ${HOURS_PER_MONTH} h` };
}

function priceOf(resource: Resource): { dollars: number; why: string } {
  const p = resource.Properties ?? {};
  switch (resource.Type) {
    case 'AWS::CloudWatch::Alarm': {
      // A metric-math alarm is billed per metric it reads.
      const metrics = Array.isArray(p.Metrics) ? (p.Metrics as { MetricStat?: unknown }[]).filter((m) => m.MetricStat).length : 1;
      return { dollars: metrics * fixedPrices.alarmMonth, why: `${metrics} metric alarm` };
    }
    case 'AWS::CloudWatch::Dashboard':
      return { dollars: fixedPrices.dashboardMonth, why: 'dashboard' };
    case 'AWS::KMS::Key':
      return { dollars: fixedPrices.kmsKeyMonth, why: 'customer managed key' };
    case 'AWS::SecretsManager::Secret':
      return { dollars: fixedPrices.secretMonth, why: 'secret' };
    case 'AWS::DynamoDB::Table':
      return tablePrice(p);
    case 'AWS::ApplicationAutoScaling::ScalingPolicy':
      return p.PolicyType === 'TargetTrackingScaling'
        ? { dollars: fixedPrices.alarmsPerTargetTrackingPolicy * fixedPrices.alarmMonth, why: 'target tracking makes 2 CloudWatch alarms' }
        : { dollars: 0, why: 'step scaling: alarms are separate resources' };
    default: {
      const why = freeWhenIdle[resource.Type];
      if (why === undefined) throw new Error(`bench/fixed-costs.ts has no price for ${resource.Type}: add one (or say why it is free)`);
      return { dollars: 0, why };
    }
  }
}

/** The monthly cost of a synthesized template's resources, whatever the traffic. */
export function fixedMonthlyCost(template: { Resources: Record<string, Resource> }): FixedCost {
  const items = Object.entries(template.Resources).map(([id, r]) => {
    const { dollars, why } = priceOf(r);
    return { id, type: r.Type, dollarsPerMonth: dollars, why };
  });
  const byType: Record<string, number> = {};
  for (const i of items) byType[i.type] = (byType[i.type] ?? 0) + i.dollarsPerMonth;
  return { total: items.reduce((n, i) => n + i.dollarsPerMonth, 0), items, byType };
}

/**
 * The stack as `cdk synth` makes it with `context` (the deploy settings, none for the
 * defaults), priced. No bundling: the template is what is priced, not the code.
 */
export function stackFixedCost(context: Record<string, unknown> = {}): FixedCost {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context }, builtinCloudFormationValidation: false });
  const stack = new SluiceStack(app, 'Priced');
  return fixedMonthlyCost(app.synth().getStackByName(stack.stackName).template as { Resources: Record<string, Resource> });
}
