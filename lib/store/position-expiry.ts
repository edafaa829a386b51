/**
 * Removing an expired message from its position (T4, T6), under the lease of the claim that
 * passed it (broker/positioned-expiry.ts): the claim's cursor has moved past it, so removing it
 * leaves no hole a receiver could take for a crashed sender's (positions.ts `findHead`), and
 * its lease holds it, so if the remover dies the lease lapses and the next claim takes it back
 * and passes it again. Neither write touches the cursor, the lease or any index.
 *
 * Also the sweeper's repair of a claim that died between its cursor write and its clean-up
 * (`deleteVoidBelowCursor`), whose passed messages would otherwise stay, and count (E6), once
 * their request's tombstone is gone.
 */
import { GetCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { MessageItem } from '../messages/item.js';
import type { Entry } from './leases.js';
import { completeAtPosition, leaseToken } from './leases.js';
import { storedMessage } from './message-layout.js';
import { cursorKey, leasePk, padPosition, positionKey, positionOfSk } from './keys.js';
import { cancellationCodes, cancelledBusy, isStoreBusy, partFailedCondition } from './outcomes.js';
import { deletePassed, type PositionedItem, type PositionStore } from './positions.js';

/** What a removal came to: done; the lease no longer held the message (taken back, or removed already); or refused for load. */
export type RemovalOutcome = 'done' | 'lockLost' | 'busy';

/** The message is still at the take-back count its entry names (leases.ts `completeAtPosition`'s condition). */
function heldAt(entry: Entry) {
  const count = entry[1] === 0 ? 'attribute_not_exists(g)' : 'g = :g';
  return { expression: `attribute_exists(pk) AND attribute_not_exists(tomb) AND ${count}`, values: entry[1] === 0 ? undefined : { ':g': entry[1] } };
}

/**
 * T6 without dead-lettering: deletes the message. Key: `positionKey(partition pk, entry's
 * position)`. Condition: held at the entry's take-back count (it is `completeAtPosition` under a
 * token for the entry). 1 write unit for a 1 KB item. Success: 'done'. Failure: 'lockLost'
 * (nothing written); 'busy' when refused for load; other errors throw.
 */
export async function deleteExpiredAtPosition(ctx: PositionStore, partitionPk: string, entry: Entry): Promise<RemovalOutcome> {
  try {
    return (await completeAtPosition(ctx, partitionPk, leaseToken({ pk: leasePk(partitionPk), id: 0, until: 0 }, entry))) === 'completed' ? 'done' : 'lockLost';
  } catch (e) {
    if (isStoreBusy(e)) return 'busy';
    throw e;
  }
}

/**
 * T6 with dead-lettering: moves the message into today's layout, one TransactWriteItems:
 * delete it (`positionKey`, condition: held at the entry's take-back count) and put each target
 * (`storedMessage`, condition `attribute_not_exists(pk)`: the dead-letter copy's key is the
 * message's own sequence number, so only a move of this message could have put it there, and
 * that move removed the message). Write units: 2 for each item up to 1 KB, 4 for a 1 KB
 * message and its copy. Success: 'done'. Failure: 'lockLost' when the message was taken back or
 * moved already (nothing written); 'busy' when refused for load or a conflict; other errors
 * (a target's key taken) throw.
 */
export async function moveExpiredFromPosition(ctx: PositionStore, partitionPk: string, entry: Entry, targets: readonly MessageItem[]): Promise<RemovalOutcome> {
  const held = heldAt(entry);
  try {
    await ctx.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: ctx.tableName,
              Key: positionKey(partitionPk, entry[0]),
              ConditionExpression: held.expression,
              ...(held.values ? { ExpressionAttributeValues: held.values } : {}),
            },
          },
          ...targets.map((t) => ({ Put: { TableName: ctx.tableName, Item: storedMessage(t), ConditionExpression: 'attribute_not_exists(pk)' } })),
        ],
      }),
    );
    return 'done';
  } catch (e) {
    const codes = cancellationCodes(e);
    if (partFailedCondition(codes, 0)) return 'lockLost';
    if (isStoreBusy(e) || cancelledBusy(codes)) return 'busy';
    throw e;
  }
}

/**
 * Deletes the messages of void requests (a request with a tombstone) left below the cursor by
 * a claim that died before `deletePassed`. Reads: the cursor by key and the items below its
 * `pos` (every page), eventually consistent: a stale cursor only narrows the range, and a void
 * request stays void. Then `deletePassed` on what it found (no condition: nobody delivers
 * them). Cost while there is none: 1 read unit; the Query reads the messages held under
 * leases too. Returns how many it deleted; errors throw.
 */
export async function deleteVoidBelowCursor(ctx: PositionStore, partitionPk: string): Promise<number> {
  const cursor = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: cursorKey(partitionPk) }));
  const pos = (cursor.Item as { pos?: number } | undefined)?.pos;
  if (pos === undefined) return 0;
  const items: PositionedItem[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk AND sk < :pos',
        ExpressionAttributeValues: { ':pk': partitionPk, ':pos': padPosition(pos) },
        ProjectionExpression: 'pk, sk, tomb, rf, rn',
        ExclusiveStartKey: start,
      }),
    );
    items.push(...((out.Items ?? []) as PositionedItem[]));
    start = out.LastEvaluatedKey;
  } while (start);
  const tombs = items.filter((i) => i.tomb).map((i) => positionOfSk(i.sk));
  const voided = items.filter((i) => !i.tomb && i.rf !== undefined && i.rn !== undefined && tombs.some((t) => t >= i.rf! && t < i.rf! + i.rn!));
  if (voided.length > 0) await deletePassed(ctx, voided);
  return voided.length;
}
