/**
 * The fault layer the suite puts in front of DynamoDB Local (test/support/dynamo-faults.ts):
 * its throttles go through the SDK's own retries, its conflicts look as AWS's do, its index
 * lags its table, and the client it wraps stays healthy.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConflict, isStoreBusy } from '../../lib/store/outcomes.js';
import { ManualClock, testDeps } from '../support/table.js';
import { faultyStore, onOperations, type StoreFaultPlan } from '../support/dynamo-faults.js';

let deps: Awaited<ReturnType<typeof testDeps>>;
beforeAll(async () => {
  deps = await testDeps(new ManualClock(), 'dynamo-faults');
});

const put = (db: typeof deps.db, sk: string, rsk: string) =>
  db.send(new PutCommand({ TableName: deps.tableName, Item: { pk: 'p', sk, rpk: 'r', rsk, state: 'Active', deliveryCount: 0 } }));
const readyQuery = (db: typeof deps.db) =>
  db.send(
    new QueryCommand({
      TableName: deps.tableName,
      IndexName: 'ready',
      KeyConditionExpression: 'rpk = :r AND rsk <= :u',
      ExpressionAttributeValues: { ':r': 'r', ':u': 'z' },
    }),
  );

describe('the fault-injecting DynamoDB layer', () => {
  it("R10: a chosen throttle outlasts the SDK's retries (every attempt refused); one of a single attempt is retried away", async () => {
    const plan: StoreFaultPlan = { throttle: { when: onOperations('PutItem') } };
    const store = faultyStore(deps.db, plan, { fastRetries: true });
    const error = await put(store.db, 'a', 'a').catch((e: unknown) => e as Error & { $metadata: { attempts: number } });
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('ProvisionedThroughputExceededException');
    expect(isStoreBusy(error)).toBe(true);
    expect((error as { $metadata: { attempts: number } }).$metadata.attempts).toBe(store.log.throttled);
    expect(store.log.throttledOut).toBe(1);
    plan.throttle = { when: onOperations('PutItem'), attempts: 1, as: 'Throttling' };
    const out = await put(store.db, 'a', 'a');
    expect(out.$metadata.attempts).toBe(2);
    // The wrapped client never saw a fault.
    expect((await put(deps.db, 'b', 'b')).$metadata.attempts).toBe(1);
  });

  it("S1: a retried write lands, loses its answer and is sent again by the SDK's own retry: its second answer counts two attempts", async () => {
    const store = faultyStore(deps.db, { retried: { when: onOperations('UpdateItem') } }, { fastRetries: true });
    const update = (db: typeof deps.db) =>
      db.send(
        new UpdateCommand({
          TableName: deps.tableName,
          Key: { pk: 'p', sk: 'retried' },
          UpdateExpression: 'ADD n :one',
          ExpressionAttributeValues: { ':one': 1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
    const out = await update(store.db);
    expect(store.log.retried).toBe(1);
    expect(out.$metadata.attempts).toBe(2);
    // Applied twice: each attempt reached DynamoDB, as a retry after a lost answer does.
    expect(out.Attributes?.n).toBe(2);
  });

  it('R10: a conflict answers a single write with TransactionConflictException and cancels a transaction with reason TransactionConflict', async () => {
    const store = faultyStore(deps.db, { conflict: { when: () => true } });
    const single = await store.db
      .send(new UpdateCommand({ TableName: deps.tableName, Key: { pk: 'p', sk: 'a' }, UpdateExpression: 'SET x = :x', ExpressionAttributeValues: { ':x': 1 } }))
      .catch((e: unknown) => e as Error);
    expect((single as Error).name).toBe('TransactionConflictException');
    expect(isConflict(single)).toBe(true);
    const transaction = await store.db
      .send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: deps.tableName, Item: { pk: 'p', sk: 't' } } }] }))
      .catch((e: unknown) => e as Error);
    expect((transaction as Error).name).toBe('TransactionCanceledException');
    expect(isConflict(transaction)).toBe(true);
    expect(store.log.conflicted).toBe(2);
  });

  it('R10: an index lags its table: new items are missed and moved ones still show where they were, for `indexLag` queries', async () => {
    const store = faultyStore(deps.db, { indexLag: 2 });
    await put(store.db, 'c', 'c');
    expect((await readyQuery(store.db)).Items!.map((i) => i.sk)).toEqual(['a', 'b']);
    expect((await readyQuery(store.db)).Items!.map((i) => i.sk)).toEqual(['a', 'b']);
    expect((await readyQuery(store.db)).Items!.map((i) => i.sk)).toEqual(['a', 'b', 'c']);
    // Moved past the query's bound: it still shows at its old place, then goes.
    await store.db.send(
      new UpdateCommand({ TableName: deps.tableName, Key: { pk: 'p', sk: 'a' }, UpdateExpression: 'SET rsk = :l', ExpressionAttributeValues: { ':l': 'zz' } }),
    );
    expect((await readyQuery(store.db)).Items!.map((i) => i.sk)).toEqual(['a', 'b', 'c']);
    expect((await readyQuery(store.db)).Items!.map((i) => i.sk)).toEqual(['a', 'b', 'c']);
    expect((await readyQuery(store.db)).Items!.map((i) => i.sk)).toEqual(['b', 'c']);
    expect(store.log.staleReads).toBe(4);
  });
});
