import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createBroker } from '../../lib/broker/index.js';

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

/** DynamoDB stream → counts and TTL removals (lib/broker/stream.ts); partial batch failures reported. */
export function createStreamHandler(deps: Deps): StreamHandler {
  const broker = createBroker(deps);
  return (event) => broker.processStream(event.Records ?? []);
}

const real = lazy(() => createStreamHandler(depsFromEnv()));
export const handler: StreamHandler = (event) => real()(event);
