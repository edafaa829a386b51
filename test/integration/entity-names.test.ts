/**
 * E1: queues and topics share one namespace of names, case-insensitively, as in Service Bus
 * (whose management protocol cannot tell a queue from a topic of the same name).
 */
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { faultyDeps, is } from '../support/faults.js';
import { expectError } from '../support/queue-helpers.js';
import { ManualClock, testDeps } from '../support/table.js';
import { entityKey, statsKey } from '../../lib/store/keys.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  deps = await testDeps(clock, 'names');
  api = apiClient(deps);
});

describe('E1: one namespace for queues and topics', () => {
  it('E1: a topic named like an existing queue, in any case, is 409; the queue is unchanged', async () => {
    expect((await api('PUT', '/queues/Shared1', {})).status).toBe(201);
    const clash = await api('PUT', '/topics/SHARED1', {});
    expectError(clash, 409, 'EntityAlreadyExists');
    expect(clash.body.error.message).toContain("queue 'Shared1' exists");
    expect((await api('GET', '/topics/shared1')).status).toBe(404);
    expect((await api('GET', '/queues/shared1')).status).toBe(200);
  });

  it('E1: a queue named like an existing topic is 409', async () => {
    expect((await api('PUT', '/topics/shared2', {})).status).toBe(201);
    expectError(await api('PUT', '/queues/Shared2', {}), 409, 'EntityAlreadyExists');
    expect((await api('GET', '/queues/shared2')).status).toBe(404);
  });

  it('E1: once the queue is deleted, a topic may take its name', async () => {
    expect((await api('PUT', '/queues/shared3', {})).status).toBe(201);
    expect((await api('DELETE', '/queues/shared3')).status).toBe(204);
    expect((await api('PUT', '/topics/shared3', {})).status).toBe(201);
  });

  it('E1: a topic created while a queue of its name is being created makes the queue create fail (no both)', async () => {
    // The queue's create has read "no topic" and is about to write when the topic is made.
    const racing = apiClient(
      faultyDeps(deps, {
        match: is(TransactWriteCommand),
        interleave: async () => {
          expect((await api('PUT', '/topics/race1', {})).status).toBe(201);
        },
      }),
    );
    expectError(await racing('PUT', '/queues/race1', {}), 409, 'EntityAlreadyExists');
    expect((await api('GET', '/queues/race1')).status).toBe(404);
    expect((await api('GET', '/topics/race1')).status).toBe(200);
  });

  it('E1: a queue and a topic of one name stored before the rule both keep working, and updates still apply', async () => {
    expect((await api('PUT', '/queues/legacy', {})).status).toBe(201);
    expect((await api('PUT', '/topics/legacy-model', {})).status).toBe(201);
    // Written as an older version stored it: a topic of the queue's name beside it.
    const model = (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('topic', 'legacy-model') }))).Item!;
    const eid = 'legacy0topic';
    await deps.db.send(
      new PutCommand({ TableName: deps.tableName, Item: { ...model, ...entityKey('topic', 'legacy'), name: 'legacy', path: 'topics/legacy', eid } }),
    );
    await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: { ...statsKey(eid), eid, wm: {} } }));
    expect((await api('PUT', '/topics/legacy', { defaultMessageTimeToLive: 'PT1H' })).status).toBe(200);
    expect((await api('PUT', '/queues/legacy', { maxDeliveryCount: 3 })).status).toBe(200);
    expect((await api('POST', '/queues/legacy/messages', { body: 1 })).status).toBe(201);
    expect((await api('POST', '/topics/legacy/messages', { body: 1 })).status).toBe(201);
  });
});
