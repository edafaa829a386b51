/**
 * Lock reminders: a peek-lock batch of a plain queue or subscription takes its messages out of
 * the `ready` index (1 index write instead of a move's 2) and leaves one reminder item in the
 * index of the same partition at the batch's lock end (keys.ts `reminderKey`). A receive that
 * meets a lapsed reminder puts those of its messages still locked under its tokens back where a
 * lapsed lock sorts (their `lockedUntil`), fences the ones its batch never took, and deletes it
 * (lib/broker/reminders.ts). The reminder is written before the first lock, so a crash between
 * them leaves a reminder that later finds nothing to do.
 */
import { DeleteCommand, PutCommand, UpdateCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import type { MessageItem } from '../messages/item.js';
import { backoff, UNPROCESSED_BACKOFF } from '../backoff.js';
import { keyId, readySortKey, type Key } from './keys.js';
import { conditionally, isThrottled, refusedItsOwnPut } from './outcomes.js';
import { batchGetItems } from './batch-get.js';
import { lockTokenIs, lockTokenValues, messageOfStored, type StoredMessageItem } from './message-layout.js';

type ReminderStore = Pick<Deps, 'db' | 'tableName' | 'clock'>;

/** A reminder as stored. */
export interface ReminderItem {
  pk: string;
  sk: string;
  /** The message partition's pk: the reminder's `ready` partition. */
  rpk: string;
  /** Where it sorts there: the batch's lock end. */
  rsk: string;
  /** The batch's lock end, the `lockedUntil` of every message it takes. */
  until: number;
  /** Each planned take: lock token (which names the message, lock-token.ts) and the delivery count the take expects to find. */
  takes: Record<string, number>;
}

/** No item has this key: a batch's reminder is written once (its sort key is unique). */
const reminderIsNew = 'attribute_not_exists(pk)';

/**
 * Writes a batch's reminder. Key: `reminderKey(message pk, batch id)`. Condition:
 * `reminderIsNew`. The item carries `rpk`/`rsk` (the `ready` index at the lock end) and no
 * TTL: only a receive that has dealt with its messages deletes it. Success: resolves, durable,
 * also when the SDK retried the put after it landed and met the reminder itself (its batch id
 * is fresh, so nobody else writes it: `refusedItsOwnPut`). Failure: throws DynamoDB's error;
 * nothing was written.
 */
export async function putReminder(ctx: ReminderStore, reminder: ReminderItem): Promise<void> {
  try {
    await ctx.db.send(
      new PutCommand({ TableName: ctx.tableName, Item: reminder, ConditionExpression: reminderIsNew, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
    );
  } catch (e) {
    if (!refusedItsOwnPut(e, reminder as unknown as Record<string, unknown>)) throw e;
  }
}

/**
 * Reads a reminder found in the `ready` index. Key: the row's. No condition; eventually
 * consistent (it was written a lock duration before it lapsed). Returns it, or undefined when
 * another receive has deleted it.
 */
export async function getReminder(ctx: ReminderStore, key: Key): Promise<ReminderItem | undefined> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: { pk: key.pk, sk: key.sk } }));
  return got.Item as ReminderItem | undefined;
}

/**
 * Calls per 100 keys before keys DynamoDB keeps leaving unprocessed (throttling) are given up on
 * for this receive; and calls per page of a range's Query before a page DynamoDB keeps refusing
 * (throttling) is.
 */
const READ_ATTEMPTS = 4;

/**
 * Reads message items by key (batch-get.ts, consistent: an item missing from the answer is
 * then truly gone, never a stale replica's view of a message still locked out of the index,
 * which would be stranded if its reminder were deleted). No condition. Returns the items found
 * by `keyId`, and the keys left unread because DynamoDB kept them unprocessed (throttling)
 * through every attempt: their state is unknown, not absent.
 */
export async function readMessagesByKey(ctx: ReminderStore, keys: readonly Key[]): Promise<{ items: Map<string, MessageItem>; unread: Key[] }> {
  const read = await batchGetItems<StoredMessageItem>(ctx, keys, { consistent: true, attempts: READ_ATTEMPTS });
  return { items: new Map(read.items.map((stored) => [keyId(stored), messageOfStored(stored)])), unread: read.unread };
}

/** A message partition's items from one sort key to another, both included. */
const inRange = 'pk = :pk AND sk BETWEEN :lowest AND :highest';

/**
 * Reads the messages of `keys` (of one message partition) by a Query of their range: partition
 * `pk`, sort keys `inRange` from the lowest of them to the highest. Consistent, for the reason
 * readMessagesByKey is. No condition. A Query is billed on the sum of what it reads rounded up
 * to 4 KB (1 unit when it finds nothing), not a unit a key, but it reads the other messages in
 * the range too; so it reads at most as many items as there are keys (its `Limit`, across the
 * pages DynamoDB cuts at 1 MB), which costs no more than reading that many messages by key, and
 * a range crowded with other messages costs at most that on top of reading by key. A key at or
 * before where it stopped and not in its answer is gone; items of other messages are dropped;
 * the keys past where it stopped are read by key (readMessagesByKey). A page refused for
 * throttling is asked again after the shared backoff on the broker clock, up to READ_ATTEMPTS
 * calls; then the keys past the pages read are unread: their state is unknown, not absent.
 * Returns what readMessagesByKey returns; other errors throw.
 */
