/**
 * The calls the positioned queues' counts (E6) and expiry (T6, T7) add, checked against the
 * roles of the synthesized template as test/infra/iam-grants.test.ts checks the rest: the api
 * reads a positioned queue's counter, cursor and positions for its entity view; the sweeper
 * lists the queues, claims expired heads (cursor, leases, positions) and moves what it claimed
 * into the dead-letter subqueue, or deletes it; and forwards an expired message of today's
 * layout onto a positioned queue's position (F3: the draw, then the move's transaction), as the
 * stream does for one that DynamoDB's TTL removed.
 */
import { describe, expect, it } from 'vitest';
import { jobBudget } from '../../lib/broker/budget.js';
import { createBroker } from '../../lib/broker/index.js';
import { sweepPositionedExpiry } from '../../lib/broker/positioned-expiry.js';
import { positionedTally } from '../../lib/broker/positioned-counts.js';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import type { MessageItem } from '../../lib/messages/item.js';
import { messageItems, ttlRemovalRecord } from '../support/stream.js';
import { documentClient, keysTableOf } from '../../lib/deps.js';
import { DynamoCallLog, recordDynamoCalls } from '../support/dynamo-recorder.js';
import { allows } from '../support/iam-policy.js';
import { synthesizedPolicies } from '../support/synthesized-policies.js';
import { bodies, positionedQueues } from '../support/positioned-seeds.js';
import { localClient } from '../support/table.js';
import { markTicketed, takeTicket } from '../../lib/store/tickets.js';

const { clock, world, open, createQueue, seed } = positionedQueues('iam-positioned');

const policies = (names: { data: string; keys: string }) => synthesizedPolicies(names);

