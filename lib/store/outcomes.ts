/**
 * Reading DynamoDB's answers: every refusal the broker tells apart is named here once, so a
 * caller asks what happened (a condition failed, a transaction met another, the store is
 * throttling) and never parses an error's name or a cancellation's reasons itself.
 *
 * - A single write whose condition failed: ConditionalCheckFailedException.
 * - A single write that met a transaction in flight on its item: TransactionConflictException.
 * - A transaction refused: TransactionCanceledException with one reason per part, in
 *   TransactItems order (`ConditionalCheckFailed`, `TransactionConflict`, `ThrottlingError`,
 *   `ProvisionedThroughputExceeded`, or `None` for a part that was fine).
 * - Throttling left after the SDK's retries: ProvisionedThroughputExceededException,
 *   ThrottlingException, RequestLimitExceeded.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isDeepStrictEqual } from 'node:util';
import { anAttemptWasUnsure, unsureAttempt } from '../call-attempts.js';

export const CONDITION_FAILED = 'ConditionalCheckFailed';
export const TRANSACTION_CONFLICT = 'TransactionConflict';
const THROTTLED_REASONS: readonly string[] = ['ThrottlingError', 'ProvisionedThroughputExceeded'];
const throttledNames = /ProvisionedThroughputExceeded|Throttling|RequestLimitExceeded/;

/**
 * The reason codes of a cancelled transaction, one per part in TransactItems order (`None`
 * for a part that was fine); undefined for any other error, or a cancellation without reasons.
 */
export function cancellationCodes(e: unknown): string[] | undefined {
  if (!(e instanceof Error) || e.name !== 'TransactionCanceledException') return undefined;
  const list = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
  return list?.map((r) => r.Code ?? 'None');
}

/** Whether part `index` of a cancelled transaction failed its condition. */
export const partFailedCondition = (codes: readonly string[] | undefined, index: number): boolean => codes?.[index] === CONDITION_FAILED;

/** A single write (not a transaction) refused because its condition did not hold. */
export const conditionFailed = (e: unknown): boolean => e instanceof Error && e.name === 'ConditionalCheckFailedException';

/**
 * The item as it was when a single write's condition refused it, for a write that asked for it
 * (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`); undefined when there was no item.
 */
export function itemAtRefusal<T>(e: unknown): T | undefined {
  const item = (e as { Item?: Record<string, AttributeValue> }).Item;
  return item ? (unmarshall(item) as T) : undefined;
}

/**
 * A put refused on its condition by the very item it puts, attribute for attribute: the SDK's
 * retry of this put after it landed (its first answer lost: a 500, a timeout), which meets what
 * its first attempt wrote. For a put that asked for the refused item (ALL_OLD) and whose item
 * nobody else writes alike (it carries something of its own: a random id, a message's content
 * under its number), so "already there" means "done".
 */
export const refusedItsOwnPut = (e: unknown, item: Record<string, unknown>): boolean => conditionFailed(e) && sameItem(itemAtRefusal(e), item);

/**
 * Whether a write that failed with `e` in the SDK may still have been applied: a 500, a timeout
 * or a dropped connection, at its last attempt or at any earlier one (`anAttemptWasUnsure`:
 * a throttle at the last attempt after a 500 at the first). DynamoDB's own refusals at every
 * attempt (a condition, a conflict, throttling: a 4xx) applied nothing. The writer then reads what
 * is there, or sends again under its token. Only the SDK's errors count (its retry layer gives
 * each one `$metadata`): any other failure is the process's own, which goes on to no further call.
 */
export function mayHaveLanded(e: unknown): boolean {
  if ((e as { $metadata?: unknown } | undefined)?.$metadata === undefined) return false;
  return unsureAttempt(e) || anAttemptWasUnsure(e);
}

/**
 * Refused by DynamoDB at the SDK's last attempt (throttled, or a conflict) after an earlier
 * attempt that may have landed: the retry of a write whose first answer was lost. What the
 * first attempt did is not in the answer; the writer reads its item back (1 read unit, on this
 * path only) and judges it as `refusedItsOwnDelete` would a condition refused at the retry.
 */
export const refusedAfterUnsureAttempt = (e: unknown): boolean =>
  e instanceof Error && !unsureAttempt(e) && anAttemptWasUnsure(e) && (refusedThrottled(e) || refusedInConflict(e));

/**
 * A delete refused on its condition because its item is gone, at the SDK's second attempt or
 * later: the retry of this delete after it landed (its first answer lost: a 500, a timeout).
 * For a delete under a lock, which only the lock's holder makes while the lock lasts, so "gone"
 * after a lost answer means "removed by this delete" (or by a purge meanwhile: gone either way).
 * For a delete that asked for the refused item (ALL_OLD), which tells "gone" from "there, but
 * not as the condition says"; a refusal at the first attempt is never its own.
 */
export const refusedItsOwnDelete = (e: unknown): boolean => conditionFailed(e) && retriedBySdk(e) && itemAtRefusal(e) === undefined;

/**
 * An update refused on its condition, at the SDK's second attempt or later, with the item holding
 * `sets` as this update sets them: the retry of this update after it landed. For an update whose
 * values nobody else writes alike (a token of its own, a record stamped with its own times).
 */
export function refusedItsOwnUpdate(e: unknown, sets: Record<string, unknown>): boolean {
  if (!conditionFailed(e) || !retriedBySdk(e)) return false;
  const found = itemAtRefusal<Record<string, unknown>>(e);
  return found !== undefined && Object.entries(sets).every(([name, value]) => sameItem(found[name], value));
}

