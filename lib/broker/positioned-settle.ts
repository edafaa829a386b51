/**
 * Settlement, other than complete, of messages a claim handed out under a lease (the
 * positioned layout, store/leases.ts): abandon (single and batch), defer, dead-letter, renew
 * (R4-R7, R9, D1-D3), and D2 for messages a claim takes back past their last delivery. The
 * per-message actions have settle.ts's shapes, so its dispatch can call them with the cached
 * entity of `withEntity` (E4 is settled there); they run only for lock tokens of a lease.
 *
 * Each first finds the message held under its token: a lease holding the token whose lock has
 * not ended (store/lease-settlements.ts `leasesHolding`), or on a ticketed entity, for a token
 * at take-back count 0, the ticket's entry on the counter item (`ticketLock`, read only past
 * the lock end the token states; store/ticket-settlements.ts), and the message at its position,
 * still at the token's take-back count. On a ticketed entity every removal leaves a `done`
 * marker (layouts.ts `removalFor`; moves.ts `removalOf` for a dead letter), whichever kind of token settles it. A stale read that says otherwise is read again
 * consistently before MessageLockLost (R5); the write's own condition (the take-back count)
 * decides a race, so a read that is stale the other way changes nothing it should not.
 */
import type { SettleRequest } from '../requests/schemas.js';
import type { ReceiveTarget } from '../entities/paths.js';
import { BrokerError, lockLost } from '../errors.js';
import { onLockReleased, reasons } from '../fate/delivery.js';
import { type MessageItem } from '../messages/item.js';
import { backoff } from '../backoff.js';
import { messageKey, positionedPk } from '../store/keys.js';
import {
  abandonAtPositions,
  heldAtPosition,
  leasesHolding,
  lockEnd,
  MAX_ABANDONS_AT_ONCE,
  moveFromPosition,
  readAtPosition,
  readPartitionLeases,
  renewAtPosition,
  type HeldLease,
  type SettleOutcome,
} from '../store/lease-settlements.js';
import {
  completeAtPosition,
  deliveryCountAt,
  entryOfToken,
  leaseHoldsToken,
  lockEndOfToken,
  repairLeaseOfToken,
  type Claim,
  type Entry,
} from '../store/leases.js';
import { readTicketHolder, renewTicketed } from '../store/ticket-settlements.js';
import type { Ticket } from '../store/tickets.js';
import { isTicketed, removalFor } from './layouts.js';
import { noteTicketRenewed, noteTicketSettled } from './ticket-receive.js';
import { messageOfStored, type StoredMessageItem } from '../store/message-layout.js';
import { partitionOfSeq, positionedSeq } from '../store/sequence.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import { busy, deadLetter, expiryDescription, type DeadLetterInfo } from './moves.js';
import { modified } from './message-items.js';
import { sequenceOfLockToken } from '../messages/lock-token.js';
import { isStoreBusy } from '../store/outcomes.js';
import { leftUndelivered } from './positioned-expiry.js';

/**
 * A message held under a lease token: where it is, the entry the token names, and the message
 * as read; the leases holding it, or for a ticket's token (`ticketToken`) none, and its ticket
 * when it was read (`ticketLock`).
 */
interface Held {
  partitionPk: string;
  token: string;
  entry: Entry;
  leases: HeldLease[];
  ticket?: Ticket;
  item: MessageItem;
}

/**
 * Whether `entry` (a token's) is a ticket's: on a ticketed entity the cursor claims only `back`,
 * whose entries were taken back at least once, so a take-back count of 0 is a ticket's take
 * (design.md, "Wiring tried, not landed"); any other is a cursor lease's.
 */
const ticketToken = (entity: EntityItem, entry: Entry) => isTicketed(entity) && entry[1] === 0;

/** How a settlement removes a message from its position: a ticketed partition keeps a `done` marker (store/tickets.ts header). */

/**
 * R5 for a ticket's token: the ticket holding its message when its lock has not ended, or
 * MessageLockLost. While the clock is before the lock end the token states, no read is needed
 * (`unread`, unless `need`): a lock ends no earlier than that (a renew only moves it later), and
 * the write's condition on the take-back count refuses a message taken back or settled. Past it,
 * or when the caller needs the entry (a renew), the counter item is read (store
 * `readTicketHolder`), consistently when the first look finds no holder or an ended lock.
 */
