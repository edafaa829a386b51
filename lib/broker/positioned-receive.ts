/**
 * Receiving and completing on a positioned queue's active subqueue (design.md, "Which way out",
 * step 2): a receive claims messages from a partition's cursor under one lease (store/leases.ts
 * `claim`), so a lock writes neither the message nor an index; a complete is one delete
 * conditioned on the message not having been taken back since (`completeAtPosition`).
 *
 * - R1, R3: a peek-lock receive hands out each claimed message under its lease's lock, its
 *   delivery count one more than its take-backs. A receive that fails after a claim's cursor
 *   write marks what that claim did not hand out (store `markClaimUndelivered`: a write a
 *   message, on the failure path only), so its lease's lapse counts no delivery for it; a
 *   receiver that dies outright leaves the delivery counted, as Service Bus counts one whenever
 *   a lock it took expires. A receive-and-delete claims under a short lock
 *   (`RECEIVE_AND_DELETE_LOCK_MS`) and hands out only what its deletes removed: a message whose
 *   delete failed was never handed out, and is put back in line at once (`releaseLease`), or,
 *   should that fail too, when the short lock lapses. Either way it is taken back, which makes
 *   a delete still on its way under the claim fail; its claim says it hands nothing out
 *   (`undelivered`), so that take-back counts no delivery, as in today's layout.
 * - R10: the claim is told how many of the messages it found the answer can carry (their
 *   sizes are known from the head's read before the cursor write), so nothing is claimed that
 *   is not handed out; after the cursor write the claim is durable and its messages are handed
 *   out whatever else fails.
 * - R5: a token states its lock end to the second. Before it, a complete is the one delete (1
 *   write unit, no read); once it has passed, the lease is read first (`lockEndOfLease`, one
 *   consistent read of the leases ending in that second, 1 read unit), so a complete after the
 *   lock's end and before its take-back answers MessageLockLost, as today's layout does, and a
 *   renewed lock (which extends the lease) still completes.
 * - Today's layout in a positioned queue (its scheduled messages, and messages moved in later)
 *   is received after the positions, and only when they left room in the answer (`today`):
 *   while the positions fill the answer, that costs nothing; a receive they leave short reads
 *   today's `ready` index as a plain receive does (half a read unit a partition when nothing
 *   is due). Their tokens and settlements stay today's.
 */
import type { RequestOf } from '../requests/schemas.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import type { ReceiveTarget } from '../entities/paths.js';
import { presentMessage, type ReceivedMessage } from '../messages/item.js';
import { sequenceOfLockToken } from '../messages/lock-token.js';
import { messagePk, positionedPk } from '../store/keys.js';
import { readReadyPage } from '../store/ready-index.js';
import {
  claim,
  claimIdOfToken,
  completeAtPosition,
  deleteSettledLease,
  lockEndOfLease,
  lockEndOfToken,
  entryOfToken,
  markClaimUndelivered,
  partitionIsEmpty,
  releaseLease,
  type Claim,
  type LeaseItem,
} from '../store/leases.js';
import { expireClaimed, splitExpired } from './positioned-expiry.js';
import { settleToday, todayFirst } from './today-first.js';
import { handOutOrDeadLetter } from './positioned-settle.js';
import { messageOfStored, type StoredMessageItem } from '../store/message-layout.js';
import { isStoreBusy } from '../store/outcomes.js';
import type { PositionedItem } from '../store/positions.js';
import { partitionOfSeq } from '../store/sequence.js';
import { lockLost } from '../errors.js';
import { AnswerBudget, lockedAnswerBytes } from './answer-budget.js';
import { keepingTaken } from './hand-out.js';
import { busy } from './moves.js';
import { clearMark, type PartitionToRead } from './ready-marks.js';
import { isTicketed, removalFor } from './layouts.js';
import { giveBackWhole, handOutTicket, noteTicketSettled, startTicket, takeBackLapsed } from './ticket-receive.js';
import { ensureTicketed } from './ticketed-partitions.js';
import { lockEndOfTicket } from '../store/tickets.js';
import { markBackClear } from '../store/ticket-back.js';
import { ticketTakeOptions, type TicketTaken } from './ticket-ahead.js';

/**
 * The lock a receive-and-delete claims under: long enough for its deletes, which follow at
 * once; a message whose delete failed and could not be put back at once comes back when it
 * lapses (any length is safe: a delete and a take-back of one message exclude each other by
 * its take-back count).
 */
export const RECEIVE_AND_DELETE_LOCK_MS = 5_000;