/**
 * An answer after an earlier attempt that may have landed: one that failed with a 500, a timeout
 * or a dropped connection (`anAttemptWasUnsure`). Attempts the SDK made after throttling alone
 * follow refusals that applied nothing, so a condition refused there is another writer's doing.
 */
export const retriedBySdk = (e: unknown): boolean => anAttemptWasUnsure(e);

/** Whether an item read back is the item put: the same attributes, each of the same value (bytes by content, sets as sets). */
export const sameItem = (stored: unknown, put: unknown): boolean => isDeepStrictEqual(canonical(stored), canonical(put));
const canonical = (v: unknown): unknown =>
  v instanceof Uint8Array
    ? Buffer.from(v).toString('base64')
    : v instanceof Set
      ? [...v].map(canonical).sort()
      : Array.isArray(v)
        ? v.map(canonical)
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).flatMap(([k, x]) => (x === undefined ? [] : [[k, canonical(x)]])))
          : v;

/**
 * A write refused on a condition, alone or as a transaction. A transaction cancelled for
 * throttling or a conflict is not one, though a part of it may also have failed its condition:
 * the store refused it for load, and taking that for "another writer was first" would skip
 * work that a retry would do.
 */
export const isConditionFailure = (e: unknown) =>
  e instanceof Error && (e.name === 'ConditionalCheckFailedException' || (e.name === 'TransactionCanceledException' && !cancelledBusy(cancellationCodes(e))));

/**
 * Makes a conditional write: its output when it was made, undefined when its condition did not
 * hold (another writer was first, which the caller's condition says is fine); other errors throw.
 */
export async function conditionally<T extends object>(write: Promise<T>): Promise<T | undefined> {
  try {
    // Made, even when the client answers nothing (a stand-in db may): only a failed condition is undefined.
    return (await write) ?? ({} as T);
  } catch (e) {
    if (isConditionFailure(e)) return undefined;
    throw e;
  }
}

/**
 * A write that met another transaction in flight on its item: DynamoDB answers a single write
 * with TransactionConflictException and cancels a transaction with reason TransactionConflict.
 * Nothing was written; the item is someone else's for the moment.
 */
export const isConflict = (e: unknown): boolean => e instanceof Error && !anAttemptWasUnsure(e) && refusedInConflict(e);

/** DynamoDB's answer, whatever an earlier attempt did: the write met a transaction in flight. */
const refusedInConflict = (e: Error): boolean => e.name === 'TransactionConflictException' || (cancellationCodes(e) ?? []).includes(TRANSACTION_CONFLICT);

/**
 * The store refused for load (throttling left after the SDK's retries): nothing was written, and
 * a retry may succeed. Not after an earlier attempt that may have landed (`mayHaveLanded`).
 */
export const isThrottled = (e: unknown): boolean => e instanceof Error && !anAttemptWasUnsure(e) && refusedThrottled(e);

/** DynamoDB's answer, whatever an earlier attempt did: throttling left after the SDK's retries. */
const refusedThrottled = (e: Error): boolean => throttledNames.test(e.name) || (cancellationCodes(e) ?? []).some((c) => THROTTLED_REASONS.includes(c));

/**
 * The store refused for load or a conflict: nothing was written, and a retry may succeed. A
 * refusal at the SDK's last attempt says nothing of an earlier attempt that failed with a 500 or
 * no answer: that one may have landed, so such a call is not "busy" but unsure (`mayHaveLanded`).
 */
export const isStoreBusy = (e: unknown): boolean => isThrottled(e) || isConflict(e);

/** A cancelled transaction's reasons include a conflict or throttling: worth trying again. */
export const cancelledBusy = (codes: readonly string[] | undefined): boolean =>
  codes !== undefined && codes.some((c) => c === TRANSACTION_CONFLICT || THROTTLED_REASONS.includes(c));

/** True when a cancelled transaction failed only on conditions (not throttling or conflicts). */
export function cancelledOnCondition(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  if (e.name === 'ConditionalCheckFailedException') return true;
  return onlyConditionsFailed(cancellationCodes(e));
}

/** The codes of a transaction refused only on conditions: at least one failed, the other parts were fine. */
export const onlyConditionsFailed = (codes: readonly string[] | undefined): boolean =>
  codes !== undefined && codes.includes(CONDITION_FAILED) && codes.every((c) => c === 'None' || c === CONDITION_FAILED);

/** Errors of the network or of the service's side, left after the SDK's retries: nothing says the call cannot succeed later. */
const transientNames =
  /InternalServerError|ServiceUnavailable|RequestTimeout|TimeoutError|AbortError|NetworkingError|ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EAI_AGAIN|ENOTFOUND/;

/**
 * A refusal or an error that says nothing about the call itself: throttling, a conflict, a
 * timeout, the network, a 5xx. Worth trying again for as long as it lasts; anything else
 * (a validation error, an item too large, an error of the caller's own) may fail every time.
 */
export function isTransient(e: unknown): boolean {
  if (isStoreBusy(e)) return true;
  if (!(e instanceof Error)) return false;
  const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const code = (e as { code?: unknown }).code;
  return transientNames.test(e.name) || (typeof code === 'string' && transientNames.test(code)) || (status !== undefined && status >= 500);
}
