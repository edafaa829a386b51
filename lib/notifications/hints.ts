/**
 * When messages become available, the entity's watchers get a hint (H1).
 *
 * - Writes that make a message receivable at once (a send, a forwarded or fanned-out copy,
 *   an abandon, a resubmit, a scheduled message activated by the sweeper) show in the
 *   table's stream: `hintsFromStream` posts one hint per entity per batch. A positioned
 *   queue's send puts its message at a position (pk `pos/...`) instead: its insert hints too,
 *   and so does its abandon (R4: the message's `g` rises, `gl` goes, in the write that queues
 *   it first in line).
 * - A session lock released with messages left (N4) shows in the stream too: the session's
 *   item goes back into accept-next's part of the `ready` index without a lock.
 * - A lock lapsing has no write at that moment. `hintLapsedLocks` runs in the sweeper's
 *   minute: for each watched entity, one Query of the `ready` index per partition for
 *   messages that became visible since the last run (a lapsed lock's sort key is its
 *   `lockedUntil`), and for an entity that requires sessions one Query of its sessions,
 *   whose lapsed session locks sort the same way. A positioned queue's locks are not in the
 *   index: for each partition, its counter's tickets (one GetItem; with `back` queued into since
 *   it was last clear, its leases too) or, claimed by cursor, its leases (one Query), and only
 *   for a lock lapsed in the window, its positions, so a batch completed under its lock sends
 *   nobody to an empty receive (store/lapse-looks.ts). Nothing is written on a receive for
 *   this, so a message's life costs no more; while nobody waits nothing is read, and for a
 *   watched entity with nothing lapsing the check is half a read unit a partition a minute
 *   (a positioned queue's twice that: its index holds its scheduled messages).
 *
 * Hints are hints: a failure here is logged by the caller and never fails a batch or a job.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { anyReadyBetween } from '../store/ready-index.js';
import { itemOfImage, messageOfImage } from '../store/stream-image.js';
import type { MessageItem } from '../messages/item.js';
import { messagePk, padTime, parseMessagePk, parsePositionedPk, positionedPk, readyUpperBound, sessionQueuePk, SESSIONS_PK_PREFIX } from '../store/keys.js';
import type { Subqueue } from '../entities/kinds.js';
import { findEntity } from '../broker/entities.js';
import { refFromPathKey } from '../entities/paths.js';
import type { BrokerContext } from '../broker/context.js';
import { wallSeconds } from '../deps.js';
import { endWatchers, hintWatchers, type ConnectionPoster, type RuleCheck } from './watchers.js';
import { watchedPaths } from '../store/watches.js';
import { anyMessageAt, leasesLapsedBetween, lookAtCounter } from '../store/lapse-looks.js';
import { backDue } from '../store/ticket-back.js';
import type { Ticket } from '../store/tickets.js';
import { isPositioned, isTicketed } from '../broker/layouts.js';

const subqueueSuffix: Record<Subqueue, string> = { active: '', deadletter: '/$deadletterqueue', transfer: '/$transferdeadletterqueue' };

/** The hint path of a message's entity and subqueue (see protocol.ts `hintPath`). */
export const hintPathOf = (item: Pick<MessageItem, 'entity' | 'subqueue'>) => `${item.entity}${subqueueSuffix[item.subqueue]}`;

/** True when a receive at `now` could take this message: in the ready index, visible, not locked. */
export function receivableAt(item: MessageItem | undefined, now: number): boolean {
  return item?.state !== 'Deferred' && takeableAt(item, now);
}

/** True when an entry of the `ready` index (a message, or a session for accept-next) is due at `now` and not locked. */
function takeableAt(entry: { rpk?: string; rsk?: string; lockedUntil?: number } | undefined, now: number): boolean {
  if (!entry?.rpk || !entry.rsk) return false;
  if (entry.lockedUntil !== undefined && entry.lockedUntil > now) return false;
  return entry.rsk <= readyUpperBound(now);
}

/** The entities a stream batch made messages (or sessions) available on, each with its incarnation (one entry per entity). */
export function availableIn(records: DynamoDBRecord[], now: number): Map<string, string> {
  const paths = new Map<string, string>();
  for (const record of records) {
    if (record.eventName !== 'INSERT' && record.eventName !== 'MODIFY') continue;
    const pk = record.dynamodb?.Keys?.pk?.S ?? '';
    if (parseMessagePk(pk)) {
      const item = messageOfImage(record.dynamodb?.NewImage);
      if (item?.entity && receivableAt(item, now)) paths.set(hintPathOf(item), item.eid);
    } else if (record.eventName === 'INSERT' && parsePositionedPk(pk)) {
      // A positioned message is receivable once put (a receiver takes it by position); a tombstone is nothing to take.
      const item = messageOfImage(record.dynamodb?.NewImage);
      if (item?.entity && !(item as { tomb?: number }).tomb) paths.set(hintPathOf(item), item.eid);
    } else if (parsePositionedPk(pk)) {
      const item = messageOfImage(record.dynamodb?.NewImage);
      if (item?.entity && abandonedAt(record)) paths.set(hintPathOf(item), item.eid);
    } else if (pk.startsWith(SESSIONS_PK_PREFIX)) {
      const session = itemOfImage<{ entity?: string; eid: string; rpk?: string; rsk?: string; lockedUntil?: number }>(record.dynamodb?.NewImage);
      if (session?.entity && takeableAt(session, now)) paths.set(session.entity, session.eid);
    }
  }
  return paths;
}

