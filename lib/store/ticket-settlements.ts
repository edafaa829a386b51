/**
 * Settlements other than complete of a message handed out under a ticket (tickets.ts): what
 * finds the lock and what a renew writes. Abandon, defer and dead-letter need nothing of their
 * own here: they are lease-settlements.ts's writes, which change only the message and the
 * cursor (or a target), never the counter item. Why that is enough (R1, R5, R6):
 *
 * - The token of a ticket's message is at take-back count 0 (`ticketToken`), so each of those
 *   writes is conditioned on the message having no `g` and no `done` marker
 *   (`heldAtPosition`). A take-back (tickets.ts `takeBackTickets`) raises `g` first, so a
 *   settlement after it fails with MessageLockLost (R5), and one before it wins the message.
 * - An abandon sets `g` 1 without `gl` and queues the message in the cursor's `back` in one
 *   transaction (`abandonAtPositions`, as for a lease). The ticket's entry still covers the
 *   position, but its take-back queues only a message at `g` 0, or at `g` 1 with `gl` naming
 *   the ticket (or the ticket it was split from): an abandoned message is neither, so it comes
 *   back once, from the abandon (R6), and is never under two valid locks (R1). The cursor lease
 *   that later claims it sets `gl` to its own id at its own take-back, which no ticket is.
 * - Defer and dead-letter replace the message by a `done` marker in the transaction that puts
 *   its target (`moveFromPosition` with removal 'marker', moves.ts `moveMessage` with a guard's
 *   `removal`: D3), which the take-back passes over as it passes a completed one.
 *
 * So the entry is left as it was; it leaves the counter with its take's prune or at its lapse,
 * whose take-back then finds nothing of those messages to queue.
 *
 * A renew cannot leave the entry as it was: the entry's lock end `u` is the lock of every
 * message of the ticket, and a renew extends one (its siblings' locks end where they did, R6).
 * The renewed message moves into an entry of its own (`renewTicketed`), which carries the
 * ticket's id as `o` (its token names that id) and, as `r`, the lock end the token states, so
 * tickets.ts `ticketHolding` (and R5's `lockEndOfTicket`) still finds it. One UpdateItem of the
 * counter, so there is no step between taking it out of the ticket and giving it its own lock.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { positionCounterKey } from './keys.js';
import { isStoreBusy } from './outcomes.js';
import type { PositionStore } from './positions.js';
import { counterView, entryName, firstName, newTicketId, ticketHolding, type Ticket, type TicketEntry } from './tickets.js';

/**
 * The ticket holding the message `token` was handed out under (tickets.ts `ticketHolding`),
 * lapsed or not; undefined when none does (settled and pruned, taken back, or never). Key:
 * `positionCounterKey`. Eventually consistent unless `consistent` (half a unit or one for a
 * counter under 4 KB): a caller that finds none, or finds its lock ended, asks again
 * consistently before answering MessageLockLost, since a renew just made may not show yet.
 * No condition, no write.
 */
export async function readTicketHolder(ctx: PositionStore, partitionPk: string, token: string, consistent: boolean): Promise<Ticket | undefined> {
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk), ConsistentRead: consistent }));
  return ticketHolding(counterView(out.Item), token, ctx.clock.now());
}

/**
 * A renew that landed: `own`, the id of the entry now holding the renewed message; `tail`, the
 * id of the entry a split made of the positions after it, if any. Neither is the ticket's
 * own id, so the holder's memory of what it settled whole (broker/ticket-receive.ts) needs
 * them to prune those entries with its next take rather than leave them to their lapse.
 */
export interface TicketRenewed {
  own: number;
  tail?: number;
}

/** What a renew came to: done (`TicketRenewed`); the entry was not as read ('changed': read it again); its lock had ended; refused for load. */
export type TicketRenewOutcome = TicketRenewed | 'changed' | 'lockLost' | 'busy';

