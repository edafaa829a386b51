/**
 * What the SDK's attempts at one call met, beyond its last answer. The SDK retries a call up to
 * its attempt limit and then throws the last attempt's error only: a 500 or a timeout at the
 * first attempt (the write may have landed) followed by throttling at the last looks like plain
 * throttling (nothing landed). A write whose caller must know whether it landed reads this mark.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Set on a call's final error when any of its attempts failed in a way that may have come after the write was applied. */
const UNSURE = Symbol.for('sluice.anAttemptMayHaveLanded');

/**
 * An attempt's failure that may have come after DynamoDB applied the write: a 5xx, or no HTTP
 * answer at all (a timeout, a dropped connection). DynamoDB's 4xx refusals (a condition,
 * throttling, a conflict, a bad request) are given before anything is applied.
 */
export function unsureAttempt(e: unknown): boolean {
  const status = (e as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
  return status === undefined || status >= 500;
}

/**
 * Adds to `client` (and every document client made from it, which shares its middleware stack)
 * a middleware inside the SDK's retry loop that notes an unsure attempt, and one outside it that
 * marks the call's final error so. Idempotent: adding it twice replaces it.
 */
export function noteUnsureAttempts(client: Pick<DynamoDBClient, 'middlewareStack'>): void {
  const unsure = new WeakSet<object>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (e) {
        if (unsureAttempt(e)) unsure.add(context);
        throw e;
      }
    },
    // Inside the retry middleware (finalizeRequest, high), around every attempt's own steps.
    { step: 'finalizeRequest', priority: 'low', name: 'sluiceAttemptOutcome', override: true },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (e) {
        if (unsure.has(context) && e !== null && typeof e === 'object') Object.defineProperty(e, UNSURE, { value: true });
        throw e;
      }
    },
    { step: 'initialize', priority: 'high', name: 'sluiceCallOutcome', override: true },
  );
}

/** Whether any attempt of the call that threw `e` failed in a way that may have come after its write landed (`noteUnsureAttempts`). */
export const anAttemptWasUnsure = (e: unknown): boolean => e !== null && typeof e === 'object' && (e as Record<symbol, unknown>)[UNSURE] === true;
