/**
 * Every DynamoDB request a function makes must be allowed by that function's role in
 * the synthesized template. DynamoDB Local enforces no IAM, so the suite records what each
 * function actually calls (a middleware on its own client) while a representative workload
 * runs through the local runtime, and evaluates each call against the role's policy:
 * action, table (data or keys) or index, and the conditions on the keys (A4): only the
 * api, notify and the bootstrap may read them, and they live in a table no stream carries.
 */
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBootstrapHandler } from '../../functions/bootstrap/handler.js';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { OffsetClock } from '../../lib/clock.js';
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { WebSocket } from 'ws';
import { documentClient, keysTableOf } from '../../lib/deps.js';
import { signToken } from '../../lib/auth/index.js';
import { AUTH_PK, HANDLED_PK_PREFIX, PARKED_PK, REMINDER_PK_PREFIX } from '../../lib/store/keys.js';
import { PARK_AFTER_FAILURES } from '../../lib/broker/stream.js';
import { countParkedRecords } from '../../lib/store/stream-failures.js';
import { faultyDeps } from '../support/faults.js';
import { indexLayout } from '../support/default-layout.js';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { createBroker } from '../support/broker.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { DynamoCallLog, recordDynamoCalls, type DynamoCall } from '../support/dynamo-recorder.js';
import { allows } from '../support/iam-policy.js';
import { synthesizedPolicies, type FunctionName } from '../support/synthesized-policies.js';
import { localClient } from '../support/table.js';
import { messageItems, streamEvent, ttlRemovalRecord } from '../support/stream.js';
import type { Json } from '../support/api.js';
import { workerEndpoint } from '../support/emulator.js';

const functionNames: FunctionName[] = ['api', 'stream', 'sweeper', 'reaper', 'notify', 'bootstrap'];
const silent = { info: () => {}, error: () => {} };

