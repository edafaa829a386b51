import type { Node } from 'constructs';

/** Deployment choices read from CDK context (`cdk.json` or `-c key=value`). */
export interface SluiceConfig {
  /** Keep the table (and its data) when the stack is deleted. Default false: `cdk destroy` removes everything. */
  retainData: boolean;
  /** Steady-state requests per second the HTTP API admits before answering 429. */
  apiRateLimit: number;
  /** Requests the HTTP API admits in a burst above the steady rate. */
  apiBurstLimit: number;
}

export const defaultConfig: SluiceConfig = {
  retainData: false,
  apiRateLimit: 100,
  apiBurstLimit: 200,
};

export function readConfig(node: Node): SluiceConfig {
  return {
    retainData: flag(node, 'retainData', defaultConfig.retainData),
    apiRateLimit: count(node, 'apiRateLimit', defaultConfig.apiRateLimit),
    apiBurstLimit: count(node, 'apiBurstLimit', defaultConfig.apiBurstLimit),
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
