/**
 * Handing a message out: the one conditional write that locks it (peek-lock) or deletes it
 * (receive-and-delete), and the message as its receiver sees it. The condition is the caller's:
 * it states what "still available" means for a queue, a session or a deferred message.
 */
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { presentMessage, type MessageItem, type ReceivedMessage } from '../messages/item.js';
import type { Key } from '../store/keys.js';
import { type BrokerContext } from './context.js';
import { conditionally, isConflict } from '../store/outcomes.js';

export interface GuardedWrite {
  key: Key;
  condition: string;
  names?: Record<string, string>;
  values: Record<string, unknown>;
}

/** Peek-lock: applies `update` (which sets the lock) if the condition holds; undefined if it did not (taken, settled or moved meanwhile). */
export async function lockAndPresent(ctx: BrokerContext, write: GuardedWrite, update: string, now: number): Promise<ReceivedMessage | undefined> {
  const updated = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: write.key,
        ConditionExpression: write.condition,
        UpdateExpression: update,
        ExpressionAttributeNames: write.names,
        ExpressionAttributeValues: write.values,
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  if (!updated) return undefined;
  return presentMessage(updated.Attributes as MessageItem, now, { lock: true });
}

/** Receive-and-delete (R3): deletes the message if the condition holds and presents it as delivered once more; undefined if it did not. */
export async function deleteAndPresent(ctx: BrokerContext, write: GuardedWrite, now: number): Promise<ReceivedMessage | undefined> {
  const old = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: write.key,
        ConditionExpression: write.condition,
        ExpressionAttributeNames: write.names,
        ExpressionAttributeValues: write.values,
        ReturnValues: 'ALL_OLD',
      }),
    ),
  );
  if (!old) return undefined;
  const item = old.Attributes as MessageItem;
  return presentMessage({ ...item, deliveryCount: item.deliveryCount + 1, state: 'Active' }, now);
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