describe('every DynamoDB call a function makes is granted to its role', () => {
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
  // /_local takes the root key like any management route.
  const advance = (duration: string) => call('POST', '/_local/clock', { advance: duration }, 200);
  const job = (name: 'sweeper' | 'reaper' | 'streams') => runtime.runJob(name);

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      // Today's layout (`ready` index, lock reminders, msg/ items the stream removes): the
      // workload's R6 and T6 checks need it; iam-positioned*.test.ts drive the positioned ones.
      ...indexLayout,
      dynamoEndpoint: workerEndpoint(),
      tableName: `iam-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 0,
      clock,
      logger: silent,
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

  it('drives a representative workload and checks each recorded call against the synthesized policy', { timeout: 120_000 }, async () => {
    // prepare: queues, forwarding, a topic with subscriptions and a rule, authorization rules
    await call('PUT', '/queues/target', {}, 201);
    await call('PUT', '/queues/dlqtarget', { forwardTo: 'target' }, 201);
    await call(
      'PUT',
      '/queues/work',
      { lockDuration: 'PT30S', maxDeliveryCount: 2, deadLetteringOnMessageExpiration: true, forwardDeadLetteredMessagesTo: 'dlqtarget' },
      201,
    );
    await call('PUT', '/queues/fwd', { forwardTo: 'target' }, 201);
    await call('PUT', '/queues/idle', { autoDeleteOnIdle: 'PT5M' }, 201);
    await call('PUT', '/queues/idle/authorization-rules/sender', { rights: ['Send'] }, 201);
    await call('PUT', '/authorization-rules/listener', { rights: ['Listen'] }, 201);
    await call('POST', '/authorization-rules/listener/regenerate', { key: 'primary' }, 200);
    await call('GET', '/authorization-rules/listener', undefined, 200);
    await call('PUT', '/topics/news', {}, 201);
    await call('PUT', '/topics/news/subscriptions/all', {}, 201);
    await call('PUT', '/topics/news/subscriptions/red', {}, 201);
    await call('PUT', '/topics/news/subscriptions/red/rules/red', { filter: { sql: "color = 'red'" } }, 201);
    await call('GET', '/queues', undefined, 200);

    // act: sends (single, batch, scheduled, cancelled, forwarded, expiring), receives, settlements, peeks
    await call('POST', '/queues/work/messages', { body: 'one' }, 201);
    await call('POST', '/queues/work/messages/batch', { messages: [{ body: 'two' }, { body: 'three' }, { body: 'four' }] }, 201);
    await call('POST', '/queues/work/messages', { body: 'expiring', timeToLive: 'PT1M' }, 201);
    const scheduled = await call('POST', '/queues/work/messages', { body: 'later', scheduledEnqueueTime: new Date(clock.now() + 120_000).toISOString() }, 201);
    const cancelled = await call('POST', '/queues/work/messages', { body: 'never', scheduledEnqueueTime: new Date(clock.now() + 600_000).toISOString() }, 201);
    await call('DELETE', `/queues/work/messages/scheduled/${cancelled.sequenceNumber}`, undefined, 204);
    await call('POST', '/queues/fwd/messages', { body: 'forwarded' }, 201);
    await call('POST', '/topics/news/messages', { body: 'topical', applicationProperties: { color: 'red' } }, 201);
    await call('POST', '/queues/idle/messages', { body: 'doomed' }, 201);
    await job('streams');

    const got = (await call('POST', '/queues/work/messages/receive', { maxMessages: 4 }, 200)).messages;
    expect(got.length).toBeGreaterThanOrEqual(4);
    const [a, b, c, d] = got;
    await call('POST', `/queues/work/messages/${a.sequenceNumber}/complete`, { lockToken: a.lockToken }, 204);
    await call('POST', `/queues/work/messages/${b.sequenceNumber}/renew-lock`, { lockToken: b.lockToken }, 200);
    await call('POST', `/queues/work/messages/${b.sequenceNumber}/abandon`, { lockToken: b.lockToken }, 204);
    await call('POST', `/queues/work/messages/${c.sequenceNumber}/deadletter`, { lockToken: c.lockToken, deadLetterReason: 'test' }, 204);
    await call('POST', `/queues/work/messages/${d.sequenceNumber}/defer`, { lockToken: d.lockToken }, 204);
    const deferred = (await call('POST', '/queues/work/messages/deferred', { sequenceNumbers: [d.sequenceNumber] }, 200)).messages;
    await call('POST', '/queues/work/messages/complete', { lockTokens: deferred.map((m: { lockToken: string }) => m.lockToken) }, 200);
    await call('GET', '/queues/work/messages?maxMessages=10', undefined, 200);
    await call('GET', '/queues/target/messages', undefined, 200);
    await call('POST', '/topics/news/subscriptions/red/messages/receive', {}, 200);
    await call('GET', '/queues/work', undefined, 200);

    // Sessions (N1-N8): the broker's session operations on a client recorded as the api's (the
    // routes that call them are the API's), so the transactions that check a session lock are
    // checked against the api role too; the sweeper and the reaper meet session items below.
    const sessionBroker = (() => {
      const client = localClient();
      recordDynamoCalls(client, log.recorder('api'));
      return createBroker({ ...runtime.deps, db: documentClient(client) });
    })();
    await call(
      'PUT',
      '/queues/sessions',
      { requiresSession: true, lockDuration: 'PT30S', defaultMessageTimeToLive: 'PT2M', deadLetteringOnMessageExpiration: true },
      201,
    );
    await call(
      'POST',
      '/queues/sessions/messages/batch',
      {
        messages: [
          { body: 1, sessionId: 's1' },
          { body: 2, sessionId: 's1' },
          { body: 3, sessionId: 's1' },
          { body: 4, sessionId: 's2' },
        ],
      },
      201,
    );
    const sq = { kind: 'queue', name: 'sessions', subqueue: 'active' } as const;
    const s1 = await sessionBroker.acceptSession(sq, {});
    const lock1 = { sessionLockToken: s1.sessionLockToken };
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const [m1, m2, m3] = (await sessionBroker.receiveFromSession(sq, 's1', { ...lock1, maxMessages: 3 })) as any[];
    await sessionBroker.settle(sq, m1.sequenceNumber, 'complete', { lockToken: m1.lockToken });
    await sessionBroker.settle(sq, m2.sequenceNumber, 'defer', { lockToken: m2.lockToken });
    await sessionBroker.settle(sq, m3.sequenceNumber, 'deadletter', { lockToken: m3.lockToken });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const [d2] = (await sessionBroker.receiveDeferredFromSession(sq, 's1', { ...lock1, sequenceNumbers: [m2.sequenceNumber] })) as any[];
    await sessionBroker.settleBatch(sq, 'abandon', { lockTokens: [d2.lockToken] });
    await sessionBroker.setSessionState(sq, 's1', { ...lock1, state: Buffer.from('state').toString('base64') });
    await sessionBroker.getSessionState(sq, 's1', s1.sessionLockToken);
    await sessionBroker.renewSessionLock(sq, 's1', lock1);
    await sessionBroker.listSessions(sq, {});
    await sessionBroker.releaseSession(sq, 's1', lock1);
    // s2's message stays in flight: the sweeper checks its session lock when it expires.
    const s2 = await sessionBroker.acceptSession(sq, { sessionId: 's2' });
    await sessionBroker.receiveFromSession(sq, 's2', { sessionLockToken: s2.sessionLockToken });

    // Locks lapse, messages expire, the scheduled one comes due: the sweeper moves them (the
    // dead letters to a forwarding target, whose size it checks).
    await advance('PT3M');
    await job('sweeper');
    // R6: the receive of 4 above left a lock reminder; the next receive meets it lapsed, reads its
    // messages and deletes it.
    await call('POST', '/queues/work/messages/receive', { maxMessages: 1 }, 200);
    await job('streams');
    await call('POST', '/queues/dlqtarget/$deadletterqueue/resubmit', {}, 200);
    await call('POST', '/queues/work/$deadletterqueue/resubmit', {}, 200);
    void scheduled;

    // TTL removals as the table's stream delivers them (DynamoDB Local's own TTL runs on its own time).
    const streamHandler = (() => {
      const client = localClient();
      recordDynamoCalls(client, log.recorder('stream'));
      return createStreamHandler({ ...runtime.deps, db: documentClient(client) });
    })();
    await call('POST', '/queues/work/messages', { body: 'ttl', timeToLive: 'PT1M' }, 201);
    const items = (await messageItems(runtime.deps, 'work', 'active')) as MessageItem[];
    expect(items.length).toBeGreaterThan(0);
    await streamHandler(streamEvent(...items.map((item) => ttlRemovalRecord(item, 'aws', { at: clock.now() }))));

    // A TTL removal whose dead-lettering is refused for good (not load): the stream consumer
    // counts its failures and parks it, and the sweeper applies it (T6).
    const poisonedStream = (() => {
      const client = localClient();
      recordDynamoCalls(client, log.recorder('stream'));
      const handledTransaction = (c: unknown) =>
        c instanceof TransactWriteCommand &&
        ((c.input.TransactItems ?? []) as { Put?: { Item?: { pk?: unknown } } }[]).some((p) => String(p.Put?.Item?.pk ?? '').startsWith(HANDLED_PK_PREFIX));
      const refused = Object.assign(new Error('injected: refused for good'), { name: 'ValidationException' });
      return createStreamHandler(
        faultyDeps(
          { ...runtime.deps, db: documentClient(client) },
          {
            match: handledTransaction,
            times: Number.MAX_SAFE_INTEGER,
            interleave: async () => {
              throw refused;
            },
          },
        ),
      );
    })();
    await call('POST', '/queues/work/messages', { body: 'parked', timeToLive: 'PT1M' }, 201);
    const newest = ((await messageItems(runtime.deps, 'work', 'active')) as MessageItem[]).at(-1)!;
    const poison = ttlRemovalRecord(newest, 'aws', { at: clock.now() });
    for (let i = 0; i < PARK_AFTER_FAILURES; i++) await poisonedStream(streamEvent(poison));
    expect(await countParkedRecords(runtime.deps)).toBe(1);
    await job('sweeper');
    expect(await countParkedRecords(runtime.deps)).toBe(0);

    // Idleness: the reaper deletes the idle queue (its rules too) and then its messages.
    await advance('PT10M');
    await call('GET', '/queues/work', undefined, 200);
    await job('reaper');
    await job('reaper');
    await call('GET', '/queues/idle', undefined, 404);
    await call('DELETE', '/topics/news/subscriptions/all', undefined, 204);
    await call('DELETE', '/queues/fwd', undefined, 204);
    await call('DELETE', '/queues/sessions', undefined, 204);
    await call('DELETE', '/authorization-rules/listener', undefined, 204);
    await job('reaper');
    await job('streams');

    // Waiting consumers: subscribe with the root key and with an entity's own rule (notify
    // reads both rules and the entity), a hint on a send, and the disconnect.
    const listener = await call('PUT', '/queues/target/authorization-rules/listen', { rights: ['Listen'] }, 201);
    const ws = new WebSocket(runtime.websocketUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const frames: Json[] = [];
    ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
    const entityToken = signToken({
      resourceUri: `${runtime.url}/queues/target`,
      keyName: 'listen',
      key: listener.primaryKey,
      expiresAt: Math.floor(Date.now() / 1000) + 3600,
    });
    ws.send(JSON.stringify({ action: 'subscribe', entity: 'queues/target', token: entityToken }));
    ws.send(JSON.stringify({ action: 'subscribe', entity: 'queues/work', token }));
    await expect.poll(() => frames.filter((f) => f.type === 'subscribed').length).toBe(2);
    await call('POST', '/queues/target/messages', { body: 'hinted' }, 201);
    await job('streams');
    await expect.poll(() => frames.some((f) => f.type === 'available')).toBe(true);
    const closed = new Promise((resolve) => ws.once('close', resolve));
    ws.close();
    await closed;
    await expect.poll(() => log.calls('notify').some((c) => c.action === 'dynamodb:DeleteItem' || c.action === 'dynamodb:BatchWriteItem')).toBe(true);

    // The deploy-time root key, on a deployment that kept its rules in the data table before
    // the keys table: the bootstrap moves them.
    const legacy = {
      pk: AUTH_PK,
      sk: '/|legacy',
      keyName: 'legacy',
      scopePath: '/',
      rights: ['Listen'],
      primaryKey: 'old-primary',
      secondaryKey: 'old-secondary',
    };
    await runtime.deps.db.send(new PutCommand({ TableName: runtime.deps.tableName, Item: legacy }));
    const bootstrapClient = localClient();
    recordDynamoCalls(bootstrapClient, log.recorder('bootstrap'));
    const bootstrap = createBootstrapHandler({ ...runtime.deps, db: documentClient(bootstrapClient) }, silent);
    await bootstrap({ RequestType: 'Update', ResourceProperties: {} } as unknown as CloudFormationCustomResourceEvent);
    expect((await runtime.deps.db.send(new GetCommand({ TableName: runtime.deps.tableName, Key: { pk: AUTH_PK, sk: '/|legacy' } }))).Item).toBeUndefined();
    expect((await call('GET', '/authorization-rules/legacy', undefined, 200)).primaryKey).toBe('old-primary');

    // assess: every function did something, and nothing it did is refused by its role
    const keysTable = keysTableOf(runtime.deps);
    const { statements, tables } = synthesizedPolicies({ data: runtime.deps.tableName, keys: keysTable });
    const refused: Record<string, DynamoCall[]> = {};
    for (const fn of functionNames) {
      expect(log.calls(fn).length, `${fn} made no DynamoDB call`).toBeGreaterThan(0);
      const denied = log.calls(fn).filter((c) => !allows(statements[fn], c, tables));
      if (denied.length > 0) refused[fn] = denied;
    }
    expect(refused).toEqual({});
    // Every call named a table the check knows.
    for (const fn of functionNames) {
      for (const c of log.calls(fn)) expect([runtime.deps.tableName, keysTable], `${fn} ${JSON.stringify(c)}`).toContain(c.table);
    }
    // N2: the session workload reached the session lock checks, the sweeper and the reaper.
    const touchesSessions = (fn: FunctionName, action: string) =>
      log.calls(fn).some((c) => c.action === action && c.leadingKeys.some((k) => k.startsWith('sess/')));
    expect(touchesSessions('api', 'dynamodb:ConditionCheckItem')).toBe(true);
    expect(touchesSessions('sweeper', 'dynamodb:GetItem')).toBe(true);
    expect(touchesSessions('reaper', 'dynamodb:Query')).toBe(true);
    // The api wrote a lock reminder, read a lapsed one's messages and deleted it (R6).
    const touchesReminders = (action: string) =>
      log.calls('api').some((c) => c.action === action && c.leadingKeys.some((k) => k.startsWith(REMINDER_PK_PREFIX)));
    expect(touchesReminders('dynamodb:PutItem')).toBe(true);
    expect(touchesReminders('dynamodb:GetItem')).toBe(true);
    expect(touchesReminders('dynamodb:DeleteItem')).toBe(true);
    // Its messages are read by a Query of their partition in the table: to IAM the same call as
    // peek's (the calls are kept once each), so the grant checked above covers both.
    expect(log.calls('api').some((c) => c.action === 'dynamodb:Query' && c.resource === 'table' && c.leadingKeys.some((k) => k.startsWith('msg/')))).toBe(true);
    // The stream consumer parked a record and the sweeper applied and removed it.
    const touchesParked = (fn: FunctionName, action: string) => log.calls(fn).some((c) => c.action === action && c.leadingKeys.includes(PARKED_PK));
    expect(touchesParked('stream', 'dynamodb:PutItem')).toBe(true);
    expect(touchesParked('sweeper', 'dynamodb:GetItem')).toBe(true);
    expect(touchesParked('sweeper', 'dynamodb:DeleteItem')).toBe(true);
    // The workload reached the calls that once went ungranted.
    expect(log.actions('sweeper')).toContain('dynamodb:BatchGetItem');
    // The reaper no longer reads counts (I2 holds an entity by its `scheduledUntil`), and its role
    // no longer allows it: a call that came back would fail the policy check above.
    expect(log.actions('reaper')).not.toContain('dynamodb:BatchGetItem');
    // A4: the keys table is read by the api, notify and the bootstrap; the reaper (removing the
    // idle queue's rules) only listed their names and deleted; stream consumer and sweeper never
    // touched it. The data table holds no key any more.
    const inKeys = (fn: FunctionName) => log.calls(fn).filter((c) => c.table === keysTable);
    expect(inKeys('stream')).toEqual([]);
    expect(inKeys('sweeper')).toEqual([]);
    expect(new Set(inKeys('reaper').map((c) => c.action))).toEqual(new Set(['dynamodb:Query', 'dynamodb:DeleteItem']));
    expect(new Set(inKeys('notify').map((c) => c.action))).toEqual(new Set(['dynamodb:GetItem']));
    expect(inKeys('api').length).toBeGreaterThan(0);
    expect(inKeys('bootstrap').length).toBeGreaterThan(0);
    for (const fn of ['api', 'stream', 'sweeper', 'reaper', 'notify'] as const) {
      expect(log.calls(fn).filter((c) => c.table !== keysTable && c.leadingKeys.includes(AUTH_PK))).toEqual([]);
    }
  });
});

describe('A4: only the api, notify and the bootstrap may read the keys (the synthesized policies)', () => {
  const key = (action: string, extra: Partial<DynamoCall> = {}): DynamoCall => ({ action, resource: 'table', table: 'keys', leadingKeys: [AUTH_PK], ...extra });
  const listing = { attributes: ['sk', 'scopePath'], select: 'SPECIFIC_ATTRIBUTES' };
  const reads = [
    key('dynamodb:GetItem'),
    key('dynamodb:BatchGetItem'),
    key('dynamodb:Query'),
    key('dynamodb:Query', { attributes: ['sk', 'primaryKey'], select: 'SPECIFIC_ATTRIBUTES' }),
    key('dynamodb:Scan'),
  ];
  const writes = [key('dynamodb:PutItem'), key('dynamodb:UpdateItem'), key('dynamodb:BatchWriteItem'), key('dynamodb:ConditionCheckItem')];
  let policies: ReturnType<typeof synthesizedPolicies>;
  const may = (fn: FunctionName, call: DynamoCall) => allows(policies.statements[fn], call, policies.tables);

  beforeAll(() => {
    policies = synthesizedPolicies();
  });

  it('gives the stream consumer and the sweeper nothing in the keys table, and their work in the data table', () => {
    for (const fn of ['stream', 'sweeper'] as const) {
      for (const call of [...reads, ...writes, key('dynamodb:DeleteItem'), key('dynamodb:Query', listing)]) {
        expect(may(fn, call), `${fn} ${JSON.stringify(call)}`).toBe(false);
      }
      expect(may(fn, { action: 'dynamodb:BatchGetItem', resource: 'table', table: 'data', leadingKeys: ['stats/1', 'stats/2'] })).toBe(true);
      expect(may(fn, { action: 'dynamodb:GetItem', resource: 'table', table: 'data', leadingKeys: ['queues'] })).toBe(true);
    }
  });

  it('lets the reaper list the names of rules and delete them, and nothing else there', () => {
    expect(may('reaper', key('dynamodb:Query', listing))).toBe(true);
    expect(may('reaper', key('dynamodb:DeleteItem'))).toBe(true);
    expect(may('reaper', key('dynamodb:DeleteItem', { returnValues: 'NONE' }))).toBe(true);
    for (const call of [...reads, ...writes, key('dynamodb:DeleteItem', { returnValues: 'ALL_OLD' }), key('dynamodb:Query', { attributes: ['sk'] })]) {
      expect(may('reaper', call), JSON.stringify(call)).toBe(false);
    }
    expect(may('reaper', { action: 'dynamodb:Query', resource: 'index/due', table: 'data', leadingKeys: ['idle'] })).toBe(true);
  });

  it('lets the api manage rules, notify read them, and the bootstrap read and write them (and move older ones out of the data table)', () => {
    for (const call of [key('dynamodb:GetItem'), key('dynamodb:Query'), key('dynamodb:PutItem'), key('dynamodb:DeleteItem')])
      expect(may('api', call)).toBe(true);
    expect(may('notify', key('dynamodb:GetItem'))).toBe(true);
    for (const call of [key('dynamodb:Query'), ...writes, key('dynamodb:DeleteItem')]) expect(may('notify', call), JSON.stringify(call)).toBe(false);
    expect(may('bootstrap', key('dynamodb:GetItem'))).toBe(true);
    expect(may('bootstrap', key('dynamodb:PutItem'))).toBe(true);
    expect(may('bootstrap', key('dynamodb:DeleteItem'))).toBe(false);
    const legacy = (action: string, pk: string) => ({ action, resource: 'table', table: 'data', leadingKeys: [pk] });
    expect(may('bootstrap', legacy('dynamodb:Query', AUTH_PK))).toBe(true);
    expect(may('bootstrap', legacy('dynamodb:DeleteItem', AUTH_PK))).toBe(true);
    for (const action of ['dynamodb:Query', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem'])
      expect(may('bootstrap', legacy(action, 'queues'))).toBe(false);
  });
});
