/**
 * The api function's role allows every DynamoDB call a positioned queue's receive and complete
 * make (lib/broker/positioned-receive.ts): claims (the cursor read consistently and written,
 * lapsed leases queried, the head queried, leases written and deleted, take-backs, tombstones),
 * completes (the delete, and past a token's lock end the lease read), receive-and-delete, and
 * moves onto positions (a resubmit, a forwarded dead letter: the draw, then the transaction);
 * and the entity's `todayFrom` (broker/today-first.ts), which the sweeper sets at a scheduled
 * message's activation and the api at an abandon and moves or removes at a receive. The calls
 * are recorded on the local runtime's own client, as test/infra/iam-grants.test.ts does, and
 * checked against the synthesized policy.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { OffsetClock } from '../../lib/clock.js';
import { keysTableOf } from '../../lib/deps.js';
import { signToken } from '../../lib/auth/index.js';
import { CURSOR_PK_PREFIX, LEASE_PK_PREFIX, MESSAGE_PK_PREFIX, POSITION_COUNTER_PK_PREFIX, POSITIONED_PK_PREFIX, QUEUES_PK } from '../../lib/store/keys.js';
import { drawPositions } from '../../lib/store/positions.js';
import { positionedPk } from '../../lib/store/keys.js';
import { DynamoCallLog, recordDynamoCalls } from '../support/dynamo-recorder.js';
import { allows } from '../support/iam-policy.js';
import { synthesizedPolicies } from '../support/synthesized-policies.js';
import { jsonMessages, queueEntity, sendPositioned } from '../support/positioned-queue.js';
import type { Json } from '../support/api.js';
import { workerEndpoint } from '../support/emulator.js';

const silent = { info: () => {}, error: () => {} };

describe('every DynamoDB call of a positioned receive and complete is granted to the api role', () => {
  const log = new DynamoCallLog();
  const clock = new OffsetClock();
  let runtime: LocalRuntime;
  let token: string;

  const call = async (method: string, path: string, body?: unknown, expected?: number) => {
    const res = await fetch(`${runtime.url}${path}`, {
      method,
      headers: { authorization: token, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (expected !== undefined) expect(res.status, `${method} ${path}: ${text}`).toBe(expected);
    return (text ? JSON.parse(text) : undefined) as Json;
  };
  const advance = (duration: string) => call('POST', '/_local/clock', { advance: duration }, 200);

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      dynamoEndpoint: workerEndpoint(),
      tableName: `iampos-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 0,
      clock,
      logger: silent,
      newEntityLayout: 'positions',
      instrumentClient: (fn, client) => recordDynamoCalls(client, log.recorder(fn)),
    });
    token = signToken({
      resourceUri: `${runtime.url}/`,
      keyName: 'RootManageSharedAccessKey',
      key: runtime.rootKey,
      expiresAt: Math.floor(Date.now() / 1000) + 24 * 3600,
    });
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  it('R1, R3, R4, R5, R6, D7, F3: claims, take-backs, tombstones, completes, receive-and-delete and moves onto positions', { timeout: 120_000 }, async () => {
    await call('PUT', '/queues/pos', { lockDuration: 'PT30S' }, 201);
    await call('PUT', '/queues/posp', { lockDuration: 'PT30S', enablePartitioning: true }, 201);
    const entity = await queueEntity(runtime.deps, 'pos');
    const partitioned = await queueEntity(runtime.deps, 'posp');
    expect(entity.layout).toBe('positions');
    await sendPositioned(runtime.deps, entity, jsonMessages('a', 4));
    await drawPositions(runtime.deps, positionedPk(entity.eid, 'active', 0), 1); // a hole, tombstoned later
    await sendPositioned(runtime.deps, entity, jsonMessages('b', 2));
    await sendPositioned(runtime.deps, partitioned, jsonMessages('p', 2), 5);

    const batch = (await call('POST', '/queues/pos/messages/receive', { maxMessages: 3, maxWaitTime: 'PT0S' }, 200)).messages as Json[];
    expect(batch).toHaveLength(3);
    await call('POST', `/queues/pos/messages/${batch[0].sequenceNumber}/complete`, { lockToken: batch[0].lockToken }, 204);
    await call('POST', '/queues/pos/messages/complete', { lockTokens: [batch[1].lockToken] }, 200);
    await advance('PT40S');
    // Past its lock: the lease is read, then the message is taken back and received again.
    await call('POST', `/queues/pos/messages/${batch[2].sequenceNumber}/complete`, { lockToken: batch[2].lockToken }, 410);
    const again = (await call('POST', '/queues/pos/messages/receive', { maxMessages: 10, maxWaitTime: 'PT0S' }, 200)).messages as Json[];
    expect(again.length).toBeGreaterThan(0);
    await call('POST', '/queues/pos/messages/complete', { lockTokens: again.map((m) => m.lockToken) }, 200);
    await call('POST', '/queues/posp/messages/receive', { mode: 'receiveAndDelete', maxMessages: 10, maxWaitTime: 'PT0S' }, 200);
    await advance('PT40S');
    await call('POST', '/queues/pos/messages/receive', { maxMessages: 10, maxWaitTime: 'PT0S' }, 200);
    // D7, F3: moves onto positions (moves.ts `moveMessage`): a dead letter resubmitted, and one forwarded.
    await call('PUT', '/queues/posdl', { lockDuration: 'PT30S' }, 201);
    await call('PUT', '/queues/posfwddl', { lockDuration: 'PT30S', forwardDeadLetteredMessagesTo: 'posdl' }, 201);
    for (const q of ['posdl', 'posfwddl']) {
      await call('POST', `/queues/${q}/messages`, { body: 'dl' }, 201);
      const [m] = (await call('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT0S' }, 200)).messages as Json[];
      await call('POST', `/queues/${q}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken }, 204);
    }
    expect(await call('POST', '/queues/posdl/$deadletterqueue/resubmit', {}, 200)).toMatchObject({ resubmitted: 1 });
    const moved = (await call('POST', '/queues/posdl/messages/receive', { maxMessages: 10, maxWaitTime: 'PT0S' }, 200)).messages as Json[];
    expect(moved.map((m) => m.body)).toEqual(['dl', 'dl']);

    const { statements: roles, tables } = synthesizedPolicies({ data: runtime.deps.tableName, keys: keysTableOf(runtime.deps) });
    const statements = roles.api;
    const calls = log.calls('api');
    expect(calls.filter((c) => !allows(statements, c, tables))).toEqual([]);
    // The workload reached the positioned layout's items with each kind of call.
    const touched = (action: string, prefix: string) => calls.some((c) => c.action === action && c.leadingKeys.some((k) => k.startsWith(prefix)));
    for (const [action, prefix] of [
      ['dynamodb:GetItem', CURSOR_PK_PREFIX],
      ['dynamodb:PutItem', CURSOR_PK_PREFIX],
      ['dynamodb:Query', LEASE_PK_PREFIX],
      ['dynamodb:PutItem', LEASE_PK_PREFIX],
      ['dynamodb:DeleteItem', LEASE_PK_PREFIX],
      ['dynamodb:Query', POSITIONED_PK_PREFIX],
      ['dynamodb:UpdateItem', POSITIONED_PK_PREFIX],
      ['dynamodb:PutItem', POSITIONED_PK_PREFIX],
      ['dynamodb:DeleteItem', POSITIONED_PK_PREFIX],
      ['dynamodb:UpdateItem', POSITION_COUNTER_PK_PREFIX],
      ['dynamodb:DeleteItem', MESSAGE_PK_PREFIX],
    ] as const) {
      expect(touched(action, prefix), `${action} on ${prefix}`).toBe(true);
    }
  });

  it(
    'S6, R2: a due scheduled message read ahead of a backlog: the mark by the sweeper, the abandon and the receives that move and remove it',
    { timeout: 60_000 },
    async () => {
      await call('PUT', '/queues/possched', { lockDuration: 'PT30S' }, 201);
      const entity = await queueEntity(runtime.deps, 'possched');
      await sendPositioned(runtime.deps, entity, jsonMessages('c', 20));
      const at = new Date(clock.now() + 10_000).toISOString();
      await call('POST', '/queues/possched/messages', { body: 's', scheduledEnqueueTime: at }, 201);
      await advance('PT20S');
      expect(await call('POST', '/_local/jobs/sweeper', undefined, 200)).toMatchObject({ activated: 1 });
      const receive = async () => (await call('POST', '/queues/possched/messages/receive', { maxMessages: 2, maxWaitTime: 'PT0S' }, 200)).messages as Json[];
      const [s] = await receive();
      expect(s.body).toBe('s');
      await call('POST', `/queues/possched/messages/${s.sequenceNumber}/abandon`, { lockToken: s.lockToken }, 204);
      const [again] = await receive();
      expect(again.body).toBe('s');
      await receive(); // nothing in today's layout: the mark moves to the lock's end
      await call('POST', `/queues/possched/messages/${again.sequenceNumber}/complete`, { lockToken: again.lockToken }, 204);
      await advance('PT40S');
      await receive(); // nothing there at all: the mark goes

      const { statements: roles, tables } = synthesizedPolicies({ data: runtime.deps.tableName, keys: keysTableOf(runtime.deps) });
      for (const fn of ['api', 'sweeper'] as const) {
        const calls = log.calls(fn);
        expect(calls.filter((c) => !allows(roles[fn], c, tables))).toEqual([]);
        expect(
          calls.some((c) => c.action === 'dynamodb:UpdateItem' && c.leadingKeys.includes(QUEUES_PK)),
          `${fn} writes the entity's todayFrom`,
        ).toBe(true);
      }
    },
  );
});
