/**
 * Taking a ticketed partition's head by ticket (store/tickets.ts; design.md, "A claim that
 * cannot lose"): what a receive of a ticketed entity does besides the cursor claim of `back`.
 *
 * The order of a receive on a ticketed partition (R6, D2; positioned-receive.ts
 * `ticketedInto`): take first (the take returns the counter with every ticket in flight, at no
 * read unit), take back the lapsed tickets the take showed (into `back`), claim `back` from the
 * cursor (oldest first, R2), and only then hand out the ticket's messages for what is still
 * wanted: a lapsed message comes back before the head, as with cursor claims. A ticket the answer has no room for is given back at once (`giveBack`,
 * counting no delivery, R3, R10).
 *
 * Memory of this process, each keyed by table and partition, all of it safe to lose:
 * - which partitions it marked ticketed (`markTicketed` is idempotent; the memory saves its
 *   write);
 * - which tickets it handed out (and the entries its renews split off them), and those whose
 *   every message it saw settled, to remove from the counter with its next take
 *   (`TakeOptions.prune`): a lost prune leaves an entry to lapse, whose take-back finds only
 *   markers and removes it (a read and a write);
 * - which partitions it found with an empty head: its next take there looks first (half a read
 *   unit) rather than paying an empty take's failed write each long-poll round.
 */
import { backoff } from '../backoff.js';
import type { ReceivedMessage } from '../messages/item.js';
import { presentMessage } from '../messages/item.js';
import { markClaimUndelivered } from '../store/leases.js';
import { messageOfStored, type StoredMessageItem } from '../store/message-layout.js';
import { positionOfSk } from '../store/keys.js';
import { isStoreBusy } from '../store/outcomes.js';
import { deletePassed, HOLE_AFTER_MS, type PositionedItem } from '../store/positions.js';
import {
  completeTicketed,
  giveBack,
  holeDeadline,
  lapsedTickets,
  readTicket,
  takeBackTickets,
  takeTicket,
  type Ticket,
  type TicketRead,
  type TicketTake,
} from '../store/tickets.js';
import { backDue } from '../store/ticket-back.js';
import type { TicketRenewed } from '../store/ticket-settlements.js';
import type { AnswerBudget } from './answer-budget.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import { expireClaimed, splitExpired } from './positioned-expiry.js';

/** Memory entries kept at most, per kind, before the oldest go (losing them is safe). */
const MEMORY_LIMIT = 10_000;

const partitionKey = (ctx: Pick<BrokerContext, 'tableName'>, pk: string) => `${ctx.tableName}|${pk}`;

/** Drops the oldest entries of `map` once it holds more than `MEMORY_LIMIT` (insertion order). */
function bounded<K, V>(map: Map<K, V>): void {
  for (const key of map.keys()) {
    if (map.size <= MEMORY_LIMIT) return;
    map.delete(key);
  }
}

/** A ticket this process handed messages out under: how many of them are not completed yet, and the entries a renew split off it holding only those (`also`). */
interface HandedTicket {
  key: string;
  id: number;
  left: number;
  also: number[];
}
const handedByToken = new Map<string, HandedTicket>();
/** A message this process renewed: the entry of its own it moved into, pruned once it is settled. */
const renewedByToken = new Map<string, { key: string; id: number }>();
const settledByPartition = new Map<string, Set<number>>();
const emptyHeads = new Set<string>();

function settledWhole(key: string, id: number): void {
  const set = settledByPartition.get(key) ?? new Set<number>();
  set.add(id);
  settledByPartition.set(key, set);
  if (set.size > MEMORY_LIMIT) set.delete(set.values().next().value!);
}

/**
 * A settlement of `token` on `pk` succeeded: once every message its ticket handed out here is
 * settled, the ticket's entry goes with the next take (`TakeOptions.prune`), so its lapse costs
 * no take-back (a write and reads). Every settlement counts, because after each the entry holds
 * nothing its take-back would queue (R6): a complete, a defer and a dead-letter (T5's expiry and
 * D2's at an abandon too) leave a `done` marker; an abandon leaves the message at `g` 1 without
 * `gl`, queued in `back` by its own transaction; a renew moves the message into an entry of a
 * new id (`noteTicketRenewed`), which goes in turn once this settles it. Tokens this process
 * did not hand out or renew are not remembered (their entry lapses). A settlement that answered MessageLockLost is never noted,
 * so its ticket is never pruned: its take-back may be on its way, and its entry is what queues
 * it (R6).
 */
