/**
 * Receiving (R1-R3, T4, D2). One Query on the ready index per partition finds messages
 * visible now, oldest first; locked and scheduled messages sort after `now` and are never
 * read. Each candidate is taken with one conditional write, so two receivers never get the
 * same message under a valid lock. Overdue candidates are expired or dead-lettered on the spot.
 */
import { deleteExpiredMessage, getMessage, getMessagesConsistently } from '../store/messages.js';
import { readReadyPage, type IndexPage } from '../store/ready-index.js';
import type { RequestOf } from '../requests/schemas.js';
import { entityPathDisplay, type ReceiveTarget } from '../entities/paths.js';
import type { MessageItem, ReceivedMessage } from '../messages/item.js';
import { newLockToken } from '../messages/lock-token.js';
import { dueShardOf, isReminder, keyId, readySortKey, readyUpperBound, messagePk } from '../store/keys.js';
import { onCandidate, type MessageFacts } from '../fate/delivery.js';
import type { BrokerContext } from './context.js';
import { AnswerBudget } from './answer-budget.js';
import { BrokerError, entityNotFound } from '../errors.js';
import { currentEntity, recentEntity, requireEntity, sameIncarnation, touchEntity, unchangedEntity, type EntityItem } from './entities.js';
import { assertCanReceive, assertNoSession } from './entities.js';
import { deadLetter, expire, unchanged } from './moves.js';
import {
  deleteAndPresent,
  keepingTaken,
  lockAndPresent,
  lockUpdate,
  unlessConflict,
  type LockedEntry,
  type MessageLock,
  type TakeCondition,
} from './hand-out.js';
import { remindBeforeTaking, restoreLapsed, type ReminderPlan as Reminder } from './reminders.js';
import { notFenced } from '../store/reminders.js';
import { clearMark, partitionsToRead } from './ready-marks.js';
import { partitionCount } from './message-items.js';
import { claimFirst, isBusy } from './crowd-claims.js';
import { isPositioned } from './layouts.js';
import { RECEIVE_AND_DELETE_LOCK_MS, receivePositionedOnce } from './positioned-receive.js';
import { giveBackAhead, takeAhead, takenAhead, type TicketTaken } from './ticket-ahead.js';

/** A receive's options, parsed (R1); a session receive reads the same ones. */
export type ReceiveOptions = RequestOf<'ReceiveOptions'>;

export async function receive(ctx: BrokerContext, target: ReceiveTarget, options: ReceiveOptions): Promise<ReceivedMessage[]> {
  const early = firstPageAhead(ctx, target, options);
  // An early read left unused is let finish first, so that it overlaps neither this receive's
  // own reads nor its caller's next receive: a lone receiver is no crowd (readingPage).
  const unused = () =>
    early?.page.read.then(
      () => undefined,
      () => undefined,
    );
  // A ticketed queue's take and its read go beside the entity read, with a recent read's entity (ticket-ahead.ts).
  const ahead = takeAhead(ctx, target, options, RECEIVE_AND_DELETE_LOCK_MS);
  let entity: EntityItem;
  try {
    entity = await requireEntity(ctx, target, ahead?.work);
    assertCanReceive(entity, target.subqueue);
    assertNoSession(entity, target);
    await touchEntity(ctx, entity);
  } catch (e) {
    // E4, E5: refused as if read first; what was taken ahead goes back counting no delivery (R3).
    await unused();
    if (ahead) await giveBackAhead(ctx, ahead);
    throw e;
  }
  const policy = plainPolicy(ctx, entity, target);
  // Read beside the entity read: good only for the incarnation the entity read found, unchanged.
  if (early && unchangedEntity(early.entity, entity)) policy.firstPage = early.page;
  else await unused();
  // Taken beside the entity read: handed out only for the incarnation it found, unchanged (E4, E5);
  // otherwise given back (R3) and this receive takes with the entity as it is.
  let taken: TicketTaken | undefined;
  if (ahead && unchangedEntity(ahead.entity, entity)) taken = await takenAhead(ahead);
  else if (ahead) await giveBackAhead(ctx, ahead);
  // A positioned queue's active subqueue is claimed by cursor and leases (positioned-receive.ts),
  // and what it holds in today's layout (scheduled messages) is received as before after it.
  const positioned = isPositioned(entity) && target.subqueue === 'active';
  const once = positioned
    ? async () => {
        // The marks are read once a pass, for both layouts; only the positioned pass clears one (it knows both).
        const marked = await partitionsToRead(ctx, entity, target.subqueue, partitionsOf(entity, target));
        const today: ReceivePolicy = {
          ...policy,
          partitions: async () => marked.map(({ partition }) => ({ pk: messagePk(entity.eid, target.subqueue, partition) })),
        };
        const first = taken;
        taken = undefined;
        return receivePositionedOnce(ctx, entity, options, {
          partitions: marked,
          ...(first ? { ahead: first } : {}),
          today: (left, budget) => receiveOnce(ctx, entity, target, { ...options, maxMessages: left }, today, budget),
          todayPks: marked.map(({ partition }) => messagePk(entity.eid, target.subqueue, partition)),
        });
      }
    : () => receiveOnce(ctx, entity, target, options, policy);
  const found = await longPoll(ctx, entity, target, options.maxWaitTime, async () => {
    const { messages, more } = await once();
    return { found: messages.length > 0 ? messages : undefined, more };
  });
  return found ?? [];
}

