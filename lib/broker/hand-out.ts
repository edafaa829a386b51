/**
 * Handing a message out: the one conditional write that locks it (peek-lock) or deletes it
 * (receive-and-delete), and the message as its receiver sees it. The condition is the caller's:
 * it states what "still available" means for a queue, a session or a deferred message.
 */
import type { BrokerContext } from './context.js';
import { presentMessage, type MessageItem, type ReceivedMessage } from '../messages/item.js';
import { deleteMessage, deleteMessageOnce, lockMessage, type GuardedWrite } from '../store/messages.js';
import { storedLockToken } from '../store/message-layout.js';
import { isConflict } from '../store/outcomes.js';

/** Peek-lock: applies `update` (which sets the lock) if the condition holds; undefined if it did not (taken, settled or moved meanwhile). */
export async function lockAndPresent(ctx: BrokerContext, write: GuardedWrite, update: string, now: number): Promise<ReceivedMessage | undefined> {
  const updated = await lockMessage(ctx, write, update);
  return updated ? presentMessage(updated, now, { lock: true }) : undefined;
}

/**
 * A receive-and-delete's taker, which read the message (`asRead`) before its delete so that a
 * delete whose answer was lost still hands it out (R10). `sole`: a session's lock holder, the
 * only taker (N3), whose retried delete that finds the message gone was its own (store/messages.ts
 * `deleteMessage`); otherwise one of several, whose delete is a transaction the SDK's retry
 * repeats (`deleteMessageOnce`).
 */
export interface DeleteTaker {
  sole: boolean;
  asRead: MessageItem;
}

/**
 * Receive-and-delete (R3): deletes the message if the condition holds and presents it as
 * delivered once more; undefined if it did not. Without `taker`, the message is what the delete
 * returns, and a delete whose answer was lost hands nothing out.
 */
export async function deleteAndPresent(ctx: BrokerContext, write: GuardedWrite, now: number, taker?: DeleteTaker): Promise<ReceivedMessage | undefined> {
  const item = taker && !taker.sole ? await deleteMessageOnce(ctx, write, taker.asRead) : await deleteMessage(ctx, write, taker?.asRead);
  return item ? presentMessage({ ...item, deliveryCount: item.deliveryCount + 1, state: 'Active' }, now) : undefined;
}

/** What a take requires of a message besides what its read found (visible, or deferred): that nobody holds it. */
export interface TakeCondition {
  condition: string;
  names?: Record<string, string>;
  values: Record<string, unknown>;
}

/** The lock a take sets on a message: its token and end, and for a session message the session lock it is taken under (N3). */
export interface MessageLock {
  token: string;
  until: number;
  /** A session message: the session lock's token and generation, recorded on the message (`slk`, `sgen`). */
  session?: { token: string; gen: number };
  /** The delivery count to set (one more than the count the take's condition checks); absent: one more than stored. */
  deliveryCount?: number;
  /** The last allowed delivery: the message goes on this agenda shard at the lock's end, so D2 happens even if nobody receives again. */
  agenda?: string;
}

/**
 * Where a taken message's ready entry goes while it is locked: to `rsk` (its lock's end, or a
 * session's in-flight place), or out of the index (`out`: a batch whose reminder sorts at the
 * lock's end instead, reminders.ts; `rpk` stays, so a renew or an abandon puts it back).
 */
export type LockedEntry = { rsk: string } | 'out';

/**
 * The update that takes `lock`, and its names and values. With `ready`, the message is in the
 * ready index: its entry sorts at `ready.rsk` while locked (or leaves the index), it is Active,
 * and its TTL goes (a locked message is settled, not removed: T5); a deferred message keeps all
 * three (R7).
 */
export function lockUpdate(lock: MessageLock, ready?: LockedEntry): { update: string; names: Record<string, string>; values: Record<string, unknown> } {
  const moved = ready !== undefined && ready !== 'out';
  const sets = [
    ...(lock.session ? ['slk = :slk', 'sgen = :gen'] : []),
    'lockToken = :token',
    'lockedUntil = :until',
    lock.deliveryCount !== undefined ? 'deliveryCount = :next' : 'deliveryCount = deliveryCount + :one',
    ...(moved ? ['rsk = :locked'] : []),
    ...(ready ? ['#state = :active'] : []),
    'v = if_not_exists(v, :zero) + :one',
    ...(lock.agenda !== undefined ? ['dpk = :dpk', 'dsk = :until'] : []),
  ];
  return {
    update: `SET ${sets.join(', ')}${ready === 'out' ? ' REMOVE #ttl, rsk' : ready ? ' REMOVE #ttl' : ''}`,
    names: ready ? { '#state': 'state', '#ttl': 'ttl' } : {},
    values: {
      ...(lock.session ? { ':slk': lock.session.token, ':gen': lock.session.gen } : {}),
      ':token': storedLockToken(lock.token),
      ':until': lock.until,
      ...(lock.deliveryCount !== undefined ? { ':next': lock.deliveryCount } : {}),
      ...(moved ? { ':locked': ready.rsk } : {}),
      ...(ready ? { ':active': 'Active' } : {}),
      ':zero': 0,
      ':one': 1,
      ...(lock.agenda !== undefined ? { ':dpk': lock.agenda } : {}),
    },
  };
}

/**
 * R10: a candidate whose write met another transaction in flight on it (a move, a settle) is
 * passed over as if another receiver had it (`instead`), never a reason to fail the request.
 */
export async function unlessConflict<T, U>(write: Promise<T>, instead: U): Promise<T | U> {
  try {
    return await write;
  } catch (e) {
    if (isConflict(e)) return instead;
    throw e;
  }
}

/**
 * R10: runs a receive's pass, which pushes each message it takes onto `out`. When the pass
 * fails part-way (the store throttled past the SDK's retries, a Query failed), what was
 * already taken is the answer: deleted or locked, it exists nowhere else. Only a pass that
 * took nothing fails, and then nothing was changed by it.
 */
export async function keepingTaken(out: ReceivedMessage[], pass: () => Promise<unknown>): Promise<ReceivedMessage[]> {
  try {
    await pass();
  } catch (e) {
    if (out.length === 0) throw e;
  }
  return out;
}
