/**
 * Every DynamoDB call the notify function and the sweeper's hint check make is granted
 * to their roles (infra/constructs/access.ts). The functions run for real on DynamoDB Local
 * with a client that records each command; a gone connection is included, so the cleanup
 * path is exercised too.
 */
import { describe, expect, it } from 'vitest';
import type { APIGatewayProxyWebsocketEventV2, DynamoDBStreamEvent } from 'aws-lambda';
import { marshall } from '@aws-sdk/util-dynamodb';
import { OffsetClock } from '../../lib/clock.js';
import { createNotifyHandler } from '../../functions/notify/handler.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { createApiHandler } from '../../functions/api/handler.js';
import { tableAccess, type TableAccess } from '../../infra/constructs/access.js';
import type { ConnectionPoster } from '../../lib/notifications/watchers.js';
import { testDeps } from '../support/table.js';
import { rootToken, TEST_ROOT_KEY } from '../support/api.js';
import { signToken } from '../../lib/auth/index.js';
import type { Deps } from '../../lib/deps.js';

const actionOf: Record<string, string> = {
  GetCommand: 'dynamodb:GetItem',
  PutCommand: 'dynamodb:PutItem',
  UpdateCommand: 'dynamodb:UpdateItem',
  DeleteCommand: 'dynamodb:DeleteItem',
  QueryCommand: 'dynamodb:Query',
  BatchWriteCommand: 'dynamodb:BatchWriteItem',
  BatchGetCommand: 'dynamodb:BatchGetItem',
  ScanCommand: 'dynamodb:Scan',
};

function recorded(deps: Deps): { deps: Deps; actions: Set<string> } {
  const actions = new Set<string>();
  const db = deps.db;
  const send = db.send.bind(db) as (c: { constructor: { name: string } }) => Promise<unknown>;
  const wrapped = Object.create(db) as typeof db;
  (wrapped as unknown as { send: typeof send }).send = (command) => {
    actions.add(actionOf[command.constructor.name] ?? command.constructor.name);
    return send(command);
  };
  return { deps: { ...deps, db: wrapped }, actions };
}

const granted = (access: TableAccess) => new Set([...access.itemActions, ...(access.query ? ['dynamodb:Query'] : [])]);

describe('the notify function and the hint check use only granted DynamoDB actions', () => {
  it('subscribe, hints (one connection gone), lapse check, disconnect', async () => {
    const base = await testDeps(new OffsetClock(), 'grants');
    const api = createApiHandler(base, { rootKey: TEST_ROOT_KEY });
    const call = (method: string, path: string, body?: unknown) =>
      api(
        {
          version: '2.0',
          rawPath: path,
          rawQueryString: '',
          headers: { authorization: rootToken(), 'content-type': 'application/json' },
          requestContext: { requestId: 'r', http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 't' } },
          body: body === undefined ? undefined : JSON.stringify(body),
          isBase64Encoded: false,
        } as never,
        {} as never,
      );
    expect((await call('PUT', '/queues/g', {})).statusCode).toBe(201);

    const notifyRec = recorded(base);
    const posted: string[] = [];
    const poster: ConnectionPoster = { post: async (id) => (posted.push(id), id === 'live') };
    const notify = createNotifyHandler(notifyRec.deps, { poster });
    const route = (routeKey: string, connectionId: string, body?: unknown) =>
      notify({
        requestContext: { routeKey, connectionId, connectedAt: Date.now() },
        body: body === undefined ? undefined : JSON.stringify(body),
      } as unknown as APIGatewayProxyWebsocketEventV2);
    const token = signToken({
      resourceUri: 'http://localhost/queues/g',
      keyName: 'RootManageSharedAccessKey',
      key: TEST_ROOT_KEY,
      expiresAt: Math.floor(Date.now() / 1000) + 600,
    });
    for (const id of ['live', 'gone']) {
      expect(JSON.parse((await route('subscribe', id, { action: 'subscribe', entity: 'queues/g', token })).body!)).toEqual({
        type: 'subscribed',
        entity: 'queues/g',
      });
    }
    const sent = JSON.parse((await call('POST', '/queues/g/messages', { body: 1 })).body!) as { sequenceNumber: string };
    const now = base.clock.now();
    const image = {
      pk: 'msg/x/a/0',
      sk: sent.sequenceNumber,
      entity: 'queues/g',
      subqueue: 'active',
      state: 'Active',
      rpk: 'msg/x/a/0',
      rsk: `${String(now - 1).padStart(15, '0')}/1`,
    };
    const event = {
      Records: [{ eventName: 'INSERT', dynamodb: { Keys: marshall({ pk: image.pk, sk: image.sk }), NewImage: marshall(image) } }],
    } as unknown as DynamoDBStreamEvent;
    await notify(event);
    expect(posted.sort()).toEqual(['gone', 'live']);
    await route('$disconnect', 'live');

    const sweeperRec = recorded(base);
    await route('subscribe', 'again', { action: 'subscribe', entity: 'queues/g', token });
    await createSweeperHandler(sweeperRec.deps, { poster })();

    for (const a of notifyRec.actions) expect(granted(tableAccess.notify), a).toContain(a);
    for (const a of sweeperRec.actions) expect(granted(tableAccess.sweeper), a).toContain(a);
    expect([...notifyRec.actions].sort()).toEqual([
      'dynamodb:BatchWriteItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    base.client.destroy();
  });
});
