/**
 * The settlements of a message claimed under a lease (leases.ts) other than complete: abandon,
 * renew, defer and dead-letter (R4-R7, D2, D3). A lock token names its message's position and
 * take-back count `g` and its lease (`leaseToken`); the message is held under it while some
 * lease not yet lapsed holds that entry and the message is still at that count (a take-back,
 * an abandon, a complete or a move changes or removes it).
 *
 * - Finding the lease (`readPartitionLeases`, `leasesHolding`): the token does not carry the lease's lock end, which
 *   is in its key, so the partition's leases are read (one Query of a small partition, by
 *   size: half a unit while their items total under 4 KB) and the ones whose `leaseToken`
 *   gives the token kept. A lease a renew made for one message (below) carries its claim's
 *   id as `o`, so the token still names it.
 * - Abandon (`abandonAtPosition`): one transaction raises the message's `g` (so a complete or
 *   a settlement under the old token fails, R5), writes the properties, and queues the
 *   message in the cursor's `back` at its new count, first in line, as a take-back does (R4).
 *   It removes `gl`, so its lease's own take-back at the lapse, which still lists the entry,
 *   passes it over instead of queuing it again (leases.ts `takeBackMessage`).
 * - Renew (`renewAtPosition`): the message moves to a lease of its own whose lock end is the
 *   new one, with a fresh id, then leaves its old lease; its siblings keep their own lock end.
 *   A crash between the two leaves the message in both: its lock then ends with the older
 *   lease, where it is taken back once (the newer's take-back finds `gl` naming the older).
 * - Defer and dead-letter (`moveFromPosition`, and `heldAtPosition` for moves.ts): one
 *   transaction deletes the message at its position, still at its count, and puts where it
 *   goes; its lease's take-back later finds nothing there.
 *
 * The delivery count of a positioned message is `g - ug + 1` while it is held (each hand-out
 * is at a take-back count of its own, and a claim hands it out once per count): `g` on the
 * message item counts its take-backs and abandons, `ug` those of them that were of claims
 * that handed nothing out (leases.ts `deliveryCountAt`, R3).
 */
import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomInt } from 'node:crypto';
import type { MessageItem } from '../messages/item.js';
import { cursorKey, leaseKey, leasePk, positionCounterKey, positionKey } from './keys.js';
import { queryAll } from './query.js';
import { BACK_QUEUED_ADD, BACK_QUEUED_VALUES, LEASE_TTL_MS, leaseHoldsToken, type Entry, type LeaseItem } from './leases.js';
import { storedMessage } from './message-layout.js';
import { cancellationCodes, conditionFailed, isStoreBusy, itemAtRefusal, partFailedCondition, refusedItsOwnPut } from './outcomes.js';
import { removalPart, type PositionedItem, type PositionStore, type Removal } from './positions.js';

/**
 * A lease as read here: one a renew made for a single message carries its claim's id (`o`),
 * which its token names; one a renew took an entry out of carries `rn`, and in `rb` the ids of
 * the renews' own leases that took one out (so a renew's write retried by the SDK after it
 * landed knows itself, `dropEntry`).
 */
export type HeldLease = LeaseItem & { o?: number; rn?: 1; rb?: Set<number> };

/** What a settlement came to: done, the lock was not held (R5), or DynamoDB refused for load or a conflict (nothing written; retryable). */
export type SettleOutcome = 'done' | 'lockLost' | 'busy';

/**
 * The message is still at the take-back count its token names: no take-back, abandon, complete or move since.
 * On a ticketed partition a settled message leaves a `done` marker with no `g`, which a token at count 0 must not hold.
 */
export function heldAtPosition(entry: Entry): { expression: string; values: Record<string, unknown> } {
  const count = entry[1] === 0 ? 'attribute_not_exists(g)' : 'g = :heldG';
  return {
    expression: `attribute_exists(pk) AND attribute_not_exists(tomb) AND attribute_not_exists(done) AND ${count}`,
    values: entry[1] === 0 ? {} : { ':heldG': entry[1] },
  };
}

