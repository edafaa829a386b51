/**
 * The session lock (N2-N4): who holds a session, and what a receive under its lock reads and
 * takes. A session receive is the plain receive (receive.ts) with the policy below: the
 * session's own ready partition, the session lock guarding each take, strict sequence order.
 *
 * A receive under the lock writes nothing to the messages it hands out: it writes once, in the
 * session item, the record of what it hands out (`held`: each message's delivery count handed
 * out, the stored count + 1), conditioned on the lock and on the record as it read it, and
 * only then reads the messages it names (why that order: bulk-delete.ts). A message is held
 * while its stored count is the one handed out - 1; a settlement writes the count handed out,
 * and the first receive under a later lock takes back what the record of an earlier one still
 * holds by writing it (`takeBackHeld`), so every settlement of an old delivery fails after it
 * (R3, R5, N4). A message with an expiry joins the record too when its expiry lies past the
 * lock's end plus HELD_TTL_MARGIN_MS: the session item's `hx` keeps the earliest such expiry,
 * every write keeps the lock's end that far before it, and a renewal that would reach it first
 * removes the `ttl` of the messages it reaches (`renewHeldLock`, T5). A message whose expiry
 * is nearer is taken the way every message was before: one write that locks it, its `ttl`
 * removed (T5), marked with the lock's generation (`sgen`, `slk`): a message is taken only if
 * it carries no generation or an older one, so a holder whose lock lapsed while its take was in
 * flight can never take a message from the next holder, whatever the clocks say. Messages a
 * process running the previous code took that way are read so too.
 */
import { randomUUID } from 'node:crypto';
import { BrokerError, sessionLockLost } from '../errors.js';
import { onCandidate } from '../fate/delivery.js';
import type { MessageItem } from '../messages/item.js';
import { MAX_HELD_DELIVERY_COUNT, newHeldLockToken, newLockToken } from '../messages/lock-token.js';
import { presentMessage, type ReceivedMessage } from '../messages/item.js';
import { keyId, messageKey, readySortKey, readyUpperBound, sessionKey, sessionReadyPk, TIME_DIGITS } from '../store/keys.js';
import { getMessagesConsistently, protectHeldMessage, returnHeldMessage } from '../store/messages.js';
import { partitionOfSeq } from '../store/sequence.js';
import {
  extendSessionLock,
  extendSessionLockProtecting,
  heldExpiryOf,
  HELD_TTL_MARGIN_MS,
  readSession,
  recordHeld,
  type HeldRecord,
  type SessionItem,
  type SessionLock,
} from '../store/sessions.js';
import { answerBytesOf, type AnswerBudget } from './answer-budget.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import type { MessageLock } from './hand-out.js';
import { choosePartition, SESSION_HINT_LAG_MS } from './message-items.js';
import { deadLetter, unchanged } from './moves.js';
import type { Candidate, ReceivePolicy } from './receive.js';
import type { DeferredPolicy } from './settle.js';
import { rememberSession } from './session-memory.js';

/** Whether `token` holds the session's lock at `now` (N4): the item's lock is that token's and has not run out. */
export const holdsLock = (session: Pick<SessionItem, 'lockToken' | 'lockedUntil'> | undefined, token: string | undefined, now: number): boolean =>
  session !== undefined && token !== undefined && session.lockToken === token && (session.lockedUntil ?? 0) > now;

/** The session, if `token` holds its lock now (one consistent read); otherwise SessionLockLost (N4). */
export async function heldSession(ctx: BrokerContext, entity: EntityItem, sessionId: string, token: string): Promise<SessionItem> {
  const session = await readSession(ctx, sessionKey(entity.eid, sessionId));
  if (!holdsLock(session, token, ctx.clock.now())) throw sessionLockLost();
  rememberSession(ctx, session!);
  return session!;
}

/**
 * Used by the sweeper, the stream's TTL routing and bulk deletion: the end of the session lock
 * a message was taken under, if it is still live (T5, D2, R11): taken with a lock write under
 * it (`slk`), or held by its record at the count the message is stored with (a held message
 * carries no lock of its own, so every session message met must be asked about).
 */