export function noteTicketSettled(ctx: Pick<BrokerContext, 'tableName'>, pk: string, token: string): void {
  const at = `${partitionKey(ctx, pk)}|${token}`;
  const renewed = renewedByToken.get(at);
  if (renewed) {
    renewedByToken.delete(at);
    settledWhole(renewed.key, renewed.id);
  }
  leftTicket(at);
}

/** The message `at` left its ticket's entry (settled, or renewed into an entry of its own): once none is left, its entries go with the next take. */
function leftTicket(at: string): void {
  const t = handedByToken.get(at);
  if (!t) return;
  handedByToken.delete(at);
  if (--t.left === 0) for (const id of [t.id, ...t.also]) settledWhole(t.key, id);
}

/**
 * A renew of `token` on `pk` landed (store/ticket-settlements.ts `renewTicketed`): the message
 * left its ticket's entry for `moved.own`, and the positions after it, when the entry had some
 * on both sides, for `moved.tail`. The tail holds only messages its ticket handed out, so it
 * goes with the ticket once they are all settled; the renewed message's own entry goes once
 * that message is (`noteTicketSettled`: a complete, an abandon, a defer or a dead-letter, never
 * a renew). Both ride the next take's prune at no write of their own, instead of lapsing to a
 * take-back's reads and write. Known to this process only: a renew made by another lapses, as
 * before.
 */
export function noteTicketRenewed(ctx: Pick<BrokerContext, 'tableName'>, pk: string, token: string, moved: TicketRenewed): void {
  const key = partitionKey(ctx, pk);
  const at = `${key}|${token}`;
  const t = handedByToken.get(at);
  if (t && moved.tail !== undefined) t.also.push(moved.tail);
  leftTicket(at);
  renewedByToken.set(at, { key, id: moved.own });
  bounded(renewedByToken);
}

/** What a ticketed partition's take found: the ticket (if the head had any), and the other tickets whose lock has ended. */
export interface TicketStart {
  ticket?: Ticket;
  /** When the positions it took were drawn by (the counter's last draw): a hole among them is at least that old. */
  drawnAt?: number;
  lapsed: Ticket[];
  /** Something was queued in the cursor's `back` since a claim last found it clear (store/ticket-back.ts): claim it. */
  backDue: boolean;
  /** The counter's `bq` as the take saw it, before any claim read the cursor (for `markBackClear`). */
  backSeen: number;
  failedWrites: number;
}

/**
 * Step one of a receive on a ticketed partition: takes up to `want` positions of the head (or,
 * after this process found it empty, looks first: `TakeOptions.look`), carrying the removal of
 * the tickets this process saw settled whole. Returns the ticket and the lapsed tickets the
 * counter shows, for `takeBackLapsed`. Store errors throw: nothing was handed out, and a take
 * that landed unseen lapses and is taken back, counted as a dead receiver's.
 */
export async function startTicket(ctx: BrokerContext, pk: string, want: number, options: { lockMs: number; undelivered: boolean }): Promise<TicketStart> {
  const key = partitionKey(ctx, pk);
  const prune = [...(settledByPartition.get(key) ?? [])];
  const take: TicketTake = await takeTicket(ctx, pk, want, { ...options, prune, look: emptyHeads.has(key) });
  // The write carried the prune only when it landed (a refused or skipped take wrote nothing).
  if (take.ticket) for (const id of prune) settledByPartition.get(key)?.delete(id);
  if (take.ticket) emptyHeads.delete(key);
  else emptyHeads.add(key);
  if (emptyHeads.size > MEMORY_LIMIT) emptyHeads.delete(emptyHeads.values().next().value!);
  const lapsed = lapsedTickets(take.counter, ctx.clock.now()).filter((t) => t.id !== take.ticket?.id);
  return {
    ...(take.ticket ? { ticket: take.ticket } : {}),
    ...(take.counter.drawnAt !== undefined ? { drawnAt: take.counter.drawnAt } : {}),
    lapsed,
    backDue: backDue(take.counter),
    backSeen: take.counter.backQueued,
    failedWrites: take.failedWrites,
  };
}

/**
 * Takes back `lapsed` tickets into the cursor's `back` (R6, store `takeBackTickets`). Refused for
 * load, they are left for the next receiver (still lapsed in the counter). Returns whether it
 * may have queued anything.
 */
export async function takeBackLapsed(ctx: BrokerContext, pk: string, lapsed: readonly Ticket[]): Promise<boolean> {
  try {
    const outcomes = await takeBackTickets(ctx, pk, lapsed);
    return [...outcomes.values()].some((o) => o === 'returned');
  } catch (e) {
    if (!isStoreBusy(e)) throw e;
    return false;
  }
}

