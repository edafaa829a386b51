/**
 * Taking by predicate on a ticketed partition (design.md, "A claim that cannot lose", cause 4):
 * the sweeper's expiry pass (T6, T7) and bulk delete with a cutoff (R11) remove only what a
 * predicate accepts, up to its first refusal. A cursor claim's `takeWhile` stops there; a
 * ticket (store/tickets.ts) takes positions whatever they hold. So, at the head:
 *
 * 1. Look (store/ticket-looks.ts: the counter, then the head's positions, eventually
 *    consistent, no write): the positions from `taken + 1` the predicate accepts, up to the first
 *    it refuses. None: nothing is taken, so a partition with a live head costs reads only.
 * 2. Take a ticket of that many (`takeTicket`, `undelivered`: what is not removed counts no
 *    delivery at its take-back, R3), read it (`readTicket`), remove what the predicate accepts
 *    up to its first refusal (each removal leaves a `done` marker, conditioned on the ticket's
 *    take-back count 0 as a complete is), and give the rest back at once (`giveBack`, lock end
 *    now; a hole's rest at its deadline, as a receive does). A receiver may have taken the looked
 *    at positions first: the ticket then holds later ones, which are read and judged the same way.
 * 3. The ticket's entry, settled whole, leaves the counter with the next take (`prune`) or, with
 *    none, in a write of its own (`forgetTickets`). Anything else (a removal refused, a crash)
 *    leaves the entry, whose lapse takes back what is left (R6), counting no delivery (R3).
 *
 * R1: a ticket's positions are its alone, so nothing a receiver holds is removed, and nothing
 * taken here is handed out.
 */
import type { BrokerContext } from './context.js';
import { readHeadPositions } from '../store/ticket-looks.js';
import { positionKey, positionOfSk } from '../store/keys.js';
import { deletePassed, HOLE_AFTER_MS, putTombstone, type PositionedItem } from '../store/positions.js';
import { forgetTickets, giveBack, holeDeadline, readTicket, takeTicket, type CounterView, type Ticket } from '../store/tickets.js';
import { ensureTicketed } from './ticketed-partitions.js';

/** A message a ticket took, as `readTicket` hands it: its item, its ticket's token, its delivery count. */
export type TicketMessage = Awaited<ReturnType<typeof readTicket>>['messages'][number];

export interface TakeWhileOptions {
  /** The predicate: the head is taken only while it accepts (T4's `expiredBy`, R11's cutoff). */
  accept: (item: PositionedItem) => boolean;
  /** Positions one ticket takes at most (and the look reads), asked before each take. */
  max: number | (() => number);
  /**
   * Whether the predicate needs to see the head before a take (the sweeper, a cutoff). False (a
   * purge, which accepts everything): the take is sized by the counter alone, and `readTicket`
   * meets the holes.
   */
  look?: boolean;
  /** How many tickets at most (each after the last one removed all it took). */
  rounds?: number;
  /** The tickets' lock: should the caller die, what it took comes back this soon. */
  lockMs: number;
  /** How old a hole at the head must be to get a tombstone (positions.ts `HOLE_AFTER_MS`). */
  holeAfterMs?: number;
  /**
   * Removes the accepted messages of one ticket, in order, each under its token (a `done`
   * marker); how many it removed. One not removed stays under the ticket, whose lapse takes
   * it back. May throw: the ticket then lapses whole.
   */
  remove: (messages: TicketMessage[]) => Promise<number>;
  /** Checked before each take: false stops (a time budget). */
  more?: () => boolean;
}

export interface TakeWhileOutcome {
  /** Positions taken by ticket, and how many tickets. */
  taken: number;
  tickets: number;
  /** Messages removed. */
  removed: number;
  /** Positions given back at once (refused, or waiting behind a hole). */
  givenBack: number;
  /** The look found nothing the predicate accepts at the head (no take at all). */
  idle: boolean;
}

/**
 * How many positions from `taken + 1` the predicate accepts, as the look shows them: a message
 * it accepts and a tombstone count; a refused message, a `done` marker (the look is stale: a
 * ticket took it) and an empty position stop. An empty position with a message after it that
 * was drawn `holeAfterMs` ago or longer (positions are drawn in order, so the hole is older) is
 * a dead sender's: it gets a tombstone here, as a cursor claim's `findHead` gives it, and counts.
 */