/** What a positioned pass takes from receive.ts, which decides as for every receive. */
export interface PositionedPass {
  /** The partitions one pass tries, in turn (ready marks, a random start), each with its mark when old enough to clear. */
  partitions: readonly PartitionToRead[];
  /** Today's layout's pass for up to `left` more messages, within the same answer budget. */
  today(left: number, budget: AnswerBudget): Promise<{ messages: ReceivedMessage[]; more: boolean }>;
  /** The `ready` partitions that pass reads (today-first.ts looks at them when it finds nothing). */
  todayPks: readonly string[];
  /** A take made beside the entity read, which agreed (ticket-ahead.ts): its partition's first take; given back if the pass does not get there. */
  ahead?: TicketTaken;
}

/** One pass of a receive on a positioned queue's active subqueue: its partitions' positions, then today's layout if room is left. */
export async function receivePositionedOnce(
  ctx: BrokerContext,
  entity: EntityItem,
  options: Pick<RequestOf<'ReceiveOptions'>, 'mode' | 'maxMessages'>,
  pass: PositionedPass,
): Promise<{ messages: ReceivedMessage[]; more: boolean }> {
  const out: ReceivedMessage[] = [];
  const budget = new AnswerBudget();
  let more = false;
  let ahead = pass.ahead;
  // S6, R2: while the entity says a message in today's layout may be receivable, it goes first
  // (today-first.ts); otherwise today's layout only gets the room the positions leave.
  const first = todayFirst(entity, ctx.clock.now());
  /** Today's layout's pass for what the answer still wants, onto `out`. */
  const readToday = async () => {
    const got = await pass.today(options.maxMessages - out.length, budget);
    out.push(...got.messages);
    if (got.more) more = true;
    return got;
  };
  try {
    await keepingTaken(out, async () => {
      if (first) {
        const got = await readToday();
        if (got.messages.length === 0 && !got.more && budget.fits()) await settleToday(ctx, entity, pass.todayPks);
      }
      for (const { partition, clearable } of pass.partitions) {
        if (out.length >= options.maxMessages) break;
        const mine = ahead?.partition === partition ? ahead : undefined;
        if (mine) ahead = undefined;
        const { took, more: behind } = await claimInto(out, ctx, entity, partition, options, budget, mine);
        // T4: its rounds ended still removing expired messages; the wait polls again at once.
        if (behind) more = true;
        // A partition left untaken only for want of room in the answer is not looked at for emptiness.
        if (took === 0 && clearable !== undefined && budget.fits()) await clearIfEmpty(ctx, entity, partition, clearable);
      }
      if (!first && out.length < options.maxMessages && budget.fits()) await readToday();
    });
  } finally {
    // R3: a ticket taken ahead that this pass never came to (its partition not read, or the answer full) goes back counting no delivery.
    if (ahead?.start.ticket) await giveBackWhole(ctx, positionedPk(entity.eid, 'active', ahead.partition), ahead.start.ticket);
  }
  return { messages: out, more };
}

/** The message as its receiver sees it: the item as stored, with what its claim gave it. */
function present(c: Claim['messages'][number], until: number, now: number, lock: boolean): ReceivedMessage {
  const item = messageOfStored(c.item as unknown as StoredMessageItem);
  return presentMessage({ ...item, state: 'Active', deliveryCount: c.deliveryCount, ...(lock ? { lockToken: c.token, lockedUntil: until } : {}) }, now, {
    lock,
  });
}

/**
 * Ready marks (ready-marks.ts) cover both layouts of a positioned queue's partition: its mark
 * is cleared only when neither holds anything at all, no message in flight included (its lease
 * would bring it back with no mark to show it), and only on the path that already found
 * nothing to take with a mark old enough: about 2.5 read units, once each time a partition runs dry.
 */
async function clearIfEmpty(ctx: BrokerContext, entity: EntityItem, partition: number, mark: number): Promise<void> {
  const today = await readReadyPage(ctx, { pk: messagePk(entity.eid, 'active', partition), limit: 1 });
  if (today.items.length > 0 || !(await partitionIsEmpty(ctx, positionedPk(entity.eid, 'active', partition)))) return;
  await clearMark(ctx, entity, partition, mark);
}

/**
 * Claims behind expired and dead-lettered messages again at most this often in one pass (T4,
 * D2); a pass whose rounds end so says there may be more (`Taken.more`), and a receive that
 * waits polls again at once, as today's layout does behind a backlog of expired messages.
 */
const EXPIRED_ROUNDS = 3;

/** What a partition's claims took for a pass: how many messages, handed out or not, and whether its rounds ran out still passing expired or dead-lettered ones. */
interface Taken {
  took: number;
  more: boolean;
}

