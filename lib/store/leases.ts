/**
 * The positioned layout's receiving side (design.md, "Which way out"): a per-partition claim
 * cursor and one lease item per receive batch, so a lock writes neither the message nor an
 * index. The broker's receive and complete of a positioned queue use it
 * (broker/positioned-receive.ts).
 *
 * - The cursor item (`cursorKey`) holds `pos`, the first position no receive has taken or
 *   passed; `v`, its version, which every write of it insists on; `back`, messages taken back
 *   from lapsed leases and waiting to be taken again, first in line; `tb`, the leases whose
 *   messages went to `back` lately (id and when), so none is taken back twice; and `claim`, the
 *   last claim as its lease is to be written (id, lock end, entries, random part of the
 *   tokens, and `nd` for a claim that hands nothing out until removed), so a receiver that
 *   dies between the cursor write and the lease write is repaired by the next one.
 * - A lease item (`leaseKey`, sorted by its lock end, then its claim id = the cursor version
 *   that made it) holds
 *   its entries `e` ([position, take-backs] each), `until` (the lock end), `r` and `nd` as its
 *   record does, with a TTL `LEASE_TTL_MS` past `until`.
 * - R3: a message's delivery count is its take-backs `g` less `ug`, those of them that were of
 *   an `nd` claim (nothing handed out), plus one (`deliveryCountAt`). `g` still rises on every
 *   take-back, since it fences completes; `ug` rises in the take-back of an `nd` lease, in
 *   the same write, so no normal path writes more, and ahead of the take-back for a message a
 *   claim took but did not hand out: one it took only to remove, when the removal was refused,
 *   and every one of a claim or a receive that failed after the cursor write
 *   (`markUndelivered`, `markClaimUndelivered`), on the failure path only.
 * - A message's lock token names its sequence number (position and partition), its take-backs,
 *   its lease's lock end and claim (`leaseToken`). A complete deletes the message if it has been taken back exactly as often
 *   as the token says (`completeAtPosition`); a take-back is the one write of a message after
 *   its put (`takeBackMessage`), so a lapsed holder's complete fails once anyone else may
 *   hold it.
 *
 * A claim (`claim`) reads the cursor (consistently) and the partition's lapsed leases, repairs
 * the last claim's lease, takes back lapsed leases' messages, finds the head (positions.ts),
 * and writes the cursor conditioned on the version it read; only then the lease, and the
 * clean-up.
 * Any write between its reads and its cursor write changes the version, so it loses the race
 * and starts again: each position, and each taken-back message at each take-back count, is
 * claimed at most once.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { backoff } from '../backoff.js';
import { guidOf, sequenceOfLockToken } from '../messages/lock-token.js';
import {
  cursorKey,
  lapsedLeasesBound,
  LEASE_PK_PREFIX,
  leaseKey,
  leasePk,
  padPosition,
  padTime,
  parsePositionedPk,
  positionCounterKey,
  positionKey,
  positionOfSk,
} from './keys.js';
import { isPositionedSeq, positionedSeq, positionOfSeq } from './sequence.js';
import {
  cancellationCodes,
  conditionFailed,
  conditionally,
  isConditionFailure,
  isStoreBusy,
  itemAtRefusal,
  mayHaveLanded,
  partFailedCondition,
  refusedItsOwnDelete,
  refusedItsOwnPut,
  sameItem,
} from './outcomes.js';
import { deletePassed, doneMarker, findHead, HOLE_AFTER_MS, readPosition, type PositionedItem, type PositionStore, type Removal } from './positions.js';
import { queryAll } from './query.js';
import { readBack, UNREAD } from './read-back.js';
import { counterView, type Ticket } from './ticket-counter.js';

/** A claimed message: its position and how often it had been taken back when claimed. */
export type Entry = [position: number, takeBacks: number];

/** The last claim, as the cursor records it. */
export interface ClaimRecord {
  id: number;
  until: number;
  e: Entry[];
  r: string;
  /** Set when the claim hands nothing out until removed (`ClaimOptions.undelivered`): a take-back of it is no delivery. */
  nd?: 1;
}

export interface CursorItem {
  pk: string;
  sk: string;
  pos: number;
  v: number;
  back?: Entry[];
  /** Leases taken back lately: [id, when]. */
  tb?: [number, number][];
  claim?: ClaimRecord;
  /**
   * Positions of a void request's landed messages the last claim passed (S1: never delivered),
   * which it deletes after its write: should it die first, the next claim deletes them before
   * its own write, which drops them.
   */
  vd?: number[];
}

export interface LeaseItem {
  pk: string;
  sk: string;
  id: number;
  until: number;
  e: Entry[];
  r: string;
  /** As its record (`ClaimRecord.nd`). */
  nd?: 1;
  /** Being taken back (`markTakingBack`): no renew moves an entry out of it any more. */
  tk?: 1;
  ttl: number;
}

/**
 * A lease stays this long past its lock end before DynamoDB's TTL removes it, free. A lease
 * whose messages are all settled needs nothing more; one with messages left must be taken back
 * before then (the next claim of its partition does it; step 2 makes the stream's view of the
 * TTL removal take back what is left, for a partition nobody receives from for this long).
 * Also the latest a lease is repaired from the cursor's record.
 */
export const LEASE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * How long a taken-back lease is kept in the cursor's `tb` at least: how late a write of the
 * lease can still land after its take-back. The claimer sends its lease write only before the
 * lock's end (`writeLease`), and a take-back comes at the end or later, so the write lands
 * within the longest function timeout (5 minutes, the workers; the api's is 29 s) of the
 * take-back; the repair's write is conditioned on the cursor it read (`repairLease`), which a
 * take-back changes, so it never lands after one; and a stale read of the lapsed leases lags by
 * far less. Twice the longest timeout: a cursor keeps the take-backs of 10 minutes (R6), not of
 * a day, so every claim's cursor write stays small. An entry older than this is dropped only
 * by a claim whose consistent read shows its lease gone (`claim`, step 1). The template is held
 * to it: test/infra/lease-keep.test.ts fails once a function's timeout passes half of it.
 */
export const TAKEN_BACK_KEEP_MS = 10 * 60 * 1000;

/** A claim's first position is 1: the counter's first draw (positions.ts). */
const FIRST_POSITION = 1;

/*
 * A lock token is a GUID (lock-token.ts `LOCK_TOKEN_PATTERN`): its first 64 bits are the
 * message's sequence number (`positionedSeq`: position and partition), so `sequenceOfLockToken`,
 * `partitionOfSeq` and `isPositionedSeq` read it as they read any token. The other 64 bits say
 * what a settlement needs without a read: a top bit set, which no other token has (lock-token.ts
 * keeps it clear), so a token says whether a lease holds its lock even where a positioned number's
 * message sits in today's layout (deferred, or a dead letter); the take-back count the complete's
 * condition insists on (27 bits), the second the lease's lock ended when it was claimed (28 bits, modulo about 8.5
 * years: `lockEndOfToken` reads it back from the clock), and the claim id's low 8 bits, which
 * tell the lease from others of that second (`leaseOfTokenIn`). Each delivery's token is its
 * own (a position is claimed once per take-back count), but not secret: the complete's delete
 * can check only what the message item holds, and the claim writes nothing there.
 */
const TAKE_BACK_BITS = 27n;
const LEASE_MARK = 1n << 63n;
const LOCK_END_BITS = 28n;
const CLAIM_ID_BITS = 8n;
const mask = (bits: bigint) => (1n << bits) - 1n;
/** A lock end is stated to the second; a lock lasts at most 5 minutes, so one a token states lies no later than this past now. */
const LOCK_END_AHEAD_S = 3600;

const tokenTail = (token: string) => BigInt(`0x${token.replace(/-/g, '').slice(16)}`);

/** The lock token of a claimed message of `lease` (whose key names its partition): its number, its take-backs, its lock end and claim. */
export function leaseToken(lease: Pick<LeaseItem, 'pk' | 'id' | 'until'>, entry: Entry): string {
  const partition = parsePositionedPk(lease.pk.slice(LEASE_PK_PREFIX.length))?.partition ?? 0;
  const seq = positionedSeq(entry[0], partition);
  const tail =
    LEASE_MARK |
    ((BigInt(entry[1]) & mask(TAKE_BACK_BITS)) << (LOCK_END_BITS + CLAIM_ID_BITS)) |
    ((BigInt(Math.floor(lease.until / 1000)) & mask(LOCK_END_BITS)) << CLAIM_ID_BITS) |
    (BigInt(lease.id) & mask(CLAIM_ID_BITS));
  return guidOf(seq.toString(16).padStart(16, '0') + tail.toString(16).padStart(16, '0'));
}

/** The position and take-backs a lock token names. */
export function entryOfToken(token: string): Entry {
  return [positionOfSeq(sequenceOfLockToken(token)), Number((tokenTail(token) >> (LOCK_END_BITS + CLAIM_ID_BITS)) & mask(TAKE_BACK_BITS))];
}

/** Whether a lease holds the lock `token` names (`leaseToken`), rather than the message item in today's layout. */
export const isLeaseToken = (token: string): boolean => isPositionedSeq(sequenceOfLockToken(token)) && (tokenTail(token) & LEASE_MARK) !== 0n;

/** The low bits of the claim id of the lease a token was handed out under. */
export const claimIdOfToken = (token: string): number => Number(tokenTail(token) & mask(CLAIM_ID_BITS));

/**
 * The lock end a token states, to the second below (ms), as `now` places it: the latest instant
 * of its second modulo the token's range that is not more than `LOCK_END_AHEAD_S` ahead of now.
 * A lock ends no earlier than this, unless renewed (then later).
 */
export function lockEndOfToken(token: string, now: number): number {
  const stated = Number((tokenTail(token) >> CLAIM_ID_BITS) & mask(LOCK_END_BITS));
  const range = Number(1n << LOCK_END_BITS);
  const latest = Math.floor(now / 1000) + LOCK_END_AHEAD_S;
  const second = latest - ((((latest - stated) % range) + range) % range);
  return second * 1000;
}

const leaseOf = (partitionPk: string, claim: ClaimRecord): LeaseItem => ({
  ...leaseKey(partitionPk, claim.until, claim.id),
  id: claim.id,
  until: claim.until,
  e: claim.e,
  r: claim.r,
  ...(claim.nd ? { nd: claim.nd } : {}),
  ttl: Math.ceil((claim.until + LEASE_TTL_MS) / 1000),
});

/**
 * Reads a partition's cursor. Key: `cursorKey(partition pk)`. No condition; consistent, since
 * its version is what the next write insists on. Returns it, or a fresh cursor (version 0) when
 * the partition never had one.
 */
export async function readCursor(ctx: PositionStore, partitionPk: string): Promise<CursorItem> {
  return ((await readItemConsistently(ctx, cursorKey(partitionPk))) as CursorItem | undefined) ?? { ...cursorKey(partitionPk), pos: FIRST_POSITION, v: 0 };
}

/** One item read consistently, as it is stored: for a cursor's read and a write's read-back. */
async function readItemConsistently(ctx: PositionStore, key: { pk: string; sk: string }): Promise<Record<string, unknown> | undefined> {
  return (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: true }))).Item;
}

