/**
 * Does DynamoDB Local report ConsumedCapacity, and how? One call of every type the broker
 * uses, on items of known size, read back raw (before any billing adjustment):
 * - which call types come back with ConsumedCapacity (with INDEXES: table and each index);
 * - whether an empty Query reports its minimum charge (AWS charges 0.5 unit at least);
 * - whether a transactional write reports double units (AWS charges 2 per 1 KB), and whether
 *   a transaction of two items reports both.
 */
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { meteredClient, type CallRecord, type CallType } from '../capacity.js';
import { createTable } from '../harness.js';

export interface VerifyResult {
  /** Per call type: reported ConsumedCapacity, and the raw figures of the probe call. */
  calls: Record<string, { type: CallType; reported: boolean; total: number; table: number; indexes: Record<string, number> }>;
  allReported: boolean;
  emptyQueryReportsZero: boolean;
  transactionsDoubled: boolean;
  /** A transaction of two items reports the units of both. */
  transactionsSummed: boolean;
  indexUnitsReported: boolean;
}

export async function runVerify(endpoint: string): Promise<VerifyResult> {
  const TableName = 'bench_verify';
  await createTable(endpoint, TableName);
  const { db, meter, destroy } = meteredClient(endpoint);
  try {
    const body = 'x'.repeat(600); // well under 1 KB: one write unit for the table item
    const calls: VerifyResult['calls'] = {};
    const probe = async (name: string, fn: () => Promise<unknown>) => {
      const { tally } = await meter.measure(fn);
      const c = tally.calls[0] as CallRecord;
      calls[name] = { type: c.type, reported: c.capacityReported, total: c.reported.total, table: c.reported.table, indexes: c.reported.indexes };
    };
    const item = (sk: string) => ({ pk: 'v', sk, body, rpk: 'v', rsk: sk });
    await probe('PutItem (table + ready index)', () => db.send(new PutCommand({ TableName, Item: item('1') })));
    await probe('UpdateItem (moves the ready key)', () =>
      db.send(new UpdateCommand({ TableName, Key: { pk: 'v', sk: '1' }, UpdateExpression: 'SET rsk = :r', ExpressionAttributeValues: { ':r': '9' } })),
    );
    await probe('GetItem (consistent)', () => db.send(new GetCommand({ TableName, Key: { pk: 'v', sk: '1' }, ConsistentRead: true })));
    await probe('GetItem (eventually consistent)', () => db.send(new GetCommand({ TableName, Key: { pk: 'v', sk: '1' } })));
    await probe('Query ready index (1 item)', () =>
      db.send(new QueryCommand({ TableName, IndexName: 'ready', KeyConditionExpression: 'rpk = :p', ExpressionAttributeValues: { ':p': 'v' } })),
    );
    await probe('Query ready index (empty)', () =>
      db.send(new QueryCommand({ TableName, IndexName: 'ready', KeyConditionExpression: 'rpk = :p', ExpressionAttributeValues: { ':p': 'nothing' } })),
    );
    await probe('Query table (empty)', () =>
      db.send(new QueryCommand({ TableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'nothing' } })),
    );
    await probe('BatchGetItem (2 keys)', () =>
      db.send(
        new BatchGetCommand({
          RequestItems: {
            [TableName]: {
              Keys: [
                { pk: 'v', sk: '1' },
                { pk: 'v', sk: '0' },
              ],
            },
          },
        }),
      ),
    );
    await probe('BatchWriteItem (put 2)', () =>
      db.send(new BatchWriteCommand({ RequestItems: { [TableName]: [{ PutRequest: { Item: item('2') } }, { PutRequest: { Item: item('3') } }] } })),
    );
    await probe('TransactWriteItems (put 1, same item as PutItem)', () =>
      db.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName, Item: item('4') } }] })),
    );
    await probe('TransactWriteItems (put 2 items)', () =>
      db.send(
        new TransactWriteCommand({
          TransactItems: [{ Put: { TableName, Item: { pk: 'w', sk: '1', body } } }, { Put: { TableName, Item: { pk: 'w', sk: '2', body } } }],
        }),
      ),
    );
    await probe('DeleteItem (table + ready index)', () => db.send(new DeleteCommand({ TableName, Key: { pk: 'v', sk: '1' } })));
    const plain = calls['PutItem (table + ready index)']!;
    const tx = calls['TransactWriteItems (put 1, same item as PutItem)']!;
    return {
      calls,
      allReported: Object.values(calls).every((c) => c.reported),
      emptyQueryReportsZero: calls['Query ready index (empty)']!.total === 0 && calls['Query table (empty)']!.total === 0,
      transactionsDoubled: tx.table >= 2 * plain.table,
      transactionsSummed: calls['TransactWriteItems (put 2 items)']!.table >= 2 * tx.table,
      indexUnitsReported: (plain.indexes.ready ?? 0) > 0,
    };
  } finally {
    destroy();
  }
}