/**
 * A partition's leases, lapsed or not (settled and lapsed leases stay until a claim deletes
 * them). Key: `leasePk(partition pk)`, the whole partition. No condition. Eventually consistent
 * unless `consistent`: a caller that finds no lease holding a token, or finds its lock ended,
 * asks again consistently before answering MessageLockLost, since a lease just written or
 * renewed may not show yet. Read units by the leases' size: half a unit while they total under
 * 4 KB (about 40 leases of 10 messages), so its cost grows with the leases held at once.
 */
export const readPartitionLeases = (ctx: PositionStore, partitionPk: string, consistent: boolean): Promise<HeldLease[]> =>
  queryAll<HeldLease>(ctx, { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': leasePk(partitionPk) }, ConsistentRead: consistent });

/** Of `leases`, those holding `token`'s message: usually one; two after a renew that died between its writes. */
export function leasesHolding(leases: readonly HeldLease[], token: string): HeldLease[] {
  return leases.filter((lease) => leaseHoldsToken(lease, token));
}

/** When the lock of a message held by `leases` ends: with the first of them to lapse, which takes it back. */
export const lockEnd = (leases: readonly HeldLease[]) => (leases.length === 0 ? 0 : Math.min(...leases.map((l) => l.until)));

/**
 * Reads the message at a position. Key: `positionKey(partition pk, position)`. No condition.
 * Returns it, or undefined when it is gone, a tombstone or a `done` marker (ticketed partitions).
 */
export async function readAtPosition(ctx: PositionStore, partitionPk: string, position: number, consistent: boolean): Promise<PositionedItem | undefined> {
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionKey(partitionPk, position), ConsistentRead: consistent }));
  const item = out.Item as PositionedItem | undefined;
  return item && !item.tomb && item.done === undefined ? item : undefined;
}

/** A transaction's outcome, read once: done, a part's condition failed (`failedPart`), or busy; other errors throw. */
async function transact(ctx: PositionStore, items: Record<string, unknown>[]): Promise<'done' | 'busy' | { codes: string[] }> {
  try {
    await ctx.db.send(new TransactWriteCommand({ TransactItems: items as never }));
    return 'done';
  } catch (e) {
    const codes = cancellationCodes(e);
    if (codes && failedParts(codes).length > 0) return { codes };
    if (isStoreBusy(e)) return 'busy';
    throw e;
  }
}

/** The parts of a cancelled transaction whose condition failed. */
const failedParts = (codes: readonly string[]) => codes.flatMap((_, i) => (partFailedCondition(codes, i) ? [i] : []));

/**
 * R4 abandon of the message `entry` names (R5: still at its count). One TransactWriteItems:
 * - the message (`positionKey`): condition `heldAtPosition(entry)`; sets `g` one more and
 *   `props` when given, removes `gl`;
 * - the cursor (`cursorKey`): condition `attribute_exists(pk)` (a claim made it); appends the
 *   entry at its new count to `back` and adds 1 to `v`, so a claim that read the cursor before
 *   loses its race and reads it again, with the message in line;
 * - on a ticketed partition (`ticketed`), the counter (`positionCounterKey`): no condition; `bq`
 *   one more, so the next receive's take shows that `back` holds something and claims it
 *   (ticket-back.ts; R6: in the same transaction, or a receive could find the count clear while
 *   the message waits in `back`).
 * Success: 'done', the message is first in line, to be handed out at a delivery count one more than now.
 * Failure: 'lockLost' when the message was taken back, settled or moved; 'busy' when refused
 * for load or a conflict (nothing written). Other errors throw. Two write units for each item
 * up to 1 KB, as every transactional write: 4 for a 1 KB message, 6 on a ticketed partition.
 */
export async function abandonAtPosition(
  ctx: PositionStore,
  partitionPk: string,
  entry: Entry,
  props?: string,
  options: { ticketed?: boolean } = {},
): Promise<SettleOutcome> {
  const [outcome] = await abandonAtPositions(ctx, partitionPk, [{ entry, ...(props !== undefined ? { props } : {}) }], options);
  return outcome!;
}

