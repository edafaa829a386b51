/**
 * Session items' store operations (N1-N8): the session item (`sessionKey`) holding a session's
 * lock and its entry in accept-next's index (`sessionQueuePk`), its state item
 * (`sessionStateKey`), and the page of session items a listing reads. Keys in keys.ts; which
 * session to lock, when to release it and what to list stay with the broker.
 */
import { DeleteCommand, GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { SESSION_SK_PREFIX, sessionKey, sessionQueuePk, sessionsPk, sessionStateKey, type Key } from './keys.js';
import {
  cancellationCodes,
  conditionFailed,
  conditionally,
  isConditionFailure,
  isStoreBusy,
  itemAtRefusal,
  partFailedCondition,
  refusedItsOwnUpdate,
  retriedBySdk,
} from './outcomes.js';

export type SessionStore = Pick<Deps, 'db' | 'tableName'>;

/** The session item (keys.ts `sessionKey`). */
export interface SessionItem extends Key {
  sessionId: string;
  eid: string;
  /** The entity's path (as a message item's `entity`), for hints; written by sends and named accepts. */
  entity?: string;
  lockToken?: string;
  lockedUntil?: number;
  /** Generation of the lock: one more at each accept. */
  gen?: number;
  /** What receives under a session lock handed out without writing the messages (N3): `recordHeld`. */
  held?: HeldRecord;
  /** The version of `held`: one more at each write of it, so two receives under one lock never hold one message twice. */
  hv?: number;
  /**
   * The earliest expiry of a message the record holds that still carries its `ttl` (T5), absent
   * when none does; every write keeps `lockedUntil + HELD_TTL_MARGIN_MS < hx` (`recordHeld`,
   * `extendSessionLock`, `extendSessionLockProtecting`), so DynamoDB's TTL never deletes a
   * message held under a live lock.
   */
  hx?: number;
  hasState?: boolean;
  lastSendAt?: number;
  rpk?: string;
  rsk?: string;
  /** On the sweeper's agenda after a named accept, at the lock's end (N8). */
  dpk?: string;
  dsk?: number;
}

/**
 * The messages receives under a session lock handed out (N3, R3), written once a receive:
 * `t`, the session lock token they were handed out under, and per sequence number the
 * delivery count handed out, the instant the message became visible (its place in the
 * session's ready partition), when it was taken, and, for a message that still carries its
 * `ttl`, its expiry (gone once a renewal removed the `ttl`: protected, T5). A message is held
 * while its stored delivery count is the one handed out minus one: a settlement or a
 * take-back writes the count, which ends it.
 */
export interface HeldRecord {
  t: string;
  m: Record<string, HeldEntry>;
}

/** What a record keeps of one message it holds (`HeldRecord`). */
export type HeldEntry = [count: number, visibleAt: number, takenAt: number, expiresAt?: number];

/**
 * T5: how far past the session lock's end the earliest unprotected expiry of a held message
 * (`hx`) must lie after every write. DynamoDB's TTL deletes only after an item's `ttl`, so the
 * margin covers a Lambda's clock against AWS's and the time from a write's check to its answer.
 */
export const HELD_TTL_MARGIN_MS = 60_000;

/** The `hx` a record implies: the earliest expiry of an entry still carrying its `ttl`, or undefined. */
export function heldExpiryOf(record: Pick<HeldRecord, 'm'>): number | undefined {
  let hx: number | undefined;
  for (const entry of Object.values(record.m)) if (entry[3] !== undefined && (hx === undefined || entry[3] < hx)) hx = entry[3];
  return hx;
}

/** What a new message tells its session's entry. */
export interface SessionAnnouncement {
  eid: string;
  sessionId: string;
  /** The entity's path: a released session's stream record hints the entity's waiting consumers. */
  entity: string;
  /** The message's ready sort key. */
  rsk: string;
  now: number;
}

/** The entry sorts later than the message. */
const hintIsLater = 'rsk > :r';
/** No receiver holds the session now. */
export const sessionUnlocked = '(attribute_not_exists(lockedUntil) OR lockedUntil <= :now)';
/** The session's lock is this token's (`:slk`) and has not run out (N4). */
export const sessionLockHeld = 'lockToken = :slk AND lockedUntil > :now';
/** No send to the session within the grace period before `:cutoff` (its message may not be in the index yet). */
const quietSince = '(attribute_not_exists(lastSendAt) OR lastSendAt < :cutoff)';
/** The session holds no state (N5). */
const noState = 'attribute_not_exists(hasState)';
/** The session holds state (N5). */
const withState = 'attribute_exists(hasState)';
/** The last send to the session is the one at `:sent`. */
const lastSendIs = 'lastSendAt = :sent';
/** The hint is still the one accept-next read. */
const hintUnchanged = 'rsk = :seen';
/** The sweeper's agenda entry is still the one it read. */
const entryUnchanged = 'dsk = :dsk';
/** The item still belongs to this incarnation (its entity is gone). */
const ofIncarnation = 'eid = :eid';
/** A session item, not a state item, of the entity's sessions partition. */
const sessionItems = 'pk = :pk AND begins_with(sk, :s)';
/** Listed: in accept-next's index (it has messages or had lately), or holding state. */
const listable = 'attribute_exists(rpk) OR attribute_exists(hasState)';

/**
 * Puts the session in accept-next's index (N2), creating its entry if need be; an entry's
 * sort key is kept if it has one. Key: sessionKey(eid, sessionId). No condition. Success:
 * the entry as it now is (`rsk`, `lockedUntil`); errors throw.
 */
export async function announceSession(ctx: SessionStore, a: SessionAnnouncement): Promise<{ rsk?: string; lockedUntil?: number } | undefined> {
  const out = await ctx.db.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: sessionKey(a.eid, a.sessionId),
      UpdateExpression: 'SET rpk = :q, rsk = if_not_exists(rsk, :r), sessionId = :sid, eid = :eid, entity = :path, lastSendAt = :now',
      ExpressionAttributeValues: { ':q': sessionQueuePk(a.eid), ':r': a.rsk, ':sid': a.sessionId, ':eid': a.eid, ':path': a.entity, ':now': a.now },
      ReturnValues: 'ALL_NEW',
    }),
  );
  return out.Attributes as { rsk?: string; lockedUntil?: number } | undefined;
}