export async function liveSessionLock(
  ctx: BrokerContext,
  item: Pick<MessageItem, 'eid' | 'sessionId' | 'slk' | 'sk' | 'deliveryCount'>,
): Promise<number | undefined> {
  if (item.sessionId === undefined) return undefined;
  const session = await readSession(ctx, sessionKey(item.eid, item.sessionId));
  if (!session?.lockToken || !holdsLock(session, session.lockToken, ctx.clock.now())) return undefined;
  return item.slk === session.lockToken || heldByRecord(session, item) ? session.lockedUntil : undefined;
}

/** Whether the session's record holds `item` under the session's current lock (its stored count is the one handed out - 1). */
export const heldByRecord = (session: Pick<SessionItem, 'held' | 'lockToken'>, item: Pick<MessageItem, 'sk' | 'deliveryCount'>): boolean =>
  session.held !== undefined && session.held.t === session.lockToken && session.held.m[item.sk]?.[0] === (item.deliveryCount ?? 0) + 1;

/**
 * A session lock lockDuration long from `now`: a new one (a fresh token) for an accept, or a
 * held one (its token) renewed (N4). The session sorts among accept-next's hints at the lock's
 * end (N7), so a locked session costs accept-next nothing.
 */
export function sessionLockFrom(entity: Pick<EntityItem, 'lockDuration'>, now: number, token: string = randomUUID()): SessionLock {
  const until = now + entity.lockDuration;
  return { token, now, until, rsk: readySortKey(until, 0n) };
}

/** The partition a session's messages go to, and its own ready partition (N3). */
export const sessionPartition = (entity: EntityItem, sessionId: string) => choosePartition(entity, { sessionId });
export const sessionReadyPkOf = (entity: EntityItem, sessionId: string) => sessionReadyPk(entity.eid, sessionPartition(entity, sessionId), sessionId);

/** The generation a session's lock is; a message taken under it carries it as `sgen`. */
const generationOf = (session: Pick<SessionItem, 'gen'>) => session.gen ?? 0;

/** Not taken under this lock or a later one (`:gen`): a message a holder may take (N3). */
export const takenBefore = '(attribute_not_exists(sgen) OR sgen < :gen)';

/** Whether `item` was taken under this lock (or a later one): in flight, ours already. */
export const takenUnder = (item: Pick<MessageItem, 'sgen'>, session: Pick<SessionItem, 'gen'>) => item.sgen !== undefined && item.sgen >= generationOf(session);

/** What a message taken under the session's lock records: the session lock and its end, one delivery more. */
export function sessionMessageLock(session: SessionItem, seq: bigint): MessageLock {
  return { token: newLockToken(seq), until: session.lockedUntil!, session: { token: session.lockToken!, gen: generationOf(session) } };
}

/**
 * N6/R7: a session's receive by number: deferred messages of this session, read consistently,
 * each locked until the session lock's end unless taken under it already. A message whose last
 * delivery ran out under an earlier lock has no agenda entry: D2 is applied when it is asked for.
 */
export function sessionDeferredPolicy(ctx: BrokerContext, entity: EntityItem, session: SessionItem): DeferredPolicy {
  const partition = sessionPartition(entity, session.sessionId);
  return {
    keyOf: (seq) => (partitionOfSeq(seq) === partition ? messageKey(entity.eid, 'active', partition, seq) : undefined),
    consistent: true,
    belongs: (item) => item.sessionId === session.sessionId,
    notDeferred: (seq) => new BrokerError('MessageNotFound', `no deferred message of this session with sequence number ${seq}`, { field: 'sequenceNumbers' }),
    holds: (item) => takenUnder(item, session),
    passOver: async (item, now) => {
      if (item.deliveryCount < entity.maxDeliveryCount) return false;
      const outcome = onCandidate({ ...item, state: 'Active', expiresAt: null, lockedUntil: null, inDeadLetter: false }, entity.maxDeliveryCount, now);
      if (outcome.kind === 'deadLetter') await deadLetter(ctx, entity, item, unchanged(item), outcome);
      return true;
    },
    free: () => ({ condition: `sessionId = :sid AND ${takenBefore}`, values: { ':sid': session.sessionId, ':gen': generationOf(session) } }),
    lock: (_item, _key, seq) => sessionMessageLock(session, seq),
    recheck: false,
  };
}

