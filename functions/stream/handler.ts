import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

/** STUB: replaced by the real stream consumer. */
export function createStreamHandler(_deps: Deps): StreamHandler {
  return async () => ({ batchItemFailures: [] });
}

const real = lazy(() => createStreamHandler(depsFromEnv()));
export const handler: StreamHandler = (event) => real()(event);
