/**
 * Lock tokens look like GUIDs, as in Service Bus. The first 64 bits are the message's
 * sequence number, so a batch settlement by token alone finds the message (and its
 * partition) with no lookup; the last 64 bits are random, so a token cannot be guessed.
 */
import { randomId } from '../broker/context.js';

/** A GUID in any case, written without regex flags so JSON Schema can state it too. */
export const LOCK_TOKEN_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const pattern = new RegExp(LOCK_TOKEN_PATTERN);

export function newLockToken(seq: bigint): string {
  const hex = seq.toString(16).padStart(16, '0') + randomId(8);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export const isLockTokenShape = (token: unknown): token is string => typeof token === 'string' && pattern.test(token);

/** A GUID's case does not matter; tokens are issued and stored in lower case. */
export const normalizeLockToken = (token: string) => token.toLowerCase();

/** The sequence number a well-formed token names. */
export function sequenceOfLockToken(token: string): bigint {
  return BigInt(`0x${token.replace(/-/g, '').slice(0, 16)}`);
}
