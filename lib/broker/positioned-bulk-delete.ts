/**
 * R11 bulk deletion (purge, `deleteMessages`) of a positioned queue's active subqueue: each
 * partition's messages are claimed from its cursor in order, only while they were enqueued
 * before the cutoff (the claim's `takeWhile`), under a short lock, and each is then deleted by
 * its token as a complete would (`completeAtPosition`). A locked message is held in a lease,
 * not in line, so no claim takes it (R11 leaves it to its holder); deferred and scheduled
 * messages sit in today's layout, which bulk-delete.ts goes through as before. Per claim: the
 * cursor's read and write, the lease's write and, when it lapses, its delete; 1 write unit a
 * deleted 1 KB message.
 */
import { claim, completeAtPosition, releaseLease } from '../store/leases.js';
import { positionedPk } from '../store/keys.js';
import type { PositionedItem } from '../store/positions.js';
import { API_WORK_BUDGET_MS } from './budget.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import { RECEIVE_AND_DELETE_LOCK_MS } from './positioned-receive.js';

/** At most this many messages a claim of the deletion takes. */
const CLAIM_AT_ONCE = 100;

/**
 * Deletes up to `max` of the entity's positioned messages enqueued before `before` (all when
 * absent), oldest first in each partition; how many. Stops past the request's work budget,
 * counted from `started` (wall clock, as bulk-delete.ts). A delete refused for load puts the
 * claim's messages back in line at once and throws, as a receive-and-delete does.
 */
export async function deletePositioned(ctx: BrokerContext, entity: EntityItem, limits: { max: number; before?: number }, started: number): Promise<number> {
  const before = limits.before;
  const takeWhile = (item: PositionedItem) => before === undefined || (item.enqueuedAt as number) < before;
  let deleted = 0;
  for (let p = 0; p < entity.partitions && deleted < limits.max; p++) {
    const pk = positionedPk(entity.eid, 'active', p);
    while (deleted < limits.max) {
      const want = Math.min(CLAIM_AT_ONCE, limits.max - deleted);
      const got = await claim(ctx, pk, want, { lockMs: RECEIVE_AND_DELETE_LOCK_MS, takeWhile, undelivered: true });
      if (!got.lease) break;
      const outcomes = await Promise.allSettled(got.messages.map((m) => completeAtPosition(ctx, pk, m.token)));
      deleted += outcomes.filter((o) => o.status === 'fulfilled' && o.value === 'completed').length;
      const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failed) {
        // Should the put-back fail too, the short lock's lapse puts them back instead.
        await releaseLease(ctx, pk, got.lease).catch(() => undefined);
        throw failed.reason;
      }
      if (Date.now() - started > API_WORK_BUDGET_MS) return deleted;
      if (got.messages.length < want) break;
    }
  }
  return deleted;
}
