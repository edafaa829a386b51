/**
 * The jobs' operations: the sweeper's pass, the reaper's and the stream consumer's (functions/
 * sweeper, reaper, stream). Apart from the API's (`createApiBroker` in index.ts) so that each
 * function's bundle carries only its own side.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import type { Deps } from '../deps.js';
import type { TimeBudget } from './budget.js';
import { brokerContext, type BrokerContext } from './context.js';
import { reap } from './reaper.js';
import { processStream } from './stream.js';
import { sweep } from './sweeper.js';

/** The jobs bound to `ctx`. */
export const workerOperations = (ctx: BrokerContext) => ({
  sweep: (budget?: TimeBudget) => sweep(ctx, budget),
  reap: (budget?: TimeBudget) => reap(ctx, budget),
  processStream: (records: DynamoDBRecord[]) => processStream(ctx, records),
});

/** The jobs with a context of their own, as a worker function builds them. */
export function createWorkers(deps: Deps) {
  const ctx = brokerContext(deps);
  return { ctx, ...workerOperations(ctx) };
}