/**
 * Brings a session's entry forward to `rsk`. Key: sessionKey(eid, sessionId). Condition:
 * `hintIsLater` AND `sessionUnlocked`. Success and a failed condition (an earlier entry, or a
 * holder whose release recomputes it) both resolve; other errors throw.
 */
export async function bringSessionForward(ctx: SessionStore, eid: string, sessionId: string, rsk: string, now: number): Promise<void> {
  await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: sessionKey(eid, sessionId),
        UpdateExpression: 'SET rsk = :r',
        ConditionExpression: `${hintIsLater} AND ${sessionUnlocked}`,
        ExpressionAttributeValues: { ':r': rsk, ':now': now },
      }),
    ),
  );
}

/**
 * Reads a session item, consistently (what every lock, release and send before it left). Key:
 * `key`. No condition. Returns the item, or undefined when there is none.
 */
export async function readSession(ctx: SessionStore, key: Key): Promise<SessionItem | undefined> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: true }));
  return got.Item as SessionItem | undefined;
}

/** A session lock to take or extend: its token, from `now` until `until`, its hint sorted at `rsk` (the lock's end). */
export interface SessionLock {
  token: string;
  now: number;
  until: number;
  rsk: string;
}

/** Taking a lock: a new token, its end, the hint at its end, and the next generation. */
const takeLockUpdate = 'lockToken = :token, lockedUntil = :until, rsk = :locked ADD gen :one';

/**
 * The lock's update, refused with the item at the refusal (no read unit). The item carrying this
 * lock's own token is this update landed, its answer lost and the SDK's retry refused on the lock
 * it took (the token is new to this accept): the session is this accept's, as the first answer
 * would have said (N2). Otherwise undefined.
 */