async function ticketLock(ctx: BrokerContext, partitionPk: string, token: string, need: boolean): Promise<Ticket | 'unread'> {
  if (!need && ctx.clock.now() < lockEndOfToken(token, ctx.clock.now())) return 'unread';
  for (const consistent of [false, true]) {
    const ticket = await readTicketHolder(ctx, partitionPk, token, consistent);
    if (ticket && ticket.until > ctx.clock.now()) return ticket;
  }
  throw lockLost();
}

/** The partition and entry a lease token names, or MessageLockLost when it names no positioned message of this entity and sequence number (R5). */
function located(entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string): { partitionPk: string; entry: Entry } {
  // Positioned messages are only in the active subqueue: a dead letter is in today's layout (D4).
  if (target.subqueue !== 'active') throw lockLost();
  const partition = partitionOfSeq(seq);
  const entry = entryOfToken(token);
  const wellFormed = Number.isSafeInteger(entry[0]) && entry[0] > 0 && Number.isSafeInteger(entry[1]) && entry[1] >= 0;
  if (!wellFormed || partition >= entity.partitions || positionedSeq(entry[0], partition) !== seq) throw lockLost();
  return { partitionPk: positionedPk(entity.eid, 'active', partition), entry };
}

/**
 * For each of `tokens` of one partition, the leases holding it when its lock has not ended, or
 * undefined (R5). One read of the partition's leases for all, and one consistent read more
 * when the first says a lock has ended or is unknown; then, for a token whose stated lock has
 * not ended and that no lease holds, the lease its claimer did not write, from the cursor's
 * record (`repairLeaseOfToken`: a claim refused for load at its lease write hands out anyway).
 */
async function leasesOf(ctx: BrokerContext, partitionPk: string, tokens: readonly string[]): Promise<(HeldLease[] | undefined)[]> {
  let found: (HeldLease[] | undefined)[] = tokens.map(() => undefined);
  let leases: HeldLease[] = [];
  for (const consistent of [false, true]) {
    leases = await readPartitionLeases(ctx, partitionPk, consistent);
    const now = ctx.clock.now();
    found = tokens.map((token) => {
      const holding = leasesHolding(leases, token);
      return lockEnd(holding) > now ? holding : undefined;
    });
    if (found.every((f) => f !== undefined)) return found;
  }
  const now = ctx.clock.now();
  const unwritten = tokens.find((t, i) => !found[i] && leasesHolding(leases, t).length === 0 && lockEndOfToken(t, now) > now);
  const repaired = unwritten ? await repairLeaseOfToken(ctx, partitionPk, unwritten) : undefined;
  const under = (t: string) => leaseHoldsToken(repaired!, t) && Math.floor(repaired!.until / 1000) * 1000 === lockEndOfToken(t, now);
  return repaired ? tokens.map((t, i) => found[i] ?? (under(t) ? [repaired] : undefined)) : found;
}

/** The message at the token's position, still at its take-back count; MessageLockLost when it is not (taken back, settled, moved). */
async function messageAt(ctx: BrokerContext, partitionPk: string, entry: Entry, strict = false): Promise<MessageItem> {
  for (const consistent of strict ? [true] : [false, true]) {
    const item = await readAtPosition(ctx, partitionPk, entry[0], consistent);
    if (item && (item.g ?? 0) === entry[1]) {
      // Handed out once at each take-back count: this is its delivery number (R3).
      return { ...messageOfStored(item as unknown as StoredMessageItem), deliveryCount: deliveryCountAt(item, entry[1]) };
    }
  }
  throw lockLost();
}

/**
 * The message held under `token`, and the leases holding it. `strict`: the message is read
 * consistently at once, for a settlement whose write does not test it (a renew writes only
 * leases): a stale read would let a renew after the holder's own complete or abandon succeed.
 */