/** Polls a receive makes past its wait while each says there may be more behind what it passed. */
const MORE_POLLS_PAST_DEADLINE = 5;

/**
 * R2's wait, shared by a receive, a session receive and accepting the next session: polls
 * until `poll` finds something or `maxWaitTime` has passed (then undefined), sleeping on the
 * broker clock between polls, 100 ms doubling to 1 s. A poll that left candidates unread for
 * lack of budget (`more`) is followed at once, past the wait too (`MORE_POLLS_PAST_DEADLINE`).
 * Between polls the entity is checked (E4).
 */
export async function longPoll<T>(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  maxWaitTime: number,
  poll: () => Promise<{ found: T | undefined; more?: boolean }>,
): Promise<T | undefined> {
  const deadline = ctx.clock.now() + maxWaitTime;
  let pause = 100;
  for (let pastDeadline = 0; ;) {
    const { found, more } = await poll();
    if (found !== undefined) return found;
    const left = deadline - ctx.clock.now();
    // R2: a poll that passed only what nobody may receive (expired messages it removed, a
    // ticketed partition's tombstones) and may have more behind is followed at once, also
    // when the wait is over (a receive of PT0S too), a bounded number of times.
    if (left <= 0 && !(more && ++pastDeadline <= MORE_POLLS_PAST_DEADLINE)) return undefined;
    if (!more) {
      await ctx.clock.sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, 1000);
    }
    await assertStillThere(ctx, entity, target);
  }
}

/**
 * E4 during a long poll: the entity may have been deleted (or deleted and re-created) while
 * the receive slept, and its messages stay in the table until the reaper removes them. One
 * read of the entity per poll (0.5 unit; at most about 20 in a 20 s wait) keeps a waiting
 * receive from handing out a message of an incarnation that no longer exists.
 */
export async function assertStillThere(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget): Promise<void> {
  const current = await currentEntity(ctx, target);
  if (!sameIncarnation(entity, current)) throw entityNotFound(entityPathDisplay(target));
}

/**
 * The first page a receive reads, read beside its entity read instead of after it, with the
 * entity a read of this process saw a moment ago: for an entity whose subqueue is one
 * partition without ready marks (a partitioned one reads its marks first). Only a read: what
 * the receive takes is decided once its own entity read has answered (E4, E5).
 */
