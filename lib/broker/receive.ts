/**
 * Receiving (R1-R3, T4, D2). One Query on the ready index per partition finds messages
 * visible now, oldest first; locked and scheduled messages sort after `now` and are never
 * read. Each candidate is taken with one conditional write, so two receivers never get the
 * same message under a valid lock. Overdue candidates are expired or dead-lettered on the spot.
 */
import { getMessage } from '../store/messages.js';
import { readReadyPage } from '../store/ready-index.js';
import type { RequestOf } from '../api/schemas.js';
import { entityPathDisplay, type ReceiveTarget } from '../entities/paths.js';
import type { MessageItem, ReceivedMessage } from '../messages/item.js';
import { newLockToken } from '../messages/lock-token.js';
import { dueShardOf, readySortKey, readyUpperBound, messagePk } from '../store/keys.js';
import { onCandidate, type MessageFacts } from '../fate/delivery.js';
import type { BrokerContext } from './context.js';
import { AnswerBudget } from './answer-budget.js';
import { BrokerError, entityNotFound } from '../errors.js';
import { findEntity, requireEntity, touchEntity, type EntityItem } from './entities.js';
import { assertCanReceive, assertNoSession } from './entities.js';
import { deadLetter, expire, unchanged } from './moves.js';
import { deleteAndPresent, keepingTaken, lockAndPresent, unlessConflict } from './hand-out.js';
import { clearMark, partitionsToRead } from './ready-marks.js';

/** A receive's options, parsed (R1); a session receive reads the same ones. */
export type ReceiveOptions = RequestOf<'ReceiveOptions'>;

export async function receive(ctx: BrokerContext, target: ReceiveTarget, options: ReceiveOptions): Promise<ReceivedMessage[]> {
  const entity = await requireEntity(ctx, target);
  assertCanReceive(entity, target.subqueue);
  assertNoSession(entity, target);
  await touchEntity(ctx, entity);
  const found = await longPoll(ctx, entity, target, options.maxWaitTime, async () => {
    const { messages, more } = await receiveOnce(ctx, entity, target, options);
    return { found: messages.length > 0 ? messages : undefined, more };
  });
  return found ?? [];
}

/**
 * R2's wait, shared by a receive, a session receive and accepting the next session: polls
 * until `poll` finds something or `maxWaitTime` has passed (then undefined), sleeping on the
 * broker clock between polls, 100 ms doubling to 1 s. A poll that left candidates unread for
 * lack of budget (`more`) is followed at once. Between polls the entity is checked (E4).
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
  for (;;) {
    const { found, more } = await poll();
    if (found !== undefined) return found;
    const left = deadline - ctx.clock.now();
    if (left <= 0) return undefined;
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
  const current = await findEntity(ctx, target);
  if (!current || current.deleting || current.eid !== entity.eid) throw entityNotFound(entityPathDisplay(target));
}

export function partitionsOf(entity: EntityItem, target: Pick<ReceiveTarget, 'subqueue'>): number[] {
  const count = target.subqueue === 'active' ? entity.partitions : 1;
  const start = Math.floor(Math.random() * count);
  return Array.from({ length: count }, (_, i) => (start + i) % count);
}

interface Candidate {
  pk: string;
  sk: string;
  rsk: string;
  state: MessageItem['state'];
  deliveryCount: number;
  expiresAt?: number;
  lockedUntil?: number;
}

const factsOf = (
  c: Pick<MessageItem, 'state' | 'deliveryCount' | 'expiresAt' | 'lockedUntil' | 'subqueue'> & { enqueuedAt?: number },
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
 * receivers). A process that lost a race on a partition within CROWDED_MS reads a larger page
 * and starts at a random place in it, so concurrent receivers spread over the page. Index
 * entries are ~130 bytes: 100 of them are two read units ($0.25 a million), against the two
 * write units ($1.25 a million) of every race lost (a failed conditional write is billed). A lone receiver never loses a race, so it keeps
 * the strict order R2 asks for; so does any receiver once the crowd has gone for CROWDED_MS.
 * Real time, not the broker's clock: this is a guess about other processes, not a rule.
 */
