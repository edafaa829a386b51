/**
 * Expiry of messages at positions (T4-T7).
 *
 * A positioned message carries no `ttl` and sits in no index (positions.ts
 * `NEVER_ON_A_POSITION`): DynamoDB's TTL would empty its position, and an empty position
 * before the cursor is a crashed sender's hole to a receiver, which tombstones it and voids
 * its whole send request, the request's unexpired messages too. So an expired message is only
 * ever removed once a claim has passed it, under that claim's lease:
 *
 * - a receive's claim takes it like any other message (from the head or, after its lock ran
 *   out or was abandoned, from `back`: T5), and the receive hands out only the live ones
 *   (`splitExpired`, T4) and removes the expired ones (`expireClaimed`, T6): deleted, or moved
 *   to the dead-letter subqueue in today's layout with reason TTLExpiredException, keeping its
 *   sequence number where the dead-letter subqueue can hold it (a message of partition 0), or
 *   forwarded (F3), onto a position when the target is a positioned queue;
 * - for a queue nobody receives from, the sweeper's pass (`sweepPositionedExpiry`, T7) claims
 *   from each partition's head only while the messages there are expired, and removes them
 *   the same way. It stops at the first live message: one with a longer time to live at the
 *   head holds back the removal (not the expiry: T4 still holds) of those behind it until it
 *   expires or is received. On a ticketed partition (store/tickets.ts) the head is taken by
 *   ticket instead, after a look, and what the ticket took that is live is given back at once
 *   (`sweepTicketedPartition`, ticket-sweeps.ts); every removal there leaves a `done` marker.
 *
 * The same pass is D2's backstop, as today's sweeper is at a lapse: a message whose last allowed
 * lock lapsed with nobody receiving is dead-lettered (MaxDeliveryCountExceeded) by it, not only
 * by the next receive. What it claims from `back` (a lapsed lease taken back) it takes while
 * expired or used up (`usedUp`); a lapsed ticket's messages, on an entity allowing one delivery,
 * it moves in place before the take-back (`deadLetterLapsedTickets`). An idle partition pays
 * nothing more for it: both are decided on what the pass reads anyway, or after a lapse.
 *
 * A remover that dies leaves the message under its lease: the lease lapses, the next claim
 * takes it back and passes it to expiry again. A remover that loses to a take-back writes
 * nothing (the removal is conditioned on the take-back count the lease holds it at).
 */
import { isExpired } from '../fate/ttl.js';
import { onLockReleased, reasons } from '../fate/delivery.js';
import type { MessageItem } from '../messages/item.js';
import { listEntityPage, type EntityItem } from '../store/entities.js';
import { messageKey, positionedPk, readySortKey } from '../store/keys.js';
import {
  claim,
  deliveryCountAt,
  entryOfToken,
  markClaimUndelivered,
  readLeases,
  TICKETED,
  type Claim,
  type ClaimOptions,
  type Entry,
  type LeaseItem,
} from '../store/leases.js';
import { lookAtPartition } from '../store/ticket-looks.js';
import { lapsedTicketMessages, lapsedTickets, takeBackTickets, type Ticket } from '../store/tickets.js';
import { takeHeadWhile } from './ticket-sweeps.js';
import { ensureTicketed } from './ticketed-partitions.js';
import { messageOfStored, type StoredMessageItem } from '../store/message-layout.js';
import { deleteExpiredAtPosition, deleteVoidBelowCursor, type RemovalOutcome } from '../store/position-expiry.js';
import { heldAtPosition, moveFromPosition } from '../store/lease-settlements.js';
import type { PositionedItem } from '../store/positions.js';
import { partitionOfSeq } from '../store/sequence.js';
import { exhausted, type TimeBudget } from './budget.js';
import type { BrokerContext } from './context.js';
import { isPositioned, isTicketed, removalFor } from './layouts.js';
import { announceSessionMessages } from './message-items.js';
import { BrokerError } from '../errors.js';
import { deadLetter, deadLetterTargets, expiryDescription, markTargets, withDrawnPositions } from './moves.js';