function firstPageAhead(ctx: BrokerContext, target: ReceiveTarget, options: ReceiveOptions) {
  const entity = recentEntity(ctx, target);
  // A positioned queue reads today's index only when its positions leave room (positioned-receive.ts).
  if (!entity || partitionCount(entity, target) !== 1 || entity.requiresSession || (isPositioned(entity) && target.subqueue === 'active')) return undefined;
  const pk = messagePk(entity.eid, target.subqueue, 0);
  const crowd = crowdKey(ctx, pk);
  const read = readingPage(crowd, () =>
    readReadyPage<Candidate>(ctx, {
      pk,
      upper: readyUpperBound(ctx.clock.now()),
      limit: pageSize(options.maxMessages, isCrowded(crowd)),
    }),
  );
  // Unused when the entity read disagrees: its failure is nobody's.
  read.catch(() => undefined);
  return { entity, page: { pk, read } };
}

export function partitionsOf(entity: EntityItem, target: Pick<ReceiveTarget, 'subqueue'>): number[] {
  const count = target.subqueue === 'active' ? entity.partitions : 1;
  const start = Math.floor(Math.random() * count);
  return Array.from({ length: count }, (_, i) => (start + i) % count);
}

/** A row of the ready index: the message's key, its place, and the facts the index carries (table.ts). */
export interface Candidate {
  pk: string;
  sk: string;
  rsk: string;
  state: MessageItem['state'];
  deliveryCount: number;
  expiresAt?: number;
  lockedUntil?: number;
}

/** A ready partition a receive reads, and the mark to clear if it turns out to hold nothing at all (ready-marks.ts). */
export interface ReadyPartition {
  pk: string;
  clearable?: { partition: number; mark: number };
}

/**
 * What a receive reads and how it takes: the one place a plain receive and a session's receive
 * differ (a session's is in session-lock.ts). The page loop, overdue messages, the answer
 * budget and conflicts are the same code for both.
 */
export interface ReceivePolicy {
  /** The ready partitions one pass reads, in turn. */
  partitions(): Promise<ReadyPartition[]>;
  /** The first page of partition `pk`, read already (beside the entity read); used once, for the first read of that partition. */
  firstPage?: { pk: string; read: Promise<IndexPage<Candidate>> };
  /** Rows this receiver holds already (a session's messages in flight under its lock): passed over without a read. */
  holds?(c: Candidate): boolean;
  /** Whether a message read for an overdue move is in flight, so not moved now (T5). */
  inFlight(item: MessageItem, now: number): boolean;
  /**
   * The index row shows whether the message is in flight (its own lock's end), so an expired
   * message only to be deleted is deleted on the row's word, unread (T4). A session message's
   * lock is its session's, which the row does not show.
   */
  expireByRow?: boolean;
  /** What the take requires besides the row being visible and unexpired. */
  free(c: Candidate, now: number): TakeCondition;
  /**
   * The lock a peek-lock take sets, and where the message's ready entry sorts while it holds;
   * under a batch's reminder (`batch`), its token and lock end, and out of the index.
   */
  lock(c: Candidate, now: number, batch?: { token: string; until: number }): { lock: MessageLock; entry: LockedEntry };
  /**
   * Where present, a pass about to take two or more messages of a partition takes them out of
   * the ready index under one reminder (reminders.ts), their locks ending when this says.
   */
  batchLockEnd?(now: number): number;
  /** Where present, takes that write nothing to the message (a session's record, session-lock.ts). */
  held?: RecordTakes;
  /**
   * One holder reading in its order (a session, N3): a take lost is not a crowd, each page is
   * sized by what is still wanted, and an overdue row is cleared when its turn comes. Otherwise
   * (receivers racing for a queue) a page's overdue rows are cleared together before any take.
   */
  inTurn?: boolean;
}

/**
 * Takes by a record instead of a write of each message (session-lock.ts): the candidates
 * `byRecord` accepts are gathered in order and handed to `commit`, which records them in one
 * write, then reads and presents them, before any later take (order: N3).
 */