/**
 * A message taken with a lock write keeps its place in its session's order, marked with the
 * lock generation it was taken under, so a receive skips its own messages in flight by the
 * index row alone.
 */
const inFlightSortKey = (rsk: string, gen: number) => `${rsk.split('/').slice(0, 2).join('/')}/${gen}`;

/** The most messages one record holds: past it (about 11 KB of record), a take writes its message as before. */
const MAX_HELD = 250;

/**
 * How long after its take a held message may still be missing from a read of the ready index
 * (a replica behind the one its take read): the record keeps it at least that long.
 */
const INDEX_LAG_MS = SESSION_HINT_LAG_MS;

/**
 * Held by the record, not written: a message without an expiry, or (T5) one whose expiry lies
 * past the lock's end, as the receive read it, plus the margin (the record's write checks it
 * against the end as stored). One expiring sooner is taken with a lock write that removes its `ttl`.
 */
const recordable = (c: Candidate, lockedUntil: number) =>
  (c.expiresAt === undefined || lockedUntil + HELD_TTL_MARGIN_MS < c.expiresAt) && (c.deliveryCount ?? 0) < MAX_HELD_DELIVERY_COUNT;

/**
 * What a record keeps of `record` at a new write: an entry whose row the receive read shows a
 * higher count (settled back: abandoned, taken back) goes, and so does one whose row is absent
 * from a part of the index the receive read whole (settled or moved: a held message's row never
 * changes), once the index has had time to show its row.
 */
function stillHeld(record: HeldRecord, seen: ReadonlyMap<string, number>, covered: string, now: number): HeldRecord['m'] {
  const kept: HeldRecord['m'] = {};
  for (const [seq, entry] of Object.entries(record.m)) {
    const [count, visibleAt, takenAt] = entry;
    const row = seen.get(seq);
    if (row !== undefined ? row + 1 > count : readySortKey(visibleAt, seq) <= covered && takenAt + INDEX_LAG_MS < now) continue;
    kept[seq] = entry;
  }
  return kept;
}

/**
 * N3/R3: the first receive under a session lock takes back what the record of an earlier lock
 * still holds (a lock released or lapsed with messages unsettled): each message still stored at
 * its handed-out count - 1 (read consistently, 1 read unit, where a write would bill a message
 * settled already) gets that count, then the record is emptied for this lock. A crash part-way
 * leaves the old record for the next receive, and a message taken back twice is written once
 * (`returnHeldMessage`). Returns the session as the receive goes on with it.
 */
export async function takeBackHeld(ctx: BrokerContext, entity: EntityItem, session: SessionItem): Promise<SessionItem> {
  const old = session.held;
  if (old === undefined || old.t === session.lockToken) return session;
  const partition = sessionPartition(entity, session.sessionId);
  const entries = Object.entries(old.m).map(([seq, [count]]) => ({ key: messageKey(entity.eid, 'active', partition, BigInt(seq)), count }));
  const items = await getMessagesConsistently(
    ctx,
    entries.map((e) => e.key),
  );
  await Promise.all(entries.map((e) => (items.get(keyId(e.key))?.deliveryCount === e.count - 1 ? returnHeldMessage(ctx, e.key, e.count) : undefined)));
  const fresh: HeldRecord = { t: session.lockToken!, m: {} };
  const key = sessionKey(entity.eid, session.sessionId);
  if (await recordHeld(ctx, key, { token: session.lockToken!, now: ctx.clock.now() }, session.hv, fresh))
    return { ...session, held: fresh, hv: (session.hv ?? 0) + 1 };
  // Another receive under this lock emptied it first (or the lock is gone): as the item is now.
  return heldSession(ctx, entity, session.sessionId, session.lockToken!);
}

/**
 * N3: a receive under a session lock. It reads the session's own ready partition in sequence
 * order, passes over its own messages in flight (held by the record, or marked by their index
 * row), and hands out the others, not deferred, until the session lock's end: by its record,
 * one write for all of them, or (a message with an expiry) with a lock write of its own.
 */
