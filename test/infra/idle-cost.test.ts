/**
 * The idle bill of a deployment, all of it: the synthesized template's resources priced by
 * type (bench/fixed-costs.ts, which `npm run bench` adds to the measured idle jobs), and the
 * every-minute jobs at their least (run here once each on an empty table: their calls, each
 * read billed at AWS's minimum, and 1 ms of duration). With the default settings the sum must
 * stay under $0.10 a month, so a change that adds an alarm, a dashboard or a key to the
 * default stack, or a Query to an idle run, fails here, not on someone's bill.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { fixedMonthlyCost, fixedPrices, stackFixedCost } from '../../bench/fixed-costs.js';
import { idlePerMonth } from '../../bench/prices.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { ManualClock, testDeps } from '../support/table.js';

/**
 * Read units an idle run is billed at least: AWS bills a Query or GetItem that finds nothing
 * half a unit (a whole one when strongly consistent). DynamoDB Local reports 0 for them.
 */
function meterReads(client: DynamoDBClient): { units: () => number; reset: () => void; others: string[] } {
  let units = 0;
  const others: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ConsistentRead?: boolean };
      if (context.commandName === 'QueryCommand' || context.commandName === 'GetItemCommand') units += input.ConsistentRead ? 1 : 0.5;
      else others.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'idleReadMeter' },
  );
  return { units: () => units, reset: () => void (units = 0), others };
}

async function jobsFloor(): Promise<number> {
  const deps = await testDeps(new ManualClock(), 'idle-cost');
  const meter = meterReads(deps.client);
  // As deployed: the sweeper also checks watched entities for lapsed locks.
  const sweeper = createSweeperHandler(deps, { poster: { post: async () => true } });
  const reaper = createReaperHandler(deps);
  await sweeper();
  const sweeperUnits = meter.units();
  meter.reset();
  await reaper();
  const reaperUnits = meter.units();
  // An idle run writes nothing.
  expect(meter.others).toEqual([]);
  return idlePerMonth({
    jobs: [
      { name: 'sweeper', readUnits: sweeperUnits, writeUnits: 0, ms: 1 },
      { name: 'reaper', readUnits: reaperUnits, writeUnits: 0, ms: 1 },
    ],
  }).total;
}

describe('the idle bill of the synthesized template', () => {
  it('costs under $0.10 a month with the default settings, the jobs’ own floor included', async () => {
    const fixed = stackFixedCost();
    const floor = await jobsFloor();
    expect(floor).toBeGreaterThan(0.017); // 86,400 invocations at $0.20 a million, and more
    const billed = fixed.items.filter((i) => i.dollarsPerMonth > 0);
    expect(fixed.total + floor, `jobs at least $${floor.toFixed(4)}; billed by the month: ${JSON.stringify(billed)}`).toBeLessThan(0.1);
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
