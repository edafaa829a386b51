import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createTableInput, tableDefinition } from '../../lib/store/table.js';
import { documentClient, type Deps } from '../../lib/deps.js';
import { localCredentials, localRegion } from '../../infra/local/dynamodb-local.js';
import type { Clock } from '../../lib/clock.js';

export function localClient(endpoint = inject('dynamoEndpoint')): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: localRegion, credentials: localCredentials });
}

/** A fresh table from the one table definition, so test files never see each other's data. */
export async function createTestTable(prefix = 'test'): Promise<{ client: DynamoDBClient; tableName: string }> {
  const client = localClient();
  const tableName = `${prefix}-${randomUUID().slice(0, 8)}`;
  await client.send(new CreateTableCommand(createTableInput(tableName)));
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { Enabled: true, AttributeName: tableDefinition.ttlAttribute },
    }),
  );
  return { client, tableName };
}

export async function testDeps(clock: Clock, prefix?: string): Promise<Deps & { client: DynamoDBClient }> {
  const { client, tableName } = await createTestTable(prefix);
  return { client, clock, db: documentClient(client), tableName };
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