/** A transaction carries at most 100 items: the messages of one abandon, the cursor and (ticketed) the counter. */
export const MAX_ABANDONS_AT_ONCE = 98;

/**
 * R9 abandon of several messages of one partition at once: `abandonAtPosition`'s transaction
 * with one message part each (up to `MAX_ABANDONS_AT_ONCE`) and one cursor part that queues
 * them all, in the order given. Abandons of one partition sent one by one at once would meet
 * each other on the cursor (TransactionConflict). A message refused (taken back, settled,
 * moved) cancels the transaction: it is answered 'lockLost' and the rest go again without
 * it. Returns an outcome per entry; 'busy' ones wrote nothing. Write units: 2 per message up to
 * 1 KB and 2 for the cursor (and 2 for the counter on a ticketed partition), per transaction.
 */
export async function abandonAtPositions(
  ctx: PositionStore,
  partitionPk: string,
  abandons: readonly { entry: Entry; props?: string }[],
  options: { ticketed?: boolean } = {},
): Promise<SettleOutcome[]> {
  if (abandons.length > MAX_ABANDONS_AT_ONCE) throw new RangeError(`at most ${MAX_ABANDONS_AT_ONCE} abandons in one transaction`);
  const outcomes: SettleOutcome[] = abandons.map(() => 'busy');
  let pending = abandons.map((_, i) => i);
  while (pending.length > 0) {
    const parts = pending.map((i) => {
      const { entry, props } = abandons[i]!;
      const held = heldAtPosition(entry);
      return {
        Update: {
          TableName: ctx.tableName,
          Key: positionKey(partitionPk, entry[0]),
          ConditionExpression: held.expression,
          UpdateExpression: `SET g = :next${props !== undefined ? ', props = :props' : ''} REMOVE gl`,
          ExpressionAttributeValues: { ...held.values, ':next': entry[1] + 1, ...(props !== undefined ? { ':props': props } : {}) },
        },
      };
    });
    const queued = pending.map((i): Entry => [abandons[i]!.entry[0], abandons[i]!.entry[1] + 1]);
    const counted = options.ticketed ? [countAtCounter(ctx, partitionPk)] : [];
    const outcome = await transact(ctx, [...parts, queueAtCursor(ctx, partitionPk, queued), ...counted]);
    if (outcome === 'done' || outcome === 'busy') {
      for (const i of pending) outcomes[i] = outcome;
      return outcomes;
    }
    const refused = new Set(failedParts(outcome.codes).filter((part) => part < pending.length));
    // The cursor's own condition (it exists) cannot fail once a claim has been made.
    if (refused.size === 0) throw new Error(`abandonAtPositions: the cursor of ${partitionPk} is missing`);
    for (const part of refused) outcomes[pending[part]!] = 'lockLost';
    pending = pending.filter((_, part) => !refused.has(part));
  }
  return outcomes;
}

/** The cursor part of an abandon: `entries` appended to `back`, first in line after what is there; `v` one more, so a claim that read it before loses its race. */
const queueAtCursor = (ctx: PositionStore, partitionPk: string, entries: Entry[]) => ({
  Update: {
    TableName: ctx.tableName,
    Key: cursorKey(partitionPk),
    ConditionExpression: 'attribute_exists(pk)',
    UpdateExpression: 'SET #back = list_append(if_not_exists(#back, :none), :entries) ADD v :one',
    ExpressionAttributeNames: { '#back': 'back' },
    ExpressionAttributeValues: { ':none': [], ':entries': entries, ':one': 1 },
  },
});

/** The counter part of a ticketed partition's abandon: `bq` one more (ticket-back.ts). No condition: it cannot refuse. */
const countAtCounter = (ctx: PositionStore, partitionPk: string) => ({
  Update: { TableName: ctx.tableName, Key: positionCounterKey(partitionPk), UpdateExpression: BACK_QUEUED_ADD, ExpressionAttributeValues: BACK_QUEUED_VALUES },
});

