import type { Node } from 'constructs';

/** Deployment choices read from CDK context (`cdk.json` or `-c key=value`). */
export interface SluiceConfig {
  /**
   * Let `cdk destroy` (or a change that replaces the table) delete the table, its messages
   * and its root key. Default false: the table is retained and deletion-protected.
   */
  destroyData: boolean;
  /**
   * Reserved concurrency of the api function: its cap, and its guaranteed share of the
   * account's pool. 0 (the default) reserves nothing: the api draws from the shared pool.
   */
  apiConcurrency: number;
  /** Steady-state requests per second the HTTP API admits before answering 429. */
  apiRateLimit: number;
  /** Requests the HTTP API admits in a burst above the steady rate. */
  apiBurstLimit: number;
  /** Dead-lettered messages in 5 minutes, across all entities, above which an alarm fires. */
  deadLetterAlarmThreshold: number;
  /** Where alarm notifications go (an SNS topic with an email subscription); none when absent. */
  alarmEmail?: string;
  /**
   * The table's capacity: `onDemand` (the default: pay per request, nothing while idle),
   * or `provisioned` with target-tracking auto scaling between the given floors and ceilings,
   * for the table and each of its indexes. Cheaper for a steady flow; see the README.
   */
  capacity: TableCapacity;
}

export type TableCapacity =
  | { billing: 'onDemand' }
  | {
      billing: 'provisioned';
      /** Units provisioned at least (and at deployment), for the table and for each index. */
      readCapacity: number;
      writeCapacity: number;
      /** Auto scaling never goes above these. */
      maxReadCapacity: number;
      maxWriteCapacity: number;
      /** Consumed share of the provisioned units auto scaling aims at, in percent (20-90). */
      targetUtilization: number;
    };

export const defaultConfig: SluiceConfig = {
  destroyData: false,
  apiConcurrency: 0,
  apiRateLimit: 100,
  apiBurstLimit: 200,
  deadLetterAlarmThreshold: 10,
  capacity: { billing: 'onDemand' },
};

/** Provisioned defaults: 5 units each way is AWS's own default; scaling up to 20 times that. */
export const provisionedDefaults = { readCapacity: 5, writeCapacity: 5, scaleFactor: 20, targetUtilization: 70 };

export function readConfig(node: Node): SluiceConfig {
  // The old switch meant the opposite default; refuse it rather than ignore it.
  if (node.tryGetContext('retainData') !== undefined) {
    throw new Error('context retainData is gone: the table is now retained by default; pass -c destroyData=true for a throwaway stack');
  }
  return {
    destroyData: flag(node, 'destroyData', defaultConfig.destroyData),
    apiConcurrency: count(node, 'apiConcurrency', defaultConfig.apiConcurrency),
    apiRateLimit: count(node, 'apiRateLimit', defaultConfig.apiRateLimit),
    apiBurstLimit: count(node, 'apiBurstLimit', defaultConfig.apiBurstLimit),
    deadLetterAlarmThreshold: count(node, 'deadLetterAlarmThreshold', defaultConfig.deadLetterAlarmThreshold),
    ...alarmEmail(node),
    capacity: capacity(node),
  };
}

const CAPACITY_KEYS = ['readCapacity', 'writeCapacity', 'maxReadCapacity', 'maxWriteCapacity', 'targetUtilization'] as const;

/** `-c billing=provisioned -c readCapacity=10 -c writeCapacity=10 [-c maxReadCapacity=..] ...`. */
function capacity(node: Node): TableCapacity {
  const billing: unknown = node.tryGetContext('billing');
  if (billing === undefined || billing === 'onDemand') {
    const stray = CAPACITY_KEYS.find((k) => node.tryGetContext(k) !== undefined);
    if (stray) throw new Error(`context ${stray} needs -c billing=provisioned (on-demand tables have no capacity to set)`);
    return { billing: 'onDemand' };
  }
  if (billing !== 'provisioned') throw new Error(`context billing must be onDemand or provisioned, got ${JSON.stringify(billing)}`);
  const d = provisionedDefaults;
  const positive = (key: string, fallback: number) => {
    const n = count(node, key, fallback);
    if (n < 1) throw new Error(`context ${key} must be at least 1, got ${n}`);
    return n;
  };
  const readCapacity = positive('readCapacity', d.readCapacity);
  const writeCapacity = positive('writeCapacity', d.writeCapacity);
  const maxReadCapacity = positive('maxReadCapacity', readCapacity * d.scaleFactor);
  const maxWriteCapacity = positive('maxWriteCapacity', writeCapacity * d.scaleFactor);
  if (maxReadCapacity < readCapacity) throw new Error(`context maxReadCapacity (${maxReadCapacity}) is below readCapacity (${readCapacity})`);
  if (maxWriteCapacity < writeCapacity) throw new Error(`context maxWriteCapacity (${maxWriteCapacity}) is below writeCapacity (${writeCapacity})`);
  const targetUtilization = count(node, 'targetUtilization', d.targetUtilization);
  if (targetUtilization < 20 || targetUtilization > 90)
    throw new Error(`context targetUtilization must be a percentage from 20 to 90, got ${targetUtilization}`);
  return { billing: 'provisioned', readCapacity, writeCapacity, maxReadCapacity, maxWriteCapacity, targetUtilization };
}

// `-c key=value` on the command line always arrives as a string; cdk.json may hold real
// booleans and numbers. Accept both, and refuse anything else rather than guess.
function flag(node: Node, key: string, fallback: boolean): boolean {
  const value: unknown = node.tryGetContext(key);
  if (value === undefined) return fallback;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`context ${key} must be true or false, got ${JSON.stringify(value)}`);
}

function count(node: Node, key: string, fallback: number): number {
  const value: unknown = node.tryGetContext(key);
  if (value === undefined) return fallback;
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new Error(`context ${key} must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return n;
}

// Deliberately loose (SNS checks the address, and the subscriber confirms it): one `@`,
// something on each side, no blanks. Enough to catch `-c alarmEmail=true` or a typo'd key.
const EMAIL = /^[^@\s]+@[^@\s]+$/;

function alarmEmail(node: Node): { alarmEmail?: string } {
  const key = 'alarmEmail';
  const value: unknown = node.tryGetContext(key);
  if (value === undefined || value === '') return {};
  if (typeof value !== 'string' || !EMAIL.test(value)) {
    throw new Error(`context ${key} must be an email address, got ${JSON.stringify(value)}`);
  }
  return { alarmEmail: value };
}