export type ClaimedMessage = Claim['messages'][number];

/** T4: a message at a position is past its `expiresAt` at `now`. */
export const expiredBy = (now: number) => (item: PositionedItem) => isExpired(item.expiresAt as number | undefined, now);

/** A claim's messages: those to hand out, and those expired at `now`, never to hand out (T4, T5). */
export function splitExpired(messages: readonly ClaimedMessage[], now: number): { live: ClaimedMessage[]; expired: ClaimedMessage[] } {
  const expired = expiredBy(now);
  return { live: messages.filter((m) => !expired(m.item)), expired: messages.filter((m) => expired(m.item)) };
}

export interface ExpiryTally {
  /** Removed: deleted, or moved to the dead-letter subqueue (`deadLettered` of them). */
  expired: number;
  deadLettered: number;
  /** Left under their lease (taken back first, refused for load, or failed): the next claim passes them again. */
  left: number;
}

/**
 * R3: a message a claim took only to remove it, left under the claim's lease because the
 * removal was refused, comes back at the lapse with no delivery counted for this claim. Best
 * effort: refused too, the lapse counts one, as before.
 */
export async function leftUndelivered(ctx: BrokerContext, partitionPk: string, m: ClaimedMessage): Promise<void> {
  await markClaimUndelivered(ctx, partitionPk, [m]);
}

/**
 * Where an expired message goes (T6): its entity's dead-letter subqueue, or on (F3). The copy
 * in its own dead-letter subqueue keeps the message's sequence number when that subqueue can
 * hold it (a message of partition 0: a dead letter is addressed in partition 0 by its number,
 * settle.ts `locate`), so a move retried after a crash finds its copy's key taken; a message
 * of another partition gets a fresh number there, as today's dead letters do, and the
 * original in `enqueuedSequenceNumber`.
 */
async function expiryTargets(ctx: BrokerContext, entity: EntityItem, message: MessageItem, positioned: Set<string>): Promise<MessageItem[]> {
  const targets = await deadLetterTargets(ctx, entity, message, { reason: reasons.expired, description: expiryDescription }, positioned);
  const seq = BigInt(message.seq);
  return targets.map((t) => {
    if (t.eid !== entity.eid || t.subqueue !== 'deadletter' || partitionOfSeq(seq) !== 0) return t;
    return { ...t, ...messageKey(entity.eid, 'deadletter', 0, seq), seq: message.seq, rsk: readySortKey(ctx.clock.now(), seq) };
  });
}

/**
 * T6: removes expired messages a claim of `partitionPk` took, under their lease (their tokens):
 * each deleted (on a ticketed entity: replaced by its `done` marker), or moved to the dead-letter
 * subqueue when the entity asks, one write (or one transaction) each, one at a time. Never throws for one message: what is not removed stays
 * under its lease, which lapses, and the next claim passes it to expiry again; under a `lease`
 * that hands messages out (a peek-lock claim's, without `nd`), marked first so that its lapse
 * counts no delivery for it (R3, leases.ts `markUndelivered`).
 */
export async function expireClaimed(
  ctx: BrokerContext,
  entity: EntityItem,
  partitionPk: string,
  expired: readonly ClaimedMessage[],
  lease?: Pick<LeaseItem, 'nd'>,
): Promise<ExpiryTally> {
  const tally: ExpiryTally = { expired: 0, deadLettered: 0, left: 0 };
  const removal = removalFor(entity);
  for (const m of expired) {
    const entry = entryOfToken(m.token);
    let outcome: RemovalOutcome;
    try {
      if (entity.deadLetteringOnMessageExpiration) {
        // The times it was delivered: this claim's count less the delivery it would have been.
        const message = { ...messageOfStored(m.item as unknown as StoredMessageItem), deliveryCount: m.deliveryCount - 1 };
        const positioned = new Set<string>();
        const targets = await expiryTargets(ctx, entity, message, positioned);
        await announceSessionMessages(ctx, targets);
        await markTargets(ctx, targets);
        // A copy forwarded into a positioned queue (F3) lands on a position drawn for it (moves.ts).
        outcome = await withDrawnPositions<RemovalOutcome>(ctx, targets, positioned, async (today, parts) => {
          const moved = await moveFromPosition(ctx, partitionPk, entry, today, parts, removal);
          return moved === 'placeTaken' ? moved : { moved: moved === 'done', value: moved };
        });
        if (outcome === 'done') tally.deadLettered++;
      } else {
        outcome = await deleteExpiredAtPosition(ctx, partitionPk, entry, removal);
      }
    } catch {
      outcome = 'busy';
    }
    if (outcome === 'done') tally.expired++;
    else tally.left++;
    if (outcome === 'busy' && lease && !lease.nd) await leftUndelivered(ctx, partitionPk, m);
  }
  return tally;
}