async function takeLock(
  ctx: SessionStore,
  key: Key,
  lock: SessionLock,
  also: { set?: string; condition?: string; values?: Record<string, unknown> },
): Promise<SessionItem | undefined> {
  try {
    const out = await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: `SET ${also.set ? `${also.set}, ` : ''}${takeLockUpdate}`,
        ConditionExpression: also.condition ? `${also.condition} AND ${sessionUnlocked}` : sessionUnlocked,
        ExpressionAttributeValues: { ...also.values, ':token': lock.token, ':until': lock.until, ':locked': lock.rsk, ':now': lock.now, ':one': 1 },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return out.Attributes as SessionItem;
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
    const found = itemAtRefusal<SessionItem>(e);
    return found?.lockToken === lock.token ? found : undefined;
  }
}

/** What a named accept writes on the session item it may create (N2, N8). */
export interface NamedSession {
  sessionId: string;
  eid: string;
  /** The entity's path. */
  entity: string;
  /** The sweeper's agenda shard: the item is looked at again at the lock's end (N8). */
  due: string;
}

/**
 * A named accept's lock (N2): the item is created if need be, entered in accept-next's index
 * and put on the sweeper's agenda at the lock's end. Key: sessionKey(eid, sessionId).
 * Condition: `sessionUnlocked`. Success: the session as it now is (one generation more).
 * Failure: undefined when another receiver holds it; other errors throw.
 */
export function lockNamedSession(ctx: SessionStore, named: NamedSession, lock: SessionLock): Promise<SessionItem | undefined> {
  return takeLock(ctx, sessionKey(named.eid, named.sessionId), lock, {
    set: 'sessionId = :sid, eid = :eid, entity = :path, rpk = :q, dpk = :due, dsk = :until',
    values: { ':sid': named.sessionId, ':eid': named.eid, ':path': named.entity, ':q': sessionQueuePk(named.eid), ':due': named.due },
  });
}

/**
 * Accept-next's lock of the session behind a hint (N2). Key: the hint's. Condition:
 * `hintUnchanged` (rsk as read) AND `sessionUnlocked`. Success: the session as it now is.
 * Failure: undefined when another acceptor was first or the hint moved; other errors throw.
 */
export function lockHintedSession(ctx: SessionStore, hint: Key & { rsk: string }, lock: SessionLock): Promise<SessionItem | undefined> {
  return takeLock(ctx, { pk: hint.pk, sk: hint.sk }, lock, { condition: hintUnchanged, values: { ':seen': hint.rsk } });
}

/** What a renewal's write came to: made; refused on the lock (lost or run out); or refused on `hx`, with the item as it was. */
export type Extension = { extended: true } | { extended: false; found: SessionItem | undefined };

/** No held message still carrying its `ttl` expires within the margin after `:hxBound` (the new end + HELD_TTL_MARGIN_MS). */
const noExpiryReached = '(attribute_not_exists(hx) OR hx > :hxBound)';

/**
 * Extends a held lock (N4): `lockedUntil` becomes `lock.until`, the hint sorts at it. Key:
 * `key`. Condition: `sessionLockHeld` by `lock.token` at `lock.now` AND `noExpiryReached` (T5:
 * no message the record holds with its `ttl` expires before the new end plus the margin), so
 * the common renewal is this one write. Success: extended. Failure: not extended, with the
 * item at the refusal (no read: ReturnValuesOnConditionCheckFailure), to tell a lost lock from
 * an `hx` reached (`extendSessionLockProtecting`); other errors throw.
 */
export async function extendSessionLock(ctx: SessionStore, key: Key, lock: SessionLock): Promise<Extension> {
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: 'SET lockedUntil = :until, rsk = :locked',
        ConditionExpression: `${sessionLockHeld} AND ${noExpiryReached}`,
        ExpressionAttributeValues: {
          ':until': lock.until,
          ':locked': lock.rsk,
          ':slk': lock.token,
          ':now': lock.now,
          ':hxBound': lock.until + HELD_TTL_MARGIN_MS,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { extended: true };
  } catch (e) {
    if (!conditionFailed(e)) throw e;
    return { extended: false, found: itemAtRefusal<SessionItem>(e) };
  }
}