async function held(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string, strict = false): Promise<Held> {
  const { partitionPk, entry } = located(entity, target, seq, token);
  if (ticketToken(entity, entry)) {
    // A renew (`strict`) needs the entry it splits; the others only the lock's validity.
    const [ticket, item] = await Promise.all([ticketLock(ctx, partitionPk, token, strict), messageAt(ctx, partitionPk, entry, strict)]);
    return { partitionPk, token, entry, leases: [], ...(ticket !== 'unread' ? { ticket } : {}), item };
  }
  const [[leases], item] = await Promise.all([leasesOf(ctx, partitionPk, [token]), messageAt(ctx, partitionPk, entry, strict)]);
  if (!leases) throw lockLost();
  return { partitionPk, token, entry, leases, item };
}

const changed = (changes: Record<string, unknown> | undefined) => changes !== undefined && Object.keys(changes).length > 0;

/** A settlement's store outcome as its answer: MessageLockLost (R5), or Throttled (retryable) when the store was busy. */
function answer(outcome: SettleOutcome): void {
  if (outcome === 'lockLost') throw lockLost();
  if (outcome === 'busy') throw busy();
}

/** A write that met a transaction or throttling waits 10-20 ms, then 20-40, before answering busy (as moves.ts's moves do). */
const BUSY_BACKOFF = { baseMs: 20, capMs: 80 };

async function unlessBusy(ctx: BrokerContext, write: () => Promise<SettleOutcome>): Promise<SettleOutcome> {
  for (let attempt = 0; ; attempt++) {
    const outcome = await write();
    if (outcome !== 'busy' || attempt >= 2) return outcome;
    await backoff(ctx.clock, attempt, BUSY_BACKOFF);
  }
}

/** D1/D2/R4: into the dead-letter subqueue (or on, F3) as moves.ts moves any message; false when the lock was lost meanwhile. */
async function deadLetterHeld(ctx: BrokerContext, entity: EntityItem, h: Pick<Held, 'entry' | 'item'>, info: DeadLetterInfo): Promise<boolean> {
  return deadLetter(ctx, entity, h.item, heldAtPosition(h.entry), info);
}

/** What a lock released by abandon comes to (R4, D2, T5): a dead-letter or an expiry, done here, or 'abandon', for the caller to queue. */
async function release(ctx: BrokerContext, entity: EntityItem, h: Held): Promise<SettleOutcome | 'abandon'> {
  const now = ctx.clock.now();
  const fate = onLockReleased({ ...h.item, expiresAt: h.item.expiresAt ?? null, lockedUntil: null, inDeadLetter: false }, entity.maxDeliveryCount, now);
  if (fate.kind === 'deadLetter') return (await deadLetterHeld(ctx, entity, h, { reason: fate.reason, description: fate.description })) ? 'done' : 'lockLost';
  if (fate.kind === 'expire') {
    if (entity.deadLetteringOnMessageExpiration) {
      return (await deadLetterHeld(ctx, entity, h, { reason: reasons.expired, description: expiryDescription })) ? 'done' : 'lockLost';
    }
    // T5: gone at once, as a complete removes it (the take-back count its token names); a ticketed partition keeps a marker.
    return (await completeAtPosition(ctx, h.partitionPk, h.token, removalFor(entity))) === 'completed' ? 'done' : 'lockLost';
  }
  return 'abandon';
}

/**
 * R4 abandon under a lease token: the message is first in line again at once (the cursor's
 * `back`), to be delivered with its delivery count one more (R3), its properties changed; or,
 * on its last allowed delivery, dead-lettered (D2); or, past its expiry, expired (T5, T6). A settlement
 * under the token afterwards is MessageLockLost (R5). Write units for a 1 KB message: 4 (one
 * transaction of the message and the cursor); reads: the partition's leases and the message,
 * or under a ticket's token the message alone (and the counter past the lock end the token states).
 */
