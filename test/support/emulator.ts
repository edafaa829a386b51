import { inject } from 'vitest';

/** This worker's DynamoDB Local: global-setup.ts starts one per worker, so workers never queue on each other's. */
export function workerEndpoint(): string {
  const all = inject('dynamoEndpoints');
  const worker = Number(process.env.VITEST_POOL_ID ?? '1');
  return all[(worker - 1) % all.length]!;
}