export function sessionPolicy(ctx: BrokerContext, entity: EntityItem, session: SessionItem): ReceivePolicy {
  const ours = String(generationOf(session));
  const key = sessionKey(entity.eid, session.sessionId);
  const pk = sessionReadyPkOf(entity, session.sessionId);
  const lockToken = session.lockToken!;
  let record: HeldRecord = session.held?.t === lockToken ? session.held : { t: lockToken, m: {} };
  let version = session.hv;
  // What this receive read of the index: each row's count, and up to where it read every row.
  const seen = new Map<string, number>();
  let covered = '';
  const write = async (m: HeldRecord['m']) => {
    const next = { t: lockToken, m };
    if (!(await recordHeld(ctx, key, { token: lockToken, now: ctx.clock.now() }, version, next))) return false;
    record = next;
    version = (version ?? 0) + 1;
    return true;
  };
  const byRecord = (c: Pick<Candidate, 'sk' | 'deliveryCount'>) => record.m[c.sk]?.[0] === (c.deliveryCount ?? 0) + 1;
  return {
    partitions: async () => [{ pk }],
    holds: (c) => c.rsk.split('/')[2] === ours || byRecord(c),
    // N6: gone, or ours in flight (T5), is left alone; D2 is applied when the next holder reaches it.
    inFlight: (item) => takenUnder(item, session) || byRecord(item),
    free: () => ({
      condition: `${takenBefore} AND #state <> :deferred`,
      names: { '#state': 'state' },
      values: { ':gen': generationOf(session), ':deferred': 'Deferred' },
    }),
    lock: (c) => ({ lock: sessionMessageLock(session, BigInt(c.sk)), entry: { rsk: inFlightSortKey(c.rsk, generationOf(session)) } }),
    inTurn: true,
    held: {
      byRecord: (c) => recordable(c, session.lockedUntil!) && Object.keys(record.m).length < MAX_HELD,
      saw: (rows, upTo) => {
        for (const r of rows) seen.set(r.sk, r.deliveryCount ?? 0);
        if (upTo > covered) covered = upTo;
      },
      commit: async (taking, budget) => {
        const now = ctx.clock.now();
        const m = stillHeld(record, seen, covered, now);
        for (const c of taking) {
          const visibleAt = Number(c.rsk.slice(0, TIME_DIGITS));
          m[c.sk] = c.expiresAt !== undefined ? [(c.deliveryCount ?? 0) + 1, visibleAt, now, c.expiresAt] : [(c.deliveryCount ?? 0) + 1, visibleAt, now];
        }
        // The lock lost, another receive under it wrote the record, or a renewal took the lock's
        // end too near an expiry it would hold (T5): this pass ends, taking nothing more.
        if (!(await write(m))) return { messages: [], stop: true };
        const without = (m: HeldRecord['m'], unsent: readonly Candidate[]) => {
          const left = { ...m };
          for (const c of unsent) delete left[c.sk];
          return left;
        };
        return handOut(ctx, session, pk, taking, budget, async (unsent) => {
          if (await write(without(record.m, unsent))) return true;
          // A slow renewal (T5) marked entries protected meanwhile: let go from the record as it is now.
          const now = await readSession(ctx, key);
          if (!holdsLock(now, lockToken, ctx.clock.now()) || now!.held?.t !== lockToken) return false;
          record = now!.held;
          version = now!.hv;
          return write(without(record.m, unsent));
        });
      },
    },
  };
}

/**
 * The messages a record write just held, read consistently (only now: bulk-delete.ts) and
 * handed out in sequence order while the answer can carry them (R10), each as the record says:
 * one delivery more than stored, locked until the session lock's end, under a held token. One
 * not as the index row showed (settled, moved or delivered since) is not handed out, nor held
 * (its stored count is past the record's). One past its expiry (T4: a clock moved on since the
 * row was read) is not handed out either. What the answer cannot carry, what expired, or a
 * read that failed, is let go of again (`release`: the record without them), so no delivery
 * is spent on a message not handed out, and an expired one is the sweeper's or the next
 * receive's to expire at once.
 */