/**
 * A renewal's slow path (T5), after the messages whose expiry the new end reaches lost their
 * `ttl`: extends the held lock as `extendSessionLock` does and, in the same write, the record
 * as it was read with those entries marked protected (`record`, or undefined to leave `held`
 * as it is: an earlier lock's) and `hx` the earliest expiry of the rest (`hx`, or undefined to
 * remove it). Key: `key`. Condition: `sessionLockHeld` AND `hv` still `seen` (no record write
 * since the read, which could have held another message with its `ttl`). The caller's `hx` is
 * past `lock.until` plus the margin by its choice of entries. Success: true. Failure: false
 * when the lock is lost or a receive wrote the record meanwhile (read again); other errors throw.
 */
export async function extendSessionLockProtecting(
  ctx: SessionStore,
  key: Key,
  lock: SessionLock,
  seen: number | undefined,
  record: HeldRecord | undefined,
  hx: number | undefined,
): Promise<boolean> {
  const sets = ['lockedUntil = :until', 'rsk = :locked', ...(record ? ['held = :held', 'hv = :next'] : []), ...(hx !== undefined ? ['hx = :hx'] : [])];
  const written = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: `SET ${sets.join(', ')}${hx === undefined ? ' REMOVE hx' : ''}`,
        ConditionExpression: `${sessionLockHeld} AND ${seen === undefined ? 'attribute_not_exists(hv)' : 'hv = :hv'}`,
        ExpressionAttributeValues: {
          ':until': lock.until,
          ':locked': lock.rsk,
          ':slk': lock.token,
          ':now': lock.now,
          ...(record ? { ':held': record, ':next': (seen ?? 0) + 1 } : {}),
          ...(hx !== undefined ? { ':hx': hx } : {}),
          ...(seen === undefined ? {} : { ':hv': seen }),
        },
      }),
    ),
  );
  return written !== undefined;
}

/** A held lock as a write under it states it: its token, at `now`. */
export interface HeldLock {
  token: string;
  now: number;
}

/**
 * Writes the held record of a receive under the session lock (N3), and `hx`, the earliest
 * expiry of an entry that still carries its `ttl` (`heldExpiryOf`; removed when none does).
 * Key: `key`. Condition: `sessionLockHeld` by `held.token` at `held.now`, AND `hv` still `seen`
 * (no other write of the record since the receive read it), AND with an `hx`, the lock's end
 * as stored (not as the receive read it: a renewal may have come between) before `hx` less
 * HELD_TTL_MARGIN_MS (T5). None of these is projected into the `ready` index, so the write
 * costs the table's unit only. Success: true, also when the SDK retried the write after it
 * landed and the item holds this very record at the next version under the lock (its takes
 * are then handed out, not stranded in a record nobody hands out: R10). Failure: false when
 * the lock is no longer held, another receive wrote the record meanwhile, or the lock now ends
 * too near an expiry the record would hold; other errors throw.
 */
export async function recordHeld(ctx: SessionStore, key: Key, held: HeldLock, seen: number | undefined, record: HeldRecord): Promise<boolean> {
  const hx = heldExpiryOf(record);
  const next = (seen ?? 0) + 1;
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: `SET held = :held, hv = :next${hx !== undefined ? ', hx = :hx' : ' REMOVE hx'}`,
        ConditionExpression: `${sessionLockHeld} AND ${seen === undefined ? 'attribute_not_exists(hv)' : 'hv = :hv'}${hx !== undefined ? ' AND lockedUntil < :endBound' : ''}`,
        ExpressionAttributeValues: {
          ':slk': held.token,
          ':now': held.now,
          ':held': record,
          ':next': next,
          ...(seen === undefined ? {} : { ':hv': seen }),
          ...(hx !== undefined ? { ':hx': hx, ':endBound': hx - HELD_TTL_MARGIN_MS } : {}),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return true;
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
    return refusedItsOwnUpdate(e, { held: record, hv: next, lockToken: held.token });
  }
}

