/**
 * Handing a message out: the one conditional write that locks it (peek-lock) or deletes it
 * (receive-and-delete), and the message as its receiver sees it. The condition is the caller's:
 * it states what "still available" means for a queue, a session or a deferred message.
 */
import type { BrokerContext } from './context.js';
import { presentMessage, type ReceivedMessage } from '../messages/item.js';
import { deleteMessage, lockMessage, type GuardedWrite } from '../store/messages.js';
import { isConflict } from '../store/outcomes.js';

/** Peek-lock: applies `update` (which sets the lock) if the condition holds; undefined if it did not (taken, settled or moved meanwhile). */
export async function lockAndPresent(ctx: BrokerContext, write: GuardedWrite, update: string, now: number): Promise<ReceivedMessage | undefined> {
  const updated = await lockMessage(ctx, write, update);
  return updated ? presentMessage(updated, now, { lock: true }) : undefined;
}

/** Receive-and-delete (R3): deletes the message if the condition holds and presents it as delivered once more; undefined if it did not. */
export async function deleteAndPresent(ctx: BrokerContext, write: GuardedWrite, now: number): Promise<ReceivedMessage | undefined> {
  const item = await deleteMessage(ctx, write);
  return item ? presentMessage({ ...item, deliveryCount: item.deliveryCount + 1, state: 'Active' }, now) : undefined;
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