async function handOut(
  ctx: BrokerContext,
  session: SessionItem,
  pk: string,
  taking: readonly Candidate[],
  budget: AnswerBudget,
  release: (unsent: readonly Candidate[]) => Promise<boolean>,
): Promise<{ messages: ReceivedMessage[]; stop: boolean }> {
  let items: Map<string, MessageItem>;
  try {
    items = await getMessagesConsistently(ctx, taking);
  } catch (e) {
    await release(taking).catch(() => undefined);
    throw e;
  }
  const now = ctx.clock.now();
  const messages: ReceivedMessage[] = [];
  const unsent: Candidate[] = [];
  const expired: Candidate[] = [];
  for (const c of taking) {
    const item = items.get(keyId(c));
    const count = (c.deliveryCount ?? 0) + 1;
    const as =
      item &&
      item.sessionId === session.sessionId &&
      item.rpk === pk &&
      item.rsk !== undefined &&
      item.rsk <= readyUpperBound(now) &&
      item.state !== 'Deferred' &&
      item.deliveryCount === count - 1 &&
      !takenUnder(item, session);
    if (!as) continue;
    if (item.expiresAt !== undefined && item.expiresAt <= now) {
      expired.push(c);
      continue;
    }
    const lockToken = newHeldLockToken(BigInt(c.sk), count, session.lockToken!);
    const message = presentMessage({ ...item, state: 'Active', deliveryCount: count, lockToken, lockedUntil: session.lockedUntil! }, now, { lock: true });
    if (unsent.length > 0 || !budget.fits(answerBytesOf(message))) {
      unsent.push(c);
      continue;
    }
    budget.add(message);
    messages.push(message);
  }
  // Not handed out: let go of, so its delivery is not spent. Should that write fail, the take-back spends it, as a crash here would.
  if (unsent.length + expired.length > 0) await release([...expired, ...unsent]).catch(() => undefined);
  return { messages, stop: unsent.length > 0 };
}

/** How often a renewal reads the session again after a receive wrote the record between its read and its write. */
const RENEWAL_TRIES = 3;

/**
 * N4: extends a held session lock to `lock.until`, true when done, false when the lock is not
 * held. Mostly one conditional write; T5 makes it more only when the record holds a message
 * still carrying its `ttl` whose expiry the new end plus the margin reaches (`hx`). Then, from
 * the item as the refusal returned it: each such message loses its `ttl` (conditioned on the
 * count handed out - 1, so a settled one is left alone and a retry writes the same), and only
 * then does the lock move, with those entries marked protected and `hx` the earliest expiry of
 * the rest, conditioned on the lock and the record as read (a receive between: again). An `hx`
 * of an earlier lock's record protects nothing of this lock's and simply goes. A crash or a
 * throttle part-way leaves the lock as it was and some messages without a `ttl`, their due
 * entries standing: harmless (the sweeper asks the session at each).
 */
export async function renewHeldLock(ctx: BrokerContext, entity: EntityItem, sessionId: string, lock: SessionLock): Promise<boolean> {
  const key = sessionKey(entity.eid, sessionId);
  for (let attempt = 0; attempt < RENEWAL_TRIES; attempt++) {
    const fast = await extendSessionLock(ctx, key, lock);
    if (fast.extended) return true;
    const session = fast.found;
    if (!holdsLock(session, lock.token, lock.now)) return false;
    const bound = lock.until + HELD_TTL_MARGIN_MS;
    const ours = session!.held?.t === lock.token ? session!.held : undefined;
    let record: HeldRecord | undefined;
    if (ours) {
      const partition = sessionPartition(entity, sessionId);
      const reached = Object.entries(ours.m).filter(([, e]) => e[3] !== undefined && e[3] <= bound);
      await Promise.all(reached.map(([seq, [count]]) => protectHeldMessage(ctx, messageKey(entity.eid, 'active', partition, BigInt(seq)), count)));
      const m: HeldRecord['m'] = { ...ours.m };
      for (const [seq, [count, visibleAt, takenAt]] of reached) m[seq] = [count, visibleAt, takenAt];
      record = { t: ours.t, m };
    }
    if (await extendSessionLockProtecting(ctx, key, lock, session!.hv, record, record ? heldExpiryOf(record) : undefined)) return true;
  }
  // A receive wrote the record between each read and write: as busy as a conflict, worth a retry.
  throw new BrokerError('Throttled', 'the session is being received from while its lock is renewed; try again', { retryable: true, retryAfterSeconds: 1 });
}