/** A ticketed partition's cursor position: past every position, so a cursor claim takes only `back` (tickets.ts). */
export const TICKETED = Number.MAX_SAFE_INTEGER;

/**
 * What every write that queues into a ticketed partition's `back` adds to the counter item, in
 * that same write (ticket-back.ts: a take's returned counter says whether `back` may hold anything).
 */
export const BACK_QUEUED_ADD = 'ADD bq :bqOne';
export const BACK_QUEUED_VALUES = { ':bqOne': 1 } as const;

/**
 * The cursor as a reader of positions sees it (peek, counts, `partitionIsEmpty`): on a ticketed
 * partition its `pos` is `TICKETED`, past every position, so the head is the counter's `taken`
 * plus one and the positions below it are held (by a ticket, or in `back`) or settled (a `done`
 * marker); `tickets` counts the tickets in flight. Any other partition's cursor as read, with no
 * tickets. Keys: `cursorKey`, then `positionCounterKey` only when ticketed. No condition; both
 * consistent. Errors throw.
 */
export async function readHeadCursor(ctx: PositionStore, partitionPk: string): Promise<HeadCursor> {
  const cursor = await readCursor(ctx, partitionPk);
  if (cursor.pos !== TICKETED) return { ...cursor, tickets: 0 };
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk), ConsistentRead: true }));
  const view = counterView(out.Item);
  const now = ctx.clock.now();
  const range = (t: Ticket): [number, number] => [t.first, t.first + t.count - 1];
  const undelivered = view.tickets.filter((t) => t.nd).map(range);
  const lapsed = view.tickets.filter((t) => !t.nd && t.until <= now).map((t): LapsedEntry => [...range(t), [t.id, t.o ?? NaN]]);
  return { ...cursor, pos: view.taken + 1, tickets: view.tickets.length, undelivered, lapsed };
}

/** A lapsed ticket's entry that handed out: its first and last positions, and the ids a take-back of it marks messages with (`gl`: its own, and the ticket it was split from, NaN when none). */
type LapsedEntry = [number, number, number[]];

/**
 * `readHeadCursor`'s answer: the cursor, the tickets in flight, the positions of entries
 * that hand nothing out (`nd`: a ticket given back, R10), first to last, which wait for their
 * next delivery like `back` (R3), and the lapsed entries that handed out, whose messages a
 * take-back may have marked before it queued them (tickets.ts `takeBackTickets`, steps 3 and 4).
 */
export type HeadCursor = CursorItem & { tickets: number; undelivered?: [number, number][]; lapsed?: LapsedEntry[] };

/**
 * Reads a partition's leases lapsed by `lapsedBy` (a claim's look), or all of them (tests).
 * Key: `leasePk(partition pk)`, sort keys up to `lapsedLeasesBound(lapsedBy)`. No condition.
 * The claim's look is eventually consistent and finds nothing (half a unit) while no lease has
 * lapsed: a lease a stale read misses is taken back by a later claim, and one it shows after
 * its delete is in the cursor's `tb` (taken back) or has no message left (settled). `consistent`:
 * a claim about to drop an entry from `tb` must not be shown its lease gone while it is there.
 */
export const readLeases = (ctx: PositionStore, partitionPk: string, lapsedBy?: number, consistent = false): Promise<LeaseItem[]> =>
  queryAll<LeaseItem>(ctx, {
    KeyConditionExpression: lapsedBy === undefined ? 'pk = :pk' : 'pk = :pk AND sk <= :upTo',
    ExpressionAttributeValues: { ':pk': leasePk(partitionPk), ...(lapsedBy === undefined ? {} : { ':upTo': lapsedLeasesBound(lapsedBy) }) },
    ConsistentRead: lapsedBy === undefined || consistent,
  });

/**
 * Whether a claim's lease was written. Key: `leaseKey` of the record. No condition; eventually
 * consistent: while the record is the cursor's last claim its lease is deleted only with
 * nothing left to hold (a take-back of it writes the cursor first; `deleteSettledLease` once
 * every message is completed), so a stale "absent" costs only the repair's look at the
 * record's messages and a write whose condition then fails, and a stale "present" only skips
 * a write that nothing needs.
 */
export async function leaseWritten(ctx: PositionStore, partitionPk: string, claim: ClaimRecord): Promise<boolean> {
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: leaseKey(partitionPk, claim.until, claim.id) }));
  return out.Item !== undefined;
}

/**
 * The claimer writes its claim's lease from its record, after its cursor write. Key:
 * `leaseKey(partition pk, lock end, claim id)`. Condition: `attribute_not_exists(pk)`. Not
 * sent once the lock has ended: sent before, it lands within a function timeout of the end, so
 * before the lease's take-back leaves `tb` (`TAKEN_BACK_KEEP_MS`); a lease not written is
 * written by the next claim from the record (`repairLease`). Success: 'written'; 'there' when
 * it was there already (a repairing receiver writes it from the same record); 'late' when not
 * sent. Other errors throw.
 */
export async function writeLease(ctx: PositionStore, partitionPk: string, claim: ClaimRecord): Promise<'written' | 'there' | 'late'> {
  if (ctx.clock.now() >= claim.until) return 'late';
  const out = await conditionally(
    ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: leaseOf(partitionPk, claim), ConditionExpression: 'attribute_not_exists(pk)' })),
  );
  return out !== undefined ? 'written' : 'there';
}

/**
 * A settlement's repair of the lease its token was handed out under, which its claimer did not
 * write (refused for load: `claim` hands the messages out anyway, its record durable in the
 * cursor) and no claim has written since; without it an abandon or a renew under a valid lock
 * would answer MessageLockLost. Reads the cursor consistently (key `cursorKey`); when its last
 * claim's record holds the token (its entry, claim id and lock-end second) and has not ended,
 * writes the lease from it (`repairLease`: conditioned on the cursor as read, so a take-back
 * that moved on is never undone, R6). A record whose lease a batch complete deleted settled
 * is written again only if a settlement comes under one of its tokens, a message completed
 * already; the lapse then finds nothing and deletes it. Returns the lease, or undefined: the
 * record does not hold the token (taken back, or a later claim replaced the record after
 * repairing it), the lock ended, or the repair was refused ('moved', 'busy').
 */
