/**
 * R11 bulk deletion (purge, `deleteMessages`) of a positioned queue's active subqueue: each
 * partition's messages are claimed from its cursor in order, only while they were enqueued
 * before the cutoff (the claim's `takeWhile`), under a short lock, and each is then deleted by
 * its token as a complete would (`completeAtPosition`). A locked message is held in a lease,
 * not in line, so no claim takes it (R11 leaves it to its holder); deferred and scheduled
 * messages sit in today's layout, which bulk-delete.ts goes through as before. Per claim: the
 * cursor's read and write, the lease's write and, when it lapses, its delete; 1 write unit a
 * deleted 1 KB message.
 *
 * A ticketed partition (store/tickets.ts) is taken the same way where the cursor still claims
 * (`back`: take-backs, abandons), and its head by ticket while the cutoff accepts it
 * (ticket-sweeps.ts `takeHeadWhile`: a look at the head first, what a ticket took and the cutoff
 * refuses given back at once, counting no delivery, R3); every removal there leaves a `done`
 * marker (`completeTicketed`). A ticket in flight holds its positions as a lease does, so a
 * locked message stays its holder's; lapsed tickets are taken back first, so their messages are
 * in line again and go too (R6).
 */
import { claim, completeAtPosition, readLeases, releaseLease, TICKETED } from '../store/leases.js';
import { positionedPk } from '../store/keys.js';
import type { PositionedItem } from '../store/positions.js';
import { lookAtPartition } from '../store/ticket-looks.js';
import { completeTicketed, lapsedTickets, takeBackTickets } from '../store/tickets.js';
import { API_WORK_BUDGET_MS } from './budget.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import { isTicketed } from './layouts.js';
import { RECEIVE_AND_DELETE_LOCK_MS } from './positioned-receive.js';
import { takeHeadWhile } from './ticket-sweeps.js';
import { ensureTicketed } from './ticketed-partitions.js';

/** At most this many messages a claim of the deletion takes. */
const CLAIM_AT_ONCE = 100;

/**
 * Deletes up to `max` of the entity's positioned messages enqueued before `before` (all when
 * absent), oldest first in each partition; how many. Stops past the request's work budget,
 * counted from `started` (wall clock, as bulk-delete.ts). A delete refused for load puts the
 * claim's messages back in line at once and throws, as a receive-and-delete does (a ticket's:
 * at its short lock's lapse).
 */
export async function deletePositioned(ctx: BrokerContext, entity: EntityItem, limits: { max: number; before?: number }, started: number): Promise<number> {
  const before = limits.before;
  const takeWhile = (item: PositionedItem) => before === undefined || (item.enqueuedAt as number) < before;
  let deleted = 0;
  const outOfTime = () => Date.now() - started > API_WORK_BUDGET_MS;
  for (let p = 0; p < entity.partitions && deleted < limits.max; p++) {
    const pk = positionedPk(entity.eid, 'active', p);
    const ticketed = isTicketed(entity) ? await ticketedPart(ctx, pk) : undefined;
    if (ticketed?.claimBack !== false) {
      const got = await claimWhile(ctx, pk, limits.max - deleted, takeWhile, ticketed !== undefined, outOfTime);
      deleted += got.deleted;
      if (got.stopped) return deleted;
      // A message in `back` the cutoff refuses holds back the head too, as a cursor claim's `takeWhile` does.
      if (got.refused) continue;
    }
    if (!ticketed || deleted >= limits.max) continue;
    await takeHeadWhile(ctx, pk, ticketed.counter, {
      accept: takeWhile,
      max: () => Math.min(CLAIM_AT_ONCE, limits.max - deleted),
      look: before !== undefined,
      lockMs: RECEIVE_AND_DELETE_LOCK_MS,
      more: () => !outOfTime(),
      remove: async (messages) => {
        const outcomes = await Promise.allSettled(messages.map((m) => completeTicketed(ctx, pk, m.token)));
        const removed = outcomes.filter((o) => o.status === 'fulfilled' && o.value === 'completed').length;
        deleted += removed;
        // The ticket keeps what was not removed; its short lock's lapse puts it back in line, counting no delivery (R3).
        const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
        if (failed) throw failed.reason;
        return removed;
      },
    });
    if (outOfTime()) return deleted;
  }
  return deleted;
}

/**
 * A ticketed partition before its deletion: its lapsed tickets taken back (their messages are in
 * line again, in `back`), and whether the cursor has anything to claim (`back`, its last claim
 * or a cursor lease lapsed). Undefined: a cursor claim owns its head (made before the mark), so
 * it is deleted from as any positioned partition.
 */
async function ticketedPart(ctx: BrokerContext, pk: string) {
  const look = await lookAtPartition(ctx, pk);
  if (look.cursor && look.cursor.pos !== TICKETED) return undefined;
  const now = ctx.clock.now();
  const lapsed = lapsedTickets(look.counter, now);
  let queued = (look.cursor?.back ?? []).length > 0;
  if (lapsed.length > 0) {
    if (!(await ensureTicketed(ctx, pk))) return undefined;
    queued = [...(await takeBackTickets(ctx, pk, lapsed)).values()].includes('returned') || queued;
  }
  const cursor = look.cursor;
  const claimBack =
    queued ||
    (cursor?.claim !== undefined && cursor.claim.until <= now) ||
    (cursor !== undefined && cursor.v > 1 && (await readLeases(ctx, pk, now)).length > 0);
  if (claimBack && !(await ensureTicketed(ctx, pk))) return undefined;
  return { counter: look.counter, claimBack };
}

/** Cursor claims while `takeWhile` holds, each message deleted by its token (a `done` marker on a ticketed partition). */
async function claimWhile(
  ctx: BrokerContext,
  pk: string,
  max: number,
  takeWhile: (item: PositionedItem) => boolean,
  ticketed: boolean,
  outOfTime: () => boolean,
): Promise<{ deleted: number; stopped: boolean; refused: boolean }> {
  let deleted = 0;
  let refused = false;
  const watched = (item: PositionedItem) => {
    const ok = takeWhile(item);
    if (!ok) refused = true;
    return ok;
  };
  while (deleted < max) {
    const want = Math.min(CLAIM_AT_ONCE, max - deleted);
    const got = await claim(ctx, pk, want, { lockMs: RECEIVE_AND_DELETE_LOCK_MS, takeWhile: watched, undelivered: true });
    if (!got.lease) break;
    const complete = ticketed ? completeTicketed : completeAtPosition;
    const outcomes = await Promise.allSettled(got.messages.map((m) => complete(ctx, pk, m.token)));
    deleted += outcomes.filter((o) => o.status === 'fulfilled' && o.value === 'completed').length;
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) {
      // Should the put-back fail too, the short lock's lapse puts them back instead.
      await releaseLease(ctx, pk, got.lease).catch(() => undefined);
      throw failed.reason;
    }
    if (outOfTime()) return { deleted, stopped: true, refused };
    if (got.messages.length < want) break;
  }
  return { deleted, stopped: false, refused };
}