/** R10: how many of `items`, in order, the answer still carries, each sized as it will be answered, locked. */
const fittingAt = (budget: AnswerBudget, now: number) => (items: readonly PositionedItem[]) =>
  budget.countFitting(items.map((i) => lockedAnswerBytes(messageOfStored(i as unknown as StoredMessageItem), now)));

/**
 * Takes what one partition has for this receive (up to what is still wanted and fits) and
 * hands it out onto `out` (`Taken`). A ticketed partition's head is taken by ticket
 * (`ticketedInto`), everything else by cursor claim.
 */
async function claimInto(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  partition: number,
  options: Pick<RequestOf<'ReceiveOptions'>, 'mode' | 'maxMessages'>,
  budget: AnswerBudget,
  ahead?: TicketTaken,
): Promise<Taken> {
  const pk = positionedPk(entity.eid, 'active', partition);
  if (isTicketed(entity) && (await ensureTicketed(ctx, pk))) return ticketedInto(out, ctx, entity, pk, options, budget, ahead);
  // R3: never so for a ticket taken ahead (its partition was known ticketed), but it would go back rather than lapse.
  if (ahead?.start.ticket) await giveBackWhole(ctx, pk, ahead.start.ticket);
  return cursorInto(out, ctx, entity, pk, options, budget);
}

/**
 * How many positions a ticketed partition's next take asks for at most after rounds that only
 * passed what nobody may receive (a run of scheduled messages' tombstones, expired messages,
 * void requests): each such round asks for `PASS_GROWTH` times its ticket's positions, so a run
 * of a thousand costs a receive of one about a dozen takes, not a thousand (R2). What a grown
 * ticket holds beyond the answer goes back in line at once, counting no delivery (R3, R10).
 */
const PASS_TAKE_MAX = 100;
const PASS_GROWTH = 8;

/** Per process and partition: the size the next take asks for while a run of passed positions goes on. */
const passRuns = new Map<string, number>();
const MAX_PASS_RUNS = 10_000;

function notePass(pk: string, ticketCount: number, passedOnly: boolean): void {
  if (!passedOnly) {
    passRuns.delete(pk);
    return;
  }
  if (passRuns.size >= MAX_PASS_RUNS) passRuns.clear();
  passRuns.set(pk, Math.min(PASS_TAKE_MAX, Math.max(1, ticketCount) * PASS_GROWTH));
}

/** The positions a take asks for: what the answer still wants, or more while a run of passed positions goes on. */
const takeSize = (pk: string, left: number): number => Math.max(left, passRuns.get(pk) ?? 0);

/**
 * A ticketed partition (ticket-receive.ts): the take first (its returned counter shows the
 * lapsed tickets, at no read unit), then the cursor's claim of `back` (abandons, and the lapsed
 * leases of earlier claims of `back`, which the claim takes back itself) only when the counter
 * shows something queued there since a claim found it clear (store/ticket-back.ts: a single
 * life pays no cursor read), marking it clear again when the claim finds it so; then, only when a
 * ticket had lapsed, its take-back into `back` and a second claim, then the ticket's messages
 * for what is still wanted: a lapsed message comes back before the head (R6; D2's poison before
 * a fresh message), older lapses first. A ticket `back` left no room for is given back at
 * once, counting no delivery (R3, R10). Expired messages met in a ticket are removed under it
 * (T4, T6) and the head taken again for what they leave wanted, as the cursor claims again,
 * while rounds are left: a ticket is taken only to be handed out in this pass, never to be left
 * to its lapse (R3: that would count a delivery nobody got).
 */