describe('IAM: the positioned counts and expiry calls are granted', () => {
  it('E6, T6, T7, F3: the api reading counts and the sweeper removing expired messages make only calls their roles allow', { timeout: 120_000 }, async () => {
    await open();
    const log = new DynamoCallLog();
    const recorded = (fn: 'api' | 'sweeper' | 'stream') => {
      const client = localClient();
      recordDynamoCalls(client, log.recorder(fn));
      return createBroker({ ...world.deps, db: documentClient(client) });
    };
    const dead = await createQueue('dead', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const gone = await createQueue('gone', { defaultMessageTimeToLive: 'PT1M', enablePartitioning: true });
    await seed(dead, bodies('d', 3));
    await seed(gone, bodies('g', 2), 3);
    // F3 from the sweeper: a queue in today's layout (one with sessions) whose expired message is forwarded onto a positioned queue's position.
    const landing = await createQueue('landing');
    const legacy = await world.api('PUT', '/queues/legacy', {
      requiresSession: true,
      defaultMessageTimeToLive: 'PT1M',
      deadLetteringOnMessageExpiration: true,
      forwardDeadLetteredMessagesTo: 'landing',
    });
    expect(legacy.status).toBe(201);
    expect((await world.api('POST', '/queues/legacy/messages', { body: 'old', sessionId: 's' })).status).toBe(201);
    // F3 from the stream: the same queue's message that DynamoDB's TTL removed, forwarded onto a position.
    expect((await world.api('POST', '/queues/legacy/messages', { body: 'removed', sessionId: 't' })).status).toBe(201);
    const removed = (await messageItems(world.deps, 'legacy', 'active')).find((m) => m.sessionId === 't')!;
    await world.deps.db.send(new DeleteCommand({ TableName: world.deps.tableName, Key: { pk: removed.pk, sk: removed.sk } }));

    const api = recorded('api');
    expect(await api.describeEntity({ kind: 'queue', name: 'dead' })).toMatchObject({ runtime: { activeMessageCount: 3 } });
    await api.listEntities('queue', undefined, {});

    clock.advance(2 * 60_000);
    const sweeper = recorded('sweeper');
    expect(await sweepPositionedExpiry(sweeper.ctx, jobBudget())).toMatchObject({ expired: 5, deadLettered: 3, left: 0 });
    expect(await sweeper.sweep(jobBudget())).toMatchObject({ expired: 1 });
    expect((await positionedTally(world.broker.ctx, landing)).active).toBe(1);
    const stream = recorded('stream');
    expect((await stream.processStream([ttlRemovalRecord(removed as MessageItem, 'aws', { at: clock.now() })])).batchItemFailures).toEqual([]);
    expect((await positionedTally(world.broker.ctx, landing)).active).toBe(2);

    const { statements, tables } = policies({ data: world.deps.tableName, keys: keysTableOf(world.deps) });
    for (const fn of ['api', 'sweeper', 'stream'] as const) {
      expect(log.calls(fn).length).toBeGreaterThan(0);
      expect(log.calls(fn).filter((c) => !allows(statements[fn], c, tables))).toEqual([]);
    }
    const touches = (fn: 'api' | 'sweeper' | 'stream', action: string, prefix: string) =>
      log.calls(fn).some((c) => c.action === action && c.leadingKeys.some((k) => k.startsWith(prefix)));
    expect(touches('api', 'dynamodb:GetItem', 'posnext/')).toBe(true);
    expect(touches('api', 'dynamodb:GetItem', 'cursor/')).toBe(true);
    expect(touches('api', 'dynamodb:Query', 'pos/')).toBe(true);
    expect(touches('sweeper', 'dynamodb:Query', 'queues')).toBe(true);
    expect(touches('sweeper', 'dynamodb:PutItem', 'cursor/')).toBe(true);
    expect(touches('sweeper', 'dynamodb:PutItem', 'lease/')).toBe(true);
    expect(touches('sweeper', 'dynamodb:DeleteItem', 'pos/')).toBe(true);
    expect(touches('sweeper', 'dynamodb:PutItem', 'msg/')).toBe(true);
    expect(touches('sweeper', 'dynamodb:UpdateItem', 'posnext/')).toBe(true);
    expect(touches('sweeper', 'dynamodb:PutItem', 'pos/')).toBe(true);
    expect(touches('sweeper', 'dynamodb:DeleteItem', 'msg/')).toBe(true);
    expect(touches('stream', 'dynamodb:UpdateItem', 'posnext/')).toBe(true);
    expect(touches('stream', 'dynamodb:PutItem', 'pos/')).toBe(true);
  });

  it(
    'T6, T7, R6, R11: on ticketed queues the sweeper (looks, tickets, take-backs, markers) and bulk delete make only calls their roles allow',
    { timeout: 120_000 },
    async () => {
      const own = positionedQueues('iam-tickets', 'tickets');
      own.clock.current = clock.current;
      await own.open();
      const log = new DynamoCallLog();
      const recorded = (fn: 'api' | 'sweeper') => {
        const client = localClient();
        recordDynamoCalls(client, log.recorder(fn));
        return createBroker({ ...own.world.deps, db: documentClient(client) });
      };
      const dead = await own.createQueue('dead', { deadLetteringOnMessageExpiration: true });
      const gone = await own.createQueue('gone');
      await own.seed(dead, bodies('d', 2, { timeToLive: 60_000 }));
      await own.seed(dead, bodies('live', 1));
      const { pk } = await own.seed(gone, bodies('g', 2, { timeToLive: 60_000 }));
      // A receiver that died holding a ticket: the pass takes it back (R6).
      await markTicketed(own.world.deps, pk);
      expect((await takeTicket(own.world.deps, pk, 1, { lockMs: 30_000 })).ticket).toBeDefined();
      own.clock.advance(2 * 60_000);
      const sweeper = recorded('sweeper');
      expect(await sweepPositionedExpiry(sweeper.ctx, jobBudget())).toMatchObject({ expired: 4, deadLettered: 2, ticketsTakenBack: 1, left: 0, raced: 0 });
      const api = recorded('api');
      await own.seed(gone, bodies('n', 2));
      own.clock.advance(1_000);
      expect(
        (
          await api.deleteMessages(
            { kind: 'queue', name: 'gone', subqueue: 'active' },
            { maxMessageCount: 1, beforeEnqueueTime: new Date(own.clock.now()).toISOString() },
          )
        ).deleted,
      ).toBe(1);
      expect((await api.purge({ kind: 'queue', name: 'dead', subqueue: 'active' })).purged).toBe(1);

      const { statements, tables } = policies({ data: own.world.deps.tableName, keys: keysTableOf(own.world.deps) });
      for (const fn of ['api', 'sweeper'] as const) {
        expect(log.calls(fn).length).toBeGreaterThan(0);
        expect(log.calls(fn).filter((c) => !allows(statements[fn], c, tables))).toEqual([]);
      }
      const touches = (fn: 'api' | 'sweeper', action: string, prefix: string) =>
        log.calls(fn).some((c) => c.action === action && c.leadingKeys.some((k) => k.startsWith(prefix)));
      for (const fn of ['api', 'sweeper'] as const) {
        expect(touches(fn, 'dynamodb:GetItem', 'posnext/')).toBe(true);
        expect(touches(fn, 'dynamodb:GetItem', 'cursor/')).toBe(true);
        expect(touches(fn, 'dynamodb:UpdateItem', 'posnext/')).toBe(true);
        expect(touches(fn, 'dynamodb:PutItem', 'pos/')).toBe(true);
      }
    },
  );
});
