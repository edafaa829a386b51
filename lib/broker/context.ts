import type { Deps } from '../deps.js';
import { SequenceGenerator } from '../store/sequence.js';

/** What every broker operation works with: the injected deps plus per-instance state. */
export interface BrokerContext extends Deps {
  sequences: SequenceGenerator;
}

export const brokerContext = (deps: Deps): BrokerContext => ({ ...deps, sequences: new SequenceGenerator() });

export const isConditionFailure = (e: unknown) =>
  e instanceof Error && (e.name === 'ConditionalCheckFailedException' || e.name === 'TransactionCanceledException');

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

const cancellationCodes = (e: Error): string[] => ((e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? []).map((r) => r.Code ?? 'None');

/**
 * A write that met another transaction in flight on its item: DynamoDB answers a single write
 * with TransactionConflictException and cancels a transaction with reason TransactionConflict.
 * Nothing was written; the item is someone else's for the moment.
 */
export const isConflict = (e: unknown): boolean =>
  e instanceof Error &&
  (e.name === 'TransactionConflictException' || (e.name === 'TransactionCanceledException' && cancellationCodes(e).includes('TransactionConflict')));

const busyNames = /ProvisionedThroughputExceeded|Throttling|RequestLimitExceeded|TransactionConflict/;

/** The store refused for load (throttling left after the SDK's retries) or a conflict: nothing was written, and a retry may succeed. */
export const isStoreBusy = (e: unknown): boolean =>
  e instanceof Error &&
  (busyNames.test(e.name) || cancellationCodes(e).some((c) => c === 'TransactionConflict' || c === 'ThrottlingError' || c === 'ProvisionedThroughputExceeded'));

/** True when a cancelled transaction failed only on conditions (not throttling or conflicts). */
export function cancelledOnCondition(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  if (e.name === 'ConditionalCheckFailedException') return true;
  if (e.name !== 'TransactionCanceledException') return false;
  const reasons = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
  return reasons.some((r) => r.Code === 'ConditionalCheckFailed') && reasons.every((r) => !r.Code || r.Code === 'None' || r.Code === 'ConditionalCheckFailed');
}

export const randomId = (bytes = 8) => {
  const a = new Uint8Array(bytes);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');
};
