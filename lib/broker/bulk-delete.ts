/** Purge and delete messages (D7, R11), and the key deletes the reaper pages through. */
import { BatchWriteCommand, DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { badRequest } from '../errors.js';
import type { ReceiveTarget } from '../entities/paths.js';
import { messagePk } from '../store/keys.js';
import { queryPages } from '../store/query.js';
import { parseOrThrow } from '../validation.js';
import { API_WORK_BUDGET_MS } from './budget.js';
import type { BrokerContext } from './context.js';
import { conditionally } from '../store/outcomes.js';
import { requireEntity, type EntityItem } from './entities.js';
import { partitionCount } from './message-items.js';
import { liveSessionLock } from './sessions.js';

/**
 * D7 purge: every message of the entity or subqueue that bulk deletion may take (R11: not
 * locked, not deferred), page by page.
 */
export async function purge(ctx: BrokerContext, target: ReceiveTarget): Promise<{ purged: number }> {
  if (target.kind === 'topic') throw badRequest('path', 'a topic holds no messages; purge its subscriptions');
  const entity = await requireEntity(ctx, target);
  const purged = await deleteEligible(ctx, entity, target, { max: Number.MAX_SAFE_INTEGER });
  return { purged };
}

export const deleteMessagesSchema = z
  .strictObject({
    maxMessageCount: z.number().int().min(1).max(4000),
    beforeEnqueueTime: z.iso.datetime({ offset: true }).optional(),
  })
  .meta({ description: 'At most how many messages to delete, and the enqueue time they must be older than (default: now).' });

/**
 * The SDK's `deleteMessages`/`purgeMessages`: up to maxMessageCount messages enqueued before
 * `beforeEnqueueTime` (default: now), oldest partition pages first, locked and deferred ones
 * left where they are (R11).
 */
export async function deleteMessages(ctx: BrokerContext, target: ReceiveTarget, body: unknown): Promise<{ deleted: number }> {
  const b = parseOrThrow(deleteMessagesSchema, body ?? {});
  if (target.kind === 'topic') throw badRequest('path', 'a topic holds no messages; delete from its subscriptions');
  const entity = await requireEntity(ctx, target);
  const before = b.beforeEnqueueTime !== undefined ? Date.parse(b.beforeEnqueueTime) : ctx.clock.now();
  const deleted = await deleteEligible(ctx, entity, target, { max: b.maxMessageCount, before });
  return { deleted };
}

/** What bulk deletion reads of a message: enough to tell whether it may take it (R11). */
interface BulkCandidate {
  pk: string;
  sk: string;
  slk?: string;
  sessionId?: string;
}

/** How many conditional deletes bulk deletion has in flight at once. */
const BULK_DELETE_PARALLEL = 25;

/**
 * R11: deletes up to `max` messages of the target (enqueued before `before`, when given) that
 * no receiver holds and that are not deferred. Service Bus leaves locked messages to their
 * holder; it leaves deferred messages too (they are set aside for a receive by sequence
 * number, and its batch delete does not take them). Each delete is conditional on the same
 * facts the read filtered on, so a message locked between the read and the delete stays;
 * a conditional delete costs what an unconditional one does. A session message's own lock
 * time is not renewed with its session's lock, so one taken under a session lock that is still
 * live is left too (one read of the session item per session met).
 */
async function deleteEligible(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, limits: { max: number; before?: number }): Promise<number> {
  const started = Date.now();
  const now = ctx.clock.now();
  const eligible = `#state <> :deferred AND (attribute_not_exists(lockedUntil) OR lockedUntil <= :now)${limits.before !== undefined ? ' AND enqueuedAt < :before' : ''}`;
  const values = { ':deferred': 'Deferred', ':now': now, ...(limits.before !== undefined ? { ':before': limits.before } : {}) };
  const sessionLive = new Map<string, Promise<boolean>>();
  const heldBySession = (c: BulkCandidate) => {
    if (c.slk === undefined || c.sessionId === undefined) return Promise.resolve(false);
    const key = `${c.sessionId}\n${c.slk}`;
    if (!sessionLive.has(key)) {
      sessionLive.set(
        key,
        liveSessionLock(ctx, { eid: entity.eid, sessionId: c.sessionId, slk: c.slk }).then((until) => until !== undefined),
      );
    }
    return sessionLive.get(key)!;
  };
  const deleteOne = async (c: BulkCandidate): Promise<number> => {
    if (await heldBySession(c)) return 0;
    const out = await conditionally(
      ctx.db.send(
        new DeleteCommand({
          TableName: ctx.tableName,
          Key: { pk: c.pk, sk: c.sk },
          ConditionExpression: eligible,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: values,
        }),
      ),
    );
    return out ? 1 : 0;
  };
  let deleted = 0;
  for (let p = 0; p < partitionCount(entity, target) && deleted < limits.max; p++) {
    const pages = queryPages<BulkCandidate>(ctx, {
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: eligible,
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':pk': messagePk(entity.eid, target.subqueue, p), ...values },
      ProjectionExpression: 'pk, sk, slk, sessionId',
      Limit: 250,
    });
    for await (const page of pages) {
      const wanted = page.slice(0, limits.max - deleted);
      for (let i = 0; i < wanted.length; i += BULK_DELETE_PARALLEL) {
        const done = await Promise.all(wanted.slice(i, i + BULK_DELETE_PARALLEL).map(deleteOne));
        deleted += done.reduce((a, b) => a + b, 0);
      }
      if (Date.now() - started > API_WORK_BUDGET_MS) return deleted;
      if (deleted >= limits.max) break;
    }
  }
  return deleted;
}

/** One page of the keys under `pk`, deleted: how many (0: nothing is left). */
export async function deleteKeyPage(ctx: BrokerContext, pk: string, page: { limit: number; consistentRead?: boolean }): Promise<number> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ProjectionExpression: 'pk, sk',
      Limit: page.limit,
      ...(page.consistentRead ? { ConsistentRead: true } : {}),
    }),
  );
  return deleteKeys(ctx, (out.Items ?? []) as { pk: string; sk: string }[]);
}

/** BatchWriteItem deletes with retries of what DynamoDB leaves unprocessed. */
export async function deleteKeys(ctx: BrokerContext, keys: { pk: string; sk: string }[]): Promise<number> {
  for (let i = 0; i < keys.length; i += 25) {
    let request: Record<string, unknown[]> | undefined = {
      [ctx.tableName]: keys.slice(i, i + 25).map((k) => ({ DeleteRequest: { Key: { pk: k.pk, sk: k.sk } } })),
    };
    for (let attempt = 0; request && Object.keys(request).length; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
      const out = await ctx.db.send(new BatchWriteCommand({ RequestItems: request as never }));
      request = out.UnprocessedItems as typeof request;
    }
  }
  return keys.length;
}