export interface UnexpiredClaim {
  /** The live messages claimed, in order, each under the lease its token names. */
  messages: ClaimedMessage[];
  /** The leases they are under (one a round that took any). */
  leases: LeaseItem[];
  lostRaces: number;
  /** What the expired messages met on the way came to. */
  expiry: ExpiryTally;
}

/**
 * What a receive calls instead of `claim` (T4, T6): claims up to `want` messages, removes the
 * expired ones among them under their lease (`expireClaimed`) and claims again for the rest,
 * at most `rounds` times, so a receive behind expired messages still gets live ones. Every
 * message it returns is live at the broker clock's now and is to be handed out (R10).
 */
export async function claimUnexpired(
  ctx: BrokerContext,
  entity: EntityItem,
  partitionPk: string,
  want: number,
  options: ClaimOptions & { rounds?: number },
): Promise<UnexpiredClaim> {
  const out: UnexpiredClaim = { messages: [], leases: [], lostRaces: 0, expiry: { expired: 0, deadLettered: 0, left: 0 } };
  for (let round = 0; round < (options.rounds ?? 3) && out.messages.length < want; round++) {
    const taken = await claim(ctx, partitionPk, want - out.messages.length, options);
    out.lostRaces += taken.lostRaces;
    const { live, expired } = splitExpired(taken.messages, ctx.clock.now());
    if (live.length > 0 && taken.lease) out.leases.push(taken.lease);
    out.messages.push(...live);
    if (expired.length === 0) break;
    const tally = await expireClaimed(ctx, entity, partitionPk, expired);
    for (const k of Object.keys(tally) as (keyof ExpiryTally)[]) out.expiry[k] += tally[k];
  }
  return out;
}

/** The sweeper runs every minute; its pass over positioned queues runs in the first minute of each quarter hour. */
export const POSITIONED_PASS_EVERY_MINUTES = 15;
export const positionedPassDue = (now: number) => Math.floor(now / 60_000) % POSITIONED_PASS_EVERY_MINUTES === 0;

/** How long the pass holds what it claims: should it die, its messages come back this soon. */
export const SWEEP_LOCK_MS = 60_000;
/** Messages a claim of the pass takes at most: its Query of the head reads this many. */
export const SWEEP_TAKE = 10;

export interface PositionedSweepReport extends ExpiryTally {
  /** Positioned queues and partitions looked at. */
  queues: number;
  partitions: number;
  /** Partitions whose claim kept losing to receivers, or failed: looked at again next pass. */
  raced: number;
  /** Messages of void requests a claim that died left below the cursor, deleted. */
  voidRemoved: number;
  /** Lapsed tickets whose messages the pass queued in `back` (R6). */
  ticketsTakenBack: number;
  /** D2: messages whose last allowed lock had lapsed, moved to the dead-letter subqueue (MaxDeliveryCountExceeded). */
  overDelivered: number;
  /** False when the time budget ran out first. */
  complete: boolean;
}

