/**
 * A message item as stored, and as the code reads it (`MessageItem`). DynamoDB bills a write
 * by the started kilobyte of the whole item, so a stored item does not repeat its key: `pk`
 * names the entity incarnation, subqueue and partition (`eid`, `subqueue`, `partition`), `sk`
 * the sequence number (`seq`), and the lock token keeps only its random half (its first half
 * is the sequence number again, lock-token.ts). About 80 bytes fewer keep a locked 1 KB JSON
 * event, a session message's included, in one write unit.
 *
 * Items stored before carry those attributes and the whole token: a value stored is read as
 * it is, one absent is derived from the key. This module is the one place that knows both
 * forms: every put of a whole message item goes through `storedMessage` (store/messages.ts
 * `putNewMessages`), every read through `messageOfStored` (the store operations that return
 * message items, and the stream consumer's images, stream-image.ts `messageOfImage`), and
 * every condition on a lock token through `lockTokenIs`.
 */
import type { MessageItem } from '../messages/item.js';
import { lockTokenOfStored, lockTokenTail, sequenceOfLockToken } from '../messages/lock-token.js';
import { parseMessagePk, parsePositionedPk, positionOfSk } from './keys.js';
import { positionedSeq } from './sequence.js';

/** What the key holds: a stored item carries these only when it was stored before. */
type FromKey = 'seq' | 'eid' | 'subqueue' | 'partition';

/** A message item as DynamoDB holds it: `lockToken`, when locked, is the token's random half (or, stored before, the whole token). */
export type StoredMessageItem = Omit<MessageItem, FromKey> & Partial<Pick<MessageItem, FromKey>>;

/** What a message's key holds: its partition as parsed, and its sequence number as the decimal text `seq` is. */
function fromKeyOf(item: Pick<StoredMessageItem, 'pk' | 'sk'>) {
  const message = parseMessagePk(item.pk);
  // The sort key holds the sequence number (19 digits, zero-padded).
  if (message) return { ...message, seq: BigInt(item.sk).toString() };
  // A positioned message's sort key holds its position, which numbers it (sequence.ts `positionedSeq`).
  const positioned = parsePositionedPk(item.pk);
  if (positioned) return { ...positioned, seq: positionedSeq(positionOfSk(item.sk), positioned.partition).toString() };
  return undefined;
}

/** The item as read: what the key holds filled in where the item does not carry it, and the whole lock token. */
export function messageOfStored(stored: StoredMessageItem): MessageItem {
  const key = fromKeyOf(stored);
  const seq = stored.seq ?? key?.seq ?? BigInt(stored.sk).toString();
  const item = {
    ...stored,
    seq,
    eid: stored.eid ?? key?.eid,
    subqueue: stored.subqueue ?? key?.subqueue,
    partition: stored.partition ?? key?.partition,
  } as MessageItem;
  if (stored.lockToken !== undefined) item.lockToken = lockTokenOfStored(BigInt(seq), stored.lockToken);
  return item;
}

/** The item to put: without what its key holds, and with the lock token's random half. A value the key does not agree with is kept. */
export function storedMessage(item: MessageItem): StoredMessageItem {
  const { seq, eid, subqueue, partition, ...rest } = item;
  const key = fromKeyOf(item);
  const stored: StoredMessageItem = rest;
  if (seq !== (key?.seq ?? BigInt(item.sk).toString())) stored.seq = seq;
  if (eid !== key?.eid) stored.eid = eid;
  if (subqueue !== key?.subqueue) stored.subqueue = subqueue;
  if (partition !== key?.partition) stored.partition = partition;
  if (item.lockToken !== undefined && sequenceOfLockToken(item.lockToken) === BigInt(item.sk)) stored.lockToken = lockTokenTail(item.lockToken);
  return stored;
}

/** The lock token to write for `token` on its message (the message its first half numbers). */
export const storedLockToken = lockTokenTail;

/**
 * The message is locked under `:lockToken`, given that the item is the one the token numbers
 * (every settlement finds its message by the token's sequence number): stored as its random
 * half, or by an item locked before, whole.
 */
export const lockTokenIs = 'lockToken IN (:lockToken, :lockTail)';

/** The values `lockTokenIs` reads for `token`. */
export const lockTokenValues = (token: string) => ({ ':lockToken': token, ':lockTail': lockTokenTail(token) });
