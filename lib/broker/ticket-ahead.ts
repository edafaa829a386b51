/**
 * A ticketed receive that takes before its entity read answers (receive.ts): the take of the
 * head and the read of the ticket's positions run beside the request's own entity read, with
 * the entity a read of this process saw a moment ago (entities.ts `recentEntity`), instead of
 * after it. Nothing is handed out before that read answers: only when it shows the same
 * incarnation with the same properties and status (`unchangedEntity`) does the receive go on
 * with what was taken, as if it had read first (E4, E5). Otherwise the ticket is given back at
 * once (store `giveBack`, `nd`: its take-back counts no delivery, R3) and the receive answers
 * as its read says: 404, EntityDisabled, or a receive with the entity as it is now.
 *
 * What goes ahead writes only the take (the counter's entry; on a counter of a deleted
 * incarnation it finds nothing to take, or takes what nothing will read again: the reaper
 * removes it, E4). The read ahead is a read only: no hole is waited for or tombstoned (the
 * hand-out reads again when its read showed a hole, ticket-receive.ts `handOutTicket`). A
 * Lambda dying after the take leaves the ticket to lapse, counted as a receiver that died is
 * (R3's one allowance, as for every ticket).
 */
import type { RequestOf } from '../requests/schemas.js';
import type { ReceiveTarget } from '../entities/paths.js';
import { positionedPk } from '../store/keys.js';
import { readTicket, type TicketRead } from '../store/tickets.js';
import type { BrokerContext } from './context.js';
import { recentEntity, type EntityItem } from './entities.js';
import { isTicketed } from './layouts.js';
import { keepsReadyMarks } from './ready-marks.js';
import { giveBackWhole, startTicket, type TicketStart } from './ticket-receive.js';
import { knownTicketed } from './ticketed-partitions.js';

/** What a take ahead got: its start (as `startTicket`'s), and its ticket's positions as read beside the entity read, when that read answered. */
export interface TicketTaken {
  partition: number;
  start: TicketStart;
  read?: TicketRead;
}

/** A take on its way beside the entity read, made with `entity` (the one a recent read saw). */
export interface TicketAhead {
  entity: EntityItem;
  /** The take and its read; never rejects (what failed is `taken`'s to tell). */
  work: Promise<{ ok: true; value: TicketTaken } | { ok: false; error: unknown }>;
}

/** How a receive in `mode` takes a ticket of `entity` (positioned-receive.ts `ticketedInto` too). */
export const ticketTakeOptions = (entity: Pick<EntityItem, 'lockDuration'>, mode: RequestOf<'ReceiveOptions'>['mode'], receiveAndDeleteLockMs: number) => ({
  lockMs: mode === 'peekLock' ? entity.lockDuration : receiveAndDeleteLockMs,
  undelivered: mode !== 'peekLock',
});

/**
 * Starts the take ahead when the entity a read of this process saw a moment ago is a ticketed
 * queue or subscription of one partition, known to this process as ticketed (no mark to write
 * ahead), that would let this receive take from its active subqueue; otherwise undefined.
 */
export function takeAhead(
  ctx: BrokerContext,
  target: ReceiveTarget,
  options: Pick<RequestOf<'ReceiveOptions'>, 'mode' | 'maxMessages'>,
  receiveAndDeleteLockMs: number,
): TicketAhead | undefined {
  if (target.subqueue !== 'active') return undefined;
  const entity = recentEntity(ctx, target);
  if (!entity || !isTicketed(entity) || entity.requiresSession || entity.partitions !== 1 || keepsReadyMarks(entity)) return undefined;
  if (entity.status === 'Disabled' || entity.status === 'ReceiveDisabled') return undefined;
  const pk = positionedPk(entity.eid, 'active', 0);
  if (!knownTicketed(ctx, pk)) return undefined;
  const work = (async (): Promise<TicketTaken> => {
    const start = await startTicket(ctx, pk, options.maxMessages, ticketTakeOptions(entity, options.mode, receiveAndDeleteLockMs));
    if (!start.ticket) return { partition: 0, start };
    // A read only (no hole waited for or tombstoned); refused, the hand-out reads for itself.
    const read = await readTicket(ctx, pk, start.ticket, { holeWaitMs: 0, holeAfterMs: Number.POSITIVE_INFINITY }).catch(() => undefined);
    return { partition: 0, start, ...(read ? { read } : {}) };
  })().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  return { entity, work };
}

/** R3: what a take ahead got, given back at once (its take-back counts no delivery), best effort: refused, it lapses. */
export async function giveBackAhead(ctx: BrokerContext, ahead: TicketAhead): Promise<void> {
  const done = await ahead.work;
  if (done.ok && done.value.start.ticket) await giveBackWhole(ctx, positionedPk(ahead.entity.eid, 'active', done.value.partition), done.value.start.ticket);
}

/** What the take ahead got, for a receive whose entity read agreed; its failure (a refused take) is the receive's, as a take after the read would be. */
export async function takenAhead(ahead: TicketAhead): Promise<TicketTaken> {
  const done = await ahead.work;
  if (!done.ok) throw done.error;
  return done.value;
}
