/**
 * Crash safety of subscriptions (D3 style): subscribe writes the connection, then the
 * watch item, then the `watched` entry. Wherever the function dies, a `$disconnect` (or the
 * TTL every item carries) leaves nothing behind, and a retried subscribe completes.
 */
import { describe, expect, it } from 'vitest';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { OffsetClock } from '../../lib/clock.js';
import { createNotifyHandler } from '../../functions/notify/handler.js';
import { signToken } from '../../lib/auth/index.js';
import { ruleStore } from '../../lib/broker/authorization.js';
import { brokerContext } from '../../lib/broker/context.js';
import { connectionKey, watchPk } from '../../lib/store/keys.js';
import { faultyDeps, is, InjectedCrash, type Fault } from '../support/faults.js';
import { testDeps } from '../support/table.js';
import { apiClient, TEST_ROOT_KEY } from '../support/api.js';

const token = signToken({
  resourceUri: 'http://localhost/queues/c',
  keyName: 'RootManageSharedAccessKey',
  key: TEST_ROOT_KEY,
  expiresAt: Math.floor(Date.now() / 1000) + 600,
});

const faults: [string, Fault][] = [
  ['before the watch item', { match: is(PutCommand), phase: 'before' }],
  ['after the watch item', { match: is(PutCommand), phase: 'after' }],
  ['after the watched entry', { match: is(UpdateCommand), nth: 2, phase: 'after' }],
];

describe('subscribe crashes', () => {
  it.each(faults)('a crash %s: $disconnect leaves nothing; a retry subscribes', async (_name, fault) => {
    const deps = await testDeps(new OffsetClock(), 'notify-crash');
    await ruleStore(brokerContext(deps)).ensureRoot(TEST_ROOT_KEY);
    // H2: only an existing entity can be subscribed to.
    expect((await apiClient(deps)('PUT', '/queues/c', {})).status).toBe(201);
    const route = (d: typeof deps, routeKey: string, id: string) =>
      createNotifyHandler(d)({
        // 'b' connects later than 'a', so its subscribe lengthens the `watched` entry (a write that can crash).
        requestContext: { routeKey, connectionId: id, connectedAt: Date.now() + (id === 'b' ? 600_000 : 0) },
        body: JSON.stringify({ action: 'subscribe', entity: 'queues/c', token }),
      } as unknown as APIGatewayProxyWebsocketEventV2);
    const left = async (id: string) => {
      const watch = await deps.db.send(
        new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': watchPk('queues/c') } }),
      );
      const conn = await deps.db.send(
        new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': connectionKey(id).pk } }),
      );
      return [...(watch.Items ?? []), ...(conn.Items ?? [])].length;
    };

    await expect(route(faultyDeps(deps, fault), 'subscribe', 'a')).rejects.toBeInstanceOf(InjectedCrash);
    await route(deps, '$disconnect', 'a');
    expect(await left('a')).toBe(0);

    await expect(route(faultyDeps(deps, fault), 'subscribe', 'b')).rejects.toBeInstanceOf(InjectedCrash);
    expect(JSON.parse((await route(deps, 'subscribe', 'b')).body!)).toEqual({ type: 'subscribed', entity: 'queues/c' });
    expect(await left('b')).toBe(2);
    await route(deps, '$disconnect', 'b');
    expect(await left('b')).toBe(0);
    deps.client.destroy();
  });
});
