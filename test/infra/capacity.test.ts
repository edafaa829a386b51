/**
 * Provisioned capacity as a deploy setting: `-c billing=provisioned` gives the table and
 * both indexes provisioned units with target-tracking auto scaling; on-demand stays the default.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { SluiceStack } from '../../infra/stack.js';
import { testApp } from '../support/synth.js';
import { tableDefinition } from '../../lib/store/table.js';

const synth = (context: Record<string, unknown> = {}) => Template.fromStack(new SluiceStack(testApp(context), 'Test'));

type Resource = { Properties: Record<string, unknown> };
const resources = (t: Template, type: string) => Object.values(t.findResources(type)) as Resource[];

describe('table capacity', () => {
  it('is on demand by default, with no auto scaling', { timeout: 120_000 }, () => {
    const t = synth();
    const [table] = resources(t, 'AWS::DynamoDB::Table');
    expect(table!.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table!.Properties.ProvisionedThroughput).toBeUndefined();
    t.resourceCountIs('AWS::ApplicationAutoScaling::ScalableTarget', 0);
  });

  it('-c billing=provisioned provisions the table and both indexes, each scaled on reads and writes by target tracking', { timeout: 120_000 }, () => {
    // `-c` values arrive as strings
    const t = synth({ billing: 'provisioned', readCapacity: '10', writeCapacity: '20', maxWriteCapacity: '500', targetUtilization: '60' });

    const [table] = resources(t, 'AWS::DynamoDB::Table');
    // CloudFormation's default billing mode is PROVISIONED; CDK leaves it out.
    expect(table!.Properties.BillingMode ?? 'PROVISIONED').toBe('PROVISIONED');
    expect(table!.Properties.ProvisionedThroughput).toEqual({ ReadCapacityUnits: 10, WriteCapacityUnits: 20 });
    const indexes = table!.Properties.GlobalSecondaryIndexes as { IndexName: string; ProvisionedThroughput: unknown }[];
    expect(indexes.map((i) => i.IndexName).sort()).toEqual(
      Object.values(tableDefinition.indexes)
        .map((i) => i.name)
        .sort(),
    );
    for (const index of indexes) expect(index.ProvisionedThroughput).toEqual({ ReadCapacityUnits: 10, WriteCapacityUnits: 20 });

    const targets = resources(t, 'AWS::ApplicationAutoScaling::ScalableTarget').map((r) => r.Properties);
    const dimensions = targets.map((p) => `${JSON.stringify(p.ResourceId).includes('/index/') ? 'index' : 'table'} ${String(p.ScalableDimension)}`).sort();
    expect(dimensions).toEqual([
      'index dynamodb:index:ReadCapacityUnits',
      'index dynamodb:index:ReadCapacityUnits',
      'index dynamodb:index:WriteCapacityUnits',
      'index dynamodb:index:WriteCapacityUnits',
      'table dynamodb:table:ReadCapacityUnits',
      'table dynamodb:table:WriteCapacityUnits',
    ]);
    for (const p of targets) {
      const reads = String(p.ScalableDimension).endsWith('ReadCapacityUnits');
      expect([p.MinCapacity, p.MaxCapacity]).toEqual(reads ? [10, 200] : [20, 500]);
    }
    const policies = resources(t, 'AWS::ApplicationAutoScaling::ScalingPolicy').map((r) => r.Properties);
    expect(policies).toHaveLength(6);
    for (const p of policies) {
      expect(p.PolicyType).toBe('TargetTrackingScaling');
      expect((p.TargetTrackingScalingPolicyConfiguration as { TargetValue: number }).TargetValue).toBe(60);
    }
  });

  it('refuses capacity settings it cannot use', () => {
    expect(() => synth({ billing: 'reserved' })).toThrow(/billing/);
    expect(() => synth({ readCapacity: '10' })).toThrow(/billing=provisioned/);
    expect(() => synth({ billing: 'provisioned', writeCapacity: '0' })).toThrow(/writeCapacity/);
    expect(() => synth({ billing: 'provisioned', readCapacity: '50', maxReadCapacity: '10' })).toThrow(/maxReadCapacity/);
    expect(() => synth({ billing: 'provisioned', targetUtilization: '99' })).toThrow(/targetUtilization/);
  });
});