export interface RecordTakes {
  byRecord(c: Candidate): boolean;
  /** The rows of a page read, and the sort key up to which the page showed every row. */
  saw(rows: readonly Candidate[], upTo: string): void;
  /** The messages handed out (each counted in `budget`), and whether this pass ends here (the answer is full, or the record changed). */
  commit(taking: Candidate[], budget: AnswerBudget): Promise<{ messages: ReceivedMessage[]; stop: boolean }>;
}

const isOverdueFacts = (facts: MessageFacts, entity: EntityItem, now: number) => {
  const kind = onCandidate(facts, entity.maxDeliveryCount, now).kind;
  return kind === 'expire' || kind === 'deadLetter';
};

const factsOf = (
  c: Pick<MessageItem, 'state' | 'deliveryCount' | 'expiresAt' | 'lockedUntil'> & { enqueuedAt?: number },
  inDeadLetter: boolean,
): MessageFacts => ({
  state: c.state,
  deliveryCount: c.deliveryCount ?? 0,
  enqueuedAt: c.enqueuedAt ?? 0,
  expiresAt: c.expiresAt ?? null,
  lockedUntil: c.lockedUntil ?? null,
  inDeadLetter,
});

/**
 * Real time one poll may spend clearing overdue messages before it gives up for this poll
 * (T4): a receive behind a backlog of expired messages keeps going until it finds
 * live ones, but a Lambda never runs away. A long poll goes on polling while its wait lasts.
 */
export const POLL_WORK_BUDGET_MS = 5_000;

/**
 * Lost lock races: receivers that all start at the head of the index race for the same
 * message, and every race lost is a write billed for nothing (0.93 per delivered message at 16
 * receivers). A process that lost a race on a partition within CROWDED_MS, or had two reads of
 * it in flight at once (`readingPage`), reads a larger page and starts at a random place in it,
 * so concurrent receivers spread over the page. Index entries are ~130 bytes: 100 of them are
 * two read units ($0.25 a million), against the two write units ($1.25 a million) of every
 * race lost (a failed conditional write is billed). A lone receiver never loses a race, so it
 * keeps the strict order R2 asks for; so does any receiver once the crowd has gone for
 * CROWDED_MS.
 * Real time, not the broker's clock: this is a guess about other processes, not a rule.
 */
const CROWDED_MS = 5_000;
const CROWDED_PAGE = 100;
const crowdSeen = new Map<string, number>();
const crowdKey = (ctx: BrokerContext, pk: string) => `${ctx.tableName}|${pk}`;
/** Lost a race there lately, or saw another receiver of this process there (crowd-claims.ts, `readingPage`). */
const isCrowded = (key: string) => Date.now() - (crowdSeen.get(key) ?? -Infinity) < CROWDED_MS || isBusy(key.slice(key.indexOf('|') + 1));
function noteCrowd(key: string) {
  if (crowdSeen.size > 10_000) crowdSeen.clear();
  crowdSeen.set(key, Date.now());
}

/**
 * Pages of the ready index being read in this process, per partition. A crowd that gathers
 * after a quiet spell (the lost races and claims of the last one lapsed, so it reads in strict
 * order) would otherwise find itself one lost race per receiver later: all of its receivers
 * read the same head and go for the same row, and on a busy machine, where a receiver
 * completes a message or two a second, that burst is most of the races lost. Two receives
 * whose reads overlap will read the same head, so the second to start one knows the crowd at
 * once, for itself and for the first (whose page, read in strict order, is then tried from a
 * random place). No read or write is added, and a lone receiver, whose receives follow one
 * another, never overlaps itself: it keeps strict order (R2).
 */
