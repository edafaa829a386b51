/**
 * The local runtime's storage: DynamoDB Local (started here, or one given) and its clients,
 * with the table and its keys table created from the one definitions (lib/store/table.ts)
 * where missing.
 */
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type DynamoDBClientConfig,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { dynamoDbClient, keysTableNameOf } from '../../lib/deps.js';
import { createKeysTableInput, createTableInput, tableDefinition } from '../../lib/store/table.js';
import { localCredentials, localRegion, startDynamoDbLocal } from './dynamodb-local.js';
import type { ShutdownSteps } from './shutdown.js';

export interface LocalStorage {
  /** The DynamoDB endpoint in use, and the Java process's id when it was started here. */
  endpoint: string;
  dynamoPid: number | undefined;
  clientConfig: DynamoDBClientConfig & { endpoint: string };
  client: DynamoDBClient;
  streamsClient: DynamoDBStreamsClient;
}

/**
 * Connects to `dynamoEndpoint`, or starts DynamoDB Local (keeping its data in `dataDir`, in
 * memory without one), and makes sure `tableName` is there. What it started stops with `shutdown`.
 */
export async function openLocalStorage(
  options: { dynamoEndpoint?: string; dataDir: string | null; tableName: string },
  shutdown: ShutdownSteps,
): Promise<LocalStorage> {
  let endpoint = options.dynamoEndpoint;
  let dynamoPid: number | undefined;
  if (!endpoint) {
    const dynamo = await startDynamoDbLocal(options.dataDir ? { dataDir: options.dataDir } : {});
    shutdown.add(() => dynamo.stop());
    endpoint = dynamo.endpoint;
    dynamoPid = dynamo.pid;
  }
  const clientConfig = { endpoint, region: localRegion, credentials: localCredentials };
  const client = dynamoDbClient(clientConfig);
  const streamsClient = new DynamoDBStreamsClient(clientConfig);
  shutdown.add(() => {
    client.destroy();
    streamsClient.destroy();
  });
  await ensureTable(client, options.tableName);
  return { endpoint, dynamoPid, clientConfig, client, streamsClient };
}

const errorName = (error: unknown) => (error as { name?: string } | null)?.name ?? '';

/**
 * Creates the table and its keys table (`keysTableNameOf`) from the one definitions where
 * missing, and turns the table's TTL on.
 */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await ensureActive(client, tableName, createTableInput(tableName));
  await ensureActive(client, keysTableNameOf(tableName), createKeysTableInput(keysTableNameOf(tableName)));
  const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
  if (status !== 'ENABLED' && status !== 'ENABLING') {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { Enabled: true, AttributeName: tableDefinition.ttlAttribute },
      }),
    );
  }
}

async function ensureActive(client: DynamoDBClient, tableName: string, input: CreateTableCommandInput): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
  } catch (error) {
    if (errorName(error) !== 'ResourceNotFoundException') throw error;
    try {
      await client.send(new CreateTableCommand(input));
    } catch (createError) {
      if (errorName(createError) !== 'ResourceInUseException') throw createError;
    }
  }
  for (const deadline = Date.now() + 30_000; ;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') break;
    if (Date.now() > deadline) throw new Error(`table ${tableName} is not ACTIVE after 30s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