export async function repairLeaseOfToken(ctx: PositionStore, partitionPk: string, token: string): Promise<LeaseItem | undefined> {
  const cursor = await readCursor(ctx, partitionPk);
  const record = cursor.claim;
  const now = ctx.clock.now();
  if (!record || record.until <= now || Math.floor(record.until / 1000) * 1000 !== lockEndOfToken(token, now) || !leaseHoldsToken(record, token))
    return undefined;
  const repaired = await repairLease(ctx, cursor, partitionPk, record);
  return repaired === 'written' || repaired === 'there' ? leaseOf(partitionPk, record) : undefined;
}

/**
 * The repair: writes the lease of the cursor's last claim, which its claimer did not, as long
 * as the cursor is still as read. One TransactWriteItems: a ConditionCheck of the cursor
 * (key: `cursorKey`; condition: `v = :v`, the version read) and a Put of the lease (key:
 * `leaseKey`; condition: `attribute_not_exists(pk)`). The cursor condition is what lets `tb`
 * forget a take-back after minutes (`TAKEN_BACK_KEEP_MS`): a repair may land long after its
 * read, and once the cursor moved on (a take-back of this lease writes it) the lease must not
 * come back (R6: taken back twice, it would be handed out under two locks). Not sent once
 * the lease would be past `LEASE_TTL_MS / 2` (its TTL removal is near). Success: 'written', or
 * 'there' when the lease was written already or is too late to write. Failure: 'moved' when
 * the cursor changed (the caller's cursor write fails too); 'busy' when refused for load or a
 * conflict (nothing written). Other errors throw. The rare crash path: its double write units
 * do not matter.
 */
export async function repairLease(
  ctx: PositionStore,
  cursor: Pick<CursorItem, 'pk' | 'sk' | 'v'>,
  partitionPk: string,
  record: ClaimRecord,
): Promise<'written' | 'there' | 'moved' | 'busy'> {
  if (ctx.clock.now() > record.until + LEASE_TTL_MS / 2) return 'there';
  try {
    await ctx.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: ctx.tableName,
              Key: { pk: cursor.pk, sk: cursor.sk },
              ConditionExpression: 'v = :v',
              ExpressionAttributeValues: { ':v': cursor.v },
            },
          },
          { Put: { TableName: ctx.tableName, Item: leaseOf(partitionPk, record), ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
      }),
    );
    return 'written';
  } catch (e) {
    const codes = cancellationCodes(e);
    if (partFailedCondition(codes, 0)) return 'moved';
    if (partFailedCondition(codes, 1)) return 'there';
    if (isStoreBusy(e)) return 'busy';
    throw e;
  }
}

/**
 * Deletes a lapsed lease whose messages were taken back or settled. Key: the lease's. No
 * condition (a lease is never rewritten under its key). Success: resolves, also when it was gone.
 */
export async function deleteLease(ctx: PositionStore, lease: Pick<LeaseItem, 'pk' | 'sk'>): Promise<void> {
  await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: { pk: lease.pk, sk: lease.sk } }));
}

/** The message has been taken back exactly `:g` times (never, when `:g` is 0). */
export const takenBackTimes = (g: number) => (g === 0 ? 'attribute_not_exists(g)' : 'g = :g');

/**
 * R3: the delivery count of a hand-out of `item` at take-back count `g` (the item as read at
 * that count): one more than its take-backs that followed a delivery. A take-back of a claim
 * that handed nothing out (`ug`, raised with `g` by `takeBackMessage` for an `nd` lease) counts none.
 */
export const deliveryCountAt = (item: Pick<PositionedItem, 'ug'>, g: number): number => g - (item.ug ?? 0) + 1;

/**
 * R8: the delivery count a peek shows of `item`, read beside the partition's cursor: its
 * deliveries so far, a lease's current one included, as a peek of today's layout shows a locked
 * message's. Below the cursor, a message that still exists and is not queued back (`back`) is
 * held under a lease (a complete deletes it) or a ticket, unless the ticket hands nothing out
 * (`undelivered`) or the cursor's last claim holds it without handing it out (its record's
 * `nd`: a receive-and-delete that failed to remove it) or took it back and has not queued it
 * yet (`gl` its id: a release cut short), or its ticket lapsed and a take-back
 * marked it (`gl`) without queuing it yet (a take-back cut short by a conflict or a crash: its
 * count is the next delivery's already); anything else waits for its next delivery.
 */
export function peekedDeliveryCount(
  item: Pick<PositionedItem, 'sk' | 'g' | 'ug' | 'gl'>,
  cursor: Pick<HeadCursor, 'pos' | 'back' | 'undelivered' | 'lapsed' | 'claim'>,
): number {
  const position = positionOfSk(item.sk);
  const within = ([first, last]: readonly [number, number, ...unknown[]]) => first <= position && position <= last;
  const g = item.g ?? 0;
  // The cursor's last claim: holding it without handing it out (`nd`), or taken back for it (`gl`) and not yet queued.
  const record = cursor.claim;
  const recordedAt = record?.e.find(([p]) => p === position)?.[1];
  const notHeldByRecord =
    record !== undefined && recordedAt !== undefined && ((record.nd === 1 && g === recordedAt) || (g === recordedAt + 1 && item.gl === record.id));
  const held =
    position < cursor.pos &&
    !(cursor.back ?? []).some(([p]) => p === position) &&
    !(cursor.undelivered ?? []).some(within) &&
    !notHeldByRecord &&
    !(cursor.lapsed ?? []).some((e) => within(e) && g > 0 && item.gl !== undefined && e[2].includes(item.gl));
  return deliveryCountAt(item, g) - (held ? 0 : 1);
}

/**
 * Takes a message of a lapsed lease back: `g` one more, so a complete under the lapsed lock
 * fails from now on, and `gl` the lease's id; for a lease that handed nothing out (`nd`),
 * `undelivered` is the message's `ug` as read at the entry's count plus one, set in the same
 * write (a value, not an increment, so two take-backs of the same lease at once agree: `ug`
 * changes only with `g`). Key: `positionKey(partition pk, position)`.
 * Condition: the message exists and `takenBackTimes(entry's count)`, or has been taken back
 * for this lease already (`g` is one more and `gl` is this lease: another receiver taking the
 * same lease back at once, or one that died before its cursor write; only one cursor write can
 * queue it). `gl` tells that from a message put back in line otherwise (an abandon, which
 * removes `gl`), or held at that count by another lease too (a renew's lease of its own,
 * lease-settlements.ts): those were queued by another write, and queuing them again would
 * hand them out twice. Success: true. Failure: false when it was completed, or taken back
 * further. Other errors throw.
 */
export async function takeBackMessage(ctx: PositionStore, partitionPk: string, entry: Entry, leaseId: number, undelivered?: number): Promise<boolean> {
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: positionKey(partitionPk, entry[0]),
        ConditionExpression: `attribute_exists(pk) AND (${takenBackTimes(entry[1])} OR (g = :next AND gl = :lease))`,
        UpdateExpression: `SET g = :next, gl = :lease${undelivered !== undefined ? ', ug = :ug' : ''}`,
        ExpressionAttributeValues: {
          ':next': entry[1] + 1,
          ':lease': leaseId,
          ...(entry[1] > 0 ? { ':g': entry[1] } : {}),
          ...(undelivered !== undefined ? { ':ug': undelivered } : {}),
        },
      }),
    ),
  );
  return out !== undefined;
}

/**
 * R3 for a message a claim took and did not hand out: one it took only to remove (expired,
 * T4/T6; past its last delivery, D2) when the removal was refused (load, conflicts), or one
 * of a claim or a receive that failed before its answer (`markClaimUndelivered`). The take-back
 * at its lease's lapse then counts no delivery, as an `nd` lease's does: `ug` one more
 * now, as a value (the `ug` the claim read plus one), so a retried write applies once. Key:
 * `positionKey(partition pk, position)`. Condition: the message exists, is still at the
 * entry's take-back count (`takenBackTimes`: not taken back since the claim) and has the `ug`
 * the claim read. Success: true. Failure: false when it was removed, taken back or marked
 * meanwhile (a take-back first counts the delivery, as before). Other errors throw. Only for a
 * lease without `nd` (whose take-back raises `ug` itself).
 */
