/**
 * The api function's DynamoDB calls for positioned queues (lib/broker/positioned-send.ts, peek)
 * are granted to its role in the synthesized template: the counter's UpdateItem, the puts and
 * tombstones, S7's transaction, peek's Queries of a positioned partition. DynamoDB Local
 * enforces no IAM, so the calls are recorded while a local runtime whose new queues take the
 * positioned layout serves a workload of them, and each is checked against the policy.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { OffsetClock } from '../../lib/clock.js';
import { keysTableOf } from '../../lib/deps.js';
import { signToken } from '../../lib/auth/index.js';
import { DynamoCallLog, recordDynamoCalls } from '../support/dynamo-recorder.js';
import { allows } from '../support/iam-policy.js';
import { synthesizedPolicies } from '../support/synthesized-policies.js';
import { workerEndpoint } from '../support/emulator.js';
import type { Json } from '../support/api.js';

const silent = { info: () => {}, error: () => {} };

describe("A4: a positioned queue's sends and peeks are granted to the api", () => {
  const log = new DynamoCallLog();
  let runtime: LocalRuntime;
  let token: string;

  const call = async (method: string, path: string, body: unknown, expected: number) => {
    const res = await fetch(`${runtime.url}${path}`, {
      method,
      headers: { authorization: token, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    expect(res.status, `${method} ${path}: ${text}`).toBe(expected);
    return (text ? JSON.parse(text) : undefined) as Json;
  };

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      dynamoEndpoint: workerEndpoint(),
      tableName: `iampos-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 0,
      clock: new OffsetClock(),
      logger: silent,
      newEntityLayout: 'positions',
      instrumentClient: (fn, client) => recordDynamoCalls(client, log.recorder(fn)),
    });
    token = signToken({
      resourceUri: `${runtime.url}/`,
      keyName: 'RootManageSharedAccessKey',
      key: runtime.rootKey,
      expiresAt: Math.floor(Date.now() / 1000) + 3600,
    });
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  it('records every call of the workload and finds each allowed by the api role', { timeout: 60_000 }, async () => {
    await call('PUT', '/queues/pos', {}, 201);
    await call('PUT', '/queues/posdup', { requiresDuplicateDetection: true }, 201);
    await call('PUT', '/queues/posfwd', { forwardTo: 'pos' }, 201);
    await call('POST', '/queues/pos/messages', { body: 'one' }, 201);
    await call('POST', '/queues/pos/messages/batch', { messages: [{ body: 'two' }, { body: 'three' }] }, 201);
    await call('POST', '/queues/posdup/messages', { body: 'once', messageId: 'd' }, 201);
    await call('POST', '/queues/posdup/messages', { body: 'once', messageId: 'd' }, 201);
    await call('POST', '/queues/posfwd/messages', { body: 'forwarded' }, 201);
    await call('POST', '/queues/pos/messages', { body: 'later', scheduledEnqueueTime: new Date(Date.now() + 600_000).toISOString() }, 201);
    const peeked = await call('GET', '/queues/pos/messages?maxMessages=10', undefined, 200);
    expect((peeked.messages as Json[]).map((m) => m.body)).toEqual(['one', 'two', 'three', 'forwarded', 'later']);

    const { statements: roles, tables } = synthesizedPolicies({ data: runtime.deps.tableName, keys: keysTableOf(runtime.deps) });
    const statements = roles.api;
    const calls = log.calls('api');
    const positioned = calls.filter((c) => c.leadingKeys.some((k) => k.startsWith('pos/') || k.startsWith('posnext/')));
    // The workload reached each kind of call a positioned send and peek make; GetItem is the
    // counter's read when a send checks whether a positioned forward target is full (F2, E6).
    expect(new Set(positioned.map((c) => c.action))).toEqual(new Set(['dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:GetItem']));
    expect(calls.filter((c) => !allows(statements, c, tables))).toEqual([]);
  });
});