/** Attempts of a whole give-back refused for load or a conflict, before its messages are marked instead. */
const GIVE_BACK_ATTEMPTS = 3;
const GIVE_BACK_BACKOFF = { baseMs: 10, capMs: 100 };

/**
 * Gives a whole ticket back at once (R10: no room for it; R3: counting no delivery). Refused for
 * load or a conflict (nothing written), it is sent again, `GIVE_BACK_ATTEMPTS` in all; refused
 * throughout, each message it holds is marked instead (store `markClaimUndelivered`, after a
 * read of the ticket that waits for no hole: this path only), so its lapse counts no delivery for
 * them. Best effort: a failure that may have landed, or a mark that fails, leaves the lapse to
 * count one, as for a receiver that died.
 */
export async function giveBackWhole(ctx: BrokerContext, pk: string, ticket: Ticket): Promise<void> {
  for (let attempt = 0; attempt < GIVE_BACK_ATTEMPTS; attempt++) {
    if (attempt > 0) await backoff(ctx.clock, attempt - 1, GIVE_BACK_BACKOFF);
    try {
      await giveBack(ctx, pk, { ...ticket }, 0, ctx.clock.now());
      return;
    } catch (e) {
      if (!isStoreBusy(e)) return;
    }
  }
  try {
    const read = await readTicket(ctx, pk, ticket, { holeWaitMs: 0 });
    await markClaimUndelivered(ctx, pk, read.messages);
  } catch {
    // The lapse counts the delivery, as for a receiver that died.
  }
}

/**
 * R3, R10 for a peek-lock ticket of which nothing was handed out, after `cause`: given back
 * whole. When that is refused for load too, and so was `cause` (neither wrote: the entry is as
 * `held` says, without `nd`), each message of `read` it holds is marked instead (store
 * `markClaimUndelivered`: a conditional write a message, on this failure path only), so its
 * lapse counts no delivery for them. Not after a failure that may have landed (a give-back
 * written unseen takes them back with `nd`, which would then count their delivery twice off).
 */
async function giveBackUnhanded(ctx: BrokerContext, pk: string, held: Ticket, read: readonly ReadMessage[], cause: unknown): Promise<void> {
  const refused = await giveBack(ctx, pk, { ...held }, 0, ctx.clock.now()).then(
    () => false,
    (e: unknown) => isStoreBusy(e),
  );
  if (!refused || !isStoreBusy(cause)) return;
  const end = held.first + held.count;
  await markClaimUndelivered(
    ctx,
    pk,
    read.filter((m) => positionOfSk(m.item.sk) >= held.first && positionOfSk(m.item.sk) < end),
  );
}

/** The message as its receiver sees it, handed out under a ticket's lock (or removed, receive-and-delete). */
function present(item: PositionedItem, deliveryCount: number, token: string, until: number, now: number, lock: boolean): ReceivedMessage {
  const stored = messageOfStored(item as unknown as StoredMessageItem);
  return presentMessage({ ...stored, state: 'Active', deliveryCount, ...(lock ? { lockToken: token, lockedUntil: until } : {}) }, now, { lock });
}

/**
 * Hands out what `ticket` holds, up to `want` messages and what `fits` the answer (R10), onto
 * `out`; gives back the rest at once and what waits for a dead sender's hole with the hole's
 * deadline (store `giveBack`); removes the expired ones under the ticket (T4, T6:
 * `expireClaimed`, leaving `done` markers) and deletes void requests' messages (S1). Returns how
 * many positions the ticket held, handed out or not, and how many expired ones it removed.
 *
 * Peek-lock hands out under the ticket's lock; receive-and-delete (`undelivered` ticket)
 * completes each first and hands out only what it removed (R3), giving the whole ticket back at
 * once when a removal failed, so what is left is back in line at its take-back, counting no
 * delivery. A failure before anything is handed out gives the rest back (R3); a crash leaves
 * the ticket to lapse, counted as Service Bus counts an expired lock.
 */