const reading = new Map<string, number>();
function readingPage<T>(key: string, read: () => Promise<T>): Promise<T> {
  const others = reading.get(key) ?? 0;
  if (others > 0) noteCrowd(key);
  reading.set(key, others + 1);
  const done = () => {
    const left = (reading.get(key) ?? 1) - 1;
    if (left > 0) reading.set(key, left);
    else reading.delete(key);
  };
  const out = read();
  out.then(done, done);
  return out;
}
/** The candidates from a random place on, wrapping around; those other receivers of this process went for last, the first claimed (crowd-claims.ts). */
const fromRandomPlace = <T extends { pk: string; sk: string }>(list: T[]): T[] => {
  const start = Math.floor(Math.random() * list.length);
  return claimFirst([...list.slice(start), ...list.slice(0, start)]);
};
/** A page for `wanted` more messages: twice as many rows and some, more in a crowd; 100 at most. */
const pageSize = (wanted: number, crowded: boolean) => Math.min(100, Math.max(wanted * 2 + 8, crowded ? CROWDED_PAGE : 0));

/** A plain receive's policy: the entity's (marked) partitions, a lock of its own, crowds expected. */
function plainPolicy(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget): ReceivePolicy {
  const inDeadLetter = target.subqueue !== 'active';
  return {
    partitions: async () =>
      (await partitionsToRead(ctx, entity, target.subqueue, partitionsOf(entity, target))).map(({ partition, clearable }) => ({
        pk: messagePk(entity.eid, target.subqueue, partition),
        ...(clearable !== undefined ? { clearable: { partition, mark: clearable } } : {}),
      })),
    inFlight: (item, now) => item.lockedUntil !== undefined && item.lockedUntil > now,
    expireByRow: true,
    // Not delivered meanwhile (the index may lag the table).
    free: (c) => ({ condition: 'deliveryCount = :dc', values: { ':dc': c.deliveryCount ?? 0 } }),
    lock: (c, now, batch) => {
      const seq = BigInt(c.sk);
      const until = batch?.until ?? now + entity.lockDuration;
      const deliveryCount = (c.deliveryCount ?? 0) + 1;
      // The last allowed delivery goes on the sweeper's agenda, so D2 happens even if nobody receives again.
      const lastDelivery = !inDeadLetter && deliveryCount >= entity.maxDeliveryCount;
      return {
        lock: { token: batch?.token ?? newLockToken(seq), until, deliveryCount, ...(lastDelivery ? { agenda: dueShardOf(c.pk) } : {}) },
        entry: batch ? 'out' : { rsk: readySortKey(until, seq) },
      };
    },
    // One lock end for the whole batch, so its reminder is never earlier than any of its locks.
    batchLockEnd: (now) => now + entity.lockDuration,
  };
}

/** One pass over the partitions; `more` says candidates were left unread for lack of budget. */
export async function receiveOnce(
  ctx: BrokerContext,
  entity: EntityItem,
  target: Pick<ReceiveTarget, 'subqueue'>,
  options: Pick<ReceiveOptions, 'mode' | 'maxMessages'>,
  policy: ReceivePolicy,
  budget = new AnswerBudget(),
): Promise<{ messages: ReceivedMessage[]; more: boolean }> {
  const out: ReceivedMessage[] = [];
  let more = false;
  await keepingTaken(out, async () => {
    more = await receiveInto(out, ctx, entity, target.subqueue !== 'active', options, policy, budget);
  });
  return { messages: out, more };
}