/**
 * What a release that has not read the session item assumes of its last send (its hint's place
 * depends on it): that it is the one at `lastSendAt`, or that there was none since `quietSince`
 * (the grace period's start). The release's condition checks it, so a wrong guess writes nothing.
 */
export type SendPremise = { lastSendAt: number } | { quietSince: number };

/**
 * What a release's write came to: made, or refused on its condition, with the session item as
 * it was then (undefined when there is none). DynamoDB returns the item with the refusal
 * (ReturnValuesOnConditionCheckFailure), so deciding again costs no read.
 */
export type ReleaseOutcome = { released: true } | { released: false; found: SessionItem | undefined };

/**
 * A release refused at the SDK's second attempt or later, the item found without a lock (or
 * gone), is its own first attempt landed, its answer lost (N4): only a holder's release removes
 * a lock token, a lapsed lock keeps it, and a session item goes only unlocked. (A lock that ran
 * out, whose session a later holder accepted and released within the retry's milliseconds,
 * would read the same: released either way.)
 */
async function releasing(write: Promise<unknown>): Promise<ReleaseOutcome> {
  try {
    await write;
    return { released: true };
  } catch (e) {
    if (!conditionFailed(e)) throw e;
    const found = itemAtRefusal<SessionItem>(e);
    if (retriedBySdk(e) && found?.lockToken === undefined) return { released: true };
    return { released: false, found };
  }
}

function premiseOf(premise: SendPremise | undefined): { condition: string; values: Record<string, unknown> } {
  if (premise === undefined) return { condition: '', values: {} };
  if ('lastSendAt' in premise) return { condition: ` AND ${lastSendIs}`, values: { ':sent': premise.lastSendAt } };
  return { condition: ` AND ${quietSince}`, values: { ':cutoff': premise.quietSince } };
}

/**
 * Gives up a held lock, the hint back in accept-next's index at `next` (N4). Key: `key`.
 * Condition: `sessionLockHeld`, AND the `premise` about the last send when one is given.
 * Success: released. Failure: not released, with the item as it was (the lock lost or ran
 * out, or the premise wrong); other errors throw.
 */
export async function releaseSessionLock(
  ctx: SessionStore,
  key: Key,
  eid: string,
  held: HeldLock,
  next: string,
  premise?: SendPremise,
): Promise<ReleaseOutcome> {
  const assumed = premiseOf(premise);
  return releasing(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: 'SET rpk = :q, rsk = :next REMOVE lockToken, lockedUntil, dpk, dsk',
        ConditionExpression: `${sessionLockHeld}${assumed.condition}`,
        ExpressionAttributeValues: { ':slk': held.token, ':now': held.now, ':q': sessionQueuePk(eid), ':next': next, ...assumed.values },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    ),
  );
}

/**
 * Gives up a held lock of a session that holds no message: with state, its hint goes (an
 * update); without, the item goes (a delete) (N1, N5). Key: `key`. Condition:
 * `sessionLockHeld` AND `quietSince` `cutoff` AND `withState` for the update, `noState` for
 * the delete. Success: released. Failure: not released, with the item as it was (the lock
 * lost or ran out, a send came, or the state is not as `hasState` says); other errors throw.
 */