export async function markUndelivered(ctx: PositionStore, partitionPk: string, entry: Entry, claimedUg: number): Promise<boolean> {
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: positionKey(partitionPk, entry[0]),
        ConditionExpression: `attribute_exists(pk) AND ${takenBackTimes(entry[1])} AND ${claimedUg === 0 ? 'attribute_not_exists(ug)' : 'ug = :was'}`,
        UpdateExpression: 'SET ug = :ug',
        ExpressionAttributeValues: {
          ':ug': claimedUg + 1,
          ...(entry[1] > 0 ? { ':g': entry[1] } : {}),
          ...(claimedUg > 0 ? { ':was': claimedUg } : {}),
        },
      }),
    ),
  );
  return out !== undefined;
}

/**
 * R3 for messages a claim without `nd` took and its caller did not hand out (a claim that
 * throws after its cursor write, a receive that fails before its answer): `markUndelivered`
 * of each, side by side, so the lapse of their lease counts no delivery for them. Keys: each
 * message's `positionKey`, from its token. Condition: `markUndelivered`'s (still at the
 * token's take-back count, with the `ug` the claim read), so a message removed, taken back or
 * marked since is left as it is. Free on the success path, one conditional write a message on
 * the failure path. Success and failure alike resolve (best effort): a mark refused or failing
 * leaves the delivery counted at the lapse, as when the receiver dies outright (Service Bus
 * counts a delivery whenever a lock it took expires). Never for a message that was handed
 * out: its delivery would then go uncounted.
 */
export async function markClaimUndelivered(
  ctx: PositionStore,
  partitionPk: string,
  messages: readonly Pick<Claim['messages'][number], 'item' | 'token'>[],
): Promise<void> {
  await Promise.all(messages.map((m) => markUndelivered(ctx, partitionPk, entryOfToken(m.token), m.item.ug ?? 0).catch(() => false)));
}

/** What a complete came to. */
export type CompleteOutcome = 'completed' | 'lockLost';

/**
 * Completes a claimed message: deletes it, or on a ticketed partition (`removal` 'marker')
 * replaces it by its `done` marker (positions.ts `doneMarker`, billed as the delete). Key: the
 * position the token names. Condition: the message exists, is no tombstone nor marker, and
 * `takenBackTimes(the token's count)`: not taken back since the claim. Touches nothing else (no
 * lease, no index): one write unit for a 1 KB item.
 * Success: 'completed'. Failure: 'lockLost' when completed already, or taken back after its
 * lease lapsed. Other errors throw, but one that may have come after the removal landed (every
 * answer lost) reads the position back first (`readBack`): gone, or holding this very marker,
 * it is 'completed'. A complete after the lease's lock end but before a take-back
 * would still succeed here: the broker asks `lockEndOfLease` first once the token's stated lock
 * end has passed (R5).
 */
