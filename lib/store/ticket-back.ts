/**
 * Whether a ticketed partition's cursor has anything to claim, told by the counter item a
 * receive's take returns anyway (ReturnValues ALL_NEW, no read unit), so a receive pays the
 * cursor claim's reads (the cursor, the lapsed leases, a head Query: about 2 read units) only
 * when `back` may hold something (design.md, "A claim that cannot lose").
 *
 * Two numbers on the counter item (`positionCounterKey`), both absent (0) on a fresh partition:
 *
 * - `bq`, raised by one in the very write that queues into `back`, by each writer that can
 *   queue there while no cursor lease exists: an abandon (lease-settlements.ts
 *   `abandonAtPositions`, a third part of its transaction, whatever kind of token) and a lapsed
 *   ticket's take-back (tickets.ts `takeBackTickets`, in the transaction that removes the entry;
 *   a given-back entry's lapse is one). The other writers of `back` queue only what a cursor
 *   lease held: a claim's take-back of a lapsed lease (leases.ts `claim`) and `releaseLease`.
 * - `bc`, the `bq` at which a claim found the cursor clear: `back` empty, no claim record that
 *   holds a message, and no lease item at all (`markBackClear`).
 *
 * A receive claims `back` when `bq > bc` in the counter its take returned (or, after an empty
 * head, its look read), and when it takes a lapsed ticket back. A version, not an exact count:
 * a claim of `back` would otherwise have to lower a count on the counter in its cursor write's
 * transaction, so every claim of `back` would pay a transaction; here only the claim that finds
 * the cursor clear pays one write (`markBackClear`).
 *
 * Why a message in `back` is never stranded (R6, R1, D2), the invariant: whenever `bc = bq`,
 * `back` is empty and no cursor lease or claim record exists, except for what a writer that
 * raised `bq` put there since. `markBackClear` sets `bc` to a `seen` read before the claim's
 * cursor read (the take), in one transaction with a check that the cursor is still at the
 * version the claim left it (`back` empty, no record holding a message: leases.ts
 * `ClaimOptions.clearing`) and conditioned on `bq = seen`, after a consistent Query of the
 * partition's leases found none:
 *
 * - a lease item is written only after a cursor write that records its claim, and a record is
 *   replaced only once its lease is written (leases.ts `claim`, its repair): with no record
 *   holding a message at the version checked (a lease written late from a settled record holds
 *   nothing to take back), every lease ever made is visible to the Query, or deleted, which
 *   happens only after a cursor write that queued what it held (a take-back, a release: the
 *   version check fails, as it was after the claim's read) or with nothing left held;
 * - a new lease needs something in `back` at a later version, and the first thing queued
 *   after a clear cursor comes from a writer that raises `bq` (only those queue while no lease
 *   exists): so the check or `bq = seen` refuses the mark, or `bq` rises after it;
 * - `bc` is only ever set to a value `bq` has, and `bq` only grows, so `bc <= bq` always.
 *
 * So a receive that finds `bq = bc` while `back` holds something can only have read the counter
 * before the writer's transaction landed (a take just before an abandon, or a stale look):
 * the message waits for the next receive of the partition, whose take shows `bq > bc`; never
 * for the sweeper, whose pass claims `back` only while expired. A stale "not clear" (a
 * raise with nothing left to claim, a mark refused or lost in a crash) only costs a claim,
 * which marks it clear again.
 */
import { QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { cursorKey, leasePk, positionCounterKey } from './keys.js';
import { cancellationCodes, isStoreBusy } from './outcomes.js';
import type { PositionStore } from './positions.js';
import type { CounterView } from './tickets.js';

/** Whether a receive must claim `back` by cursor: something was queued there since a claim last found it clear. */
export const backDue = (counter: Pick<CounterView, 'backQueued' | 'backClear'>): boolean => counter.backQueued > counter.backClear;

/**
 * Records that the cursor is clear as of `seen` (the counter's `bq` as a take returned it,
 * before the claim read the cursor), after a claim left the cursor at version `version` with
 * `back` empty and no record (leases.ts `Claim.clearAt`). Steps:
 *
 * 1. The partition's lease items, consistently, one at most (`leasePk`): any lease, lapsed or
 *    not, may still bring its messages back into `back`; with one there, nothing is written.
 * 2. One TransactWriteItems: a ConditionCheck of the cursor (key `cursorKey`, condition
 *    `v = :v`) and the counter (key `positionCounterKey`; `SET bc = :seen`, condition
 *    `bq = :seen`).
 *
 * Success: true. Failure: false when a lease exists, the cursor moved or `bq` rose (the next
 * receive claims again), or DynamoDB refused for load or a conflict. Other errors throw. A
 * crash anywhere leaves `bc` as it was: the next receive claims again (a claim more). Cost: 1
 * read unit, and 4 write units when written (two small items in a transaction), once each time
 * `back` runs dry.
 */
export async function markBackClear(ctx: PositionStore, partitionPk: string, version: number, seen: number): Promise<boolean> {
  if (seen <= 0) return false;
  const leases = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': leasePk(partitionPk) },
      ConsistentRead: true,
      Limit: 1,
    }),
  );
  if ((leases.Items ?? []).length > 0) return false;
  try {
    await ctx.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: ctx.tableName,
              Key: cursorKey(partitionPk),
              ConditionExpression: 'v = :v',
              ExpressionAttributeValues: { ':v': version },
            },
          },
          {
            Update: {
              TableName: ctx.tableName,
              Key: positionCounterKey(partitionPk),
              UpdateExpression: 'SET bc = :seen',
              ConditionExpression: 'bq = :seen',
              ExpressionAttributeValues: { ':seen': seen },
            },
          },
        ],
      }),
    );
    return true;
  } catch (e) {
    if (cancellationCodes(e) !== undefined || isStoreBusy(e)) return false;
    throw e;
  }
}