/**
 * R4 on a positioned partition: an abandon raises the message's take-back count `g` and removes
 * `gl` in the transaction that queues it first in line (store/lease-settlements.ts
 * `abandonAtPositions`), so the new image is receivable as the stream shows it. A lapse's
 * take-back raises `g` too, but sets `gl`: its lapse was hinted in the sweeper's minute
 * (`hintLapsedLocks`), and the taker is a receiver or the sweeper's pass. Other writes of a
 * positioned message leave `g` (`markUndelivered`'s `ug`) or end it (a `done` marker, a delete).
 */
function abandonedAt(record: DynamoDBRecord): boolean {
  if (record.eventName !== 'MODIFY') return false;
  const before = itemOfImage<{ g?: number }>(record.dynamodb?.OldImage);
  const after = itemOfImage<{ g?: number; gl?: number; tomb?: number; done?: number }>(record.dynamodb?.NewImage);
  if (!after || after.tomb || after.done !== undefined || after.gl !== undefined) return false;
  return Number(after.g ?? 0) > Number(before?.g ?? 0);
}

/** Hints from a stream batch; `check` ends the subscriptions whose rule or key went (H2), where rules may be read. */
export async function hintsFromStream(
  ctx: BrokerContext,
  poster: ConnectionPoster,
  records: DynamoDBRecord[],
  check?: RuleCheck,
): Promise<{ entities: number; hints: number }> {
  const paths = availableIn(records, ctx.clock.now());
  const sent = await Promise.all([...paths].map(([path, eid]) => hintWatchers(ctx, poster, path, eid, check)));
  return { entities: paths.size, hints: sent.reduce((a, b) => a + b, 0) };
}

/**
 * Whether a lock of positioned partition `pk` that still holds a message lapsed in (`since`,
 * `now`] (store/lapse-looks.ts). Ticketed: the counter's tickets (one GetItem), and the cursor
 * leases only when `back` was queued into since a claim last found it clear (ticket-back.ts:
 * with `bq = bc` no cursor lease exists, so an idle partition costs the one read). Claimed by
 * cursor: its leases (one Query). Idle: half a read unit a partition either way.
 */
async function positionedLapseBetween(ctx: BrokerContext, pk: string, ticketed: boolean, since: number, now: number): Promise<boolean> {
  if (ticketed) {
    const counter = await lookAtCounter(ctx, pk);
    for (const t of counter.tickets) {
      if (t.until > since && t.until <= now && (await anyMessageAt(ctx, pk, positionsOf(t)))) return true;
    }
    if (!backDue(counter)) return false;
  }
  for (const lease of await leasesLapsedBetween(ctx, pk, since, now)) {
    if (
      await anyMessageAt(
        ctx,
        pk,
        lease.e.map(([position]) => position),
      )
    )
      return true;
  }
  return false;
}

const positionsOf = (t: Pick<Ticket, 'first' | 'count'>) => Array.from({ length: t.count }, (_, i) => t.first + i);

/** The first ready-index sort key at or after `ms`. */
const readyFrom = (ms: number) => `${padTime(ms)}/`;

/**
 * Hints the watchers of every watched entity on which a message became visible in
 * (`since`, now]: lapsed locks mostly. Returns the entities hinted.
 */
export async function hintLapsedLocks(ctx: BrokerContext, poster: ConnectionPoster, since: number): Promise<number> {
  const now = ctx.clock.now();
  const watched = await watchedPaths(ctx, wallSeconds(ctx));

  let hinted = 0;
  for (const path of watched) {
    const parts = path.split('/');
    const last = parts[parts.length - 1]!;
    const subqueue: Subqueue = last === '$deadletterqueue' ? 'deadletter' : last === '$transferdeadletterqueue' ? 'transfer' : 'active';
    const ref = refFromPathKey((subqueue === 'active' ? parts : parts.slice(0, -1)).join('/'));
    if (!ref) continue;
    const entity = await findEntity(ctx, ref);
    if (!entity || entity.deleting) {
      // H2: a subscription ends with its entity, and the entity leaves the sweeper's watch.
      await endWatchers(ctx, poster, path);
      continue;
    }
    // Where a session entity's messages wait, no plain partition holds any (N1): there a lapsed
    // session lock is what frees them, and its item sorts at the lock's end in accept-next's index.
    const readyKeys =
      subqueue === 'active' && entity.requiresSession
        ? [sessionQueuePk(entity.eid)]
        : Array.from({ length: entity.partitions }, (_, p) => messagePk(entity.eid, subqueue, p));
    // Two runs at the same instant (`since` = now) look at an empty window: nothing to query,
    // and the index's BETWEEN bounds would be reversed, which DynamoDB refuses.
    let found = false;
    for (const readyKey of since < now ? readyKeys : []) {
      if (found) break;
      found = await anyReadyBetween(ctx, readyKey, readyFrom(since + 1), readyUpperBound(now));
    }
    // A positioned queue's own messages lapse on its counter and leases, not in the index
    // (which keeps its scheduled messages: today's layout, looked at above).
    if (subqueue === 'active' && isPositioned(entity)) {
      for (let p = 0; p < Math.max(1, entity.partitions) && !found; p++) {
        found = await positionedLapseBetween(ctx, positionedPk(entity.eid, 'active', p), isTicketed(entity), since, now);
      }
    }
    if (found) {
      await hintWatchers(ctx, poster, path, entity.eid);
      hinted++;
    }
  }
  return hinted;
}
