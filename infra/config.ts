import type { Node } from 'constructs';
import { DEFAULT_NEW_ENTITY_LAYOUT, NEW_ENTITY_LAYOUTS, isNewEntityLayout, type NewEntityLayout } from '../lib/deps.js';

/** Deployment choices read from CDK context (`cdk.json` or `-c key=value`). */
export interface SluiceConfig {
  /**
   * Let `cdk destroy` (or a change that replaces the table) delete the table, its messages
   * and its root key. Default false: the table is retained and deletion-protected.
   */
  destroyData: boolean;
  /**
   * DynamoDB deletion protection on the tables. Default false: CloudFormation already keeps
   * them on stack deletion and replacement (retained on update or delete), and a protected
   * table would also refuse the delete of a failed first deploy's rollback, stranding the
   * stack in ROLLBACK_FAILED. Turn it on once the stack exists to refuse deletes from anywhere.
   */
  deletionProtection: boolean;
  /**
   * Reserved concurrency of the api function: its cap, and its guaranteed share of the
   * account's pool. 0 (the default) reserves nothing: the api draws from the shared pool.
   */
  apiConcurrency: number;
  /**
   * Reserved concurrency of the stream consumer. 0 (the default) reserves nothing: a new
   * account's quota of 10 leaves nothing to reserve (Lambda keeps 100 unreserved). Lambda
   * runs one invocation per stream shard, so a reservation should follow the shard count.
   */
  streamConcurrency: number;
  /**
   * Reserved concurrency of the sweeper and of the reaper, each. 0 (the default) reserves
   * nothing; both are safe to run twice at once, so a reservation is a guarantee of room, not
   * of correctness.
   */
  jobConcurrency: number;
  /** Origins a browser page may call the HTTP API from (CORS, answered by API Gateway); none by default. */
  corsOrigins: string[];
  /** Steady-state requests per second the HTTP API admits before answering 429. */
  apiRateLimit: number;
  /** Requests the HTTP API admits in a burst above the steady rate. */
  apiBurstLimit: number;
  /** Steady WebSocket messages per second (subscribes, pings) the notifications stage admits. */
  notificationsRateLimit: number;
  /** WebSocket messages admitted in a burst above the steady rate. */
  notificationsBurstLimit: number;
  /** The 8 CloudWatch alarms ($0.10 a month each once the account's free 10 are used). Implied by alarmEmail. */
  alarms: boolean;
  /** The CloudWatch dashboard ($3 a month once the account's free 3 are used). */
  dashboard: boolean;
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
  /**
   * The message layout new queues and subscriptions without sessions get, for their whole life
   * (lib/deps.ts `Deps.newEntityLayout`, set on the functions as `SLUICE_NEW_ENTITY_LAYOUT`).
   * Absent: `DEFAULT_NEW_ENTITY_LAYOUT`. Existing entities, sessions and topics keep the layout
   * they have whatever it says (lib/broker/layouts.ts).
   */
  newEntityLayout?: NewEntityLayout;
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
  deletionProtection: false,
  apiConcurrency: 0,
  streamConcurrency: 0,
  jobConcurrency: 0,
  corsOrigins: [],
  apiRateLimit: 100,
  apiBurstLimit: 200,
  notificationsRateLimit: 100,
  notificationsBurstLimit: 200,
  alarms: false,
  dashboard: false,
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
  const email = alarmEmail(node);
  const alarms = flag(node, 'alarms', email.alarmEmail !== undefined);
  if (email.alarmEmail !== undefined && !alarms) throw new Error('context alarmEmail needs the alarms: drop -c alarms=false');
  return {
    destroyData: flag(node, 'destroyData', defaultConfig.destroyData),
    deletionProtection: flag(node, 'deletionProtection', defaultConfig.deletionProtection),
    apiConcurrency: count(node, 'apiConcurrency', defaultConfig.apiConcurrency),
    streamConcurrency: count(node, 'streamConcurrency', defaultConfig.streamConcurrency),
    jobConcurrency: count(node, 'jobConcurrency', defaultConfig.jobConcurrency),
    corsOrigins: origins(node),
    apiRateLimit: count(node, 'apiRateLimit', defaultConfig.apiRateLimit),
    apiBurstLimit: count(node, 'apiBurstLimit', defaultConfig.apiBurstLimit),
    notificationsRateLimit: count(node, 'notificationsRateLimit', defaultConfig.notificationsRateLimit),
    notificationsBurstLimit: count(node, 'notificationsBurstLimit', defaultConfig.notificationsBurstLimit),
    alarms,
    dashboard: flag(node, 'dashboard', defaultConfig.dashboard),
    deadLetterAlarmThreshold: count(node, 'deadLetterAlarmThreshold', defaultConfig.deadLetterAlarmThreshold),
    ...email,
    capacity: capacity(node),
    ...entityLayout(node),
  };
}

/**
 * `-c corsOrigins=https://a.example,https://b.example` (or a list in cdk.json). Each an origin
 * as browsers send it (scheme, host, optional port, no path), or `*` alone for any origin.
 */
function origins(node: Node): string[] {
  const value: unknown = node.tryGetContext('corsOrigins');
  if (value === undefined || value === '') return [];
  const list = typeof value === 'string' ? value.split(',').map((o) => o.trim()) : value;
  if (!Array.isArray(list) || !list.every((o): o is string => typeof o === 'string')) {
    throw new Error(`context corsOrigins must be a comma-separated list of origins, got ${JSON.stringify(value)}`);
  }
  for (const o of list) {
    if (o === '*' ? list.length > 1 : !/^https?:\/\/[^/\s*]+$/.test(o)) {
      throw new Error(`context corsOrigins: ${JSON.stringify(o)} is not an origin (https://host[:port], or * alone)`);
    }
  }
  return list;
}

export const CAPACITY_KEYS = ['readCapacity', 'writeCapacity', 'maxReadCapacity', 'maxWriteCapacity', 'targetUtilization'] as const;

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

/** `-c newEntityLayout=tickets`; absent or empty leaves the functions' default. */
function entityLayout(node: Node): { newEntityLayout?: NewEntityLayout } {
  const key = 'newEntityLayout';
  const value: unknown = node.tryGetContext(key);
  if (value === undefined || value === '') return {};
  if (!isNewEntityLayout(value)) {
    throw new Error(`context ${key} must be ${NEW_ENTITY_LAYOUTS.join(' or ')} (or absent for ${DEFAULT_NEW_ENTITY_LAYOUT}), got ${JSON.stringify(value)}`);
  }
  return { newEntityLayout: value };
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
