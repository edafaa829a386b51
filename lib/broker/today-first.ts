/**
 * Today's layout first (S6, R2). A positioned queue keeps its scheduled messages in today's
 * layout (the `ready` index), and a receive reads that only after the positions, when they
 * leave room in its answer (positioned-receive.ts). Under a backlog they never do, so a
 * scheduled message that came due waited for the queue to drain, however long that took.
 *
 * The entity item, which every receive reads anyway, says from when to read it first:
 * `todayFrom` (store/entities.ts).
 * - Marked (`markTodayFrom`: now) when a message there becomes receivable without a receive
 *   seeing it happen: the sweeper's activation of a scheduled message (once an entity a run), an
 *   abandon of a message taken from there.
 * - From that time on, a receive reads today's layout before the positions. One that finds
 *   nothing to hand out there looks at what it holds (`nextInToday`): a message receivable now
 *   (another receiver's race) keeps the mark; messages under locks move it to the earliest lock
 *   end, where a lapse makes one receivable again with no write; nothing but scheduled ones not
 *   due yet removes it (their activation marks again). Every write of the mark raises
 *   `todayVersion`, and a move is conditioned on the version the receive read, so a mark made
 *   meanwhile stands (an entity read that is stale only fails the move).
 *
 * Cost: nothing on an entity without such messages. For a scheduled message on a busy queue,
 * about three writes of the entity item (its mark, the move to its lock end, the removal) and
 * a look at today's layout (half a read unit a partition) by each receive while it is marked.
 */
import { markTodayFrom, moveTodayFrom } from '../store/entities.js';
import { readyUpperBound } from '../store/keys.js';
import { isStoreBusy } from '../store/outcomes.js';
import { readReadyPage } from '../store/ready-index.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import { isPositioned } from './layouts.js';

/** Rows of a ready partition a look reads; past them, the mark is kept for a few seconds more instead of reading on. */
const LOOK_ROWS = 100;
const LOOK_AGAIN_MS = 10_000;

/** What a look reads of a `ready` row (the index carries it). */
interface TodayRow {
  rsk: string;
  state: string;
  lockedUntil?: number;
}

/** Whether a receive of `entity` reads today's layout before the positions now. */
export const todayFirst = (entity: Pick<EntityItem, 'todayFrom'>, now: number): boolean => entity.todayFrom !== undefined && now >= entity.todayFrom;

/**
 * A message of `entity`'s active subqueue in today's layout became receivable: from now on its
 * receives read today's layout first. Only for a positioned entity (elsewhere today's layout is
 * all there is). False when refused for load (the message then waits for room behind the
 * positions, as before); true otherwise, the entity gone included.
 */
export async function markToday(ctx: BrokerContext, entity: EntityItem): Promise<boolean> {
  if (!isPositioned(entity)) return true;
  try {
    await markTodayFrom(ctx, entity, ctx.clock.now());
    return true;
  } catch (e) {
    if (!isStoreBusy(e)) throw e;
    return false;
  }
}

/**
 * After a receive found nothing to hand out in today's layout of `entity` (its ready partitions
 * `pks`): moves the mark to when something there may be receivable next, or removes it. The
 * request's copy of `entity` follows, so the later polls of its wait do not look again: one
 * that lost to a newer mark leaves that to the next request.
 */
export async function settleToday(ctx: BrokerContext, entity: EntityItem, pks: readonly string[]): Promise<void> {
  const seen = entity.todayVersion;
  if (entity.todayFrom === undefined || seen === undefined) return;
  try {
    const next = await nextInToday(ctx, pks);
    if (next === 'now') return;
    const moved = await moveTodayFrom(ctx, entity, seen, next);
    if (moved) entity.todayVersion = seen + 1;
    if (moved && next !== undefined) entity.todayFrom = next;
    else delete entity.todayFrom;
  } catch (e) {
    if (!isStoreBusy(e)) throw e;
  }
}

/**
 * When a message in today's layout (`pks`) is receivable next: 'now' when one is (or a look
 * could not tell), the earliest lock end of those held, undefined when there are none but
 * scheduled ones not due yet. One page of each partition, eventually consistent.
 */
async function nextInToday(ctx: BrokerContext, pks: readonly string[]): Promise<number | 'now' | undefined> {
  const now = ctx.clock.now();
  const upper = readyUpperBound(now);
  let next: number | undefined;
  for (const pk of pks) {
    const page = await readReadyPage<TodayRow>(ctx, { pk, limit: LOOK_ROWS });
    for (const row of page.items) {
      if (row.rsk <= upper) return 'now';
      if (row.state === 'Scheduled') continue;
      const at = row.lockedUntil ?? now;
      next = next === undefined ? at : Math.min(next, at);
    }
    if (page.next) next = Math.min(next ?? Infinity, now + LOOK_AGAIN_MS);
  }
  return next !== undefined && next <= now ? 'now' : next;
}