export async function abandonPositioned(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  seq: bigint,
  token: string,
  changes?: Record<string, unknown>,
): Promise<void> {
  const h = await held(ctx, entity, target, seq, token);
  const item = modified(h.item, changes);
  const fate = await release(ctx, entity, { ...h, item });
  if (fate === 'abandon') {
    answer(
      await unlessBusy(
        ctx,
        async () => (await abandonAtPositions(ctx, h.partitionPk, [abandonOf(h.entry, item, changes)], { ticketed: isTicketed(entity) }))[0]!,
      ),
    );
  } else answer(fate);
  settledUnder(ctx, entity, h);
}

/** A settlement under a ticket's token succeeded: its ticket may leave with the next take (ticket-receive.ts `noteTicketSettled`). */
function settledUnder(ctx: BrokerContext, entity: EntityItem, h: Pick<Held, 'partitionPk' | 'token' | 'entry'>): void {
  if (ticketToken(entity, h.entry)) noteTicketSettled(ctx, h.partitionPk, h.token);
}

const abandonOf = (entry: Entry, item: MessageItem, changes: Record<string, unknown> | undefined) => ({
  entry,
  ...(changed(changes) && item.props !== undefined ? { props: item.props } : {}),
});

/**
 * R9 abandon of several lease tokens (no properties), an answer each in the order given: true,
 * or the error for that token. Each partition's leases are read once and its plain abandons
 * go in one transaction (per `MAX_ABANDONS_AT_ONCE`), which also queues them; D2 and expiry
 * apply per message as to a single abandon. A token given twice is abandoned once, its repeat
 * MessageLockLost. `tokens[i].seq` is the sequence number the token names.
 */
export async function abandonPositionedBatch(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  tokens: readonly { token: string; seq: bigint }[],
): Promise<(true | BrokerError)[]> {
  const answers: (true | BrokerError)[] = tokens.map(() => lockLost());
  const settledOf = (i: number, e: unknown) => {
    if (!(e instanceof BrokerError)) throw e;
    answers[i] = e;
  };
  const seen = new Set<string>();
  const byPartition = new Map<string, { i: number; token: string; entry: Entry }[]>();
  tokens.forEach(({ token, seq }, i) => {
    try {
      const { partitionPk, entry } = located(entity, target, seq, token);
      if (seen.has(token)) return;
      seen.add(token);
      const list = byPartition.get(partitionPk) ?? [];
      list.push({ i, token, entry });
      byPartition.set(partitionPk, list);
    } catch (e) {
      settledOf(i, e);
    }
  });
  await Promise.all(
    [...byPartition].map(async ([partitionPk, members]) => {
      // A ticket's token needs no lease: its lock is the ticket's (`ticketLock`), read only past the lock end it states.
      const underLeases = members.filter((m) => !ticketToken(entity, m.entry));
      const holding = new Map<string, HeldLease[] | undefined>();
      if (underLeases.length > 0) {
        const found = await leasesOf(
          ctx,
          partitionPk,
          underLeases.map((m) => m.token),
        );
        underLeases.forEach((m, k) => holding.set(m.token, found[k]));
      }
      const plain: { i: number; token: string; entry: Entry }[] = [];
      await Promise.all(
        members.map(async ({ i, token, entry }) => {
          try {
            let leases: HeldLease[] | undefined = [];
            if (ticketToken(entity, entry)) await ticketLock(ctx, partitionPk, token, false);
            else leases = holding.get(token);
            if (!leases) throw lockLost();
            const h = { partitionPk, token, entry, leases, item: await messageAt(ctx, partitionPk, entry) };
            const fate = await release(ctx, entity, h);
            if (fate === 'abandon') plain.push({ i, token, entry });
            else {
              answer(fate);
              answers[i] = true;
              settledUnder(ctx, entity, h);
            }
          } catch (e) {
            settledOf(i, e);
          }
        }),
      );
      // Queued in the order the tokens came, whatever order their reads came back in.
      plain.sort((a, b) => a.i - b.i);
      for (let start = 0; start < plain.length; start += MAX_ABANDONS_AT_ONCE) {
        const chunk = plain.slice(start, start + MAX_ABANDONS_AT_ONCE);
        const outcomes: SettleOutcome[] = chunk.map(() => 'busy');
        for (let attempt = 0; attempt < 3 && outcomes.includes('busy'); attempt++) {
          if (attempt > 0) await backoff(ctx.clock, attempt - 1, BUSY_BACKOFF);
          const left = chunk.flatMap((_, k) => (outcomes[k] === 'busy' ? [k] : []));
          const got = await abandonAtPositions(
            ctx,
            partitionPk,
            left.map((k) => ({ entry: chunk[k]!.entry })),
            { ticketed: isTicketed(entity) },
          );
          left.forEach((k, j) => (outcomes[k] = got[j]!));
        }
        chunk.forEach((m, k) => {
          try {
            answer(outcomes[k]!);
            answers[m.i] = true;
            settledUnder(ctx, entity, { partitionPk, token: m.token, entry: m.entry });
          } catch (e) {
            settledOf(m.i, e);
          }
        });
      }
    }),
  );
  return answers;
}

