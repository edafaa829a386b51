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
}

export const defaultConfig: SluiceConfig = {
  destroyData: false,
  apiConcurrency: 0,
  apiRateLimit: 100,
  apiBurstLimit: 200,
  deadLetterAlarmThreshold: 10,
};

export function readConfig(node: Node): SluiceConfig {
  // #10.3: the old switch meant the opposite default; refuse it rather than ignore it.
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
  };
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