export async function readMessagesInRange(ctx: ReminderStore, keys: readonly Key[]): Promise<{ items: Map<string, MessageItem>; unread: Key[] }> {
  const sorted = [...keys].sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
  const wanted = new Set(sorted.map(keyId));
  const items = new Map<string, MessageItem>();
  if (sorted.length === 0) return { items, unread: [] };
  const range = { ':pk': sorted[0]!.pk, ':lowest': sorted[0]!.sk, ':highest': sorted.at(-1)!.sk };
  let read = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await rangePage(ctx, range, sorted.length - read, start);
    if (!page) return { items, unread: past(sorted, start) };
    read += page.items.length;
    for (const stored of page.items) if (wanted.has(keyId(stored))) items.set(keyId(stored), messageOfStored(stored));
    start = page.next;
  } while (start && read < sorted.length);
  if (!start) return { items, unread: [] };
  // As many items read as there are keys, and the range not at its end: the rest by key.
  const rest = await readMessagesByKey(ctx, past(sorted, start));
  for (const [id, item] of rest.items) items.set(id, item);
  return { items, unread: rest.unread };
}

/** One page of a range's Query, asked again while throttled; undefined once READ_ATTEMPTS calls were refused. */
async function rangePage(
  ctx: ReminderStore,
  range: Record<string, string>,
  limit: number,
  start: Record<string, unknown> | undefined,
): Promise<{ items: StoredMessageItem[]; next?: Record<string, unknown> } | undefined> {
  for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
    if (attempt > 0) await backoff(ctx.clock, attempt - 1, UNPROCESSED_BACKOFF);
    try {
      const out = await ctx.db.send(
        new QueryCommand({
          TableName: ctx.tableName,
          KeyConditionExpression: inRange,
          ExpressionAttributeValues: range,
          ConsistentRead: true,
          Limit: limit,
          ExclusiveStartKey: start,
        }),
      );
      return { items: (out.Items ?? []) as StoredMessageItem[], next: out.LastEvaluatedKey };
    } catch (e) {
      if (!isThrottled(e)) throw e;
    }
  }
  return undefined;
}

/** The keys (sorted) past where a Query stopped (its `LastEvaluatedKey`), or all of them before its first page. */
const past = (sorted: readonly Key[], stop: Record<string, unknown> | undefined): Key[] =>
  stop ? sorted.filter((k) => k.sk > (stop.sk as string)) : [...sorted];

/** Locked under the reminder's token until `:until`, run out by `:now`, and out of the ready index: as the batch left it. */
const lapsedOutOfIndex = `${lockTokenIs} AND lockedUntil = :until AND lockedUntil <= :now AND attribute_not_exists(rsk) AND attribute_exists(rpk)`;

/**
 * Puts a message whose reminder-mode lock lapsed back in the `ready` index where a lapsed lock
 * sorts: `rsk = readySortKey(lockedUntil, seq)` (R6), the version bumped. Key: `key`.
 * Condition: `lapsedOutOfIndex`. Success: the message as it now is (an ordinary lapsed-lock
 * candidate). Failure: undefined when the condition did not hold (completed, renewed,
 * abandoned, moved or put back already: nothing to do); other errors throw.
 */
export async function restoreLapsedMessage(
  ctx: ReminderStore,
  key: Key,
  lock: { token: string; until: number; seq: bigint | string; now: number },
): Promise<MessageItem | undefined> {
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: { pk: key.pk, sk: key.sk },
        ConditionExpression: lapsedOutOfIndex,
        UpdateExpression: 'SET rsk = :rsk, v = if_not_exists(v, :zero) + :one',
        ExpressionAttributeValues: {
          ...lockTokenValues(lock.token),
          ':until': lock.until,
          ':now': lock.now,
          ':rsk': readySortKey(lock.until, lock.seq),
          ':zero': 0,
          ':one': 1,
        },
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  const stored = out ? (out as { Attributes?: StoredMessageItem }).Attributes : undefined;
  return stored ? messageOfStored(stored) : undefined;
}

/** Delivered as often as the batch saw, and not fenced at or after this lock end yet. */
const untakenSince = 'deliveryCount = :dc AND (attribute_not_exists(fence) OR fence < :until)';

/**
 * Fences a message a lapsed batch planned to take but never took (its take was never sent, or
 * is still on its way): `fence = until`, so that take, should it still arrive, fails its
 * condition (`notFenced`) instead of locking the message out of the index with no reminder
 * left. `fence` is no index key and not projected, so this costs the table's write alone.
 * Key: `key`. Condition: `untakenSince`. Success: true. Failure: false when the condition did
 * not hold (taken meanwhile, fenced already, or gone); other errors throw.
 */
export async function fenceUntakenMessage(ctx: ReminderStore, key: Key, seen: { deliveryCount: number; until: number }): Promise<boolean> {
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: { pk: key.pk, sk: key.sk },
        ConditionExpression: `attribute_exists(pk) AND ${untakenSince}`,
        UpdateExpression: 'SET fence = :until',
        ExpressionAttributeValues: { ':dc': seen.deliveryCount, ':until': seen.until },
      }),
    ),
  );
  return out !== undefined;
}

/** A reminder-mode take's extra condition: no receive has fenced the message at or after this batch's lock end (`fenceUntakenMessage`). */
export const notFenced = '(attribute_not_exists(fence) OR fence < :until)';

/**
 * Deletes a reminder whose messages have all been dealt with (by a lapse, or all completed by
 * one batch complete). Key: the reminder's. Condition: `attribute_exists(pk)`. Success: true.
 * Failure: false when another receive or complete deleted it first (fine: its messages were
 * dealt with then too), or when no reminder has the key (a complete's tokens that are not one
 * batch's whole set); other errors throw.
 */
export async function deleteReminder(ctx: ReminderStore, key: Key): Promise<boolean> {
  const out = await conditionally(
    ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: { pk: key.pk, sk: key.sk }, ConditionExpression: 'attribute_exists(pk)' })),
  );
  return out !== undefined;
}