/** Ids of leases a renew makes: above any claim id (a cursor version) and random, so none meets another lease's id. */
const renewedLeaseId = () => 2 ** 52 + randomInt(2 ** 47);

/**
 * R4 renew of the message `entry` names, held by `leases` (`leasesHolding`, none lapsed): its
 * lock ends at `until`, its siblings' locks where they did. Steps:
 *
 * 1. Put a lease of its own. Key: `leaseKey(partition pk, until, fresh id)`. Condition:
 *    `attribute_not_exists(pk)`. Holds the entry, the claim's id as `o` and its random part.
 * 2. Take the entry out of each old lease. Key: the old lease's. Condition: `e` as read, and
 *    `notTakingBack` (a lease lapsed and being taken back: the lock was lost).
 *    Rewritten without it, marked `rn`, and the new lease's id added to `rb` (`dropEntry`;
 *    about 10 bytes, the lease stays far under 1 KB). One that changed meanwhile (a sibling's
 *    renew) is tried again as the refusal shows it (ALL_OLD), unless `rb` shows this renew's
 *    own write, landed and retried by the SDK; one gone (taken
 *    back after its lapse) means the lock was lost.
 *
 * A crash after 1 leaves the message in both leases: its lock ends with the old one, whose
 * take-back queues it once (the new one's take-back finds `gl` naming the old lease, and
 * passes it over), and the caller, which never heard "renewed", holds no longer than it was
 * told. A crash within 2 the same. Success: 'done'. Failure: 'lockLost' when an old lease was
 * gone (the new one is deleted again); 'busy' when refused for load (the new one too, when
 * written). Other errors throw. Write units: 1 for the new lease, 1 for the old one's rewrite (both items well under 1 KB), and later 1 for the new lease's delete by the claim
 * that finds it lapsed.
 */
export async function renewAtPosition(
  ctx: PositionStore,
  partitionPk: string,
  leases: readonly HeldLease[],
  entry: Entry,
  until: number,
): Promise<SettleOutcome> {
  const first = leases[0];
  if (!first) return 'lockLost';
  const id = renewedLeaseId();
  const own: HeldLease = {
    ...leaseKey(partitionPk, until, id),
    id,
    o: first.o ?? first.id,
    until,
    e: [entry],
    r: first.r,
    ttl: Math.ceil((until + LEASE_TTL_MS) / 1000),
  };
  try {
    await ctx.db.send(
      new PutCommand({ TableName: ctx.tableName, Item: own, ConditionExpression: 'attribute_not_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
    );
  } catch (e) {
    if (isStoreBusy(e)) return 'busy';
    // The SDK's retry of this put after it landed meets the lease it wrote (its id is random): written.
    if (!refusedItsOwnPut(e, own as unknown as Record<string, unknown>)) throw e;
  }
  let outcome: SettleOutcome = 'done';
  try {
    for (const lease of leases) {
      const dropped = await dropEntry(ctx, lease, entry, id);
      if (dropped !== 'done') {
        outcome = dropped;
        break;
      }
    }
  } catch (e) {
    if (!isStoreBusy(e)) throw e;
    outcome = 'busy';
  }
  // The lease of its own must not outlive a renew that did not happen: its lapse would end the lock early.
  if (outcome !== 'done') await deleteLeaseItem(ctx, own);
  return outcome;
}

/** The lease is not being taken back (leases.ts `markTakingBack`). */
const notTakingBack = 'attribute_not_exists(tk)';

/**
 * Takes `entry` out of `lease` (step 2 of `renewAtPosition`). Rewritten, also when it was its
 * last entry, never deleted: while the lease is its cursor's last claim, a claim that found it
 * missing would write it again from the cursor's record, entry and all (leases.ts `claim`, its
 * repair). An empty lease costs nothing more: the claim that finds it lapsed deletes it, as
 * it deletes a settled one. Marked `rn`: its `e` no longer lists every entry it was claimed
 * with, so a batch complete of the rest does not delete it (leases.ts `deleteSettledLease`).
 */
async function dropEntry(ctx: PositionStore, lease: HeldLease, entry: Entry, by: number): Promise<SettleOutcome> {
  let current: HeldLease | undefined = lease;
  for (let attempt = 0; attempt < 20 && current; attempt++) {
    const rest = current.e.filter((e) => !(e[0] === entry[0] && e[1] === entry[1]));
    if (rest.length === current.e.length) return 'lockLost'; // another renew of the same token moved it first
    const key = { pk: current.pk, sk: current.sk };
    try {
      await ctx.db.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: key,
          ConditionExpression: `e = :e AND ${notTakingBack}`,
          UpdateExpression: 'SET e = :rest, rn = :moved ADD rb :by',
          ExpressionAttributeValues: { ':e': current.e, ':rest': rest, ':moved': 1, ':by': new Set([by]) },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'done';
    } catch (e) {
      if (!conditionFailed(e)) throw e;
      // The lease as it is now comes with the refusal (no read unit); `rb` naming this renew is
      // its own write, landed and retried by the SDK: done. Read as "another renew moved it", the
      // entry would be in no lease once this renew's own lease is deleted: never delivered again.
      current = itemAtRefusal<HeldLease>(e);
      if (current?.rb?.has(by)) return 'done';
      // Lapsed and being taken back (leases.ts `markTakingBack`): the lock was lost (R5).
      if (current?.tk !== undefined) return 'lockLost';
    }
  }
  return 'lockLost';
}

/** Deletes a lease item. Key: its own. No condition. */
async function deleteLeaseItem(ctx: PositionStore, lease: Pick<LeaseItem, 'pk' | 'sk'>): Promise<void> {
  await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: { pk: lease.pk, sk: lease.sk } }));
}

