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

export const randomId = (bytes = 8) => {
  const a = new Uint8Array(bytes);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');
};
