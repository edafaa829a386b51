/** Purge and delete messages (D7, R11). */
import type { RequestOf } from '../requests/schemas.js';
import { badRequest } from '../errors.js';
import type { ReceiveTarget } from '../entities/paths.js';
import { messagePk, sessionKey } from '../store/keys.js';
import {
  bulkCandidatePages,
  bulkEligibility,
  deleteGroupIfEligibleAndUnheld,
  deleteIfEligible,
  deleteIfEligibleAndUnheld,
  SESSION_GROUP_MAX,
  type BulkCandidate,
} from '../store/message-pages.js';
import { sharedPromise } from '../single-flight.js';
import { API_WORK_BUDGET_MS } from './budget.js';
import type { BrokerContext } from './context.js';
import { requireEntity, type EntityItem } from './entities.js';
import { partitionCount } from './message-items.js';
import { liveSessionLock } from './sessions.js';
import { isPositioned } from './layouts.js';
import { deletePositioned } from './positioned-bulk-delete.js';

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

/**
 * The SDK's `deleteMessages`/`purgeMessages`: up to maxMessageCount messages enqueued before
 * `beforeEnqueueTime` (default: now), oldest partition pages first, locked and deferred ones
 * left where they are (R11).
 */
export async function deleteMessages(ctx: BrokerContext, target: ReceiveTarget, b: RequestOf<'DeleteMessagesRequest'>): Promise<{ deleted: number }> {
  if (target.kind === 'topic') throw badRequest('path', 'a topic holds no messages; delete from its subscriptions');
  const entity = await requireEntity(ctx, target);
  const before = b.beforeEnqueueTime !== undefined ? Date.parse(b.beforeEnqueueTime) : ctx.clock.now();
  const deleted = await deleteEligible(ctx, entity, target, { max: b.maxMessageCount, before });
  return { deleted };
}

/** How many conditional deletes (or session groups) bulk deletion has in flight at once. */
const BULK_DELETE_PARALLEL = 25;

/**
 * R11: deletes up to `max` messages of the target (enqueued before `before`, when given) that
 * no receiver holds and that are not deferred. Service Bus leaves locked messages to their
 * holder; it leaves deferred messages too (they are set aside for a receive by sequence
 * number, and its batch delete does not take them). Each delete is conditional on the same
 * facts the read filtered on, so a message locked between the read and the delete stays;
 * a conditional delete costs what an unconditional one does. A session message's own lock
 * time is not renewed with its session's lock, so one taken under a session lock that is still
 * live is left too (one read of the session item per session met), and a session's messages
 * of a page go in transactions of up to SESSION_GROUP_MAX with one check that its session's
 * record holds none of them (N3). A group refused (one of it held or taken meanwhile, a
 * conflict) deleted nothing, so it is taken again one message a transaction: what may go goes,
 * what is held stays, and a crash between groups leaves only whole groups. Throttling fails
 * the purge (retryable) rather than multiply the calls of a throttled table.
 */
async function deleteEligible(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, limits: { max: number; before?: number }): Promise<number> {
  const started = Date.now();
  const now = ctx.clock.now();
  const eligible = bulkEligibility(now, limits.before);
  const sessionLive = new Map<string, Promise<boolean>>();
  const heldBySession = (c: BulkCandidate) => {
    if (c.slk === undefined || c.sessionId === undefined) return Promise.resolve(false);
    const session = { eid: entity.eid, sessionId: c.sessionId, slk: c.slk, sk: c.sk, deliveryCount: c.deliveryCount ?? 0 };
    return sharedPromise(sessionLive, `${c.sessionId}\n${c.slk}`, () => liveSessionLock(ctx, session).then((until) => until !== undefined), 'always');
  };
  const deleteOne = async (c: BulkCandidate): Promise<number> => {
    if (await heldBySession(c)) return 0;
    // A session message may be held by its session's record, which a read of it cannot rule out (N3).
    if (c.sessionId !== undefined) return (await deleteIfEligibleAndUnheld(ctx, c, eligible, { key: sessionKey(entity.eid, c.sessionId), now })) ? 1 : 0;
    return (await deleteIfEligible(ctx, c, eligible)) ? 1 : 0;
  };
  const deleteGroup = async (sessionId: string, group: BulkCandidate[]): Promise<number> => {
    const free: BulkCandidate[] = [];
    for (const c of group) if (!(await heldBySession(c))) free.push(c);
    const [first] = free;
    if (first === undefined) return 0;
    if (free.length === 1) return deleteOne(first);
    if (await deleteGroupIfEligibleAndUnheld(ctx, free, eligible, { key: sessionKey(entity.eid, sessionId), now })) return free.length;
    let n = 0;
    for (const c of free) n += await deleteOne(c);
    return n;
  };
  const tasksOf = (page: BulkCandidate[]): (() => Promise<number>)[] => {
    const tasks: (() => Promise<number>)[] = [];
    const bySession = new Map<string, BulkCandidate[]>();
    for (const c of page) {
      if (c.sessionId === undefined) tasks.push(() => deleteOne(c));
      else bySession.set(c.sessionId, [...(bySession.get(c.sessionId) ?? []), c]);
    }
    for (const [sessionId, all] of bySession)
      for (let i = 0; i < all.length; i += SESSION_GROUP_MAX) {
        const group = all.slice(i, i + SESSION_GROUP_MAX);
        tasks.push(() => deleteGroup(sessionId, group));
      }
    return tasks;
  };
  let deleted = isPositioned(entity) && target.subqueue === 'active' ? await deletePositioned(ctx, entity, limits, started) : 0;
  for (let p = 0; p < partitionCount(entity, target) && deleted < limits.max; p++) {
    const pages = bulkCandidatePages(ctx, messagePk(entity.eid, target.subqueue, p), eligible);
    for await (const page of pages) {
      const tasks = tasksOf(page.slice(0, limits.max - deleted));
      for (let i = 0; i < tasks.length; i += BULK_DELETE_PARALLEL) {
        // Settled, not raced: a failure answers only once no write of the batch is in flight.
        const done = await Promise.allSettled(tasks.slice(i, i + BULK_DELETE_PARALLEL).map((t) => t()));
        const failed = done.find((d) => d.status === 'rejected');
        if (failed) throw failed.reason;
        deleted += done.reduce((a, d) => a + (d.status === 'fulfilled' ? d.value : 0), 0);
      }
      if (Date.now() - started > API_WORK_BUDGET_MS) return deleted;
      if (deleted >= limits.max) break;
    }
  }
  return deleted;
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { purge, deleteMessages };