const CROWDED_MS = 5_000;
const CROWDED_PAGE = 100;
const lostRaces = new Map<string, number>();
const crowdKey = (ctx: BrokerContext, pk: string) => `${ctx.tableName}|${pk}`;
const isCrowded = (key: string) => Date.now() - (lostRaces.get(key) ?? -Infinity) < CROWDED_MS;
function noteLostRace(key: string) {
  if (lostRaces.size > 10_000) lostRaces.clear();
  lostRaces.set(key, Date.now());
}
/** The candidates from a random place on, wrapping around. */
const fromRandomPlace = <T>(list: T[]): T[] => {
  const start = Math.floor(Math.random() * list.length);
  return [...list.slice(start), ...list.slice(0, start)];
};

/** One pass over the partitions; `more` says candidates were left unread for lack of budget. */
async function receiveOnce(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  options: ReceiveOptions,
): Promise<{ messages: ReceivedMessage[]; more: boolean }> {
  const out: ReceivedMessage[] = [];
  let more = false;
  await keepingTaken(out, async () => {
    more = (await receiveInto(out, ctx, entity, target, options)).more;
  });
  return { messages: out, more };
}

async function receiveInto(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  options: ReceiveOptions,
): Promise<{ messages: ReceivedMessage[]; more: boolean }> {
  const workEnd = Date.now() + POLL_WORK_BUDGET_MS;
  const budget = new AnswerBudget();
  let more = false;
  const inDeadLetter = target.subqueue !== 'active';
  // A partitioned entity's ready marks say which partitions may hold anything.
  for (const { partition, clearable } of await partitionsToRead(ctx, entity, target.subqueue, partitionsOf(entity, target))) {
    const pk = messagePk(entity.eid, target.subqueue, partition);
    const crowd = crowdKey(ctx, pk);
    let start: Record<string, unknown> | undefined;
    let limit = Math.min(100, Math.max((options.maxMessages - out.length) * 2 + 8, isCrowded(crowd) ? CROWDED_PAGE : 0));
    do {
      if (Date.now() > workEnd) {
        more = true;
        break;
      }
      const now = ctx.clock.now();
      const upper = readyUpperBound(now);
      // A partition whose mark may be cleared is read without the upper bound: locked and
      // scheduled entries (after the visible ones) keep the mark; none at all clears it.
      const open = clearable !== undefined;
      const result = await readReadyPage<Candidate>(ctx, { pk, upper: open ? undefined : upper, limit, start });
      const page = result.items;
      if (open && page.length === 0 && !result.next && start === undefined) await clearMark(ctx, entity, partition, clearable);
      const visible = open ? page.filter((c) => c.rsk <= upper) : page;
      // The index orders by visibility; within what was read, oldest sequence first (R2), so a
      // message whose lock lapsed is back in its place, as after an abandon (R6).
      const read = visible.sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
      const overdue = read.filter((c) => isOverdue(c, entity, inDeadLetter, now));
      if (overdue.length > 0) {
        // Expired (T4) or past D2: never delivered, moved on the spot, a page at a time in
        // parallel; a backlog like this is likely to go on, so read larger pages from now on.
        await Promise.all(overdue.map((c) => clearOverdue(ctx, entity, c, inDeadLetter)));
        limit = 100;
      }
      const live = read.filter((c) => !overdue.includes(c));
      const candidates = isCrowded(crowd) ? fromRandomPlace(live) : live;
      for (let i = 0; i < candidates.length && out.length < options.maxMessages;) {
        // R10: the answer can carry one more whatever its size, or this poll ends here.
        if (!budget.fits()) return { messages: out, more: false };
        // A conflict is a transaction in flight on that one message, not a crowd: the next one is taken.
        const taken = await unlessConflict(takeCandidate(ctx, entity, target, candidates[i]!, options.mode), undefined);
        if (taken === LOST) {
          noteLostRace(crowd);
          // Lost it to another receiver: its neighbours are likely contended too, so jump a
          // random distance ahead. A lone receiver never loses, and keeps strict order.
          i += 1 + Math.floor(Math.random() * Math.min(8, candidates.length - i));
        } else {
          if (taken) {
            out.push(taken);
            budget.add(taken);
          }
          i++;
        }
      }
      // Past the visible entries of an open read, the rest is not receivable yet.
      start = visible.length < page.length ? undefined : result.next;
    } while (start && out.length < options.maxMessages);
    if (out.length >= options.maxMessages) break;
  }
  return { messages: out, more };
}

