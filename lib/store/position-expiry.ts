/**
 * Removing an expired message from its position (T4, T6; a move to the dead-letter subqueue is
 * lease-settlements.ts `moveFromPosition`, as a dead-letter settlement's), under the lease of the claim that
 * passed it (broker/positioned-expiry.ts): the claim's cursor has moved past it, so removing it
 * leaves no hole a receiver could take for a crashed sender's (positions.ts `findHead`), and
 * its lease holds it, so if the remover dies the lease lapses and the next claim takes it back
 * and passes it again. Neither write touches the cursor, the lease or any index.
 *
 * Also the sweeper's repair of a claim that died between its cursor write and its clean-up
 * (`deleteVoidBelowCursor`), whose passed messages would otherwise stay, and count (E6), once
 * their request's tombstone is gone.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Entry } from './leases.js';
import { completeAtPosition, leaseToken } from './leases.js';
import { cursorKey, leasePk, padPosition } from './keys.js';
import { isStoreBusy } from './outcomes.js';
import { deletePassed, messagesOfVoidRequests, type PositionedItem, type PositionStore, type Removal } from './positions.js';
import { queryAll } from './query.js';

/** What a removal came to: done; the lease no longer held the message (taken back, or removed already); or refused for load. */
export type RemovalOutcome = 'done' | 'lockLost' | 'busy';

/**
 * T6 without dead-lettering: deletes the message (on a ticketed partition, `removal` 'marker':
 * leaves its `done` marker, positions.ts `Removal`). Key: `positionKey(partition pk, entry's
 * position)`. Condition: held at the entry's take-back count (it is `completeAtPosition` under a
 * token for the entry). 1 write unit for a 1 KB item. Success: 'done'. Failure: 'lockLost'
 * (nothing written); 'busy' when refused for load; other errors throw.
 */
export async function deleteExpiredAtPosition(ctx: PositionStore, partitionPk: string, entry: Entry, removal: Removal = 'delete'): Promise<RemovalOutcome> {
  try {
    const token = leaseToken({ pk: leasePk(partitionPk), id: 0, until: 0 }, entry);
    return (await completeAtPosition(ctx, partitionPk, token, removal)) === 'completed' ? 'done' : 'lockLost';
  } catch (e) {
    if (isStoreBusy(e)) return 'busy';
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
  const items = await queryAll<PositionedItem>(ctx, {
    KeyConditionExpression: 'pk = :pk AND sk < :pos',
    ExpressionAttributeValues: { ':pk': partitionPk, ':pos': padPosition(pos) },
    ProjectionExpression: 'pk, sk, tomb, rf, rn',
  });
  const voided = messagesOfVoidRequests(items);
  if (voided.length > 0) await deletePassed(ctx, voided);
  return voided.length;
}
