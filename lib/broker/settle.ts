/**
 * Settlement of locked messages (R4, R5, R7, R9, T5, D2, D5). Every write is conditional on
 * the lock token and on the lock not having run out, so a stale token changes nothing (410).
 * A session message's lock is its session's: the write goes in one transaction with a check
 * of the session lock it was received under (N4, SessionLockLost when that failed). A complete,
 * single or batch, reads each session lock once instead and deletes its messages with plain
 * conditional deletes (completeUnderSessionLocks says why that holds N4 as well).
 */
import {
  deleteLockedMessage,
  getMessage,
  MAX_WRITES_UNDER_ONE_LOCK,
  renewMessageLock,
  writeMessagesUnderSessionLock,
  type SessionLockCheck,
} from '../store/messages.js';
import { isStoreBusy } from '../store/outcomes.js';
import { readSession, type SessionItem } from '../store/sessions.js';
import type { RequestOf, SettleRequest } from '../requests/schemas.js';
import { BrokerError, entityNotFound, lockLost, sessionLockLost, type ErrorCode } from '../errors.js';
import { entityPathDisplay, type ReceiveTarget } from '../entities/paths.js';
import { ttlSeconds, type MessageItem, type ReceivedMessage } from '../messages/item.js';
import { heldDeliveryCount, isLockTokenShape, newLockToken, normalizeLockToken, sequenceOfLockToken } from '../messages/lock-token.js';
import { deferredSortKey, dueShardOf, keyId, messageKey, readySortKey, sessionKey, type Key } from '../store/keys.js';
import { lockTokenIs, lockTokenValues } from '../store/message-layout.js';
import { partitionOfSeq } from '../store/sequence.js';
import { isLeaseToken } from '../store/leases.js';
import { abandonPositioned, abandonPositionedBatch, deadLetterPositioned, deferPositioned, renewPositioned } from './positioned-settle.js';
import { nextDueAt, onLockReleased } from '../fate/delivery.js';
import { parseSequenceNumber } from '../validation.js';
import { type BrokerContext } from './context.js';
import { currentEntityOnceMore, recentEntity, requireEntity, touchEntity, type EntityItem } from './entities.js';
import { busy, deadLetter, expire, lockHeld, writeGuarded, type Guard } from './moves.js';
import { assertCanReceive, assertNoSession } from './entities.js';
import { keepingTaken, lockAndPresent, lockUpdate, unlessConflict, type MessageLock, type TakeCondition } from './hand-out.js';
import { AnswerBudget, lockedAnswerBytes } from './answer-budget.js';
import { forgetCompletedBatches } from './reminders.js';
import { rememberSession } from './session-memory.js';
import { completePositioned, forgetSettledLeases } from './positioned-receive.js';
import { modified } from './message-items.js';
import { markToday } from './today-first.js';

export type Settlement = 'complete' | 'abandon' | 'deadletter' | 'defer';

/** The message a settlement addresses; a token for another message is simply unknown (R5). */
function locate(entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string): Key {
  if (sequenceOfLockToken(token) !== seq) throw lockLost();
  const partition = partitionOfSeq(seq);
  const partitions = target.subqueue === 'active' ? entity.partitions : 1;
  if (partition >= partitions) throw lockLost();
  return messageKey(entity.eid, target.subqueue, partition, seq);
}

/**
 * Settlement takes the entity's properties (partitions, maxDeliveryCount, lockDuration) from
 * the last read of it this process made, when that read is recent (`recentEntity`: the
 * receive that handed the lock out, typically), so its write need not wait for a read of its
 * own. Whether the entity still exists is not taken from it: a deleted entity's messages stay
 * in the table, under its incarnation id, until the reaper removes them, so a lock token alone
 * would still settle them (E4). One read of the entity (0.5 unit, eventually consistent like
 * every send's and receive's) runs alongside the write and decides the answer (E4): gone is
 * 404, re-created is the new incarnation's business. A batch shares that read.
 */
async function entityFor(ctx: BrokerContext, target: ReceiveTarget, fresh = false): Promise<EntityItem> {
  if (target.kind === 'topic') throw new BrokerError('BadRequest', 'a topic has no messages to settle; use a subscription', { field: 'path' });
  const entity = (!fresh && recentEntity(ctx, target)) || (await requireEntity(ctx, target));
  await touchEntity(ctx, entity); // settling is part of receiving (I2)
  return entity;
}

/** The entity as it is now, or 404 when it is gone (E4); not needed before `beside`, the settlement's write, ends. */
async function liveEntity(ctx: BrokerContext, target: ReceiveTarget, beside: Promise<unknown>): Promise<EntityItem> {
  const current = await currentEntityOnceMore(ctx, target, beside);
  if (!current || current.deleting) throw entityNotFound(entityPathDisplay(target));
  return current;
}

const outcomeOf = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/**
 * Runs a settlement with the cached entity while confirming that entity is still there. A
 * settlement under a stale cache (the entity was re-created) runs again with the live one:
 * whatever it did touched a deleted incarnation's message, which nothing can reach any more.
 */