export async function releaseEmptySession(ctx: SessionStore, key: Key, held: HeldLock, cutoff: number, hasState: boolean): Promise<ReleaseOutcome> {
  const values = { ':slk': held.token, ':now': held.now, ':cutoff': cutoff };
  return releasing(
    ctx.db.send(
      hasState
        ? new UpdateCommand({
            TableName: ctx.tableName,
            Key: key,
            UpdateExpression: 'REMOVE rpk, rsk, lockToken, lockedUntil, dpk, dsk',
            ConditionExpression: `${sessionLockHeld} AND ${quietSince} AND ${withState}`,
            ExpressionAttributeValues: values,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          })
        : new DeleteCommand({
            TableName: ctx.tableName,
            Key: key,
            ConditionExpression: `${sessionLockHeld} AND ${quietSince} AND ${noState}`,
            ExpressionAttributeValues: values,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
    ),
  );
}

/**
 * Moves a release's look at a session (its hint) on to `next`, without locking the session
 * (N2): the session held no message when the caller looked. Key: `key`. Condition:
 * `hintUnchanged` (rsk as read) AND `sessionUnlocked` at `now` AND `quietSince` `cutoff` (no
 * send after the one the look is for). Success: true. Failure: false when another acceptor, a
 * lock or a send came meanwhile; other errors throw.
 */
export async function moveSessionLook(ctx: SessionStore, key: Key, seen: string, next: string, now: number, cutoff: number): Promise<boolean> {
  const moved = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: 'SET rsk = :next',
        ConditionExpression: `${hintUnchanged} AND ${sessionUnlocked} AND ${quietSince}`,
        ExpressionAttributeValues: { ':seen': seen, ':next': next, ':now': now, ':cutoff': cutoff },
      }),
    ),
  );
  return moved !== undefined;
}

/**
 * Removes a session at a release's last look, without locking it (N1, N8): it held no message
 * when the caller looked. Key: `key`. Condition: `hintUnchanged` AND `sessionUnlocked` at `now`
 * AND `noState` AND `quietSince` `cutoff` (no send within the grace). Success: true. Failure:
 * false when another acceptor, a lock, state or a send came meanwhile; other errors throw.
 */
export async function deleteLookedSession(ctx: SessionStore, key: Key, seen: string, now: number, cutoff: number): Promise<boolean> {
  const removed = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: key,
        ConditionExpression: `${hintUnchanged} AND ${sessionUnlocked} AND ${noState} AND ${quietSince}`,
        ExpressionAttributeValues: { ':seen': seen, ':now': now, ':cutoff': cutoff },
      }),
    ),
  );
  return removed !== undefined;
}

/**
 * A session's state (N5), read consistently. Key: sessionStateKey(eid, sessionId). No
 * condition. Returns its bytes, or undefined when it has none.
 */
export async function readSessionState(ctx: SessionStore, eid: string, sessionId: string): Promise<Uint8Array | undefined> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: sessionStateKey(eid, sessionId), ConsistentRead: true }));
  return got.Item?.state as Uint8Array | undefined;
}

/** What writing a session's state came to; any other refusal throws. */
export type StateWrite = 'written' | 'lockLost' | 'busy';

/**
 * Sets (or with null clears) a session's state under its lock (N5), in one transaction: the
 * state item put (or deleted), then the session item's `hasState` set (or removed). Keys:
 * sessionStateKey, then sessionKey. Condition: `sessionLockHeld` on the session item. Success:
 * 'written'. Failure: 'lockLost' when the lock's condition failed; 'busy' when the transaction
 * met another write of the session (a renewal in flight) or throttling, nothing written and a
 * retry may pass, unless an earlier attempt may have landed; other errors throw.
 */
export async function writeSessionState(ctx: SessionStore, eid: string, sessionId: string, state: Uint8Array | null, held: HeldLock): Promise<StateWrite> {
  const stateKey = sessionStateKey(eid, sessionId);
  try {
    await ctx.db.send(
      new TransactWriteCommand({
        TransactItems: [
          state ? { Put: { TableName: ctx.tableName, Item: { ...stateKey, sessionId, eid, state } } } : { Delete: { TableName: ctx.tableName, Key: stateKey } },
          {
            Update: {
              TableName: ctx.tableName,
              Key: sessionKey(eid, sessionId),
              UpdateExpression: state ? 'SET hasState = :yes' : 'REMOVE hasState',
              ConditionExpression: sessionLockHeld,
              ExpressionAttributeValues: { ':slk': held.token, ':now': held.now, ...(state ? { ':yes': true } : {}) },
            },
          },
        ],
      }),
    );
    return 'written';
  } catch (e) {
    if (partFailedCondition(cancellationCodes(e), 1)) return 'lockLost';
    // Refused for load or a conflict, nothing written; not so after an attempt that may have
    // landed (outcomes.ts `isStoreBusy`), whose failure stands: a 500, it may have been applied.
    if (isStoreBusy(e)) return 'busy';
    throw e;
  }
}