/**
 * T7's backstop for positioned queues: every positioned queue (a Query of the `queues`
 * partition, page by page), every partition of it, claimed while its head is expired, and what
 * is claimed removed (`expireClaimed`); first, what a claim that died left of void requests
 * below the cursor is deleted (`deleteVoidBelowCursor`, 1 read unit while there is none), so
 * the count (E6) never keeps it once its tombstone is gone. A partition with nothing expired at its head costs its
 * claim's reads and no write: the cursor (1 read unit, consistent), its lapsed leases (0.5)
 * and the head (0.5 a started 4 KB of `SWEEP_TAKE` messages). A claim also takes back lapsed
 * leases and tombstones old holes, as any claim does, so a queue nobody receives from is
 * kept as a receiver would keep it. A ticketed entity's partitions are looked at before
 * anything is taken (`sweepTicketedPartition`): one with nothing expired at its head costs 1.5
 * read units and no write (1 with an empty head; 0.5 more once its cursor has queued a
 * take-back), against 2.5 to 3 for a cursor-claimed one (test/integration/ticket-sweeps.test.ts).
 */
export async function sweepPositionedExpiry(ctx: BrokerContext, budget: TimeBudget): Promise<PositionedSweepReport> {
  const report: PositionedSweepReport = {
    queues: 0,
    partitions: 0,
    expired: 0,
    deadLettered: 0,
    left: 0,
    raced: 0,
    voidRemoved: 0,
    ticketsTakenBack: 0,
    overDelivered: 0,
    complete: true,
  };
  let after: string | undefined;
  do {
    const page = await listEntityPage(ctx, 'queue', undefined, { ...(after !== undefined ? { after } : {}), limit: 100 });
    for (const entity of page.entities.filter((e) => isPositioned(e) && !e.deleting)) {
      report.queues++;
      for (let p = 0; p < Math.max(1, entity.partitions); p++) {
        if (exhausted(budget)) {
          report.complete = false;
          return report;
        }
        report.partitions++;
        try {
          const pk = positionedPk(entity.eid, 'active', p);
          const swept = isTicketed(entity) ? sweepTicketedPartition(ctx, entity, pk, budget, report) : sweepPartition(ctx, entity, pk, budget, report);
          if (!(await swept)) report.complete = false;
        } catch {
          report.raced++; // lost to receivers again and again, or a storage fault: the next pass looks again
        }
      }
    }
    after = page.last;
  } while (after !== undefined);
  return report;
}

/** Claims and removes expired messages at the head of one partition until a live one (or none) is there. False when out of time. */
async function sweepPartition(
  ctx: BrokerContext,
  entity: EntityItem,
  partitionPk: string,
  budget: TimeBudget,
  report: PositionedSweepReport,
): Promise<boolean> {
  report.voidRemoved += await deleteVoidBelowCursor(ctx, partitionPk);
  const now = ctx.clock.now();
  const [expired, used] = [expiredBy(now), usedUp(entity)];
  return claimExpired(ctx, entity, partitionPk, budget, report, (item) => expired(item) || used(item));
}

/**
 * D2: a message taken from `back` (a lock of it lapsed and was taken back, at take-back count
 * `g`) that its take-back counted past the entity's last allowed delivery. A message at the head
 * (`g` 0, one delivery at most) never is.
 */
const usedUp = (entity: Pick<EntityItem, 'maxDeliveryCount'>) => (item: PositionedItem) => deliveryCountAt(item, item.g ?? 0) > entity.maxDeliveryCount;

/** A message the pass holds at `entry` whose last allowed lock lapsed: `delivered` is how often it was handed out. */
interface UsedUp {
  entry: Entry;
  item: PositionedItem;
  delivered: number;
}

/**
 * D2 by the sweeper: each of `held` moves to the dead-letter subqueue (or on, F3) with
 * MaxDeliveryCountExceeded, as its take-back would have it (fate/delivery.ts `onLockReleased`,
 * which decides D2 before expiry, as today's sweeper does), one transaction each, conditioned on
 * the position as held at `entry` (`heldAtPosition`: not taken back, settled or moved since), so
 * of two sweepers, or a sweeper and a receiver's take-back, one moves it and the other finds it
 * gone. Returns how many moved and how many were left: refused for load, or lost to another; a
 * message left stays under what holds it and is dead-lettered by whoever takes it next (its
 * count is its take-back's: the pass's claims hand nothing out, R3). Other errors throw.
 */