/**
 * R4/R7 defer under a lease token: the message leaves its position for today's layout, as
 * today's defer leaves a message (`messageKey(eid, 'active', partition, seq)`, its own sequence
 * number, state Deferred, no `ready` or `due` index entry, no TTL: T8), so receive-deferred
 * finds it by number. One transaction (D3). Write units for a 1 KB message: 4.
 */
export async function deferPositioned(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  seq: bigint,
  token: string,
  changes?: Record<string, unknown>,
): Promise<void> {
  const h = await held(ctx, entity, target, seq, token);
  const item = modified(h.item, changes);
  answer(await unlessBusy(ctx, () => moveFromPosition(ctx, h.partitionPk, h.entry, [deferredOf(item, seq)], [], removalFor(entity))));
  settledUnder(ctx, entity, h);
}

/** The attributes a message has only at a position (positions.ts, leases.ts), or only while in the `ready` and `due` indexes, locked or expiring (T8). */
const NOT_DEFERRED = ['at', 'rf', 'rn', 'g', 'gl', 'ug', 'tomb', 'ttl', 'rpk', 'rsk', 'dpk', 'dsk', 'lockToken', 'lockedUntil'] as const;

/** A positioned message as today's defer leaves one, at its own sequence number. */
export function deferredOf(item: MessageItem, seq: bigint): MessageItem {
  const deferred = { ...item } as Record<string, unknown>;
  for (const attribute of NOT_DEFERRED) delete deferred[attribute];
  return {
    ...(deferred as unknown as MessageItem),
    ...messageKey(item.eid, 'active', item.partition, seq),
    seq: seq.toString(),
    state: 'Deferred',
    v: (item.v ?? 0) + 1,
  };
}

/**
 * R4/D1 dead-letter under a lease token, with the application's reason and description (left
 * unset when not given, as in Service Bus), its properties changed: into the entity's
 * dead-letter subqueue as today's dead-lettering puts any message (D4: a new sequence number
 * there, the original as `enqueuedSequenceNumber`; F3: on to `forwardDeadLetteredMessagesTo`),
 * in one transaction with the delete at its position (D3, moves.ts `moveMessage`).
 */
export async function deadLetterPositioned(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, body: SettleRequest): Promise<void> {
  if (target.subqueue !== 'active') {
    throw new BrokerError('BadRequest', 'a message in a dead-letter subqueue cannot be dead-lettered again (D5)', { field: 'path' });
  }
  const h = await held(ctx, entity, target, seq, body.lockToken);
  const item = modified(h.item, body.propertiesToModify);
  const info = {
    ...(body.deadLetterReason !== undefined ? { reason: body.deadLetterReason } : {}),
    ...(body.deadLetterErrorDescription !== undefined ? { description: body.deadLetterErrorDescription } : {}),
  };
  if (!(await deadLetterHeld(ctx, entity, { entry: h.entry, item }, info))) throw lockLost();
  settledUnder(ctx, entity, h);
}

/**
 * R4 renew under a lease token: this message's lock ends `lockDuration` from now; the other
 * messages of its lease keep their own lock end (a lease of its own, store `renewAtPosition`).
 * Write units: 2 (the new lease, the old one's rewrite), and 1 later for the new lease's delete
 * by the claim that finds it lapsed; reads: the partition's leases and the message, consistently.
 * Under a ticket's token (`renewUnderTicket`): 1 write unit (the counter item), and its own
 * entry's take-back at its lapse; reads: the counter and the message, consistently.
 */