export async function handOutTicket(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  pk: string,
  ticket: Ticket,
  want: number,
  peekLock: boolean,
  budget: AnswerBudget,
  fits: (items: readonly PositionedItem[]) => number,
  drawnAt?: number,
  early?: TicketRead,
): Promise<{ expired: number; passed: boolean }> {
  const key = partitionKey(ctx, pk);
  let held: Ticket = ticket;
  let handing: Awaited<ReturnType<typeof readTicket>>['messages'] = [];
  let expiredCount = 0;
  let unsettled = false;
  let passed = false;
  let read: TicketRead | undefined;
  // A hole is as old as its draw, which was by the counter's last draw before the take: aged, it is tombstoned at once (S1).
  const holeAfterMs = drawnAt !== undefined ? Math.max(0, HOLE_AFTER_MS - (ticket.at - drawnAt)) : HOLE_AFTER_MS;
  try {
    // A read made beside the entity read (ticket-ahead.ts) stands unless it showed a hole, which this read waits for or tombstones.
    read = early && early.blockedFrom === undefined ? early : await readTicket(ctx, pk, ticket, { holeAfterMs });
    if (read.voided.length > 0) await deletePassed(ctx, read.voided);
    const { live, expired } = splitExpiredRead(read.messages, ctx.clock.now());
    // R10: only what is still wanted and fits the answer, in order; the rest goes back at once.
    const fit = Math.max(0, Math.min(live.length, want, fits(live.map((m) => m.item))));
    handing = live.slice(0, fit);
    const firstUnfit = live[fit];
    const from = firstUnfit !== undefined ? positionOfSk(firstUnfit.item.sk) : read.blockedFrom;
    if (from !== undefined) {
      const until = firstUnfit !== undefined ? ctx.clock.now() : holeDeadline(ticket, holeAfterMs);
      const rest = from === ticket.first ? await giveBack(ctx, pk, ticket, 0, until) : await giveBack(ctx, pk, ticket, from - ticket.first, until);
      // Refused (taken back meanwhile, its lock ended): the lapse took it all back.
      if (rest && from !== ticket.first) held = { ...ticket, count: from - ticket.first };
      if (!rest || from === ticket.first) unsettled = true;
    }
    // Expired ones behind the first unfit were given back with it; those before are removed here.
    const removing = expired.filter((m) => from === undefined || positionOfSk(m.item.sk) < from);
    if (removing.length > 0) {
      const tally = await expireClaimed(
        ctx,
        entity,
        pk,
        removing.map((m) => ({ item: m.item, token: m.token, deliveryCount: m.deliveryCount })),
        peekLock ? {} : { nd: 1 },
      );
      expiredCount = tally.expired + tally.deadLettered;
      if (tally.left > 0) unsettled = true;
    }
    if (read.gone.length > 0) unsettled = true;
    // Nothing to hand out and nothing held back: only tombstones, void requests and removed messages (the caller takes again).
    passed = handing.length === 0 && from === undefined;
  } catch (e) {
    // R3: nothing of it handed out yet; given back (or, refused, marked), its take-back counts no delivery.
    if (peekLock) await giveBackUnhanded(ctx, pk, held, read?.messages ?? [], e);
    throw e;
  }
  if (peekLock) {
    if (handing.length === 0) {
      if (!unsettled) settledWhole(key, held.id);
      return { expired: expiredCount, passed };
    }
    const handed: HandedTicket = { key, id: held.id, left: unsettled ? Number.POSITIVE_INFINITY : handing.length, also: [] };
    for (const m of handing) {
      handedByToken.set(`${key}|${m.token}`, handed);
      const message = present(m.item, m.deliveryCount, m.token, held.until, ctx.clock.now(), true);
      out.push(message);
      budget.add(message);
    }
    bounded(handedByToken);
    return { expired: expiredCount, passed };
  }
  // Receive-and-delete: handed out only once removed (R3).
  const removed = await Promise.allSettled(handing.map((m) => completeTicketed(ctx, pk, m.token)));
  let failure: unknown;
  let all = true;
  removed.forEach((r, i) => {
    if (r.status === 'rejected') failure ??= r.reason;
    if (r.status !== 'fulfilled' || r.value !== 'completed') all = false;
    else {
      const m = handing[i]!;
      const message = present(m.item, m.deliveryCount, m.token, held.until, ctx.clock.now(), false);
      out.push(message);
      budget.add(message);
    }
  });
  if (all && !unsettled) settledWhole(key, held.id);
  // R10: a message whose removal failed is back in line at once (the ticket's take-back; `nd`, so no delivery counted).
  if (!all) await giveBackWhole(ctx, pk, held);
  if (failure !== undefined) throw failure;
  return { expired: expiredCount, passed };
}

type ReadMessage = Awaited<ReturnType<typeof readTicket>>['messages'][number];

/** A ticket's messages: those to hand out and those expired at `now` (T4). */
function splitExpiredRead(messages: readonly ReadMessage[], now: number): { live: ReadMessage[]; expired: ReadMessage[] } {
  const split = splitExpired(messages, now);
  return { live: split.live as ReadMessage[], expired: split.expired as ReadMessage[] };
}