/** What a listing reads of a session item. */
export type ListedSession = Pick<SessionItem, 'sk' | 'hasState' | 'lastSendAt'>;

/**
 * One page of an entity's session items in id order (N8), `listable` ones only, projected to
 * ListedSession. Key: `pk = sessionsPk(eid)`, sort keys under SESSION_SK_PREFIX. Eventually
 * consistent, `limit` items read at most, from `start`. No condition; returns the page.
 */
export async function listSessionPage(
  ctx: SessionStore,
  eid: string,
  limit: number,
  start?: Record<string, unknown>,
): Promise<{ items: ListedSession[]; next?: Record<string, unknown> }> {
  const page = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: sessionItems,
      FilterExpression: listable,
      ProjectionExpression: 'sk, hasState, lastSendAt',
      ExpressionAttributeValues: { ':pk': sessionsPk(eid), ':s': SESSION_SK_PREFIX },
      Limit: limit,
      ExclusiveStartKey: start,
    }),
  );
  return { items: (page.Items ?? []) as ListedSession[], next: page.LastEvaluatedKey };
}

/**
 * The sweeper looks at a session item again at its (renewed) lock's end (N8). Key: `key`.
 * Condition: `entryUnchanged` (dsk as read) AND lockedUntil still `until`. Success: true.
 * Failure: false when the item changed meanwhile; other errors throw.
 */
export async function postponeSessionSweep(ctx: SessionStore, key: Key, seenDsk: number, until: number): Promise<boolean> {
  const moved = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: 'SET dsk = :until',
        ConditionExpression: `${entryUnchanged} AND lockedUntil = :until`,
        ExpressionAttributeValues: { ':dsk': seenDsk, ':until': until },
      }),
    ),
  );
  return moved !== undefined;
}

/**
 * A session that holds something leaves the sweeper's agenda (N8). Key: `key`. Condition:
 * `entryUnchanged`. Success: true. Failure: false when the item changed meanwhile; other
 * errors throw.
 */
export async function takeSessionOffAgenda(ctx: SessionStore, key: Key, seenDsk: number): Promise<boolean> {
  const left = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: 'REMOVE dpk, dsk',
        ConditionExpression: entryUnchanged,
        ExpressionAttributeValues: { ':dsk': seenDsk },
      }),
    ),
  );
  return left !== undefined;
}

/**
 * Removes a session item that holds nothing (N8). Key: `key`. Condition: `entryUnchanged` AND
 * `sessionUnlocked` at `now` AND `noState` AND `quietSince` `cutoff`. Success: true. Failure:
 * false when a send, a state or a lock came meanwhile; other errors throw.
 */
export async function deleteIdleSession(ctx: SessionStore, key: Key, seenDsk: number, now: number, cutoff: number): Promise<boolean> {
  const removed = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: key,
        ConditionExpression: `${entryUnchanged} AND ${sessionUnlocked} AND ${noState} AND ${quietSince}`,
        ExpressionAttributeValues: { ':dsk': seenDsk, ':now': now, ':cutoff': cutoff },
      }),
    ),
  );
  return removed !== undefined;
}

/**
 * Removes a session item of a deleted entity. Key: `key`. Condition: `ofIncarnation` `eid`.
 * Success: true. Failure: false when the item is gone or not that incarnation's; other errors throw.
 */
export async function deleteOrphanSession(ctx: SessionStore, key: Key, eid: string): Promise<boolean> {
  const removed = await conditionally(
    ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: key, ConditionExpression: ofIncarnation, ExpressionAttributeValues: { ':eid': eid } })),
  );
  return removed !== undefined;
}
