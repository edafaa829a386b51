import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { createKeysTableInput, createTableInput, tableDefinition } from '../../lib/store/table.js';
import { documentClient, keysTableNameOf, type Deps } from '../../lib/deps.js';
import { localCredentials, localRegion } from '../../infra/local/dynamodb-local.js';
import type { Clock } from '../../lib/clock.js';
import { workerEndpoint } from './emulator.js';
import { testLayoutDeps } from './default-layout.js';

export function localClient(endpoint = workerEndpoint()): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: localRegion, credentials: localCredentials });
}

export interface TestTableOptions {
  /**
   * The table's stream, as deployed: only for a test that reads it (`TableStreamReader`; the
   * local runtime makes its own tables, streams on). DynamoDB Local keeps every stream record
   * it wrote and looks through them on each write, so a stream nobody reads slowed every later
   * test of its worker: twenty runs of the topic model took 213 s with streams, 62 s without.
   */
  stream?: boolean;
}

/**
 * A fresh table from the one table definition, and its keys table beside it (named after it,
 * as `keysTableOf` finds it), so test files never see each other's data.
 */
export async function createTestTable(
  prefix = 'test',
  endpoint?: string,
  options: TestTableOptions = {},
): Promise<{ client: DynamoDBClient; tableName: string }> {
  const client = localClient(endpoint);
  const tableName = `${prefix}-${randomUUID().slice(0, 8)}`;
  const input = createTableInput(tableName);
  await client.send(new CreateTableCommand(options.stream ? input : { ...input, StreamSpecification: { StreamEnabled: false } }));
  await client.send(new CreateTableCommand(createKeysTableInput(keysTableNameOf(tableName))));
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { Enabled: true, AttributeName: tableDefinition.ttlAttribute },
    }),
  );
  return { client, tableName };
}

/**
 * `endpoint`: a DynamoDB Local other than its worker's (the default).
 * New entities get today's layout, or the one SLUICE_TEST_NEW_ENTITY_LAYOUT names (default-layout.ts).
 */
export async function testDeps(clock: Clock, prefix?: string, endpoint?: string, options?: TestTableOptions): Promise<Deps & { client: DynamoDBClient }> {
  const { client, tableName } = await createTestTable(prefix, endpoint, options);
  return { client, clock, db: documentClient(client), tableName, ...testLayoutDeps() };
}

/** A clock the test moves by hand; sleep advances it instead of waiting. */
export class ManualClock implements Clock {
  constructor(public current = Date.UTC(2026, 10, 20, 12, 0, 0)) {}
  now(): number {
    return this.current;
  }
  async sleep(ms: number): Promise<void> {
    this.current += ms;
  }
  advance(ms: number): number {
    this.current += ms;
    return this.current;
  }
}