export async function completeAtPosition(ctx: PositionStore, partitionPk: string, token: string, removal: Removal = 'delete'): Promise<CompleteOutcome> {
  const [position, g] = entryOfToken(token);
  const guard = {
    // A `done` marker (a ticketed partition's completed message) has no `g`: it must not pass for the message at count 0.
    ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(tomb) AND attribute_not_exists(done) AND ${takenBackTimes(g)}`,
    ...(g > 0 ? { ExpressionAttributeValues: { ':g': g } } : {}),
  };
  if (removal === 'delete') {
    try {
      await ctx.db.send(
        new DeleteCommand({ TableName: ctx.tableName, Key: positionKey(partitionPk, position), ...guard, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
      );
      return 'completed';
    } catch (e) {
      // The SDK's retry of this very delete after it landed finds the message gone: only the
      // holder at this take-back count removes it (R4; outcomes.ts `refusedItsOwnDelete`).
      if (refusedItsOwnDelete(e)) return 'completed';
      if (isConditionFailure(e)) return 'lockLost';
      // Every answer lost: gone is this delete's doing, as a refusal at a retry is.
      if (mayHaveLanded(e) && (await readPositionBack(ctx, partitionPk, position)) === undefined) return 'completed';
      throw e;
    }
  }
  const marker = doneMarker(ctx, partitionPk, position);
  try {
    await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: marker, ...guard, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
    return 'completed';
  } catch (e) {
    // The SDK's retry of this very put after it landed meets the marker it wrote (R4).
    if (refusedItsOwnPut(e, marker)) return 'completed';
    if (isConditionFailure(e)) return 'lockLost';
    if (mayHaveLanded(e) && sameItem(await readPositionBack(ctx, partitionPk, position), marker)) return 'completed';
    throw e;
  }
}

/**
 * A position read back after a removal failed in a way that may have come after it landed (every
 * answer lost: `mayHaveLanded`), 1 read unit on that path only. A receive-and-delete hands out
 * only what it removed, so a removal that landed unseen would lose its message (R10). A read
 * left unanswered (read-back.ts, asked again while refused for load) is `UNREAD`, neither "gone"
 * nor the marker: the removal's error stands.
 */
async function readPositionBack(ctx: PositionStore, partitionPk: string, position: number): Promise<PositionedItem | typeof UNREAD | undefined> {
  return readBack(ctx, () => readPosition(ctx, partitionPk, position));
}

/** Whether a lease (or the claim record it is written from) holds `entry`: its message at that take-back count. */
const holds = (e: readonly Entry[], entry: Entry) => e.some(([p, g]) => p === entry[0] && g === entry[1]);

/** A lease as a holder of tokens: a renewal's own lease keeps the claim id its token names as `o`. */
export type HoldingLease = Pick<LeaseItem, 'id' | 'e'> & { o?: number };

/** Whether `lease` holds the message `token` was handed out under: its entry, under the claim the token names. */
export const leaseHoldsToken = (lease: HoldingLease, token: string): boolean =>
  (BigInt(lease.o ?? lease.id) & mask(CLAIM_ID_BITS)) === BigInt(claimIdOfToken(token)) && holds(lease.e, entryOfToken(token));

/**
 * When the lock a token was handed out under ends, as its lease says now: the one place that
 * reads a lock's end from a lease, so a renewal (which extends it) is taught here.
 */
export const lockEndIn = (lease: Pick<LeaseItem, 'until'>): number => lease.until;

/**
 * The lock end of the lease `token` was handed out under, for a settlement whose token's
 * stated lock end has passed (R5). Reads, consistently (a renewal just made must show): the
 * leases of the partition ending in the second the token states (`leasePk`, sort keys of that
 * second; one or a few small items, 1 read unit), the one whose claim id has the token's low
 * bits and holds its entry; when that second holds no lease of the claim, the cursor (its last
 * claim, whose lease the claimer may have failed to write); when the claim's lease no longer
 * holds the entry, every lease of the partition (a renewal moved it to a lease of its own).
 * No condition, no write. Returns the lock end, or
 * undefined when no lease holds the token's message any more (settled, taken back, or never).
 */
export async function lockEndOfLease(ctx: PositionStore, partitionPk: string, token: string, now: number): Promise<number | undefined> {
  const second = lockEndOfToken(token, now);
  const ours = (c: HoldingLease) => leaseHoldsToken(c, token);
  // A lease's key keeps the lock end it was claimed with (the Query's range); a renewal may move its `until`.
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': leasePk(partitionPk), ':from': `${padTime(second)}/`, ':to': `${padTime(second + 999)}/~` },
      ConsistentRead: true,
    }),
  );
  const claimed = ((out.Items ?? []) as LeaseItem[]).filter((l) => (BigInt(l.id) & mask(CLAIM_ID_BITS)) === BigInt(claimIdOfToken(token)));
  const lease = claimed.find(ours);
  if (lease) return lockEndIn(lease);
  // No lease of the claim: its claimer died before writing it, and the cursor's record is the lease.
  if (claimed.length === 0) {
    const last = (await readCursor(ctx, partitionPk)).claim;
    if (last && ours(last) && Math.floor(last.until / 1000) * 1000 === second) return lockEndIn(last);
  }
  // A renewal gave the message a lease of its own (lease-settlements.ts `renewAtPosition`), keyed
  // by its new lock end: the partition's leases, consistently (only settlements past the lock end
  // their token states, and not found above, pay it). Held by two after a renewal that died
  // between its writes, the lock ends with the first to lapse, which takes it back.
  const all: (LeaseItem & HoldingLease)[] = await readLeases(ctx, partitionPk);
  const holding = all.filter(ours);
  return holding.length > 0 ? Math.min(...holding.map(lockEndIn)) : undefined;
}

/**
 * Whether a partition holds nothing a claim could ever hand out, for a receive about to clear
 * its ready mark: its cursor (read consistently) has nothing queued in `back`, nothing sits at
 * or past the cursor (message or tombstone: a Query of one item, eventually consistent, as a
 * receive's head is read), and it has no lease at all (one Query of one item: a message in
 * flight comes back when its lease lapses, so a partition with one is not empty). On a ticketed
 * partition the cursor is `readHeadCursor`'s (the head past the counter's `taken`, one more
 * read) and a ticket in flight counts as a lease. Keys:
 * `cursorKey`, the partition's positions from the cursor, `leasePk`. No condition, no write.
 */
export async function partitionIsEmpty(ctx: PositionStore, partitionPk: string): Promise<boolean> {
  const one = (pk: string, from?: string) =>
    ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: from === undefined ? 'pk = :pk' : 'pk = :pk AND sk >= :from',
        ExpressionAttributeValues: { ':pk': pk, ...(from === undefined ? {} : { ':from': from }) },
        Limit: 1,
      }),
    );
  const [cursor, leases] = await Promise.all([readHeadCursor(ctx, partitionPk), one(leasePk(partitionPk))]);
  // R2: a ticket in flight holds messages (or a hole it may give back) as a lease does.
  if ((cursor.back ?? []).length > 0 || (leases.Items ?? []).length > 0 || cursor.tickets > 0) return false;
  return ((await one(partitionPk, padPosition(cursor.pos))).Items ?? []).length === 0;
}

/**
 * Reads the messages at `positions` consistently (a take-back must not trust a stale replica
 * about what is left): one Query of their range, as many items as there are positions, then
 * by key what lies past where it stopped. No condition. Returns what is there by position.
 */
async function readPositions(ctx: PositionStore, partitionPk: string, positions: readonly number[]): Promise<Map<number, PositionedItem>> {
  const found = new Map<number, PositionedItem>();
  if (positions.length === 0) return found;
  const sorted = [...positions].sort((a, b) => a - b);
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lowest AND :highest',
      ExpressionAttributeValues: { ':pk': partitionPk, ':lowest': padPosition(sorted[0]!), ':highest': padPosition(sorted.at(-1)!) },
      ConsistentRead: true,
      Limit: sorted.length,
    }),
  );
  for (const item of (out.Items ?? []) as PositionedItem[]) found.set(positionOfSk(item.sk), item);
  const stop = out.LastEvaluatedKey ? positionOfSk(String(out.LastEvaluatedKey.sk)) : Infinity;
  for (const p of sorted.filter((q) => q > stop)) {
    const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionKey(partitionPk, p), ConsistentRead: true }));
    if (got.Item) found.set(p, got.Item as PositionedItem);
  }
  return found;
}

/**
 * The entries of a lapsed lease to put back in line, each with its new take-back count: its
 * messages still there, taken back now (`takeBackMessage`), or found taken back once already
 * by a take-back that died or lost before its cursor write, or runs beside this one (the lease
 * is not in the cursor's `tb` at the version the caller read, and a take-back that did reach
 * the cursor changed that version, so the caller's cursor write would fail). A message
 * completed meanwhile is left out.
 */
async function takeBackLease(ctx: PositionStore, partitionPk: string, lease: LeaseItem, fromRecord = false): Promise<Entry[]> {
  let current: LeaseItem | undefined = lease;
  // Each refusal of the mark is a renew that moved an entry out, so this ends.
  for (let attempt = 0; current && attempt <= current.e.length; attempt++) {
    const there = await readPositions(
      ctx,
      partitionPk,
      current.e.map((e) => e[0]),
    );
    const id = current.id;
    // Read at g + 1 by this lease already: taken back for it by a receiver that lost or died;
    // else to be taken back now, unless completed meanwhile.
    const already = ([position, g]: Entry) => there.get(position)?.g === g + 1 && there.get(position)?.gl === id;
    const held = ([position, g]: Entry) => (there.get(position)?.g ?? 0) === g;
    const left = current.e.filter((e) => there.get(e[0]) !== undefined && !there.get(e[0])!.tomb && (already(e) || held(e)));
    if (left.length > 0 && current.tk === undefined) {
      const marked = await markTakingBack(ctx, current);
      // No lease item for a claim's own record (`fromRecord`): its write was refused or never
      // sent, so no renew can have read it, and it is taken back as the record says. Read as
      // gone instead, its messages were left in no lease and not in `back`: lost (R6).
      if (marked === undefined && fromRecord) current = { ...current, tk: 1 };
      else if (marked !== 'marked') {
        current = marked;
        continue;
      }
    }
    const back: Entry[] = [];
    for (const [position, g] of left) {
      // R3: a lease that handed nothing out counts no delivery for its take-back.
      const undelivered = current.nd ? (there.get(position)!.ug ?? 0) + 1 : undefined;
      // Taken back by another at once is accepted by the condition: both would queue it, and only one cursor write can succeed.
      if (already([position, g]) || (await takeBackMessage(ctx, partitionPk, [position, g], id, undelivered))) back.push([position, g + 1]);
    }
    return back;
  }
  if (current) throw new Error(`takeBackLease: the lease ${current.sk} of ${partitionPk} kept changing`);
  return []; // gone: taken back and deleted by another claim, or settled
}

/**
 * Marks a lapsed lease (or one released early) as being taken back, before any of its messages
 * is: `tk`, so a renew that read the lease before it lapsed can no longer move an entry out of
 * it (lease-settlements.ts `dropEntry`). Without it, a renew landing after a take-back raised a
 * message's count but died before its cursor write would leave the message in no lease that
 * queues it: the next take-back of this lease would not list it, and the renew's own lease
 * passes over a message taken back for another (R6). Key: the lease's. Condition: `e = :e`
 * (as the take-back read it). Success: 'marked'. Failure: the lease as it is now (a renew
 * changed `e`), or undefined when it is gone; other errors throw. One write unit, only for a
 * lease with messages left at its take-back.
 */
async function markTakingBack(ctx: PositionStore, lease: LeaseItem): Promise<'marked' | LeaseItem | undefined> {
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: { pk: lease.pk, sk: lease.sk },
        ConditionExpression: 'e = :e',
        UpdateExpression: 'SET tk = :one',
        ExpressionAttributeValues: { ':e': lease.e, ':one': 1 },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return 'marked';
  } catch (e) {
    if (!conditionFailed(e)) throw e;
    return itemAtRefusal<LeaseItem>(e);
  }
}

export interface ClaimOptions {
  /** Lock duration, ms. */
  lockMs: number;
  /** How long a hole is waited for (positions.ts). */
  holeAfterMs?: number;
  /** Cursor writes lost to other receivers (or refused for load) before giving up. */
  attempts?: number;
  /**
   * Takes messages (from `back`, then the head) only while this holds, stopping at the first it
   * refuses (the sweeper's expiry pass takes expired messages only, broker/positioned-expiry.ts).
   */
  takeWhile?: (item: PositionedItem) => boolean;
  /**
   * How many of the messages found, in the order they would be claimed, the caller can hand
   * out (R10: an answer's size); the rest are left where they are, unclaimed. Default: all.
   */
  fits?: (items: readonly PositionedItem[]) => number;
  /**
   * The caller hands nothing of this claim out until it has removed it (a receive-and-delete,
   * a bulk delete, the sweeper's expiry pass): its record and lease say so (`nd`), so whatever
   * of it is taken back, put back at once (`releaseLease`) or at the lapse, counts no delivery (R3).
   */
  undelivered?: boolean;
  /**
   * The caller would mark the cursor clear (ticket-back.ts `markBackClear`): a claim that writes
   * nothing reports `clearAt` also when the cursor keeps its last claim's record, once none of
   * that record's messages is held any more (`recordSettled`, one consistent read).
   */
  clearing?: boolean;
}

export interface Claim {
  /** The lease, undefined when nothing was claimed. */
  lease?: LeaseItem;
  /** The claimed messages in order, each with its lock token. */
  messages: { item: PositionedItem; token: string; deliveryCount: number }[];
  /** Cursor writes this claim lost to another receiver (its condition failed). */
  lostRaces: number;
  /**
   * The cursor's version when this claim left it with `back` empty and no claim record holding
   * a message (none taken; with `clearing`, a record whose messages are all settled): for
   * ticket-back.ts `markBackClear`, which also looks for lease items. Undefined otherwise.
   */
  clearAt?: number;
}

const claimId = (cursor: CursorItem) => cursor.v + 1;

/**
 * R2: what waits in `back` goes out oldest first. Writers append in the order they queue, which
 * is not the messages' order: an abandon lands behind a lapse's take-back of a later message, a
 * batch is abandoned last message first. So a claim takes `back` by position.
 */
const byPosition = (a: Entry, b: Entry) => a[0] - b[0] || a[1] - b[1];

/**
 * Claims up to `want` messages of a partition under one lease. Steps, each a store operation
 * above or in positions.ts:
 *
 * 1. `readCursor` and `readLeases` of the lapsed ones, side by side (in either order: a lease
 *    taken back stays in `tb` while it may still be seen, and any cursor write after the read
 *    fails the write in step 5); the lapsed ones consistently when an entry of `tb` is older
 *    than `TAKEN_BACK_KEEP_MS`: at once, beside the cursor, when the cursor as this process
 *    last read or wrote it had one (`oldestTakeBacks`), else again once the cursor shows one.
 *    Either way the read follows the claim's `now`, past which no write of such a lease can
 *    land any more, so a lease it shows gone stays gone.
 * 2. Repair: the cursor's `claim` has no lease (`leaseWritten`; its claimer died after the
 *    cursor write, or a batch complete deleted it settled): `repairLease` from the record,
 *    conditioned on the cursor read (lapsed already, this claim starts again and takes it back) when a message of it is still
 *    held (`recordSettled`); with none, the record goes with step 5's write instead. Beside it,
 *    step 3 and step 4's `findHead`.
 * 3. Take back every lapsed lease (`until` <= now) not in `tb`: its messages left are taken
 *    back and queued in `back`, and it goes into `tb`; a lapsed lease with none left (all
 *    completed) is only deleted, in step 6.
 * 4. Take from `back` first (reading those messages), then `findHead` from `pos`.
 * 5. Write the cursor. Key: `cursorKey`. Condition: `v = :v` (or no cursor yet). Sets `pos`,
 *    `v + 1`, what is left of `back`, `tb` (lapsed leases added, those older than
 *    `TAKEN_BACK_KEEP_MS` whose lease step 1 saw gone dropped) and `claim` (removed when nothing was taken). A failed condition
 *    is a lost race: start again at 1.
 * 6. `writeLease` (not sent once the lock has ended); delete the leases taken back; delete passed
 *    void messages, which the cursor lists in `vd` until the next claim has deleted them again
 *    before its own write (a claimer dying before its deletes would leave them for good).
 *
 * A crash before 5 leaves nothing anyone relies on (a take-back's `g` is recognised, step 3);
 * between 5 and 6, the next claim writes the lease (step 2) and takes the leases back again
 * (they are in `tb` then, so only their delete is redone). A step of 6 that throws (other than
 * a refusal for load, which is left to the next claim) fails the claim after its messages are
 * marked undelivered (`markClaimUndelivered`, R3), unless the claim is `nd` already. Writes nothing when there is
 * nothing to take, pass or take back, unless the cursor's last claim has lapsed with nothing
 * left: then the cursor drops its record once (else every later claim would write that lease
 * again from it, and the next delete it). Throws after `attempts` lost races or refusals for load.
 */
export async function claim(ctx: PositionStore, partitionPk: string, want: number, options: ClaimOptions): Promise<Claim> {
  const attempts = options.attempts ?? 50;
  const holeAfterMs = options.holeAfterMs ?? HOLE_AFTER_MS;
  let lostRaces = 0;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await backoff(ctx.clock, Math.min(attempt - 1, 3), { baseMs: 10, capMs: 100 });
    const now = ctx.clock.now();
    // R6: a take-back leaves `tb` only once its lease is seen gone by a consistent read (a delete
    // refused or never sent leaves it there). Read so at once when the cursor as this process
    // last saw it holds one aged past the keep; else again after the cursor shows one (half a
    // read unit and a round trip more, once for each take-back).
    const foreseen = agedTakeBackSeen(ctx, partitionPk, now);
    const [cursor, seen] = await Promise.all([readCursor(ctx, partitionPk), readLeases(ctx, partitionPk, now, foreseen)]);
    noteTakeBacks(ctx, cursor.pk, cursor.tb);
    const aging = (cursor.tb ?? []).some(([, when]) => aged(when, now));
    const lapsed = aging && !foreseen ? await readLeases(ctx, partitionPk, now, true) : seen;
    const returned = new Set((cursor.tb ?? []).map(([id]) => id));
    const queued = cursor.back ?? [];
    /**
     * True when the cursor's last claim is found settled with no lease (`recordSettled`): its
     * record goes with this claim's cursor write. 'busy': the repair was refused for load or met
     * another write; 'lapsed': it wrote a lease whose lock has ended; either way this attempt
     * starts again.
     */
    const repair = async (): Promise<boolean | 'busy' | 'lapsed'> => {
      const last = cursor.claim;
      // A lease this process wrote needs no look (a lease, once gone, is never to be written again).
      if (!last || wroteLease(ctx, partitionPk, last)) return false;
      if (await leaseWritten(ctx, partitionPk, last)) return false;
      // Missing: its claimer died before writing it (or was refused for load), or a batch
      // complete deleted it with every message settled (`deleteSettledLease`). Only a message
      // of the record still held tells them apart; with none left, writing it would only make
      // the lapse read its range and delete it again.
      if (await recordSettled(ctx, partitionPk, last)) return true;
      // 'moved': the cursor write below fails too, and the next attempt reads it again. A
      // repaired lease that has lapsed already is taken back by this claim's next attempt,
      // which finds it among the lapsed (R2: its messages are receivable now, not a receive later).
      const repaired = await repairLease(ctx, cursor, partitionPk, last);
      if (repaired === 'written' && last.until <= now) return 'lapsed';
      return repaired === 'busy' ? 'busy' : false;
    };
    /** Lapsed leases with messages left, to go to `back`; one with none left is only deleted. */
    const takeBacks = async () => {
      const found: { lease: LeaseItem; entries: Entry[] }[] = [];
      for (const lease of lapsed.filter((l) => !returned.has(l.id))) found.push({ lease, entries: await takeBackLease(ctx, partitionPk, lease) });
      return found;
    };
    const headFor = (taken: number) => (want > taken ? findHead(ctx, partitionPk, cursor.pos, want - taken, holeAfterMs, options.takeWhile) : undefined);
    // The head is looked for beside the repair and the take-backs; looked for again in the rare
    // case that take-backs put messages ahead of it.
    const [repaired, lookedAt, early] = await Promise.all([repair(), takeBacks(), headFor(queued.length)]);
    // The record must not be replaced before its lease is written: try again. Repaired lapsed:
    // the next attempt takes it back.
    if (repaired === 'busy' || repaired === 'lapsed') continue;
    const settledRecord = repaired;
    const returning = lookedAt.filter((r) => r.entries.length > 0);
    /** Lapsed leases dealt with: taken back before (in `tb`), now, or with nothing left. */
    const done = [...lapsed.filter((l) => returned.has(l.id)), ...lookedAt.map((r) => r.lease)];
    const back = [...queued, ...returning.flatMap((r) => r.entries)].sort(byPosition);
    let fromBack = back.slice(0, want);
    let head = back.length === queued.length ? early : await headFor(fromBack.length);

    const fromBackFound: { entry: Entry; item: PositionedItem }[] = [];
    if (fromBack.length > 0) {
      const backItems = await readPositions(
        ctx,
        partitionPk,
        fromBack.map((e) => e[0]),
      );
      for (const [i, entry] of fromBack.entries()) {
        const item = backItems.get(entry[0]);
        // `takeWhile` refused it: nothing after it is taken, the head neither.
        if (item && (item.g ?? 0) === entry[1] && options.takeWhile && !options.takeWhile(item)) {
          fromBack = fromBack.slice(0, i);
          head = undefined;
          break;
        }
        if (item && (item.g ?? 0) === entry[1]) fromBackFound.push({ entry, item });
      }
    }
    const found = [...fromBackFound, ...(head?.take ?? []).map((item) => ({ entry: [positionOfSk(item.sk), 0] as Entry, item }))];
    const fitting = options.fits ? Math.max(0, Math.min(found.length, options.fits(found.map((f) => f.item)))) : found.length;
    const taken = found.slice(0, fitting);
    // What does not fit stays in line: taken-back messages first in `back`, the head from the first one left.
    const backLeft = [...fromBackFound.slice(fitting).map((f) => f.entry), ...back.slice(fromBack.length)];
    const headLeft = (head?.take ?? []).slice(Math.max(0, fitting - fromBackFound.length));
    const pos = headLeft.length > 0 ? positionOfSk(headLeft[0]!.sk) : (head?.next ?? cursor.pos);
    const voided = (head?.voided ?? []).filter((v) => positionOfSk(v.sk) < pos);
    // The cursor's last claim, lapsed with nothing left: its record goes with this write, or a
    // later claim would write its lease again from it (the repair) after the delete below.
    const recordDone = settledRecord || (cursor.claim !== undefined && done.some((l) => l.id === cursor.claim!.id));
    // A take-back is kept `TAKEN_BACK_KEEP_MS`, and after that while its lease is still there (the
    // consistent read above; deleted in step 6, it goes from `tb` with a later claim).
    const stillThere = new Set(lapsed.map((l) => l.id));
    const tb: [number, number][] = [
      ...(cursor.tb ?? []).filter(([id, when]) => when > now - TAKEN_BACK_KEEP_MS || stillThere.has(id)),
      ...returning.map((r): [number, number] => [r.lease.id, now]),
    ];
    // Take-backs seen gone past the keep are dropped by a write once, or every empty poll would
    // read the lapsed leases consistently again for them.
    const forgets = tb.length < (cursor.tb ?? []).length + returning.length;
    // What the last claim passed void, deleted again (it may have died before): gone, they leave `vd` with this write.
    const leftover = cursor.vd ?? [];
    if (
      taken.length === 0 &&
      returning.length === 0 &&
      pos === cursor.pos &&
      fromBack.length === fromBackFound.length &&
      !recordDone &&
      !forgets &&
      leftover.length === 0
    ) {
      await unlessBusy(Promise.all(done.map((l) => deleteLease(ctx, l))));
      // The last claim's record stays until a claim replaces it; one holding no message does not keep `back` from being clear.
      const clear = queued.length === 0 && (!cursor.claim || (options.clearing === true && (await recordSettled(ctx, partitionPk, cursor.claim))));
      return { messages: [], lostRaces, ...(clear ? { clearAt: cursor.v } : {}) };
    }

    const record: ClaimRecord | undefined =
      taken.length > 0
        ? {
            id: claimId(cursor),
            until: now + options.lockMs,
            e: taken.map((t) => t.entry),
            r: randomBytes(6).toString('hex'),
            ...(options.undelivered ? { nd: 1 as const } : {}),
          }
        : undefined;
    // Refused for load, they stay in `vd`.
    const cleared =
      leftover.length === 0 ||
      (await unlessBusy(
        deletePassed(
          ctx,
          leftover.map((p) => positionKey(partitionPk, p)),
        ),
      ));
    const vd = [...(cleared ? [] : leftover), ...voided.map((v) => positionOfSk(v.sk))];
    const written = await writeCursor(ctx, cursor, { pos, back: backLeft, tb, claim: record, vd });
    if (written === 'lost') {
      lostRaces++;
      continue;
    }
    if (written === 'busy') continue;
    // The claim is durable in the cursor from here on: a lease write or a clean-up refused for
    // load is left to the next claim (it repairs the lease from the record, deletes what is in
    // `tb` again; a void message left behind the cursor is never delivered), and the messages
    // are handed out (R10).
    const lease = record ? leaseOf(partitionPk, record) : undefined;
    const messages = taken.map((t) => ({ item: t.item, token: leaseToken(lease!, t.entry), deliveryCount: deliveryCountAt(t.item, t.entry[1]) }));
    try {
      // A lease not sent (the lock ended first) is not remembered: the next claim must repair it.
      if (record)
        await unlessBusy(
          writeLease(ctx, partitionPk, record).then((w) => (w === 'late' ? undefined : rememberLease(ctx, partitionPk, leaseOf(partitionPk, record)))),
        );
      await unlessBusy(Promise.all(done.map((l) => deleteLease(ctx, l))));
      if (voided.length > 0) await unlessBusy(deletePassed(ctx, voided));
    } catch (e) {
      // R3: a claim that throws hands nothing out, yet its lease (or the record it is repaired
      // from) holds its messages until the lapse; one that would count a delivery is told not to.
      if (record && !record.nd) await markClaimUndelivered(ctx, partitionPk, messages);
      throw e;
    }
    return { ...(lease ? { lease } : {}), messages, lostRaces, ...(!record && backLeft.length === 0 ? { clearAt: cursor.v + 1 } : {}) };
  }
  throw new Error(`claim: the cursor of ${partitionPk} was taken by others ${attempts} times in a row`);
}

/**
 * Leases this process wrote lately (key and entries), by table, partition, lock-end second and
 * the claim id's low bits, as a token names them. Two uses, both only hints (a claim or a
 * complete of another process reads as before): the next claim of the partition in this
 * process skips the repair's read of its lease (`wroteLease`: half a read unit a claim, most
 * of a lone consumer's claims), and a complete in this process finds the lease its tokens were
 * handed out under without a read (`deleteSettledLease`).
 */
const claimedLeases = new Map<string, Pick<LeaseItem, 'pk' | 'sk' | 'id' | 'e'>[]>();
const CLAIMED_MAX = 10_000;
const claimedKey = (ctx: PositionStore, partitionPk: string, second: number, idBits: number) => `${ctx.tableName}|${partitionPk}|${second}|${idBits}`;
const claimedKeyOf = (ctx: PositionStore, partitionPk: string, lease: Pick<LeaseItem, 'id' | 'until'>) =>
  claimedKey(ctx, partitionPk, Math.floor(lease.until / 1000) * 1000, Number(BigInt(lease.id) & mask(CLAIM_ID_BITS)));
const wroteLease = (ctx: PositionStore, partitionPk: string, claim: Pick<ClaimRecord, 'id' | 'until'>) =>
  (claimedLeases.get(claimedKeyOf(ctx, partitionPk, claim)) ?? []).some((l) => l.id === claim.id);
function rememberLease(ctx: PositionStore, partitionPk: string, lease: LeaseItem): void {
  if (claimedLeases.size >= CLAIMED_MAX) claimedLeases.clear();
  const key = claimedKeyOf(ctx, partitionPk, lease);
  claimedLeases.set(key, [...(claimedLeases.get(key) ?? []), { pk: lease.pk, sk: lease.sk, id: lease.id, e: lease.e }]);
}

/** A take-back made at `when` is past the keep at `now`: its entry leaves `tb` only on a consistent read. */
const aged = (when: number, now: number) => when <= now - TAKEN_BACK_KEEP_MS;

/**
 * The oldest take-back in each cursor's `tb` as this process last read or wrote it, by table
 * and partition: a hint only, for a claim's step 1 to read the lapsed leases consistently at
 * once when one is aged (`agedTakeBackSeen`). Wrong either way costs only reads: another
 * process dropped it (a consistent read where an eventually consistent one would have done,
 * half a read unit), or added one this process has not seen (the second read, as without it).
 */
const oldestTakeBacks = new Map<string, number>();
/** `cursorPk`: the cursor item's key (`cursorKey`), as a cursor read or written names it. */
function noteTakeBacks(ctx: PositionStore, cursorPk: string, tb: readonly [number, number][] | undefined): void {
  const key = `${ctx.tableName}|${cursorPk}`;
  if (!tb || tb.length === 0) {
    oldestTakeBacks.delete(key);
    return;
  }
  if (oldestTakeBacks.size >= CLAIMED_MAX) oldestTakeBacks.clear();
  oldestTakeBacks.set(key, Math.min(...tb.map(([, when]) => when)));
}
const agedTakeBackSeen = (ctx: PositionStore, partitionPk: string, now: number): boolean => {
  const oldest = oldestTakeBacks.get(`${ctx.tableName}|${cursorKey(partitionPk).pk}`);
  return oldest !== undefined && aged(oldest, now);
};

/** Forgets every lease and take-back this process remembers: what a process that never claimed knows (tests of another receiver). */
export function forgetRememberedLeases(): void {
  claimedLeases.clear();
  oldestTakeBacks.clear();
}

/**
 * Whether the claim `record` (the cursor's last, its lease found missing) holds nothing any
 * more: none of its messages is still at its position at the record's take-back count (nor
 * taken back for it at one more, `takeBackLease`'s mark). Reads the record's positions
 * consistently (`readPositions`: a stale replica must not hide a message still held). Then its
 * lease has nothing to hold and is not written again; otherwise the repair writes it.
 */
async function recordSettled(ctx: PositionStore, partitionPk: string, record: ClaimRecord): Promise<boolean> {
  const there = await readPositions(
    ctx,
    partitionPk,
    record.e.map((e) => e[0]),
  );
  return record.e.every(([position, g]) => {
    const item = there.get(position);
    if (!item || item.tomb) return true;
    const now = item.g ?? 0;
    return now !== g && !(now === g + 1 && item.gl === record.id);
  });
}

/**
 * R4, R6: deletes the lease a batch complete settled whole, so no claim pays its lapse (the
 * consistent read of its range) nor writes it again from the cursor's record. `tokens`: lock
 * tokens of one lease (one lock-end second and claim id, as `leaseToken` states them) whose
 * messages the caller's complete removed (`completeAtPosition` answered 'completed': each
 * delete was conditioned on the token's take-back count, so nothing holds those messages any
 * more). Steps:
 *
 * 1. The lease: as this process claimed it (`claimedLeases`, no read), or else from one
 *    eventually consistent Query of the leases ending in the tokens' second (`leasePk`, sort
 *    keys of that second; half a read unit), the one of the tokens' claim holding one of them.
 * 2. Deleted (key: the lease's; no condition) only when every entry it was claimed with is
 *    among the tokens' entries. A lease read with a renewal's mark (`rn`: an entry moved to a
 *    lease of its own, lease-settlements.ts) is left to its lapse: its claimed entries are no
 *    longer all in `e`, and the moved one may still be held, which the claim's repair would
 *    write back with the lease (R6: the renewed lock would end early). A stale read without
 *    the mark shows the claimed entries, which only a renewal changes.
 *
 * Why nothing is lost: a lease only brings its messages back at the lapse, and every one of
 * them is gone; the repair finds no message of its record held and does not write it again
 * (`recordSettled`); a take-back racing it finds nothing to take back and deletes it too. A
 * crash before the delete leaves the lease to its lapse, as before. Success: true when deleted,
 * false when left to the lapse (not found, or not settled whole). Other errors throw; the
 * caller may ignore a refusal for load (the lapse deletes it). `remembered`: step 1 only as
 * this process claimed it, no Query (a single complete: its lease is worth the delete only
 * when no read is paid for it).
 */
export async function deleteSettledLease(
  ctx: PositionStore,
  partitionPk: string,
  tokens: readonly string[],
  options: { remembered?: boolean } = {},
): Promise<boolean> {
  const first = tokens[0];
  if (first === undefined) return false;
  const now = ctx.clock.now();
  const second = lockEndOfToken(first, now);
  const idBits = claimIdOfToken(first);
  // Tokens of more than one lease name none of them whole.
  if (tokens.some((t) => lockEndOfToken(t, now) !== second || claimIdOfToken(t) !== idBits)) return false;
  const settled = tokens.map(entryOfToken);
  const ours = (l: Pick<LeaseItem, 'e'>) => l.e.some((entry) => holds(settled, entry));
  const whole = (e: readonly Entry[]) => e.length > 0 && e.every((entry) => holds(settled, entry));
  let lease: Pick<LeaseItem, 'pk' | 'sk' | 'e'> | undefined = (claimedLeases.get(claimedKey(ctx, partitionPk, second, idBits)) ?? []).find(ours);
  // A single complete pays no read for it: a lease this process did not claim is left to its lapse.
  if (!lease && options.remembered) return false;
  if (!lease) {
    const out = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': leasePk(partitionPk), ':from': `${padTime(second)}/`, ':to': `${padTime(second + 999)}/~` },
      }),
    );
    const found = ((out.Items ?? []) as (LeaseItem & { o?: number; rn?: 1 })[]).filter(
      (l) => l.o === undefined && (BigInt(l.id) & mask(CLAIM_ID_BITS)) === BigInt(idBits) && ours(l),
    );
    if (found.length !== 1 || found[0]!.rn) return false;
    lease = found[0];
  }
  if (!lease || !whole(lease.e)) return false;
  await deleteLease(ctx, lease);
  return true;
}

/**
 * Puts what is left of a lease's messages back in line now, ahead of its lock's end: for a
 * receive that claimed messages it then could not hand out (a receive-and-delete whose delete
 * failed, R10). The same steps as a claim's take-back of a lapsed lease: `takeBackLease` (each
 * message left gets `g` one more, so a write still on its way under the lease fails), then the
 * cursor written conditioned on its version, with them at the end of `back` and the lease in
 * `tb` (and its record dropped when it is the cursor's last claim), then the lease deleted.
 * A lease that handed nothing out (`nd`) counts no delivery for it, here as at its lapse (R3).
 * A crash between leaves what a lapse repairs: taken-back messages are recognised by `g` when
 * the lease lapses; a lease in `tb` is only deleted. Does nothing once the lease is in `tb`.
 * Throws after `attempts` lost races or refusals for load (then the lapse takes it back).
 */
export async function releaseLease(ctx: PositionStore, partitionPk: string, lease: LeaseItem, attempts = 50): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await backoff(ctx.clock, Math.min(attempt - 1, 3), { baseMs: 10, capMs: 100 });
    const cursor = await readCursor(ctx, partitionPk);
    if ((cursor.tb ?? []).some(([id]) => id === lease.id)) break;
    const entries = await takeBackLease(ctx, partitionPk, lease, true);
    const now = ctx.clock.now();
    // Nothing leaves `tb` here: a claim drops what it sees gone (R6).
    const tb: [number, number][] = [...(cursor.tb ?? []), [lease.id, now]];
    const last = cursor.claim?.id === lease.id ? undefined : cursor.claim;
    const written = await writeCursor(ctx, cursor, { pos: cursor.pos, back: [...(cursor.back ?? []), ...entries], tb, claim: last, vd: cursor.vd ?? [] });
    if (written === 'written') {
      await unlessBusy(deleteLease(ctx, lease));
      return;
    }
  }
  if (attempts > 0) throw new Error(`releaseLease: the cursor of ${partitionPk} was taken by others ${attempts} times in a row`);
}

/** A step that the next claim redoes: refused for load, it is left to it (false). */
async function unlessBusy(step: Promise<unknown>): Promise<boolean> {
  try {
    await step;
    return true;
  } catch (e) {
    if (!isStoreBusy(e)) throw e;
    return false;
  }
}

/**
 * Writes a claim into the cursor. Key: `cursorKey`. Condition: `v = :v` (the version read), or
 * `attribute_not_exists(pk)` for a partition's first. Success: 'written', also when the SDK
 * retried it after it landed (the refusal, ALL_OLD, shows this very item). Failure: 'lost' when
 * another receiver wrote it first; 'busy' when DynamoDB refused it for load or a conflict (nothing written);
 * other errors throw.
 */
async function writeCursor(
  ctx: PositionStore,
  cursor: CursorItem,
  change: { pos: number; back: Entry[]; tb: [number, number][]; claim: ClaimRecord | undefined; vd: number[] },
): Promise<'written' | 'lost' | 'busy'> {
  const item: CursorItem = { pk: cursor.pk, sk: cursor.sk, pos: change.pos, v: cursor.v + 1 };
  if (change.back.length > 0) item.back = change.back;
  if (change.tb.length > 0) item.tb = change.tb;
  if (change.claim) item.claim = change.claim;
  if (change.vd.length > 0) item.vd = change.vd;
  try {
    await ctx.db.send(
      new PutCommand({
        TableName: ctx.tableName,
        Item: item,
        ConditionExpression: cursor.v === 0 ? 'attribute_not_exists(pk)' : 'v = :v',
        ...(cursor.v === 0 ? {} : { ExpressionAttributeValues: { ':v': cursor.v } }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (e) {
    // The SDK's retry of this write after it landed finds it there, claim record (random `r`)
    // and all: it is written. Read as 'lost', the claim would be held by nobody and its lapse
    // would count a delivery (R3); a release would find its own take-back and give up. When
    // every answer was lost (a throttle after it included), the cursor is read back (1 read unit,
    // on that path only) and found as written the same way (R10).
    const own =
      refusedItsOwnPut(e, item as unknown as Record<string, unknown>) ||
      (mayHaveLanded(e) && sameItem(await readBack(ctx, () => readItemConsistently(ctx, { pk: cursor.pk, sk: cursor.sk })), item));
    if (!own) {
      if (isStoreBusy(e)) return 'busy';
      if (isConditionFailure(e)) return 'lost';
      throw e;
    }
  }
  noteTakeBacks(ctx, cursor.pk, item.tb);
  return 'written';
}
