/**
 * The reaper, every minute: removes what deleted entities left behind (E4), in pages that
 * continue across runs, and deletes entities idle past their autoDeleteOnIdle (I1-I4).
 * Safe to run twice at once: deletes are idempotent and entity deletion is conditional.
 */
import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { messagePk, tombstoneKey, IDLE_DUE_PK, tableIndex, type Subqueue } from '../store/keys.js';
import type { BrokerContext } from './context.js';
import { deleteKeys } from './browse.js';
import { deleteEntity, findEntity, getStats, type EntityItem } from './entities.js';
import { refFromPathKey } from './lookup.js';
import { BrokerError } from '../errors.js';

export interface ReapReport {
  messagesRemoved: number;
  tombstonesCleared: number;
  entitiesDeleted: string[];
}

const SUBQUEUES: Subqueue[] = ['active', 'deadletter', 'transfer'];

export async function reap(ctx: BrokerContext, budgetMs = 50_000): Promise<ReapReport> {
  const report: ReapReport = { messagesRemoved: 0, tombstonesCleared: 0, entitiesDeleted: [] };
  const started = Date.now();
  await deleteIdleEntities(ctx, report);
  const tombstones = await ctx.db.send(
    new QueryCommand({ TableName: ctx.tableName, KeyConditionExpression: 'pk = :gc', ExpressionAttributeValues: { ':gc': 'gc' }, Limit: 25 }),
  );
  for (const t of (tombstones.Items ?? []) as { eid: string; partitions?: number }[]) {
    let empty = true;
    for (const subqueue of SUBQUEUES) {
      const partitions = subqueue === 'active' ? (t.partitions ?? 1) : 1;
      for (let p = 0; p < partitions; p++) {
        for (;;) {
          if (Date.now() - started > budgetMs) return report;
          const page = await ctx.db.send(
            new QueryCommand({
              TableName: ctx.tableName,
              KeyConditionExpression: 'pk = :pk',
              ExpressionAttributeValues: { ':pk': messagePk(t.eid, subqueue, p) },
              ProjectionExpression: 'pk, sk',
              Limit: 500,
              ConsistentRead: true,
            }),
          );
          const keys = (page.Items ?? []) as { pk: string; sk: string }[];
          if (keys.length === 0) break;
          report.messagesRemoved += await deleteKeys(ctx, keys);
          empty = false;
        }
      }
    }
    // Cleared only after a pass that found every partition empty; the next run confirms.
    if (empty) {
      await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: tombstoneKey(t.eid) }));
      report.tombstonesCleared++;
    }
  }
  return report;
}

/** I1/I4: entities whose idle deadline has passed; the entity is re-read and re-checked first. */
async function deleteIdleEntities(ctx: BrokerContext, report: ReapReport) {
  const now = ctx.clock.now();
  const due = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.due,
      KeyConditionExpression: 'dpk = :idle AND dsk <= :now',
      ExpressionAttributeValues: { ':idle': IDLE_DUE_PK, ':now': now },
      Limit: 25,
    }),
  );
  for (const key of (due.Items ?? []) as { pk: string; sk: string }[]) {
    const path = key.pk === 'queues' ? `queues/${key.sk}` : key.pk === 'topics' ? `topics/${key.sk}` : `${key.pk.replace(/^topic\//, 'topics/')}/subscriptions/${key.sk.replace(/^sub\//, '')}`;
    const ref = refFromPathKey(path);
    if (!ref) continue;
    const entity = (await findEntity(ctx, ref, true)) as EntityItem | undefined;
    if (!entity || entity.autoDeleteOnIdle === null) continue;
    if (entity.forwardTo) continue; // I3: forwarding counts as a receiver
    if (entity.accessedAt + entity.autoDeleteOnIdle > now) continue;
    if (await hasScheduledMessages(ctx, entity)) continue; // I2: pending scheduled messages are use
    try {
      await deleteEntity(ctx, ref, { accessedAt: entity.accessedAt });
      report.entitiesDeleted.push(path);
    } catch (e) {
      if (!(e instanceof BrokerError)) throw e; // busy again or already gone
    }
  }
}

async function hasScheduledMessages(ctx: BrokerContext, entity: EntityItem): Promise<boolean> {
  const eids = [entity.eid];
  if (entity.kind === 'topic') {
    const subs = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sub)',
        ExpressionAttributeValues: { ':pk': `topic/${entity.sk}`, ':sub': 'sub/' },
        ProjectionExpression: 'eid',
      }),
    );
    eids.push(...(subs.Items ?? []).map((i) => i.eid as string));
  }
  const stats = await getStats(ctx, eids);
  return [...stats.values()].some((s) => (s.scheduled ?? 0) > 0);
}