async function ticketedInto(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  pk: string,
  options: Pick<RequestOf<'ReceiveOptions'>, 'mode' | 'maxMessages'>,
  budget: AnswerBudget,
  ahead?: TicketTaken,
): Promise<Taken> {
  const peekLock = options.mode === 'peekLock';
  const takeOptions = ticketTakeOptions(entity, options.mode, RECEIVE_AND_DELETE_LOCK_MS);
  // A take made beside the entity read (ticket-ahead.ts) is this pass's first, with its positions read already.
  const start = ahead?.start ?? (await startTicket(ctx, pk, takeSize(pk, options.maxMessages - out.length), takeOptions));
  let early = ahead?.read;
  let { ticket, drawnAt } = start;
  let took = 0;
  let more = false;
  try {
    // The lapsed tickets the take showed go into `back` first, so that one claim of it hands out
    // everything waiting there oldest first (R2: the claim takes `back` by position); the claim is
    // made when they were, or when the counter says something was queued there since a claim found
    // it clear (store/ticket-back.ts).
    const claimed: CursorReport = {};
    const tookBack = start.lapsed.length > 0 && (await takeBackLapsed(ctx, pk, start.lapsed));
    if (start.backDue || tookBack) ({ took, more } = await cursorInto(out, ctx, entity, pk, options, budget, claimed, start.backDue));
    // Found clear: the next receives skip the claim until a writer queues again (best effort: refused, the next one claims again).
    if (start.backDue && !tookBack && claimed.clearAt !== undefined) {
      await markBackClear(ctx, pk, claimed.clearAt, start.backSeen).catch((e: unknown) => {
        if (!isStoreBusy(e)) throw e;
      });
    }
  } catch (e) {
    if (ticket) await giveBackWhole(ctx, pk, ticket);
    throw e;
  }
  // R2: a claim of `back` that ran out of rounds removing expired messages may have live ones
  // behind them, older than the head: the ticket goes back, and the wait polls again at once.
  if (more && ticket && out.length < options.maxMessages) {
    await giveBackWhole(ctx, pk, ticket);
    return { took, more };
  }
  for (let round = 1; ticket; round++) {
    const left = options.maxMessages - out.length;
    if (left <= 0) {
      await giveBackWhole(ctx, pk, ticket);
      break;
    }
    took += ticket.count;
    const got = await handOutTicket(out, ctx, entity, pk, ticket, left, peekLock, budget, fittingAt(budget, ctx.clock.now()), drawnAt, early);
    early = undefined;
    notePass(pk, ticket.count, got.passed);
    // Taken again only past what was removed or passed (expired, tombstones, void requests), as the cursor claims again.
    if ((got.expired === 0 && !got.passed) || out.length >= options.maxMessages || !budget.fits()) break;
    if (round >= EXPIRED_ROUNDS) {
      more = true;
      break;
    }
    ({ ticket, drawnAt } = await startTicket(ctx, pk, takeSize(pk, options.maxMessages - out.length), takeOptions));
  }
  return { took, more };
}

/** What `cursorInto`'s last claim left: the cursor's version when it found `back` empty and no record (store `Claim.clearAt`). */
interface CursorReport {
  clearAt?: number;
}

/**
 * Claims from a partition's cursor (its head, or on a ticketed partition `back` only) and hands
 * out onto `out`; how many messages its claims took, handed out or not. Of what a claim takes,
 * an expired message is removed under its lease (T4, T6: positioned-expiry.ts), and then one
 * past its last delivery dead-lettered (D2: positioned-settle.ts), in that order, as today's
 * sweeper decides; the claim is made again for what they leave wanted, while rounds are left.
 */
async function cursorInto(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  pk: string,
  options: Pick<RequestOf<'ReceiveOptions'>, 'mode' | 'maxMessages'>,
  budget: AnswerBudget,
  report: CursorReport = {},
  clearing = false,
): Promise<Taken> {
  const peekLock = options.mode === 'peekLock';
  let took = 0;
  for (let round = 0; out.length < options.maxMessages; round++) {
    if (round >= EXPIRED_ROUNDS) return { took, more: budget.fits() };
    // R10: the claim takes no more than fits.
    const got = await claim(ctx, pk, options.maxMessages - out.length, {
      lockMs: peekLock ? entity.lockDuration : RECEIVE_AND_DELETE_LOCK_MS,
      fits: fittingAt(budget, ctx.clock.now()),
      undelivered: !peekLock,
      ...(clearing ? { clearing } : {}),
    });
    if (!got.lease) {
      if (got.clearAt !== undefined) report.clearAt = got.clearAt;
      return { took, more: false };
    }
    const lease = got.lease;
    took += got.messages.length;
    const before = out.length;
    try {
      const { live, expired } = splitExpired(got.messages, ctx.clock.now());
      const handing = await handOutOrDeadLetter(ctx, entity, { ...got, messages: live });
      await handOut(out, ctx, entity, pk, lease, handing, peekLock, budget);
      if (expired.length === 0 && handing.length === live.length) break;
      if (expired.length > 0) await expireClaimed(ctx, entity, pk, expired, lease);
    } catch (e) {
      // R3: what this claim did not hand out comes back at the lapse counting no delivery.
      if (!lease.nd) await markClaimUndelivered(ctx, pk, notHandedOut(got.messages, out.slice(before)));
      throw e;
    }
  }
  return { took, more: false };
}

/** The claimed messages not among those handed out (by lock token). */
function notHandedOut(claimed: Claim['messages'], handed: readonly ReceivedMessage[]): Claim['messages'] {
  const tokens = new Set(handed.map((m) => m.lockToken));
  return claimed.filter((m) => !tokens.has(m.token));
}