async function deadLetterUsedUp(ctx: BrokerContext, entity: EntityItem, held: readonly UsedUp[]): Promise<{ moved: number; left: number }> {
  const out = { moved: 0, left: 0 };
  for (const h of held) {
    const item = { ...messageOfStored(h.item as unknown as StoredMessageItem), deliveryCount: h.delivered };
    const fate = onLockReleased(
      { ...item, expiresAt: item.expiresAt ?? null, lockedUntil: null, inDeadLetter: false },
      entity.maxDeliveryCount,
      ctx.clock.now(),
    );
    let moved = false;
    if (fate.kind === 'deadLetter') {
      try {
        moved = await deadLetter(ctx, entity, item, heldAtPosition(h.entry), { reason: fate.reason, description: fate.description });
      } catch (e) {
        if (!(e instanceof BrokerError && e.retryable)) throw e;
      }
    }
    if (moved) out.moved++;
    else out.left++;
  }
  return out;
}

/**
 * D2 on a ticketed partition whose entity allows one delivery: a ticket takes only the head, so
 * its messages are on their first delivery, the last one only there. The messages a lapsed
 * ticket handed out (`lapsedTicketMessages`, read consistently, only for such an entity: no read
 * otherwise) that its take-back would count past the limit are moved in place, under the entry
 * `[position, 0]` the take-back's own write is conditioned on too (`deadLetterUsedUp`), before
 * the take-back, which then finds their `done` markers and queues nothing for them. A pass that
 * dies between leaves the ticket lapsed for the next pass or receive to do again.
 */
async function deadLetterLapsedTickets(
  ctx: BrokerContext,
  entity: EntityItem,
  partitionPk: string,
  lapsed: readonly Ticket[],
  report: PositionedSweepReport,
): Promise<void> {
  if (entity.maxDeliveryCount > 1) return;
  for (const ticket of lapsed) {
    if (ticket.nd) continue;
    const held = (await lapsedTicketMessages(ctx, partitionPk, ticket))
      .filter((m) => deliveryCountAt(m.item, 1) > entity.maxDeliveryCount)
      .map((m): UsedUp => ({ entry: [m.position, 0], item: m.item, delivered: deliveryCountAt(m.item, 0) }));
    const tally = await deadLetterUsedUp(ctx, entity, held);
    report.overDelivered += tally.moved;
    report.left += tally.left;
  }
}

/**
 * The cursor claims of the pass, while `takeWhile` holds (expired, or D2's `usedUp`), under
 * `nd` leases (R3: nothing of them is handed out). What is used up is dead-lettered first
 * (`deadLetterUsedUp`, D2 before expiry), what is expired removed (`expireClaimed`). False when
 * out of time.
 */
async function claimExpired(
  ctx: BrokerContext,
  entity: EntityItem,
  partitionPk: string,
  budget: TimeBudget,
  report: PositionedSweepReport,
  takeWhile: (item: PositionedItem) => boolean,
): Promise<boolean> {
  for (;;) {
    if (exhausted(budget)) return false;
    const taken = await claim(ctx, partitionPk, SWEEP_TAKE, { lockMs: SWEEP_LOCK_MS, takeWhile, undelivered: true });
    if (taken.messages.length === 0) return true;
    // The claim's count is its take-back's: one more than the times it was handed out.
    const used = taken.messages.filter((m) => m.deliveryCount > entity.maxDeliveryCount);
    const d2 = await deadLetterUsedUp(
      ctx,
      entity,
      used.map((m) => ({ entry: entryOfToken(m.token), item: m.item, delivered: m.deliveryCount - 1 })),
    );
    const tally = await expireClaimed(
      ctx,
      entity,
      partitionPk,
      taken.messages.filter((m) => !used.includes(m)),
    );
    report.overDelivered += d2.moved;
    report.expired += tally.expired;
    report.deadLettered += tally.deadLettered;
    report.left += tally.left + d2.left;
    if (taken.messages.length < SWEEP_TAKE || tally.left + d2.left > 0) return true;
  }
}