/**
 * Moves the message `entry` names out of its position into today's layout (R4 defer: the
 * deferred message at its own sequence number, D3). One TransactWriteItems: remove the message as
 * `removal` says (positions.ts `removalPart`; a ticketed partition keeps a `done` marker)
 * (`positionKey`, condition `heldAtPosition(entry)`), put each target whole (`storedMessage`,
 * condition `attribute_not_exists(pk)`), then the `after` parts as given (a copy's put at a
 * drawn position, positions.ts `positionPutParts`). Success: 'done'. Failure: 'lockLost' when
 * the message was taken back, settled or moved already (nothing written); 'placeTaken' when
 * only an `after` part failed its condition (a tombstone took the drawn position: draw again);
 * a target's key taken (which only a move of this message can have put there) throws; 'busy'
 * when refused for load or a conflict. Write units: 2 for each item up to 1 KB: 4 for a 1 KB
 * message and its target.
 */
export function moveFromPosition(
  ctx: PositionStore,
  partitionPk: string,
  entry: Entry,
  targets: readonly MessageItem[],
  after?: readonly [],
  removal?: Removal,
): Promise<SettleOutcome>;
export function moveFromPosition(
  ctx: PositionStore,
  partitionPk: string,
  entry: Entry,
  targets: readonly MessageItem[],
  after: readonly Record<string, unknown>[],
  removal?: Removal,
): Promise<SettleOutcome | 'placeTaken'>;
export async function moveFromPosition(
  ctx: PositionStore,
  partitionPk: string,
  entry: Entry,
  targets: readonly MessageItem[],
  after: readonly Record<string, unknown>[] = [],
  removal: Removal = 'delete',
): Promise<SettleOutcome | 'placeTaken'> {
  const outcome = await transact(ctx, [
    removalPart(ctx, partitionPk, entry[0], removal, heldAtPosition(entry)),
    ...targets.map((t) => ({ Put: { TableName: ctx.tableName, Item: storedMessage(t), ConditionExpression: 'attribute_not_exists(pk)' } })),
    ...after,
  ]);
  if (outcome === 'done' || outcome === 'busy') return outcome;
  const failed = failedParts(outcome.codes);
  if (failed[0] === 0) return 'lockLost';
  if (failed.every((i) => i > targets.length)) return 'placeTaken';
  throw new Error(`moveFromPosition: the key of ${targets[failed[0]! - 1]?.sk ?? '?'} was taken`);
}