async function receiveInto(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  inDeadLetter: boolean,
  options: Pick<ReceiveOptions, 'mode' | 'maxMessages'>,
  policy: ReceivePolicy,
  budget: AnswerBudget,
): Promise<boolean> {
  const workEnd = Date.now() + POLL_WORK_BUDGET_MS;
  const overdue = (c: Candidate, now = ctx.clock.now()) => isOverdueFacts(factsOf(c, inDeadLetter), entity, now);
  const clear = (c: Candidate) => clearOverdue(ctx, entity, c, inDeadLetter, policy);
  // A partitioned entity's ready marks say which partitions may hold anything.
  for (const { pk, clearable } of await policy.partitions()) {
    const crowd = crowdKey(ctx, pk);
    let start: Record<string, unknown> | undefined;
    let limit = pageSize(options.maxMessages - out.length, isCrowded(crowd));
    do {
      if (Date.now() > workEnd) return true;
      if (policy.inTurn) limit = pageSize(options.maxMessages - out.length, false);
      const now = ctx.clock.now();
      const upper = readyUpperBound(now);
      // A partition whose mark may be cleared is read without the upper bound: locked and
      // scheduled entries (after the visible ones) keep the mark; none at all clears it.
      const open = clearable !== undefined;
      const early = start === undefined && !open && policy.firstPage?.pk === pk ? policy.firstPage : undefined;
      if (early) policy.firstPage = undefined;
      // Sized once the read knows whether it overlaps another receiver's.
      const next = () => {
        if (!policy.inTurn) limit = Math.max(limit, pageSize(options.maxMessages - out.length, isCrowded(crowd)));
        return readReadyPage<Candidate>(ctx, { pk, upper: open ? undefined : upper, limit, start });
      };
      // A session's reads are its lock holder's, in turn: never a crowd.
      const result = early ? await early.read : await (policy.inTurn ? next() : readingPage(crowd, next));
      const page = result.items;
      if (clearable && page.length === 0 && !result.next && start === undefined) await clearMark(ctx, entity, clearable.partition, clearable.mark);
      const visible = open ? page.filter((c) => c.rsk <= upper) : page;
      policy.held?.saw(visible, result.next ? (visible.at(-1)?.rsk ?? '') : upper);
      // The index orders by visibility; within what was read, oldest sequence first (R2, N3), so a
      // message whose lock lapsed is back in its place, as after an abandon (R6).
      // A lapsed reminder's messages are put back where their lapsed locks sort, and join the
      // page as the lapsed locks they now are (R6): as read just now, in place of a row of one
      // that an index lagging its table still shows from before the take (one take, one token).
      const reminders = visible.filter(isReminder);
      const back = reminders.length > 0 ? (await restoreLapsed(ctx, reminders, now)).map(candidateOf) : [];
      const restored = new Set(back.map(keyId));
      const rows = visible.filter((c) => !isReminder(c) && !restored.has(keyId(c)));
      const read = [...rows, ...back].sort(bySequence).filter((c) => !policy.holds?.(c));
      const backlog = policy.inTurn ? [] : read.filter((c) => overdue(c, now));
      if (backlog.length > 0) {
        // Expired (T4) or past D2: never delivered, moved on the spot, a page at a time in
        // parallel; a backlog like this is likely to go on, so read larger pages from now on.
        await Promise.all(backlog.map(clear));
        limit = 100;
      }
      const live = read.filter((c) => !backlog.includes(c));
      const candidates = isCrowded(crowd) ? fromRandomPlace(live) : live;
      // A receive-and-delete reads what it may delete first, in one call, so a delete whose answer
      // was lost still hands its message out (R10: hand-out.ts `deleteAndPresent`).
      const firstReads =
        options.mode === 'receiveAndDelete'
          ? await readFirst(ctx, candidates.filter((c) => !overdue(c, now)).slice(0, options.maxMessages - out.length))
          : undefined;
      let plan: ReminderPlan | undefined;
      // The batch a take at `i` belongs to: the current one while it lasts, or a new one for the
      // next messages when two or more are wanted; a single take locks on its own.
      const batchFor = async (i: number): Promise<ReminderPlan | undefined> => {
        const c = candidates[i]!;
        const now = ctx.clock.now();
        if (plan?.tokens.has(c.sk) && now < plan.fresh) return plan;
        plan = undefined;
        const wanted = options.maxMessages - out.length;
        if (options.mode !== 'peekLock' || !policy.batchLockEnd || wanted < 2) return undefined;
        const next = candidates.slice(i, i + wanted).filter((n) => !overdue(n, now));
        if (next.length < 2 || next[0] !== c) return undefined;
        const until = policy.batchLockEnd(now);
        plan = { ...(await remindBeforeTaking(ctx, pk, next, until)), fresh: now + (until - now) / 2 };
        return plan;
      };
      // Candidates a record takes, gathered until a take of another kind or the end of the page.
      let taking: Candidate[] = [];
      const recordTakes = async (): Promise<boolean> => {
        if (!policy.held || taking.length === 0) return false;
        const { messages, stop } = await policy.held.commit(taking, budget);
        taking = [];
        out.push(...messages);
        return stop;
      };
      for (let i = 0; i < candidates.length && out.length + taking.length < options.maxMessages;) {
        const c = candidates[i]!;
        // Overdue since the page was read (the clock moved on), or, in turn, when its turn comes.
        const due = overdue(c);
        if (due && policy.inTurn) {
          await clear(c);
          i++;
          continue;
        }
        if (!due && options.mode === 'peekLock' && policy.held?.byRecord(c)) {
          taking.push(c);
          i++;
          continue;
        }
        if (await recordTakes()) return false;
        // R10: the answer can carry one more whatever its size, or this poll ends here.
        if (!budget.fits()) return false;
        // A conflict is a transaction in flight on that one message, not a crowd: the next one is taken.
        const taken = due ? await clear(c) : await unlessConflict(takeCandidate(ctx, pk, c, options.mode, policy, await batchFor(i), firstReads), undefined);
        if (taken === LOST && !policy.inTurn) {
          noteCrowd(crowd);
          // Lost it to another receiver: its neighbours are likely contended too, so jump a
          // random distance ahead. A lone receiver never loses, and keeps strict order.
          i += 1 + Math.floor(Math.random() * Math.min(8, candidates.length - i));
        } else {
          if (taken && taken !== LOST) {
            out.push(taken);
            budget.add(taken);
          }
          i++;
        }
      }
      if (await recordTakes()) return false;
      // Past the visible entries of an open read, the rest is not receivable yet.
      start = visible.length < page.length ? undefined : result.next;
    } while (start && out.length < options.maxMessages);
    if (out.length >= options.maxMessages) break;
  }
  return false;
}