/**
 * T7 on a ticketed partition (design.md, "A claim that cannot lose", cause 4; ticket-sweeps.ts).
 * Looks first (`lookAtPartition`: the cursor and the counter, eventually consistent, 1 read unit):
 *
 * - lapsed tickets are taken back (`takeBackTickets`, R6): a partition nobody receives from
 *   would keep them, and a ticket left a day would find its siblings' `done` markers expired;
 *   first, on an entity allowing one delivery, what they handed out is dead-lettered (D2,
 *   `deadLetterLapsedTickets`: a consistent read of the counter and the ticket's positions);
 * - `back` is claimed by cursor while expired, as on any partition (the cursor stands at
 *   `TICKETED` and claims only `back`), when it holds anything, its last claim has lapsed, or
 *   (cursor written since its mark) a cursor lease has lapsed (a Query, half a read unit); a
 *   live message first in `back` holds back the head too, as a cursor claim's `takeWhile` does;
 * - the head is taken by ticket while expired (`takeHeadWhile`), after a look at it (half a
 *   read unit while anything is at the head; none when `taken` is `next`).
 *
 * So a partition with nothing expired at its head costs 1 to 2 read units and no write. No
 * `deleteVoidBelowCursor`: below `TICKETED` is the whole partition, and a void request's
 * messages a ticket met are deleted by its holder or its take-back.
 */
async function sweepTicketedPartition(
  ctx: BrokerContext,
  entity: EntityItem,
  partitionPk: string,
  budget: TimeBudget,
  report: PositionedSweepReport,
): Promise<boolean> {
  const look = await lookAtPartition(ctx, partitionPk);
  // A partition a cursor claim took before it could be marked keeps cursor claims (the migration, not built).
  if (look.cursor && look.cursor.pos !== TICKETED) return sweepPartition(ctx, entity, partitionPk, budget, report);
  const now = ctx.clock.now();
  const cursor = look.cursor;
  let queued = (cursor?.back ?? []).length > 0;
  const lapsed = lapsedTickets(look.counter, now);
  if (lapsed.length > 0) {
    if (!(await ensureTicketed(ctx, partitionPk))) return sweepPartition(ctx, entity, partitionPk, budget, report);
    await deadLetterLapsedTickets(ctx, entity, partitionPk, lapsed, report);
    for (const outcome of (await takeBackTickets(ctx, partitionPk, lapsed)).values()) {
      if (outcome !== 'returned') continue;
      report.ticketsTakenBack++;
      queued = true;
    }
  }
  const recordLapsed = cursor?.claim !== undefined && cursor.claim.until <= now;
  const leaseLapsed = !queued && !recordLapsed && cursor !== undefined && cursor.v > 1 && (await readLeases(ctx, partitionPk, now)).length > 0;
  if (queued || recordLapsed || leaseLapsed) {
    if (!(await ensureTicketed(ctx, partitionPk))) return sweepPartition(ctx, entity, partitionPk, budget, report);
    // A used-up message is claimed as an expired one is (D2), and held back the same way.
    let refused = false;
    const [expired, used] = [expiredBy(now), usedUp(entity)];
    const takeWhile = (item: PositionedItem) => {
      const ok = expired(item) || used(item);
      if (!ok) refused = true;
      return ok;
    };
    if (!(await claimExpired(ctx, entity, partitionPk, budget, report, takeWhile))) return false;
    if (refused) return true;
  }
  if (exhausted(budget)) return false;
  await takeHeadWhile(ctx, partitionPk, look.counter, {
    accept: expiredBy(now),
    max: SWEEP_TAKE,
    lockMs: SWEEP_LOCK_MS,
    more: () => !exhausted(budget),
    remove: async (messages) => {
      const tally = await expireClaimed(ctx, entity, partitionPk, messages);
      report.expired += tally.expired;
      report.deadLettered += tally.deadLettered;
      report.left += tally.left;
      return tally.expired;
    },
  });
  return !exhausted(budget);
}