export async function renewPositioned(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  seq: bigint,
  token: string,
): Promise<{ lockedUntil: string }> {
  const h = await held(ctx, entity, target, seq, token, true);
  const lockedUntil = ctx.clock.now() + entity.lockDuration;
  const renew = h.ticket ? () => renewUnderTicket(ctx, h, h.ticket!, lockedUntil) : () => renewAtPosition(ctx, h.partitionPk, h.leases, h.entry, lockedUntil);
  // Under a ticket, `renewUnderTicket` noted where the message moved (its entry is pruned once it is settled).
  answer(await unlessBusy(ctx, renew));
  return { lockedUntil: new Date(lockedUntil).toISOString() };
}

/** How many times a renew under a ticket reads its entry again after another write changed it (a sibling's renew) before answering busy. */
const TICKET_RENEW_ATTEMPTS = 5;

/**
 * R4 renew of a ticket's message (store `renewTicketed`: it moves into an entry of its own).
 * An entry changed since it was read (a sibling renewed, or the ticket was taken back) is read
 * again consistently: gone or lapsed, the lock was lost (R5).
 */
async function renewUnderTicket(ctx: BrokerContext, h: Pick<Held, 'partitionPk' | 'token' | 'entry'>, ticket: Ticket, until: number): Promise<SettleOutcome> {
  let holder = ticket;
  for (let attempt = 0; attempt < TICKET_RENEW_ATTEMPTS; attempt++) {
    const outcome = await renewTicketed(ctx, h.partitionPk, holder, h.entry[0], until);
    if (typeof outcome === 'object') {
      noteTicketRenewed(ctx, h.partitionPk, h.token, outcome);
      return 'done';
    }
    if (outcome !== 'changed') return outcome;
    const again = await readTicketHolder(ctx, h.partitionPk, h.token, true);
    if (!again || again.until <= ctx.clock.now()) return 'lockLost';
    holder = again;
  }
  return 'busy';
}

/**
 * D2 at a claim: a message a claim took back after its last allowed delivery (delivery count
 * past `maxDeliveryCount`: taken back, at its lease's lapse, that many times) is dead-lettered
 * with MaxDeliveryCountExceeded instead of handed out, under the lease the claim took it with.
 * Returns the messages to hand out. One the move fails for (its lock lost, the store busy)
 * is not handed out either: it stays under the lease and comes back at its lapse, to be
 * dead-lettered then.
 */
export async function handOutOrDeadLetter(ctx: BrokerContext, entity: EntityItem, claimed: Claim): Promise<Claim['messages']> {
  const out: Claim['messages'] = [];
  for (const m of claimed.messages) {
    if (m.deliveryCount <= entity.maxDeliveryCount) {
      out.push(m);
      continue;
    }
    const entry = entryOfToken(m.token);
    // Delivered one time fewer than this claim counts: the count it reached when its last lock ran out (D2).
    const item = { ...messageOfStored(m.item as unknown as StoredMessageItem), deliveryCount: m.deliveryCount - 1 };
    const fate = onLockReleased({ ...item, expiresAt: null, lockedUntil: null, inDeadLetter: false }, entity.maxDeliveryCount, ctx.clock.now());
    if (fate.kind !== 'deadLetter') continue;
    try {
      await deadLetterHeld(ctx, entity, { entry, item }, { reason: fate.reason, description: fate.description });
    } catch (e) {
      // Refused (not a death, which leaves the count to the lapse): it comes back at the lapse
      // with no delivery counted for this claim (R3).
      const refused = (e instanceof BrokerError && e.retryable) || isStoreBusy(e);
      if (refused && claimed.lease && !claimed.lease.nd)
        await leftUndelivered(ctx, positionedPk(entity.eid, 'active', partitionOfSeq(sequenceOfLockToken(m.token))), m);
      if (!(e instanceof BrokerError)) throw e;
    }
  }
  return out;
}