async function acceptedAtHead(
  ctx: BrokerContext,
  partitionPk: string,
  counter: CounterView,
  head: Map<number, PositionedItem>,
  max: number,
  options: TakeWhileOptions,
): Promise<number> {
  const holeAfterMs = options.holeAfterMs ?? HOLE_AFTER_MS;
  const last = Math.min(counter.next, counter.taken + max);
  let count = 0;
  for (let p = counter.taken + 1; p <= last; p++) {
    const item = head.get(p);
    if (item?.tomb) count++;
    else if (item) {
      if (item.done !== undefined || !options.accept(item)) break;
      count++;
    } else {
      const later = [...head].find(([q, i]) => q > p && i.at !== undefined && !i.tomb);
      const aged = later !== undefined && later[1].at! <= ctx.clock.now() - holeAfterMs;
      if (!aged || !(await putTombstone(ctx, partitionPk, p))) break;
      head.set(p, { ...positionKey(partitionPk, p), tomb: 1 });
      count++;
    }
  }
  return count;
}

/**
 * Takes the head of a ticketed partition while `accept` holds and removes what it took (module
 * header). `counter`: the partition's counter as the caller looked at it. The partition is
 * marked ticketed (`ensureTicketed`) before the first take, not before the look: an idle pass
 * writes nothing. Throws what its calls throw (after a take, the ticket then lapses and is
 * taken back), and when a cursor claim owns the head (the caller should have claimed by cursor).
 */
export async function takeHeadWhile(ctx: BrokerContext, partitionPk: string, counter: CounterView, options: TakeWhileOptions): Promise<TakeWhileOutcome> {
  const out: TakeWhileOutcome = { taken: 0, tickets: 0, removed: 0, givenBack: 0, idle: true };
  let seen = counter;
  let settled: number[] = [];
  try {
    for (let round = 0; round < (options.rounds ?? Infinity) && (options.more?.() ?? true); round++) {
      const max = typeof options.max === 'number' ? options.max : options.max();
      if (max <= 0) break;
      const want =
        options.look === false
          ? Math.max(0, Math.min(max, seen.next - seen.taken))
          : await acceptedAtHead(ctx, partitionPk, seen, await readHeadPositions(ctx, partitionPk, seen, max), max, options);
      if (want === 0) break;
      out.idle = false;
      if (!(await ensureTicketed(ctx, partitionPk))) throw new Error(`takeHeadWhile: a cursor claim owns the head of ${partitionPk}`);
      const take = await takeTicket(ctx, partitionPk, want, { lockMs: options.lockMs, undelivered: true, prune: settled });
      seen = take.counter;
      if (!take.ticket) break;
      settled = [];
      out.tickets++;
      out.taken += take.ticket.count;
      const done = await removeTaken(ctx, partitionPk, take.ticket, options);
      out.removed += done.removed;
      out.givenBack += done.givenBack;
      if (done.settled) settled = [take.ticket.id];
      if (!done.all || take.ticket.count < max) break;
    }
  } finally {
    // Settled whole and not carried by a take: its entry goes in a write of its own (a failure leaves it to its lapse).
    if (settled.length > 0) await forgetTickets(ctx, partitionPk, settled).catch(() => undefined);
  }
  return out;
}

/**
 * Step 2 for one ticket: reads it, deletes void requests' messages (never delivered, S1), gives
 * back from the first refused message or the first position still waited for, and removes the
 * accepted messages before it. `all`: everything it held was removed or passed (go on to the
 * next ticket); `settled`: its entry may leave the counter (nothing of it left to take back).
 */
async function removeTaken(
  ctx: BrokerContext,
  partitionPk: string,
  ticket: Ticket,
  options: TakeWhileOptions,
): Promise<{ removed: number; givenBack: number; all: boolean; settled: boolean }> {
  const read = await readTicket(ctx, partitionPk, ticket, options.holeAfterMs !== undefined ? { holeAfterMs: options.holeAfterMs } : {});
  if (read.voided.length > 0) await deletePassed(ctx, read.voided);
  const refused = read.messages.findIndex((m) => !options.accept(m.item));
  const accepted = refused < 0 ? read.messages : read.messages.slice(0, refused);
  const refusedAt = refused < 0 ? undefined : positionOfSk(read.messages[refused]!.item.sk);
  const from = refusedAt ?? read.blockedFrom;
  let kept = true;
  if (from !== undefined) {
    // R3: given back, it counts no delivery; refused, it goes back in line at once, waiting for a hole, at the hole's deadline.
    const until = refusedAt !== undefined ? ctx.clock.now() : holeDeadline(ticket, options.holeAfterMs);
    const given = await giveBack(ctx, partitionPk, ticket, from - ticket.first, until);
    // The whole ticket given back is no longer this holder's entry; one not given back (taken back, its lock ended) is its lapse's.
    kept = given !== undefined && from > ticket.first;
  }
  const removed = accepted.length > 0 ? await options.remove(accepted) : 0;
  const givenBack = from === undefined ? 0 : ticket.first + ticket.count - from;
  const whole = removed === accepted.length && read.gone.length === 0;
  return { removed, givenBack, all: from === undefined && whole, settled: kept && whole };
}
