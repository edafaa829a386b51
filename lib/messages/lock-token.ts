/**
 * Lock tokens look like GUIDs, as in Service Bus. The first 64 bits are the message's
 * sequence number, so a batch settlement by token alone finds the message (and its
 * partition) with no lookup; the last 64 bits are random but for their top bit, kept clear
 * (a lease's tokens set it, store/leases.ts), so a token cannot be guessed. A token of a batch
 * taken under one lock reminder gives the first of those bytes to the batch's size
 * (`newBatchLockToken`) and keeps 56 random bits.
 *
 * A message item stores only the random half (`lockTokenTail`): the other half is the
 * sequence number its key already holds, and 20 bytes fewer keep a 1 KB event in one write
 * unit. Items locked before stored the whole token; both read back as the whole token.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';

/** A GUID in any case, written without regex flags so JSON Schema can state it too. */
export const LOCK_TOKEN_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const pattern = new RegExp(LOCK_TOKEN_PATTERN);

/** 32 hex digits written as a GUID (8-4-4-4-12). */
export const guidOf = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
const sequenceHex = (seq: bigint) => seq.toString(16).padStart(16, '0');

/** 8 random bytes, the first's top bit clear: a lease's tokens set it (store/leases.ts `isLeaseToken`). */
function randomHalf(): Buffer {
  const random = randomBytes(8);
  random[0]! &= 0x7f;
  return random;
}

export function newLockToken(seq: bigint): string {
  return guidOf(sequenceHex(seq) + randomHalf().toString('hex'));
}

/** The largest delivery count a held token can name (16 bits, the top one clear: not a lease token). */
export const MAX_HELD_DELIVERY_COUNT = 0x7fff;

const heldMac = (seq: bigint, deliveryCount: number, sessionLockToken: string) =>
  createHmac('sha256', sessionLockToken).update(`${seq}/${deliveryCount}`).digest('hex').slice(0, 12);

/**
 * A token for a session message held in its session's record (N3, session-lock.ts): the
 * sequence number, the delivery count handed out (4 hex digits), and 48 bits of an HMAC of both
 * keyed by the session lock token, so only the lock holder's broker can make one and a
 * settlement knows the count to condition on without a stored token.
 */
export function newHeldLockToken(seq: bigint, deliveryCount: number, sessionLockToken: string): string {
  return guidOf(sequenceHex(seq) + deliveryCount.toString(16).padStart(4, '0') + heldMac(seq, deliveryCount, sessionLockToken));
}

/** The delivery count a (lower-case) token names, if it is a held token made under `sessionLockToken`; otherwise undefined. */
export function heldDeliveryCount(token: string, sessionLockToken: string | undefined): number | undefined {
  if (sessionLockToken === undefined) return undefined;
  const hex = token.replace(/-/g, '');
  const count = Number.parseInt(hex.slice(16, 20), 16);
  if (!(count >= 1 && count <= MAX_HELD_DELIVERY_COUNT)) return undefined;
  return hex.slice(20) === heldMac(sequenceOfLockToken(token), count, sessionLockToken) ? count : undefined;
}

/**
 * A token for one of `planned` takes under a batch's lock reminder (R6): the random half opens
 * with the batch's size, one byte (0 past 127), so a complete that holds that many tokens of
 * one partition knows it may hold the whole batch (lib/broker/reminders.ts), with no read.
 */
export function newBatchLockToken(seq: bigint, planned: number): string {
  // The size byte's top bit stays clear, as `randomHalf`'s: a receive takes at most 100.
  const size = planned > 0 && planned <= 0x7f ? planned : 0;
  return guidOf(sequenceHex(seq) + size.toString(16).padStart(2, '0') + randomHalf().subarray(1).toString('hex'));
}

/** The batch size a (lower-case) token states (`newBatchLockToken`); any other token's first random byte reads as one too. */
export const batchSizeOfLockToken = (token: string): number => Number.parseInt(token.replace(/-/g, '').slice(16, 18), 16);

/**
 * The id of a batch of lock tokens: a hash of the set, 16 hex digits. Only the very set gives
 * the id, so a complete holding tokens of two batches never names either batch's reminder.
 */
export const batchIdOfLockTokens = (tokens: readonly string[]): string =>
  createHash('sha256')
    .update([...tokens].sort().join(','))
    .digest('hex')
    .slice(0, 16);

export const isLockTokenShape = (token: unknown): token is string => typeof token === 'string' && pattern.test(token);

/** A GUID's case does not matter; tokens are issued and stored in lower case. */
export const normalizeLockToken = (token: string) => token.toLowerCase();

/** The sequence number a well-formed token names. */
export function sequenceOfLockToken(token: string): bigint {
  return BigInt(`0x${token.replace(/-/g, '').slice(0, 16)}`);
}

/** The random half of a (lower-case) token, as a message item stores it: 16 hex digits. */
export const lockTokenTail = (token: string) => token.replace(/-/g, '').slice(16);

/** Whether a stored lock token is a whole one (an item locked before tokens were stored by their tail). */
export const isWholeLockToken = (stored: string) => stored.length === 36;

/** The token a stored one stands for on the message numbered `seq`: a tail with the sequence number before it; a whole one as it is. */
export const lockTokenOfStored = (seq: bigint, stored: string) => (isWholeLockToken(stored) ? stored : guidOf(sequenceHex(seq) + stored));