/** Hands out `messages` of one claim's `lease` onto `out`: locked, or (receive-and-delete) once removed. */
async function handOut(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  pk: string,
  lease: LeaseItem,
  messages: Claim['messages'],
  peekLock: boolean,
  budget: AnswerBudget,
): Promise<void> {
  const until = lease.until;
  if (peekLock) {
    for (const m of messages) {
      const message = present(m, until, ctx.clock.now(), true);
      out.push(message);
      budget.add(message);
    }
    return;
  }
  // R3: handed out only once removed; a message whose delete failed is put back in line at once (R10).
  const deleted = await Promise.allSettled(messages.map((m) => completeAtPosition(ctx, pk, m.token, removalFor(entity))));
  let failure: unknown;
  deleted.forEach((d, i) => {
    if (d.status === 'rejected') failure ??= d.reason;
    else if (d.value === 'completed') {
      const message = present(messages[i]!, until, ctx.clock.now(), false);
      out.push(message);
      budget.add(message);
    }
  });
  if (failure !== undefined) {
    // Should this fail too, the short lock's lapse puts them back instead.
    await releaseLease(ctx, pk, lease).catch(() => undefined);
    throw failure;
  }
}

/**
 * R4 complete of a positioned message by `token` (its sequence number `seq`): one delete while
 * the token's stated lock end has not passed; after it, the lease decides first (R5). A token of
 * another message, subqueue or partition is unknown (MessageLockLost); a refusal for load is
 * Throttled (retryable), and changed nothing.
 */
export async function completePositioned(
  ctx: BrokerContext,
  entity: EntityItem,
  target: Pick<ReceiveTarget, 'subqueue'>,
  seq: bigint,
  token: string,
): Promise<void> {
  if (target.subqueue !== 'active' || sequenceOfLockToken(token) !== seq) throw lockLost();
  const partition = partitionOfSeq(seq);
  if (partition >= entity.partitions) throw lockLost();
  const pk = positionedPk(entity.eid, 'active', partition);
  try {
    const now = ctx.clock.now();
    // A ticket's token is at take-back count 0 on a ticketed partition (its cursor claims only `back`, taken back at least once).
    const byTicket = isTicketed(entity) && entryOfToken(token)[1] === 0;
    if (now >= lockEndOfToken(token, now)) {
      const end = byTicket ? await lockEndOfTicket(ctx, pk, token, now) : await lockEndOfLease(ctx, pk, token, now);
      if (end === undefined || end <= ctx.clock.now()) throw lockLost();
    }
    if ((await completeAtPosition(ctx, pk, token, removalFor(entity))) === 'lockLost') throw lockLost();
    if (byTicket) noteTicketSettled(ctx, pk, token);
  } catch (e) {
    if (isStoreBusy(e)) throw busy();
    throw e;
  }
}

/**
 * R4/R9 with R6: after a complete, deletes each lease whose every message it completed (store
 * `deleteSettledLease`), for the write its lapse would pay anyway, so no claim pays the lapse's
 * consistent read of the lease's range. `tokens`: the lease tokens the complete removed a
 * message under (each delete conditioned on the token's take-back count). `remembered`: only a
 * lease this process claimed, found without a read (a single complete: its lease is worth the
 * delete only when no read is paid for it). Only after those deletes: a crash before this, or
 * a refusal for load, leaves the lease to its lapse, as before. Other errors throw (the
 * messages stay completed).
 */
export async function forgetSettledLeases(
  ctx: BrokerContext,
  entity: EntityItem,
  tokens: readonly string[],
  options: { remembered?: boolean } = {},
): Promise<void> {
  const now = ctx.clock.now();
  const byLease = new Map<string, { pk: string; tokens: string[] }>();
  for (const token of new Set(tokens)) {
    if (isTicketed(entity) && entryOfToken(token)[1] === 0) continue;
    const partition = partitionOfSeq(sequenceOfLockToken(token));
    if (partition >= entity.partitions) continue;
    const pk = positionedPk(entity.eid, 'active', partition);
    const id = `${pk}|${lockEndOfToken(token, now)}|${claimIdOfToken(token)}`;
    const lease = byLease.get(id) ?? { pk, tokens: [] };
    lease.tokens.push(token);
    byLease.set(id, lease);
  }
  await Promise.all(
    [...byLease.values()].map(async ({ pk, tokens: of }) => {
      try {
        await deleteSettledLease(ctx, pk, of, options);
      } catch (e) {
        if (!isStoreBusy(e)) throw e;
      }
    }),
  );
}
