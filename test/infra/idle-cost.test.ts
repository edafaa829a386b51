/**
 * The idle bill of a deployment, all of it: the synthesized template's resources priced by
 * type (bench/fixed-costs.ts, which `npm run bench` adds to the measured idle jobs). With the
 * default settings the fixed part plus what the jobs cost at the very least must stay under
 * $0.10 a month, so a change that adds an alarm, a dashboard or a key to the default stack
 * fails here, not on someone's bill.
 */
import { describe, expect, it } from 'vitest';
import { fixedMonthlyCost, fixedPrices, stackFixedCost } from '../../bench/fixed-costs.js';
import { idlePerMonth } from '../../bench/prices.js';

/** The two every-minute jobs at their cheapest: invoked, logging their platform lines, 1 ms, no DynamoDB unit. */
const jobsFloor = idlePerMonth({
  jobs: [
    { name: 'sweeper', readUnits: 0, writeUnits: 0, ms: 1 },
    { name: 'reaper', readUnits: 0, writeUnits: 0, ms: 1 },
  ],
}).total;

describe('the idle bill of the synthesized template', () => {
  it('costs under $0.10 a month with the default settings, the jobs’ own floor included', () => {
    const fixed = stackFixedCost();
    const billed = fixed.items.filter((i) => i.dollarsPerMonth > 0);
    expect(billed).toEqual([]);
    expect(fixed.total + jobsFloor).toBeLessThan(0.1);
    expect(jobsFloor).toBeGreaterThan(0.017); // 86,400 invocations at $0.20 a million
  });

  it('prices the opt-in alarms and dashboard: 8 alarms and one dashboard are $3.80 a month', () => {
    expect(stackFixedCost({ alarms: 'true' }).total).toBeCloseTo(8 * fixedPrices.alarmMonth, 6);
    expect(stackFixedCost({ dashboard: 'true' }).total).toBeCloseTo(fixedPrices.dashboardMonth, 6);
    expect(stackFixedCost({ alarms: 'true', dashboard: 'true', alarmEmail: 'ops@example.com' }).total).toBeCloseTo(3.8, 6);
  });

  it('prices provisioned capacity by the hour, with the alarms its auto scaling makes', () => {
    const fixed = stackFixedCost({ billing: 'provisioned', readCapacity: '1', writeCapacity: '1' });
    const byType = fixed.byType;
    // Table and two indexes, 1 RCU and 1 WCU each: 730 h × 3 × ($0.00013 + $0.00065).
    expect(byType['AWS::DynamoDB::Table']).toBeCloseTo(730 * 3 * (0.00013 + 0.00065), 6);
    // Six target-tracking policies (reads and writes of the table and each index), two alarms each.
    expect(byType['AWS::ApplicationAutoScaling::ScalingPolicy']).toBeCloseTo(6 * 2 * fixedPrices.alarmMonth, 6);
  });

  it('refuses to price a resource type it does not know, and prices KMS keys', () => {
    expect(() => fixedMonthlyCost({ Resources: { X: { Type: 'AWS::EC2::NatGateway' } } })).toThrow(/no price for AWS::EC2::NatGateway/);
    expect(fixedMonthlyCost({ Resources: { K: { Type: 'AWS::KMS::Key' } } }).total).toBe(fixedPrices.kmsKeyMonth);
  });
});