/** Expired (T4) or past D2 (it became so since the page was read, or its turn came): moved, never delivered. */
async function clearOverdue(ctx: BrokerContext, entity: EntityItem, c: Candidate, inDeadLetter: boolean, policy: ReceivePolicy): Promise<undefined> {
  const now = ctx.clock.now();
  const fate = onCandidate(factsOf(c, inDeadLetter), entity.maxDeliveryCount, now).kind;
  if (policy.expireByRow && fate === 'expire' && !entity.deadLetteringOnMessageExpiration) {
    // T4: only deleted, so its index entry is all the guard needs; no read of the whole message.
    // Taken, settled or moved meanwhile (the condition fails, or another write is in flight): not ours to delete.
    await unlessConflict(deleteExpiredMessage(ctx, c, { deliveryCount: c.deliveryCount ?? 0, now }), false);
    return undefined;
  }
  await unlessRaced(settleOverdue(ctx, entity, { pk: c.pk, sk: c.sk }, inDeadLetter, policy.inFlight));
  return undefined;
}

/** Moving an overdue message: someone else moving it right now is fine, it is not delivered either way (T4). */
export async function unlessRaced(move: Promise<unknown>): Promise<void> {
  try {
    await move;
  } catch (e) {
    if (!(e instanceof BrokerError && e.retryable)) throw e;
  }
}

/** A batch's reminder as a pass uses it: taken under while `fresh` (half its lock duration), so no lock handed out is nearly run out. */
type ReminderPlan = Reminder & { fresh: number };

/** Within a page, oldest sequence first (R2, N3). */
const bySequence = (a: Candidate, b: Candidate) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0);

/** A message a lapsed reminder put back, as the index row it now has. */
const candidateOf = (item: MessageItem): Candidate => ({
  pk: item.pk,
  sk: item.sk,
  rsk: item.rsk!,
  state: item.state,
  deliveryCount: item.deliveryCount ?? 0,
  ...(item.expiresAt !== undefined ? { expiresAt: item.expiresAt } : {}),
  ...(item.lockedUntil !== undefined ? { lockedUntil: item.lockedUntil } : {}),
});