const isOverdue = (c: Candidate, entity: EntityItem, inDeadLetter: boolean, now: number) => {
  const kind = onCandidate(factsOf({ ...c, subqueue: inDeadLetter ? 'deadletter' : 'active' }, inDeadLetter), entity.maxDeliveryCount, now).kind;
  return kind === 'expire' || kind === 'deadLetter';
};

async function clearOverdue(ctx: BrokerContext, entity: EntityItem, c: Candidate, inDeadLetter: boolean): Promise<void> {
  await unlessRaced(settleOverdue(ctx, entity, { pk: c.pk, sk: c.sk }, inDeadLetter));
}

/** Moving an overdue message: someone else moving it right now is fine, it is not delivered either way (T4). */
export async function unlessRaced(move: Promise<unknown>): Promise<void> {
  try {
    await move;
  } catch (e) {
    if (!(e instanceof BrokerError && e.retryable)) throw e;
  }
}

/** A candidate another receiver took first. */
const LOST = Symbol('lost');

async function takeCandidate(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  c: Candidate,
  mode: ReceiveOptions['mode'],
): Promise<ReceivedMessage | undefined | typeof LOST> {
  const now = ctx.clock.now();
  const inDeadLetter = target.subqueue !== 'active';
  if (isOverdue(c, entity, inDeadLetter, now)) {
    // It became overdue since the page was read (the clock moved on).
    await clearOverdue(ctx, entity, c, inDeadLetter);
    return undefined;
  }
  const values: Record<string, unknown> = { ':pk': c.pk, ':upper': readyUpperBound(now), ':now': now, ':dc': c.deliveryCount ?? 0 };
  // Still visible, unexpired, and not delivered meanwhile (the index may lag the table).
  const condition = 'rpk = :pk AND rsk <= :upper AND (attribute_not_exists(expiresAt) OR expiresAt > :now) AND deliveryCount = :dc';
  const key = { pk: c.pk, sk: c.sk };
  // undefined from either write: another receiver was first.
  if (mode === 'receiveAndDelete') return (await deleteAndPresent(ctx, { key, condition, values }, now)) ?? LOST;
  const seq = BigInt(c.sk);
  const lockedUntil = now + entity.lockDuration;
  const deliveryCount = (c.deliveryCount ?? 0) + 1;
  // The last allowed delivery goes on the sweeper's agenda, so D2 happens even if nobody receives again.
  const lastDelivery = !inDeadLetter && deliveryCount >= entity.maxDeliveryCount;
  const update =
    'SET lockToken = :token, lockedUntil = :until, deliveryCount = :next, rsk = :locked, #state = :active, v = if_not_exists(v, :zero) + :one' +
    (lastDelivery ? ', dpk = :dpk, dsk = :until' : '') +
    ' REMOVE #ttl';
  const locked = await lockAndPresent(
    ctx,
    {
      key,
      condition,
      names: { '#state': 'state', '#ttl': 'ttl' },
      values: {
        ...values,
        ':token': newLockToken(seq),
        ':until': lockedUntil,
        ':next': deliveryCount,
        ':locked': readySortKey(lockedUntil, seq),
        ':active': 'Active',
        ':zero': 0,
        ':one': 1,
        ...(lastDelivery ? { ':dpk': dueShardOf(c.pk) } : {}),
      },
    },
    update,
    now,
  );
  return locked ?? LOST;
}

/** Reads the whole item and applies expiry (T4/T6) or D2, guarded by its version. */
export async function settleOverdue(ctx: BrokerContext, entity: EntityItem, key: { pk: string; sk: string }, inDeadLetter: boolean): Promise<string> {
  const item = await getMessage(ctx, key, true);
  if (!item) return 'gone';
  const now = ctx.clock.now();
  if (item.lockedUntil && item.lockedUntil > now) return 'locked';
  const outcome = onCandidate(factsOf(item, inDeadLetter), entity.maxDeliveryCount, now);
  if (outcome.kind === 'expire') return (await expire(ctx, entity, item, unchanged(item))) ? 'expired' : 'raced';
  if (outcome.kind === 'deadLetter') {
    return (await deadLetter(ctx, entity, item, unchanged(item), outcome)) ? 'deadLettered' : 'raced';
  }
  return 'none';
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { receive };
