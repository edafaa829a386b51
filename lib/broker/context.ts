import { randomBytes } from 'node:crypto';
import type { Deps } from '../deps.js';
import { SequenceGenerator } from '../store/sequence.js';

/** What every broker operation works with: the injected deps plus per-instance state. */
export interface BrokerContext extends Deps {
  sequences: SequenceGenerator;
}

export const brokerContext = (deps: Deps): BrokerContext => ({ ...deps, sequences: new SequenceGenerator() });

/** An operation of a broker module: the context first, then what the caller gives. */
type Operation = (ctx: BrokerContext, ...args: never[]) => unknown;

/** Operations with their context bound, as the broker (index.ts) offers them. */
export type Bound<T extends Record<string, Operation>> = {
  [K in keyof T]: T[K] extends (ctx: BrokerContext, ...args: infer A) => infer R ? (...args: A) => R : never;
};

/**
 * Binds a module's `operations` to one context. A module lists its operations beside them,
 * so a new one is offered by the broker without an entry in index.ts.
 */
export function bindOperations<T extends Record<string, Operation>>(ctx: BrokerContext, operations: T): Bound<T> {
  const bound = Object.entries(operations).map(([name, op]) => [name, (...args: never[]) => op(ctx, ...args)]);
  return Object.fromEntries(bound) as Bound<T>;
}

/**
 * Random bytes come from a pool filled a few KB at a time, as node's own `randomUUID` draws
 * them: one call into the system's generator per pool rather than one per id (a send makes
 * one id, and that call was a noticeable part of its work). Every byte is used once.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

/** `bytes` random bytes as hex: message ids, incarnation ids, lock tokens. */
export const randomId = (bytes = 8): string => {
  if (bytes > POOL_BYTES) return randomBytes(bytes).toString('hex');
  if (used + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  const id = pool.toString('hex', used, used + bytes);
  used += bytes;
  return id;
};
