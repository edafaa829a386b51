/**
 * The reaper, every minute: removes what deleted entities left behind (E4), in pages that
 * continue across runs, and deletes entities idle past their autoDeleteOnIdle (I1-I4).
 * Safe to run twice at once: deletes are idempotent and entity deletion is conditional.
 */
import { cursorKey, leasePk, messagePk, positionCounterKey, positionedPk, reminderPk, sessionsPk } from '../store/keys.js';
import type { Subqueue } from '../entities/kinds.js';
import { deleteReadyMarks } from '../store/markers.js';
import { retireCounter } from '../store/positions.js';
import { clearTombstone, dueIdleEntities, getEntity, listTombstones, postponeIdleEntity } from '../store/entities.js';
import type { BrokerContext } from './context.js';
import { deleteKeyPage } from '../store/message-pages.js';
import { deleteEntity, idleDeadline, type EntityItem } from './entities.js';
import { ruleStore, scopeOf } from './authorization.js';
import { refFromPathKey } from '../entities/paths.js';
import { BrokerError } from '../errors.js';
import { exhausted, jobBudget, type TimeBudget } from './budget.js';

export interface ReapReport {
  messagesRemoved: number;
  tombstonesCleared: number;
  entitiesDeleted: string[];
  /** False when the time budget ran out first; the next run carries on. */
  complete: boolean;
}

const SUBQUEUES: Subqueue[] = ['active', 'deadletter', 'transfer'];

export async function reap(ctx: BrokerContext, budget: TimeBudget = jobBudget()): Promise<ReapReport> {
  const report: ReapReport = { messagesRemoved: 0, tombstonesCleared: 0, entitiesDeleted: [], complete: false };
  await deleteIdleEntities(ctx, report, budget);
  if (exhausted(budget)) return report;
  const { tombstones, more } = await listTombstones(ctx, 25);
  for (const t of tombstones) {
    let empty = true;
    // Its messages, then their partitions' lock reminders, then its sessions and their state (N5).
    const messagePks = SUBQUEUES.flatMap((subqueue) =>
      Array.from({ length: subqueue === 'active' ? (t.partitions ?? 1) : 1 }, (_, p) => messagePk(t.eid, subqueue, p)),
    );
    // A positioned incarnation's messages and tombstones, then its counters, cursors and leases (store/positions.ts, leases.ts).
    const positionedPks = t.layout === 'positions' ? Array.from({ length: t.partitions ?? 1 }, (_, p) => positionedPk(t.eid, 'active', p)) : [];
    const positionedParts = positionedPks.flatMap((pk) => [positionCounterKey(pk).pk, cursorKey(pk).pk, leasePk(pk)]);
    const partitions = [...messagePks, ...messagePks.map(reminderPk), ...positionedPks, ...positionedParts, sessionsPk(t.eid)];
    for (const pk of partitions) {
      for (;;) {
        if (exhausted(budget)) return report;
        const removed = await deleteKeyPage(ctx, pk, { limit: 500, consistentRead: true });
        if (removed === 0) break;
        if (messagePks.includes(pk) || positionedPks.includes(pk)) report.messagesRemoved += removed;
        empty = false;
      }
    }
    // Cleared only after a pass that found every partition empty; the next run confirms.
    if (empty) {
      // The counters' retirement and the ready marks go last but one: from then on a late
      // writer into this incarnation fails instead of leaving an item nothing removes.
      for (const pk of positionedPks) await retireCounter(ctx, pk);
      if ((t.partitions ?? 1) > 1) await deleteReadyMarks(ctx, t.eid);
      await clearTombstone(ctx, t.eid);
      report.tombstonesCleared++;
    }
  }
  // More tombstones than one run reads are the next run's.
  report.complete = !more;
  return report;
}

/** I1/I4: entities whose idle deadline has passed; each is re-read and re-checked first. */
async function deleteIdleEntities(ctx: BrokerContext, report: ReapReport, budget: TimeBudget) {
  let start: Record<string, unknown> | undefined;
  do {
    const now = ctx.clock.now();
    const due = await dueIdleEntities(ctx, now, start);
    for (const key of due.keys) {
      // Within the page too: one entity's deletion can take many writes.
      if (exhausted(budget)) return;
      const deleted = await reapIfIdle(ctx, key, now);
      if (deleted) report.entitiesDeleted.push(deleted);
    }
    start = due.next;
  } while (start && !exhausted(budget));
}

async function reapIfIdle(ctx: BrokerContext, key: { pk: string; sk: string }, now: number): Promise<string | undefined> {
  const entity = await getEntity(ctx, key, true);
  const ref = entity && refFromPathKey(entity.path);
  if (!entity || !ref) return undefined;
  const path = entity.path;
  const finishing = entity.deleting === true; // a large deletion that stopped part-way
  const deadline = idleDeadline(entity);
  if (!finishing) {
    if (deadline === null) return postpone(ctx, entity, null);
    if (deadline > now) return postpone(ctx, entity, deadline); // used since: its agenda entry was stale
    // I3: forwarding counts as a receiver. I2's pending scheduled messages are in the deadline
    // itself (scheduledUntil), so they hold the entity even before the stream has counted them.
    if (entity.forwardTo) return postpone(ctx, entity, now + (entity.autoDeleteOnIdle ?? 0));
  }
  try {
    await deleteEntity(ctx, ref, finishing ? undefined : { accessedAt: entity.accessedAt });
    await createAuthCleanup(ctx)(path);
    return path;
  } catch (e) {
    if (e instanceof BrokerError) return undefined; // busy again, or already gone
    throw e;
  }
}

/** Moves a skipped entity's agenda entry on, so skipped entities never crowd out due ones. */
async function postpone(ctx: BrokerContext, entity: EntityItem, at: number | null): Promise<undefined> {
  // Not moved: the entity went or was re-created meanwhile, and its own entry is its own.
  await postponeIdleEntity(ctx, entity, at);
  return undefined;
}

/** E4: the rules of an entity deleted for idleness go with it, as with DELETE. */
const createAuthCleanup = (ctx: BrokerContext) => (path: string) => ruleStore(ctx).removeScope(scopeOf(path));