/**
 * R4 renew of the message at `position`, held by `holder` (`readTicketHolder`, as read): its
 * lock ends at `until`; the ticket's other messages keep theirs. Key: `positionCounterKey`. One
 * UpdateItem:
 *
 * - an entry of one message that a renew made already (`r` set): its `u` and `w` move;
 * - any other: the message leaves it for a new entry (`t<id>` its position less one, `u<id>`
 *   lock end `until`, count 1, `o` the ticket whose id its token names, `r` the lock end its
 *   token states). Of the old entry, the positions before it stay under its id, those after it
 *   go to a second new entry (same lock end, `o` likewise) when there are positions on both
 *   sides; an entry left with none is removed. Every piece keeps the take's time (`u - w`),
 *   which dates a hole for a take-back (S1).
 *
 * Condition: the entry as read (`u`, `n`, its first position), no entry under the new ids, and
 * the counter not retired. The write is not sent once the lock has ended by the caller's clock
 * (the take-back may be under way: 'lockLost'). A renewed message is thus always in an entry no
 * prune (tickets.ts `TakeOptions.prune`) names before its holder settles it. Success: the ids
 * (`TicketRenewed`). Failure: 'changed' when the entry changed (a sibling's renew, a
 * give-back, a take-back that removed it): read it again; 'busy' when refused for load (nothing
 * written). Other errors throw. One write unit while the counter is under 1 KB (about 20
 * tickets in flight); its lapse later reads its one position and removes it (tickets.ts
 * `takeBackTickets`), unless it was pruned first: the new ids come back (`TicketRenewed`) so
 * the settling holder's next take can prune them.
 */
export async function renewTicketed(ctx: PositionStore, partitionPk: string, holder: Ticket, position: number, until: number): Promise<TicketRenewOutcome> {
  if (ctx.clock.now() >= holder.until) return 'lockLost';
  if (position < holder.first || position >= holder.first + holder.count) return 'changed';
  const at = holder.at;
  const root = holder.o ?? holder.id;
  const stated = holder.r ?? holder.until;
  const names: Record<string, string> = { '#u': entryName(holder.id), '#t': firstName(holder.id) };
  const values: Record<string, unknown> = { ':u': holder.until, ':n': holder.count, ':t': holder.first - 1 };
  const sets: string[] = [];
  const removes: string[] = [];
  const fresh: string[] = [];
  const renewed: TicketRenewed = { own: holder.id };
  if (holder.r !== undefined && holder.count === 1) {
    sets.push('#u.u = :nu', '#u.w = :nw');
    values[':nu'] = until;
    values[':nw'] = until - at;
  } else {
    const own = newTicketId();
    renewed.own = own;
    names['#ou'] = entryName(own);
    names['#ot'] = firstName(own);
    fresh.push('#ou');
    const entry: TicketEntry = { u: until, w: until - at, n: 1, o: root, r: stated };
    sets.push('#ot = :ot', '#ou = :oe');
    values[':ot'] = position - 1;
    values[':oe'] = entry;
    const before = position - holder.first;
    const after = holder.first + holder.count - 1 - position;
    if (before > 0) {
      sets.push('#u.n = :before');
      values[':before'] = before;
      if (after > 0) {
        const tail = newTicketId();
        renewed.tail = tail;
        names['#su'] = entryName(tail);
        names['#st'] = firstName(tail);
        fresh.push('#su');
        sets.push('#st = :st', '#su = :se');
        values[':st'] = position;
        values[':se'] = { u: holder.until, w: holder.until - at, n: after, o: root } satisfies TicketEntry;
      }
    } else if (after > 0) {
      // The positions after it stay under the ticket's own id, which now starts past it.
      sets.push('#t = :pos', '#u.n = :after');
      values[':pos'] = position;
      values[':after'] = after;
    } else removes.push('#t', '#u');
  }
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: positionCounterKey(partitionPk),
        UpdateExpression: `${sets.length > 0 ? `SET ${sets.join(', ')}` : ''}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: ['attribute_not_exists(gone)', '#u.u = :u', '#u.n = :n', '#t = :t', ...fresh.map((f) => `attribute_not_exists(${f})`)].join(
          ' AND ',
        ),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return renewed;
  } catch (e) {
    if (e instanceof Error && e.name === 'ConditionalCheckFailedException') return 'changed';
    if (isStoreBusy(e)) return 'busy';
    throw e;
  }
}
