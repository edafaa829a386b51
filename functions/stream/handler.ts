import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createWorkers } from '../../lib/broker/workers.js';
import { parseMessagePk } from '../../lib/store/keys.js';
import { createLog } from '../../lib/log.js';

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

const log = createLog('sluice-stream');

/** New items in a dead-letter or transfer dead-letter subqueue: the alarm on dead-letter growth counts them. */
export const deadLetteredIn = (records: DynamoDBRecord[]) =>
  records.filter((r) => r.eventName === 'INSERT' && isDeadLetterPk(r.dynamodb?.Keys?.pk?.S ?? '')).length;

const isDeadLetterPk = (pk: string) => {
  const subqueue = parseMessagePk(pk)?.subqueue;
  return subqueue !== undefined && subqueue !== 'active';
};

/** DynamoDB stream → counts and TTL removals (lib/broker/stream.ts); partial batch failures reported. */
export function createStreamHandler(deps: Deps): StreamHandler {
  const jobs = createWorkers(deps);
  return async (event) => {
    const records = event.Records ?? [];
    const { batchItemFailures, parked } = await jobs.processStream(records);
    const count = deadLetteredIn(records);
    // One JSON line per batch: the stack's metric filter turns it into the DeadLettered metric.
    if (count > 0) log.info('dead-lettered', { metric: 'DeadLettered', count });
    // Only when something failed again and again: the sweeper applies these records later.
    if (parked > 0) log.warn('parked stream records', { parked });
    return { batchItemFailures };
  };
}

const real = lazy(() => createStreamHandler(depsFromEnv()));
export const handler: StreamHandler = (event) => real()(event);