async function withEntity<T>(ctx: BrokerContext, target: ReceiveTarget, settleWith: (entity: EntityItem) => Promise<T>): Promise<T> {
  const entity = await entityFor(ctx, target);
  const settling = outcomeOf(settleWith(entity));
  const [outcome, read] = await Promise.all([settling, outcomeOf(liveEntity(ctx, target, settling))]);
  if (!read.ok) {
    // A settlement made is never answered as a refusal that changed nothing (R4, R5).
    if (outcome.ok && isStoreBusy(read.error)) throw settledUnconfirmed();
    throw read.error;
  }
  const current = read.value;
  if (current.eid !== entity.eid) return settleWith(current);
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

/** The answer to a settlement that was made while every read of its entity, which decides the answer (E4), was refused for load. */
const settledUnconfirmed = () =>
  new BrokerError('InternalError', 'the settlement was made, but the store was too busy to confirm its entity; it may have been applied', {
    retryable: true,
  });

/**
 * A message as a settlement by its token sees it: locked on its own item, or, a session
 * message held by its session's record (session-lock.ts), as if locked there: under the
 * session lock, with the delivery count handed out; `heldFrom` is the count it is stored with.
 */
type Locked = MessageItem & { heldFrom?: number };

/** The session items one complete read, by `keyId`, each once, with the instant its read was sent: its lock was as read at or after it. */
type SessionReads = Map<string, { readAt: number; session: Promise<SessionItem | undefined> }>;

/**
 * The locked message, read consistently. A session message's own `lockedUntil` only records
 * its session's lock when it was received: whether it is still held is the session lock's
 * business, checked in the same transaction as the write (N4).
 */
async function readLocked(ctx: BrokerContext, key: Key, token: string): Promise<Locked> {
  const item = await getMessage(ctx, key, true);
  if (item && heldBy(item, token, ctx.clock.now())) return item;
  const held = item && (await heldView(ctx, item, token));
  if (!held) throw lockLost();
  return held.item;
}

/** Whether `item` is locked under `token`: a session message by its session's lock (N4), any other until its own lock's end. */
const heldBy = (item: MessageItem, token: string, now: number) => item.lockToken === token && (item.slk !== undefined || (item.lockedUntil ?? 0) > now);

/**
 * `item` as held by its session's record under `token` (N3, N4), after one consistent read of
 * the session item: the token names a count its HMAC shows was made under the session lock, and
 * the message is still stored one below it (not settled, taken back or delivered since: R5).
 * `until`: the end of the lock that read found held. Undefined when the token is not such a
 * token of this message; SessionLockLost when it was made under the record's lock, no longer held.
 */
async function heldView(ctx: BrokerContext, item: MessageItem, token: string, reads?: SessionReads): Promise<{ item: Locked; until: number } | undefined> {
  if (item.sessionId === undefined) return undefined;
  const key = sessionKey(item.eid, item.sessionId);
  const id = keyId(key);
  const read = reads?.get(id) ?? { readAt: ctx.clock.now(), session: readSession(ctx, key) };
  reads?.set(id, read);
  const { readAt } = read;
  const session = await read.session;
  const count = heldDeliveryCount(token, session?.lockToken);
  if (count === undefined) {
    if (heldDeliveryCount(token, session?.held?.t) !== undefined) throw sessionLockLost();
    return undefined;
  }
  if ((session!.lockedUntil ?? 0) <= readAt) throw sessionLockLost();
  if (item.deliveryCount !== count - 1) return undefined;
  rememberSession(ctx, session!);
  const until = session!.lockedUntil!;
  return {
    item: { ...item, state: 'Active', lockToken: token, slk: session!.lockToken, lockedUntil: until, deliveryCount: count, heldFrom: count - 1 },
    until,
  };
}

/**
 * The locked message for a complete, which needs of it only what the take under `token` wrote
 * (the session lock it was taken under) and deletes it on the condition that it still holds
 * that token: an eventually consistent read (half the units) that shows the token shows that,
 * and a stale one cannot show it otherwise. One that does not show the token (it lags the
 * take) is read again consistently before the token is called lost. A token of a session's
 * record needs of the read only the session: the session item, read consistently, checks the
 * token and the lock, and the delete's condition the count (`heldView`).
 */
async function readLockedToComplete(ctx: BrokerContext, key: Key, token: string, reads: SessionReads): Promise<{ item: Locked; until?: number }> {
  const seen = await getMessage(ctx, key, false);
  if (seen && heldBy(seen, token, ctx.clock.now())) return { item: seen };
  const held = seen?.sessionId !== undefined && seen.lockToken !== token ? await heldView(ctx, seen, token, reads) : undefined;
  if (held) return held;
  const item = await getMessage(ctx, key, true);
  if (item && heldBy(item, token, ctx.clock.now())) return { item };
  const again = item && (await heldView(ctx, item, token, reads));
  if (!again) throw lockLost();
  return again;
}

/** Session messages are settled only with their item read first (N4); plain ones need no read to complete. */
const sessionBound = (entity: EntityItem, target: ReceiveTarget) => entity.requiresSession && target.subqueue === 'active';

/** The guard of a settlement by `token` of `item`; for a session message, its session lock too (N4). */
function lockGuard(token: string, now: number, item?: Locked): Guard {
  if (item?.slk === undefined || item.sessionId === undefined) return lockHeld(token, now);
  const lock = { key: sessionKey(item.eid, item.sessionId), token: item.slk, now };
  return item.heldFrom !== undefined ? heldUnder(item.heldFrom, lock) : takenUnderLock(token, lock);
}

/** The guard of a write to the message `token` numbers, taken under the session lock `lock` (N4): its token, and that lock on it. */
const takenUnderLock = (token: string, lock: SessionLockCheck): Guard => ({
  expression: `${lockTokenIs} AND slk = :mslk`,
  values: { ...lockTokenValues(token), ':mslk': lock.token },
  session: lock,
});

/** The guard of a write to a message its session's record holds (N3, N4): still stored at `stored`, and the session lock held. */
const heldUnder = (stored: number, lock: SessionLockCheck): Guard => ({
  expression: 'deliveryCount = :stored',
  values: { ':stored': stored },
  session: lock,
});

/** The guard of a message of a complete's request that goes along unread under `lock`: a token of that lock's record, or one written on the message. */
const alongUnder = (token: string, lock: SessionLockCheck): Guard => {
  const count = heldDeliveryCount(token, lock.token);
  return count !== undefined ? heldUnder(count - 1, lock) : takenUnderLock(token, lock);
};

const guardOf = (token: string, now: number, item: Locked): Guard => {
  const held = lockGuard(token, now, item);
  return { ...held, expression: `${held.expression} AND v = :v`, values: { ...held.values, ':v': item.v ?? 0 } };
};

async function guardedWrite(ctx: BrokerContext, write: Parameters<typeof writeGuarded>[1], guard: Guard): Promise<void> {
  if (!(await writeGuarded(ctx, write, guard))) throw lockLost();
}

/**
 * R4 complete: the message is gone. Also after `expiresAt` (T5). A session message is deleted
 * as a batch's are (completeUnderSessionLocks); one taken without a session lock, under its own.
 */
async function completeOne(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string): Promise<void> {
  const key = locate(entity, target, seq, token);
  if (sessionBound(entity, target)) {
    const answer = (await completeUnderSessionLocks(ctx, entity, target, [token], { alone: true })).get(token);
    if (answer instanceof BrokerError) throw answer;
    if (answer === true) return;
  }
  await guardedWrite(ctx, { Delete: { Key: key } }, lockHeld(token, ctx.clock.now()));
}

/*
 * Each settlement of either layout: a lease's token (store/leases.ts `isLeaseToken`) names a
 * message claimed under a lease (positioned-receive.ts, positioned-settle.ts); any other, one
 * locked on its item in today's layout, a positioned queue's deferred messages and dead letters
 * included, whose sequence numbers may be positioned ones.
 */
const completeAny = (ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string) =>
  isLeaseToken(token) ? completePositioned(ctx, entity, target, seq, token) : completeOne(ctx, entity, target, seq, token);
const abandonAny = (ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string, changes?: Record<string, unknown>) =>
  isLeaseToken(token) ? abandonPositioned(ctx, entity, target, seq, token, changes) : abandonOne(ctx, entity, target, seq, token, changes);
const deferAny = (ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string, changes?: Record<string, unknown>) =>
  isLeaseToken(token) ? deferPositioned(ctx, entity, target, seq, token, changes) : deferOne(ctx, entity, target, seq, token, changes);
const deadLetterAny = (ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, body: SettleRequest) =>
  isLeaseToken(body.lockToken) ? deadLetterPositioned(ctx, entity, target, seq, body) : deadLetterOne(ctx, entity, target, seq, body);

/** R4 abandon: released at the head, unless D2 or T5 now apply. */
async function abandonOne(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string, changes?: Record<string, unknown>) {
  const key = locate(entity, target, seq, token);
  const item = modified(await readLocked(ctx, key, token), changes);
  const now = ctx.clock.now();
  const guard = guardOf(token, now, item);
  const outcome = onLockReleased(
    { ...item, expiresAt: item.expiresAt ?? null, lockedUntil: null, inDeadLetter: target.subqueue !== 'active' },
    entity.maxDeliveryCount,
    now,
  );
  if (outcome.kind === 'deadLetter') {
    if (!(await deadLetter(ctx, entity, item, guard, outcome))) throw lockLost();
    return;
  }
  if (outcome.kind === 'expire') {
    if (!(await expire(ctx, entity, item, guard))) throw lockLost();
    return;
  }
  const released = (item.v ?? 0) + 1;
  const sets = ['v = :next'];
  // A session message keeps its place in its session (N3): only its lock goes.
  const removes = ['lockToken', 'lockedUntil', ...(item.slk !== undefined ? ['slk', 'sgen'] : [])];
  const values: Record<string, unknown> = { ...guard.values, ':next': released };
  const names: Record<string, string> = {};
  if (item.heldFrom !== undefined) {
    // Held by its session's record: the delivery handed out counts from now on (R3), which ends the hold.
    sets.push('deliveryCount = :count', '#state = :active');
    values[':count'] = item.deliveryCount;
    values[':active'] = 'Active';
    names['#state'] = 'state';
  }
  if (item.props !== undefined) {
    sets.push('props = :props');
    values[':props'] = item.props;
  }
  if (item.state !== 'Deferred') {
    // "Available again at or near the head" (R4): back to its enqueue position.
    sets.push('rsk = :rsk');
    values[':rsk'] = readySortKey(item.enqueuedAt, seq);
    if (item.expiresAt !== undefined) {
      sets.push('#ttl = :ttl');
      values[':ttl'] = ttlSeconds(item.expiresAt);
      names['#ttl'] = 'ttl';
    }
    const due = nextDueAt(item, now);
    if (due !== null) {
      sets.push('dpk = :dpk', 'dsk = :dsk');
      values[':dpk'] = dueShardOf(item.pk);
      values[':dsk'] = due;
    } else removes.push('dpk', 'dsk');
  }
  // S6, R2: in a positioned queue it goes back into today's layout, which its receives read
  // first from the mark on (today-first.ts). Marked first: dying between the two leaves a mark
  // over a message still locked, which a receive moves to the lock's end; never one unmarked.
  // The mark refused for load refuses the abandon too (retryable), which changed nothing.
  if (item.state !== 'Deferred' && target.subqueue === 'active' && !(await markToday(ctx, entity)))
    throw new BrokerError('Throttled', 'the queue is busy; try the abandon again', { retryable: true, retryAfterSeconds: 1 });
  await guardedWrite(
    ctx,
    {
      Update: {
        Key: key,
        UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
        ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
      },
      releases: released,
    },
    guard,
  );
}

/** R4 defer: kept, out of the ready index and out of reach of expiry (T8), until received by number (R7). */
async function deferOne(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, token: string, changes?: Record<string, unknown>) {
  const key = locate(entity, target, seq, token);
  const item = modified(await readLocked(ctx, key, token), changes);
  const guard = guardOf(token, ctx.clock.now(), item);
  // A deferred session message stays in its session's ready partition, never visible, so
  // the session still counts as having messages (N6); a plain one leaves the index.
  const inSession = item.slk !== undefined;
  const held = item.heldFrom !== undefined;
  const released = (item.v ?? 0) + 1;
  const sets = [
    '#state = :deferred',
    'v = :next',
    ...(item.props !== undefined ? ['props = :props'] : []),
    ...(inSession ? ['rsk = :never'] : []),
    // Held by its session's record: the delivery handed out counts from now on (R3), which ends the hold.
    ...(held ? ['deliveryCount = :count'] : []),
  ];
  const removes = ['lockToken', 'lockedUntil', '#ttl', 'dpk', 'dsk', ...(inSession ? ['slk', 'sgen'] : ['rpk', 'rsk'])];
  await guardedWrite(
    ctx,
    {
      Update: {
        Key: key,
        UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
        ExpressionAttributeNames: { '#state': 'state', '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':deferred': 'Deferred',
          ':next': released,
          ...(item.props !== undefined ? { ':props': item.props } : {}),
          ...(inSession ? { ':never': deferredSortKey(seq) } : {}),
          ...(held ? { ':count': item.deliveryCount } : {}),
        },
      },
      releases: released,
    },
    guard,
  );
}

/** R4/D1 dead-letter by the application; D5: not from a dead-letter subqueue. */
async function deadLetterOne(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, body: SettleRequest) {
  if (target.subqueue !== 'active') {
    throw new BrokerError('BadRequest', 'a message in a dead-letter subqueue cannot be dead-lettered again (D5)', { field: 'path' });
  }
  const key = locate(entity, target, seq, body.lockToken);
  const item = modified(await readLocked(ctx, key, body.lockToken), body.propertiesToModify);
  // As in Service Bus, a reason or description the application leaves out stays unset.
  const info = {
    ...(body.deadLetterReason !== undefined ? { reason: body.deadLetterReason } : {}),
    ...(body.deadLetterErrorDescription !== undefined ? { description: body.deadLetterErrorDescription } : {}),
  };
  if (!(await deadLetter(ctx, entity, item, guardOf(body.lockToken, ctx.clock.now(), item), info))) throw lockLost();
}

/** POST {R}/messages/{n}/{complete|abandon|deadletter|defer}. */
export async function settle(ctx: BrokerContext, target: ReceiveTarget, seqText: string, action: Settlement, b: SettleRequest): Promise<void> {
  const seq = parseSequenceNumber(seqText);
  switch (action) {
    case 'complete':
      return withEntity(ctx, target, async (entity) => {
        await completeAny(ctx, entity, target, seq, b.lockToken);
        // R4: a lease of this one message, settled now, goes now rather than at its lapse.
        if (isLeaseToken(b.lockToken)) await forgetSettledLeases(ctx, entity, [b.lockToken], { remembered: true });
      });
    case 'abandon':
      return withEntity(ctx, target, (entity) => abandonAny(ctx, entity, target, seq, b.lockToken, b.propertiesToModify));
    case 'defer':
      return withEntity(ctx, target, (entity) => deferAny(ctx, entity, target, seq, b.lockToken, b.propertiesToModify));
    case 'deadletter':
      return withEntity(ctx, target, (entity) => deadLetterAny(ctx, entity, target, seq, b));
  }
}

/** R4 renew lock: `lockedUntil` becomes now + lockDuration. */
export async function renewLock(
  ctx: BrokerContext,
  target: ReceiveTarget,
  seqText: string,
  b: RequestOf<'RenewLockRequest'>,
): Promise<{ lockedUntil: string }> {
  const seq = parseSequenceNumber(seqText);
  return withEntity(ctx, target, (entity) =>
    isLeaseToken(b.lockToken) ? renewPositioned(ctx, entity, target, seq, b.lockToken) : renewWith(ctx, entity, target, seq, b.lockToken),
  );
}

async function renewWith(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seq: bigint, lockToken: string): Promise<{ lockedUntil: string }> {
  if (sessionBound(entity, target)) {
    throw new BrokerError('BadRequest', "a session message is locked by its session: renew the session's lock instead (N4)", { field: 'path' });
  }
  const b = { lockToken };
  const key = locate(entity, target, seq, b.lockToken);
  const now = ctx.clock.now();
  const lockedUntil = now + entity.lockDuration;
  const guard = lockHeld(b.lockToken, now);
  if (!(await renewMessageLock(ctx, key, guard, lockedUntil, readySortKey(lockedUntil, seq)))) throw lockLost();
  return { lockedUntil: new Date(lockedUntil).toISOString() };
}

/** R9: each result names the token as the client sent it, also a malformed one. */
export type BatchSettleResult = { lockToken: unknown; ok: true } | { lockToken: unknown; error: { code: ErrorCode; message: string; retryable: boolean } };

const malformedToken = (given: unknown): BatchSettleResult => {
  const e = new BrokerError('BadRequest', `lockTokens: ${JSON.stringify(given)} is not a lock token as returned by a receive`, { field: 'lockTokens' });
  return { lockToken: given, error: { code: e.code, message: e.message, retryable: e.retryable } };
};

/** R9: complete or abandon up to 100 tokens, a result for each. */
export async function settleBatch(
  ctx: BrokerContext,
  target: ReceiveTarget,
  action: 'complete' | 'abandon',
  b: RequestOf<'LockTokens'>,
): Promise<BatchSettleResult[]> {
  // One entity check for the whole batch (withEntity), one result per token inside it.
  return withEntity(ctx, target, async (entity) => {
    const tokens = b.lockTokens.map((given) => (isLockTokenShape(given) ? normalizeLockToken(given) : undefined));
    const unique = [...new Set(tokens.filter((t) => t !== undefined))];
    const shared =
      action === 'complete' && sessionBound(entity, target)
        ? await completeUnderSessionLocks(ctx, entity, target, unique)
        : action === 'abandon'
          ? await abandonUnderLeases(ctx, entity, target, unique.filter(isLeaseToken))
          : new Map<string, true | BrokerError>();
    // A token given twice is settled once: its first place gets the shared answer, a repeat is settled alone.
    const answered = new Set<string>();
    // Messages this request removed under their own locks: a lock reminder whose batch is all among them goes too (R6).
    const completed: { token: string; pk: string }[] = [];
    // Lease tokens this request completed: a lease whose every message is among them goes too (R6).
    const settledUnderLeases: string[] = [];
    const results = await Promise.all(
      b.lockTokens.map(async (given, i): Promise<BatchSettleResult> => {
        const token = tokens[i];
        if (token === undefined) return malformedToken(given);
        const done = answered.has(token) ? undefined : shared.get(token);
        answered.add(token);
        try {
          if (done instanceof BrokerError) throw done;
          if (done === undefined && action === 'complete') {
            const seq = sequenceOfLockToken(token);
            await completeAny(ctx, entity, target, seq, token);
            if (isLeaseToken(token)) settledUnderLeases.push(token);
            else if (!sessionBound(entity, target)) completed.push({ token, pk: locate(entity, target, seq, token).pk });
          } else if (done === undefined) await abandonAny(ctx, entity, target, sequenceOfLockToken(token), token);
          return { lockToken: given, ok: true };
        } catch (e) {
          if (e instanceof BrokerError) return { lockToken: given, error: { code: e.code, message: e.message, retryable: e.retryable } };
          throw e;
        }
      }),
    );
    await Promise.all([forgetCompletedBatches(ctx, completed), forgetSettledLeases(ctx, entity, settledUnderLeases)]);
    return results;
  });
}

/** R9 abandon of lease tokens: one transaction per partition (positioned-settle.ts), an answer per token. */
async function abandonUnderLeases(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  tokens: readonly string[],
): Promise<Map<string, true | BrokerError>> {
  if (tokens.length === 0) return new Map();
  const answers = await abandonPositionedBatch(
    ctx,
    entity,
    target,
    tokens.map((token) => ({ token, seq: sequenceOfLockToken(token) })),
  );
  return new Map(tokens.map((token, i) => [token, answers[i]!]));
}

/**
 * A session message to complete: its key, the guard its delete goes under (its lock token, and
 * the session lock it was taken under), and whether that lock is the one its own read showed
 * (`read`) or only the one another message of the request was read under.
 */
interface Completing {
  token: string;
  key: Key;
  guard: Guard;
  read: boolean;
  /** The end of its session lock, when its read found that lock held (a token of the session's record). */
  until?: number;
}

/** What a complete of session messages answered per token. */
type Answers = Map<string, true | BrokerError>;

/** Waits for every one of `work`, then throws the first failure, if any: no write is left running behind an answer. */
async function allSettled(work: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

const lockId = (lock: SessionLockCheck) => `${keyId(lock.key)}\n${lock.token}`;

/**
 * R4/R9/N4: a complete of session messages, one or a batch, without a transaction in the
 * common case. One message is read, eventually consistently, for the session lock it was taken
 * under (readLockedToComplete); that lock is read once, consistently, from the session item: not
 * held (released, lapsed, superseded) is SessionLockLost for that message, and nothing changes
 * (N4). Under a held lock the message, and every other message of the request not read yet,
 * goes with one conditional DeleteItem on its own lock (`lockTokenIs AND slk` of that lock), in
 * parallel: 1 unit for a 1 KB item, where a transaction with the lock's check billed 2 per
 * message and 2 for the check; and one read of a message per request, not per message, when
 * the request's messages share a session lock (as a session receiver's do). A message not taken
 * under that lock (another session's, or gone) fails its condition, at most once, and is then
 * read, in parallel with the others refused, for its own answer and its own session lock, each
 * lock read once (one found lost answers its messages SessionLockLost without another read).
 *
 * Why a read, then plain deletes, guarantees what the transaction did: the message's lock token
 * is new at every take, so a delete that finds it finds a message nobody has taken since this
 * holder took it under the lock the read saw held. Whatever happened to the session between the
 * read and the delete, the complete is the one it would have been at the read: a next holder
 * that re-took the message in between changed its token (the delete fails, MessageLockLost); one
 * that accepted the session but has not reached the message yet never sees it, as if the
 * complete came first; the sweeper's and bulk deletion's moves of it are conditional writes of
 * the same item, so one of the two fails. The read bounds the window in time too: a delete is
 * sent only before the end of the lock the read saw, by this broker's clock, so a lock that
 * lapses in between (and a next holder on a clock that agrees) cannot be passed; past that end
 * (the read was slow, or the holder renewed since) the message goes in a transaction with a
 * check of the lock as it is then. A release by the holder itself while its own complete is
 * under way may come between: the complete is ordered first, as the holder's two calls allow.
 *
 * A message refused (gone, taken again or settled since) is MessageLockLost; one that met a
 * transaction in flight, or, in a batch, throttling, is a retryable Throttled answer of its own,
 * its neighbours completed or not on their own (a retry finds them MessageLockLost, R9). Two
 * tokens of one message are never deleted together, so only the current one can pass. Returns
 * an answer per token settled or refused here; a token left out (a message taken without a
 * session lock) is settled alone. `alone` (a single complete): a store error other than a
 * conflict is thrown as it came, as for any settlement.
 */
async function completeUnderSessionLocks(
  ctx: BrokerContext,
  entity: EntityItem,
  target: ReceiveTarget,
  tokens: readonly string[],
  options: { alone?: boolean } = {},
): Promise<Answers> {
  const answers: Answers = new Map();
  const unread: { token: string; key: Key }[] = [];
  for (const token of tokens) {
    try {
      unread.push({ token, key: locate(entity, target, sequenceOfLockToken(token), token) });
    } catch (e) {
      if (!(e instanceof BrokerError)) throw e;
      answers.set(token, e);
    }
  }
  const alone = options.alone === true;
  // The first message whose read shows a session lock is read; the others go along unread under that lock.
  let probe: Completing | undefined;
  const reads: SessionReads = new Map();
  while (!probe?.guard.session && unread.length > 0) probe = await readToComplete(ctx, unread.shift()!, answers, reads, alone);
  const lock = probe?.guard.session;
  if (!probe || !lock) return answers;
  const keys = new Set([keyId(probe.key)]);
  const along: Completing[] = [];
  const later: typeof unread = [];
  for (const m of unread) {
    // One transaction cannot name an item twice: a second token of one message waits for its own read.
    if (keys.has(keyId(m.key))) later.push(m);
    else along.push({ ...m, guard: alongUnder(m.token, lock), read: false });
    keys.add(keyId(m.key));
  }
  const round = await completeUnderReadLock(ctx, lock, [probe, ...along], answers, alone, probe.until);
  // What went along and was refused (another session's, or gone) is read, as every message of a request once was.
  // A token of this lock's record that went along and was refused needs no read: its HMAC says it was made under this lock.
  const unknown: typeof unread = [];
  for (const m of round.undecided) {
    if (heldDeliveryCount(m.token, lock.token) === undefined) unknown.push(m);
    else answers.set(m.token, round.lost ? sessionLockLost() : lockLost());
  }
  return completeEachRead(ctx, [...unknown, ...later], answers, alone, reads, { [lockId(lock)]: round });
}

/** The message `m` numbers, read for the session lock it was taken under (readLockedToComplete); a refusal is its answer. */
async function readToComplete(
  ctx: BrokerContext,
  m: { token: string; key: Key },
  answers: Answers,
  reads: SessionReads,
  alone: boolean,
): Promise<Completing | undefined> {
  try {
    const { item, until } = await readLockedToComplete(ctx, m.key, m.token, reads);
    return { ...m, guard: lockGuard(m.token, ctx.clock.now(), item), read: true, ...(until !== undefined ? { until } : {}) };
  } catch (e) {
    // A read of the session lock refused for load answers its token as a read under the lock would (completeUnderReadLock).
    answers.set(m.token, e instanceof BrokerError ? e : answerBusy(e, alone));
    return undefined;
  }
}

/**
 * The rest of a complete: each message read, in parallel, then deleted under the session lock
 * its read shows, one round per lock (`known`: what a round under a lock already found, so it is
 * not read again). Two tokens read as holding one message are left out: settled alone, where
 * only the current one can pass. A token of a message refused under the lock its read shows
 * (the read lags what refused it) is MessageLockLost.
 */
async function completeEachRead(
  ctx: BrokerContext,
  rest: readonly { token: string; key: Key }[],
  answers: Answers,
  alone: boolean,
  reads: SessionReads,
  known: Record<string, LockRound> = {},
): Promise<Answers> {
  const read = (await Promise.all(rest.map((m) => readToComplete(ctx, m, answers, reads, alone)))).filter((m) => m !== undefined);
  const keys = read.map((m) => keyId(m.key));
  const twice = new Set(keys.filter((k, i) => keys.indexOf(k) !== i));
  const locks = new Map<string, { lock: SessionLockCheck; members: Completing[] }>();
  for (const m of read) {
    if (!m.guard.session || twice.has(keyId(m.key))) continue;
    const id = lockId(m.guard.session);
    const before = known[id];
    if (before?.lost) answers.set(m.token, sessionLockLost());
    else if (before?.undecided.some((u) => u.token === m.token)) answers.set(m.token, lockLost());
    if (answers.has(m.token)) continue;
    const shared = locks.get(id) ?? { lock: m.guard.session, members: [] };
    locks.set(id, shared);
    shared.members.push(m);
  }
  await allSettled(
    [...locks.entries()].map(([id, { lock, members }]) =>
      completeUnderReadLock(ctx, lock, members, answers, alone, known[id]?.until ?? members.find((m) => m.until !== undefined)?.until),
    ),
  );
  return answers;
}

/** A store refusal a batch answers per token (Throttled, retryable) rather than for the whole request; a single complete throws it. */
function answerBusy(e: unknown, alone: boolean): BrokerError {
  if (alone || !isStoreBusy(e)) throw e;
  return busy();
}

/** What the deletes under one session lock came to, besides their answers: the lock found lost, or the end of it found held; the messages left undecided. */
interface LockRound {
  lost: boolean;
  until?: number;
  undecided: Completing[];
}

/**
 * N4: `members`, deleted one by one under `lock` after one consistent read of the session item
 * (or one earlier in the same request, `knownUntil` its end) says the lock is held
 * (completeUnderSessionLocks says why that is enough). A message whose delete would go after
 * that lock's end goes in a transaction with the lock's check. A refusal answers a message
 * whose own read showed the lock; one that went along unread is undecided.
 */
async function completeUnderReadLock(
  ctx: BrokerContext,
  lock: SessionLockCheck,
  members: readonly Completing[],
  answers: Answers,
  alone: boolean,
  knownUntil?: number,
): Promise<LockRound> {
  const round: LockRound = { lost: false, undecided: [] };
  const refuse = (m: Completing, answer: BrokerError) => (m.read ? answers.set(m.token, answer) : round.undecided.push(m));
  let until = knownUntil;
  if (until === undefined) {
    let session: SessionItem | undefined;
    // The read shows the lock as it was when it was served, at or after this instant.
    const readAt = ctx.clock.now();
    try {
      session = await readSession(ctx, lock.key);
    } catch (e) {
      const answer = answerBusy(e, alone);
      for (const m of members) answers.set(m.token, answer);
      return round;
    }
    if (session?.lockToken !== lock.token || (session.lockedUntil ?? 0) <= readAt) {
      for (const m of members) refuse(m, sessionLockLost());
      return { ...round, lost: true };
    }
    rememberSession(ctx, session);
    until = session.lockedUntil!;
  }
  round.until = until;
  const end = until;
  const late: Completing[] = [];
  await allSettled(
    members.map(async (m) => {
      if (ctx.clock.now() >= end) {
        late.push(m);
        return;
      }
      try {
        const outcome = await deleteLockedMessage(ctx, m.key, { expression: m.guard.expression, values: m.guard.values });
        if (outcome === 'deleted') answers.set(m.token, true);
        else if (outcome === 'conflict') answers.set(m.token, busy());
        else refuse(m, lockLost());
      } catch (e) {
        answers.set(m.token, answerBusy(e, alone));
      }
    }),
  );
  if (late.length > 0 && !(await completeInTransactions(ctx, { ...lock, now: ctx.clock.now() }, late, answers, refuse))) round.lost = true;
  return round;
}

/**
 * R9/N4: messages taken under one session lock, deleted in transactions of up to
 * MAX_WRITES_UNDER_ONE_LOCK with one check of that lock each (N4, SessionLockLost when that
 * fails). A transaction refused on some messages (not as read, or held by another transaction)
 * answers those and goes again with the rest. `refuse` answers a message refused, or leaves it
 * undecided. False when the lock was found lost.
 */
async function completeInTransactions(
  ctx: BrokerContext,
  lock: SessionLockCheck,
  members: readonly Completing[],
  answers: Answers,
  refuse: (m: Completing, answer: BrokerError) => void,
): Promise<boolean> {
  const chunks = Array.from({ length: Math.ceil(members.length / MAX_WRITES_UNDER_ONE_LOCK) }, (_, i) =>
    members.slice(i * MAX_WRITES_UNDER_ONE_LOCK, (i + 1) * MAX_WRITES_UNDER_ONE_LOCK),
  );
  let held = true;
  await allSettled(
    chunks.map(async (chunk) => {
      let pending = chunk;
      while (pending.length > 0) {
        const outcome = await writeMessagesUnderSessionLock(
          ctx,
          pending.map((m) => ({ write: { Delete: { Key: m.key } }, condition: m.guard })),
          lock,
        );
        if (outcome.kind === 'lockLost') held = false;
        if (outcome.kind !== 'refused') {
          for (const m of pending) {
            if (outcome.kind === 'lockLost') refuse(m, sessionLockLost());
            else answers.set(m.token, outcome.kind === 'written' ? true : busy());
          }
          return;
        }
        // Each refusal answers at least one message, so this ends.
        pending = pending.filter((m, i) => {
          const part = outcome.parts[i];
          if (part === 'conditionFailed') refuse(m, lockLost());
          if (part === 'conflict') answers.set(m.token, busy());
          return part === 'fine';
        });
      }
    }),
  );
  return held;
}

/** R7: deferred messages, received under lock by sequence number. */
export async function receiveDeferred(ctx: BrokerContext, target: ReceiveTarget, b: RequestOf<'DeferredRequest'>): Promise<ReceivedMessage[]> {
  const entity = await entityFor(ctx, target, true); // a receive: always the live entity
  assertCanReceive(entity, target.subqueue);
  assertNoSession(entity, target);
  const inDeadLetter = target.subqueue !== 'active';
  return receiveDeferredWith(ctx, b.sequenceNumbers, {
    keyOf: (seq) => {
      const partition = partitionOfSeq(seq);
      return partition < (inDeadLetter ? 1 : entity.partitions) ? messageKey(entity.eid, target.subqueue, partition, seq) : undefined;
    },
    consistent: false,
    belongs: () => true,
    notDeferred,
    free: (now) => ({ condition: notLocked, values: { ':now': now } }),
    lock: (item, key, seq, now) => {
      // D2 applies to deferred messages too: the last allowed lock goes on the sweeper's agenda.
      const lastDelivery = !inDeadLetter && (item.deliveryCount ?? 0) + 1 >= entity.maxDeliveryCount;
      return { token: newLockToken(seq), until: now + entity.lockDuration, ...(lastDelivery ? { agenda: dueShardOf(key.pk) } : {}) };
    },
    recheck: true,
  });
}

/** No receiver holds the message's lock now. */
const notLocked = '(attribute_not_exists(lockedUntil) OR lockedUntil <= :now)';
/** Still deferred. */
const isDeferred = '#state = :deferred';

/** How a receive by number (R7) finds and takes its messages: a plain receive's own lock, or a session's (session-lock.ts). */
export interface DeferredPolicy {
  /** The key of a number's message, or undefined when it cannot be one this receive may take. */
  keyOf(seq: bigint): Key | undefined;
  /** Whether the messages are read consistently before any is taken. */
  consistent: boolean;
  /** Whether a deferred message found is one this receive may take. */
  belongs(item: MessageItem): boolean;
  /** The answer for a number that is not one of its deferred messages. */
  notDeferred(text: string): BrokerError;
  /** Messages this receiver holds already (a session's in flight under its lock): passed over. */
  holds?(item: MessageItem): boolean;
  /** A message not to take after all (a session's past D2 under an earlier lock, moved here): true when passed over. */
  passOver?(item: MessageItem, now: number): Promise<boolean>;
  /** The lock condition: what says no receiver holds the message, besides its being deferred. */
  free(now: number): TakeCondition;
  /** The lock the take sets. */
  lock(item: MessageItem, key: Key, seq: bigint, now: number): MessageLock;
  /** A take that failed is read again: a message gone or no longer deferred is MessageNotFound, one locked elsewhere is passed over. */
  recheck: boolean;
}

/** R7: deferred messages by number, each locked with one conditional write under `policy`; all must be found before any is locked. */
export async function receiveDeferredWith(ctx: BrokerContext, numbers: readonly string[], policy: DeferredPolicy): Promise<ReceivedMessage[]> {
  // All must exist and be deferred before any is locked: a bad number changes nothing.
  const found = await Promise.all(
    numbers.map(async (text) => {
      const seq = BigInt(text);
      const key = policy.keyOf(seq);
      const item = key && (await getMessage(ctx, key, policy.consistent));
      if (!key || item?.state !== 'Deferred' || !policy.belongs(item)) throw policy.notDeferred(text);
      return { text, seq, key, item };
    }),
  );
  const out: ReceivedMessage[] = [];
  const budget = new AnswerBudget();
  return keepingTaken(out, async () => {
    for (const { text, seq, key, item } of found) {
      const now = ctx.clock.now();
      if (policy.holds?.(item)) continue;
      // R10: what the answer cannot carry stays deferred; the caller asks for it again.
      if (!budget.fits(lockedAnswerBytes(item, now))) return;
      if (await policy.passOver?.(item, now)) continue;
      const free = policy.free(now);
      const taking = lockUpdate(policy.lock(item, key, seq, now));
      const write = {
        key,
        condition: `${isDeferred} AND ${free.condition}`,
        names: { '#state': 'state' },
        values: { ':deferred': 'Deferred', ...free.values, ...taking.values },
      };
      const locked = await unlessConflict(lockAndPresent(ctx, write, taking.update, now), CONFLICTED);
      // Held by a transaction in flight (a move): passed over like one locked by another receiver.
      if (locked === CONFLICTED) continue;
      if (locked) {
        out.push(locked);
        budget.add(locked);
        continue;
      }
      if (!policy.recheck) continue; // settled or taken meanwhile: not handed out twice
      const current = await getMessage(ctx, key, false);
      if (!current || current.state !== 'Deferred') throw policy.notDeferred(text);
      // Deferred but locked by another receiver: not handed out twice.
    }
  });
}

const CONFLICTED = Symbol('conflicted');

const notDeferred = (seq: string) => new BrokerError('MessageNotFound', `no deferred message with sequence number ${seq}`, { field: 'sequenceNumbers' });

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { settle, renewLock, settleBatch, receiveDeferred };