/** A candidate another receiver took first. */
const LOST = Symbol('lost');

/** Still in the partition it was read from, visible, and unexpired. */
const stillVisible = 'rpk = :pk AND rsk <= :upper AND (attribute_not_exists(expiresAt) OR expiresAt > :now)';

/** What a read of `candidates` found, by `keyId`: the message, or undefined where it was gone. */
type FirstReads = Map<string, MessageItem | undefined>;

async function readFirst(ctx: BrokerContext, candidates: readonly Candidate[]): Promise<FirstReads> {
  const found = await getMessagesConsistently(ctx, candidates);
  return new Map(candidates.map((c) => [keyId(c), found.get(keyId(c))]));
}

/**
 * Takes one message read from ready partition `pk`, under the policy's condition and lock, or
 * under `batch`'s reminder (then also not fenced by a receive that dealt with an earlier
 * reminder naming it: reminders.ts); LOST when the condition failed. With `firstReads`, a
 * receive-and-delete hands out the message as read there (or read now, past what was read)
 * should its own delete's retry find it gone.
 */
async function takeCandidate(
  ctx: BrokerContext,
  pk: string,
  c: Candidate,
  mode: ReceiveOptions['mode'],
  policy: ReceivePolicy,
  batch?: ReminderPlan,
  firstReads?: FirstReads,
): Promise<ReceivedMessage | typeof LOST> {
  const now = ctx.clock.now();
  const free = policy.free(c, now);
  const values: Record<string, unknown> = { ':pk': pk, ':upper': readyUpperBound(now), ':now': now, ...free.values };
  const token = batch?.tokens.get(c.sk);
  const condition = `${stillVisible} AND ${free.condition}${token !== undefined ? ` AND ${notFenced}` : ''}`;
  const key = { pk: c.pk, sk: c.sk };
  // undefined from either write: another receiver was first (or, in a session, it is ours already).
  if (mode === 'receiveAndDelete') {
    const asRead = firstReads && (firstReads.has(keyId(key)) ? firstReads.get(keyId(key)) : await getMessage(ctx, key, true));
    if (firstReads && !asRead) return LOST; // gone before its delete
    // Only a session's holder takes its messages (N3); elsewhere another receiver may take it first.
    const taker = asRead && { sole: policy.inTurn === true, asRead };
    return (await deleteAndPresent(ctx, { key, condition, names: free.names, values }, now, taker)) ?? LOST;
  }
  const { lock, entry } = policy.lock(c, now, token !== undefined ? { token, until: batch!.until } : undefined);
  const taking = lockUpdate(lock, entry);
  const write = { key, condition, names: { ...free.names, ...taking.names }, values: { ...values, ...taking.values } };
  return (await lockAndPresent(ctx, write, taking.update, now)) ?? LOST;
}

/** Reads the whole item and applies expiry (T4/T6) or D2, guarded by its version; a message in flight stays. */
export async function settleOverdue(
  ctx: BrokerContext,
  entity: EntityItem,
  key: { pk: string; sk: string },
  inDeadLetter: boolean,
  inFlight: ReceivePolicy['inFlight'],
): Promise<string> {
  const item = await getMessage(ctx, key, true);
  if (!item) return 'gone';
  const now = ctx.clock.now();
  if (inFlight(item, now)) return 'locked';
  const outcome = onCandidate(factsOf(item, inDeadLetter), entity.maxDeliveryCount, now);
  if (outcome.kind === 'expire') return (await expire(ctx, entity, item, unchanged(item))) ? 'expired' : 'raced';
  if (outcome.kind === 'deadLetter') {
    return (await deadLetter(ctx, entity, item, unchanged(item), outcome)) ? 'deadLettered' : 'raced';
  }
  return 'none';
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { receive };
