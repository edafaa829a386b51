/**
 * Message items' store operations: putting new messages, and giving one a new sequence
 * number after a collision. Every path that creates a message (send, batch, fan-out,
 * forwarding, moves, dead-lettering, TTL removals) puts it through `putNewMessages`.
 */
import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import type { MessageItem } from '../messages/item.js';
import { keyId, messageKey, readySortKey, TIME_DIGITS, type Key } from './keys.js';
import { messageOfStored, storedMessage, type StoredMessageItem } from './message-layout.js';
import {
  cancellationCodes,
  CONDITION_FAILED,
  conditionally,
  conditionFailed,
  isConditionFailure,
  isConflict,
  itemAtRefusal,
  mayHaveLanded,
  refusedAfterUnsureAttempt,
  partFailedCondition,
  refusedItsOwnDelete,
  refusedItsOwnPut,
  retriedBySdk,
  sameItem,
  TRANSACTION_CONFLICT,
} from './outcomes.js';
import type { SequenceGenerator } from './sequence.js';
import { sessionLockHeld } from './sessions.js';
import { batchGetItems } from './batch-get.js';
import { readBack, UNREAD } from './read-back.js';
import { transactOnce } from './transact-once.js';

/** What the message operations need: the table, the clock and this instance's sequence numbers. */
export type MessageStore = Pick<Deps, 'db' | 'tableName' | 'clock'> & { sequences: SequenceGenerator };

/** A new message's condition: no item has its key (its sequence number is not taken). */
export const messageIsNew = 'attribute_not_exists(pk)';

/** How often a sequence collision is retried with the next number before the error is thrown. */
const COLLISION_RETRIES = 5;

/**
 * Gives the item the next sequence number of its partition (after a collision, S2). Only the
 * number changes: the item keeps its partition, its `ready` partition and its place in time
 * (the time part of `rsk`: its enqueue time when active, the time it was dead-lettered in a
 * dead-letter subqueue), so a collision never moves a message in its entity's order.
 */
export function renumber(ctx: Pick<MessageStore, 'sequences' | 'clock'>, item: MessageItem): MessageItem {
  return withNumber(item, ctx.sequences.next(ctx.clock.now(), item.partition));
}

/** The item under sequence number `seq` in today's layout, keeping everything else as `renumber` does. */
export function withNumber(item: MessageItem, seq: bigint): MessageItem {
  const key = messageKey(item.eid, item.subqueue, item.partition, seq);
  const since = item.rsk !== undefined ? Number(item.rsk.slice(0, TIME_DIGITS)) : item.enqueuedAt;
  return { ...item, ...key, seq: seq.toString(), rpk: item.rpk ?? key.pk, rsk: readySortKey(since, seq) };
}

/** A part of the same transaction that is not a message put: a marker, a guarded delete, a lock check. */
export type TransactionPart = Record<string, unknown>;

export interface PutNewOptions {
  /** Parts written before the messages, built from the messages as they are numbered now (a marker naming the first). */
  before?: (items: readonly MessageItem[]) => TransactionPart[];
  /** Parts written after the messages. */
  after?: TransactionPart[];
  /** Collision retries; 0 puts the items as they are (an item put back under its own number). */
  retries?: number;
}

/**
 * Puts new message items (S1), atomically with `before` and `after`.
 *
 * Key: each item's (pk, sk). Condition: `messageIsNew` on each message; the other parts
 * bring their own. One item with no other part is a single PutItem; anything more is one
 * TransactWriteItems, in the order before, messages, after.
 *
 * Success: the items as stored (renumbered where they collided), durable. A collision (a
 * message failed `messageIsNew` while every other part was fine) is retried with the
 * colliding items renumbered, up to `retries` times; a lone put the SDK retried after it landed
 * meets itself, not a collision (`putOne`); a failure that may have come after the
 * transaction landed reads back what its Put parts put (`storedAfterAll`). Failure: throws
 * DynamoDB's error as it came (read it with outcomes.ts: which part failed its condition, a
 * conflict, throttling); nothing was written.
 */
export async function putNewMessages(ctx: MessageStore, items: readonly MessageItem[], options: PutNewOptions = {}): Promise<MessageItem[]> {
  let current = [...items];
  const retries = options.retries ?? COLLISION_RETRIES;
  for (let attempt = 0; ; attempt++) {
    const before = options.before?.(current) ?? [];
    const after = options.after ?? [];
    const alone = current.length === 1 && before.length === 0 && after.length === 0;
    let parts: TransactionPart[] | undefined;
    try {
      if (alone) {
        await putOne(ctx, storedMessage(current[0]!));
        return current;
      }
      parts = [
        ...before,
        ...current.map((item) => ({ Put: { TableName: ctx.tableName, Item: storedMessage(item), ConditionExpression: messageIsNew } })),
        ...after,
      ];
      // A transaction the SDK retried after it landed is not refused: the SDK fills in its
      // ClientRequestToken (the model's idempotency token) once, when it serializes the
      // command, so the retry repeats the token and DynamoDB answers it as the first, for 10 minutes.
      await ctx.db.send(new TransactWriteCommand({ TransactItems: parts as never }));
      return current;
    } catch (e) {
      // Every answer lost (putOne reads its own back): the transaction is whole or absent.
      if (parts && mayHaveLanded(e) && (await storedAfterAll(ctx, putItemsOf(parts)))) return current;
      if (attempt >= retries) throw e;
      const collided = collisions(e, current.length, before.length);
      if (!collided) throw e;
      current = current.map((item, i) => (collided[i] ? renumber(ctx, item) : item));
    }
  }
}

/**
 * One new message alone: a PutItem conditioned on `messageIsNew`. Resolves when the item is
 * stored; throws DynamoDB's refusal when another message has its number (a collision, S2). A refusal that finds this very
 * item is the SDK's retry of this put after it landed (its answer lost: a 500, a timeout): it
 * is stored, and renumbering it would store it twice (S1). The refused item comes with the
 * refusal (ALL_OLD, no read unit) and is told from another sender's by its content, with no
 * attribute of its own (bytes on every item, every write): a sequence number is only ever
 * shared by two instances in the same millisecond drawing the same random counter, and then
 * the item differs unless the two sent the very same message (id, body, properties and
 * enqueue time), which is stored once then. A failure that may have come after the put landed
 * (`mayHaveLanded`: a 500 the SDK could not retry, a timeout) reads the item back consistently
 * (1 read unit, on that path only): found, it is stored, and the answer says so (S1, S4); a
 * send answered "not stored" for a message that was would be sent again, a second copy.
 */
async function putOne(ctx: MessageStore, item: StoredMessageItem): Promise<void> {
  try {
    await ctx.db.send(
      new PutCommand({ TableName: ctx.tableName, Item: item, ConditionExpression: messageIsNew, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
    );
  } catch (e) {
    if (refusedItsOwnPut(e, item)) return;
    if (mayHaveLanded(e) && (await storedAfterAll(ctx, [item]))) return;
    throw e;
  }
}

/**
 * What a transaction's Put parts put: its messages, and what the other parts put (a duplicate or
 * handled marker, a message on a drawn position). Each is conditioned on its key being free, so
 * finding all of them as put means this transaction wrote them.
 */
const putItemsOf = (parts: readonly TransactionPart[]): Key[] =>
  parts.flatMap((part) => {
    const item = (part as { Put?: { Item?: Key } }).Put?.Item;
    return item ? [item] : [];
  });

/**
 * Whether `items` are all stored after all, each as put, read consistently (1 read unit a
 * message up to 4 KB, on that path only): a lone put's item, or a transaction's Put items; it
 * lands whole, so all of them there means it landed. Nothing to read, a key left unread or a
 * failed read says no, and the write's own error stands: a transaction of deletes and checks
 * alone cannot be told landed by reading.
 */
async function storedAfterAll(ctx: MessageStore, items: readonly Key[]): Promise<boolean> {
  if (items.length === 0) return false;
  try {
    const { items: found, unread } = await batchGetItems<StoredMessageItem>(ctx, items, { consistent: true, attempts: 3 });
    return (
      unread.length === 0 &&
      items.every((item) =>
        sameItem(
          found.find((f) => f.pk === item.pk && f.sk === item.sk),
          item,
        ),
      )
    );
  } catch {
    return false;
  }
}

/** Which messages collided, when only messages failed (on their condition); undefined for any other refusal. */
function collisions(e: unknown, count: number, offset: number): boolean[] | undefined {
  if (count === 1 && offset === 0 && !cancellationCodes(e)) return isConditionFailure(e) ? [true] : undefined;
  const codes = cancellationCodes(e);
  if (!codes) return undefined;
  const isMessage = (i: number) => i >= offset && i < offset + count;
  if (codes.some((c, i) => c !== 'None' && !(isMessage(i) && c === CONDITION_FAILED))) return undefined;
  const collided = Array.from({ length: count }, (_, i) => codes[offset + i] === CONDITION_FAILED);
  return collided.some(Boolean) ? collided : undefined;
}

/** A condition on the message item as a writer read it (its version, or its lock): expression and values. */
export interface MessageCondition {
  expression: string;
  values: Record<string, unknown>;
}

/** The session lock a session message was received under, still held and live at `now`. */
export interface SessionLockCheck {
  key: Key;
  token: string;
  now: number;
}

/** The ConditionCheck part a transaction adds for a session lock (N4). Key: the session item's. Condition: `sessionLockHeld`. */
export const sessionLockCheckPart = (ctx: Pick<MessageStore, 'tableName'>, check: SessionLockCheck): TransactionPart => ({
  ConditionCheck: {
    TableName: ctx.tableName,
    Key: check.key,
    ConditionExpression: sessionLockHeld,
    ExpressionAttributeValues: { ':slk': check.token, ':now': check.now },
  },
});

/** An update or a delete of one message item (its Key, and for an update its expression and values). */
/**
 * A write of a message item. `releases`: the update ends the message's lock, and this is the
 * version (`v`) it writes (an abandon, a defer: `releasedByItsOwnRetry`).
 */
export type MessageWrite = { Update: Record<string, unknown>; releases?: number } | { Delete: Record<string, unknown> };

/** The write's parameters with `condition` on the message added. */
export function conditionedWrite(ctx: Pick<MessageStore, 'tableName'>, write: MessageWrite, condition: MessageCondition): Record<string, unknown> {
  const op = 'Update' in write ? write.Update : write.Delete;
  return {
    ...op,
    TableName: ctx.tableName,
    ConditionExpression: condition.expression,
    ...(Object.keys(condition.values).length
      ? { ExpressionAttributeValues: { ...(op.ExpressionAttributeValues as object | undefined), ...condition.values } }
      : {}),
  };
}

/**
 * A single write's parameters asking also for the item at a refusal (no read unit), so a retry
 * of its own landed write reads as done (R4: outcomes.ts `refusedItsOwnDelete`, `releasedByItsOwnRetry` below).
 */
const withRefusedItem = (parts: Record<string, unknown>) => ({ ...parts, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' });

/**
 * An update that ends a message's lock and moves its version on to `releases` (an abandon, a
 * defer), refused at the SDK's second attempt or later with the message at that version and
 * unlocked: its own update, landed, whose answer was lost (R4). Nobody else moves the message
 * from the version the settlement read while its lock lasts, and any take since would have
 * locked it again.
 */
function releasedByItsOwnRetry(e: unknown, releases: number | undefined): boolean {
  if (releases === undefined || !conditionFailed(e) || !retriedBySdk(e)) return false;
  const found = itemAtRefusal<StoredMessageItem>(e);
  return found !== undefined && found.v === releases && found.lockToken === undefined;
}

/**
 * A write under a message's lock whose SDK retry was refused (throttled, a conflict) after an
 * attempt that may have landed (`refusedAfterUnsureAttempt`): whether that attempt did, read back
 * consistently (read-back.ts: 1 read unit, on that path only, asked again while refused for
 * load). A delete finds the message gone and a release (`releases`) finds it unlocked at the
 * version it wrote, which within the retry's moments only
 * the lock's holder does, as `refusedItsOwnDelete` and `releasedByItsOwnRetry` reason for a
 * condition refused at the retry. Anything else did not land, or cannot be told; the caller
 * throws the error (a 500: it may have landed).
 */
async function landedUnderLock(ctx: Pick<MessageStore, 'db' | 'tableName' | 'clock'>, write: MessageWrite): Promise<boolean> {
  const key = ('Update' in write ? write.Update.Key : write.Delete.Key) as Key;
  const found = await readBack(ctx, () => readStored(ctx, key, true));
  if (found === UNREAD) return false;
  if ('Delete' in write) return found === undefined;
  return write.releases !== undefined && found !== undefined && found.v === write.releases && found.lockToken === undefined;
}

/** What a guarded write came to; a refusal for any other reason throws. */
export type GuardedOutcome = 'written' | 'conditionFailed' | 'lockLost' | 'conflict';

/**
 * One conditional write of a message item: on its own, or with the check of its session's
 * lock in one transaction (message first, lock second).
 *
 * Key: the write's. Condition: `condition` on the message; with `lock`, `sessionLockHeld` on
 * the session item. Success: 'written'. Failure: 'lockLost' when the session lock was not held
 * (whatever the message's part says), 'conditionFailed' when the message was not as read,
 * 'conflict' when the transaction met another in flight (nothing written, a retry may pass);
 * any other error throws.
 */
export async function writeMessageGuarded(
  ctx: MessageStore,
  write: MessageWrite,
  condition: MessageCondition,
  lock?: SessionLockCheck,
): Promise<GuardedOutcome> {
  const parts = conditionedWrite(ctx, write, condition);
  try {
    if (!lock) {
      const single = withRefusedItem(parts) as never;
      await ctx.db.send('Update' in write ? new UpdateCommand(single) : new DeleteCommand(single));
    } else {
      await ctx.db.send(
        new TransactWriteCommand({
          TransactItems: [('Update' in write ? { Update: parts } : { Delete: parts }) as never, sessionLockCheckPart(ctx, lock) as never],
        }),
      );
    }
    return 'written';
  } catch (e) {
    if (!lock && ('Delete' in write ? refusedItsOwnDelete(e) : releasedByItsOwnRetry(e, write.releases))) return 'written';
    // With the session's lock too: a transaction's retry repeats its token, so only a refusal
    // for load or a conflict at the retry leaves the first attempt's outcome unknown.
    if (refusedAfterUnsureAttempt(e) && (await landedUnderLock(ctx, write))) return 'written';
    const codes = cancellationCodes(e);
    if (partFailedCondition(codes, 1)) return 'lockLost';
    if (partFailedCondition(codes, 0) || conditionFailed(e)) return 'conditionFailed';
    if (codes !== undefined && isConflict(e)) return 'conflict';
    throw e;
  }
}

/** What a delete under a message's lock came to; a refusal for any other reason (throttling) throws. */
export type LockedDelete = 'deleted' | 'conditionFailed' | 'conflict';

/**
 * A session message's complete without a transaction (N4): deletes the message on its own
 * lock only, the caller having read its session lock held moments before. Key: `key`.
 * Condition: `condition` (the take's lock token and session lock, as the caller states them).
 * Success: 'deleted', also when the SDK's retry after a lost answer finds the message gone
 * (`refusedItsOwnDelete`), or is refused for load and reads it gone (`landedUnderLock`).
 * Failure, nothing written: 'conditionFailed' when the message is gone or
 * was taken, settled or moved since (its lock token changed); 'conflict' when a transaction was
 * in flight on it (a retry may pass); other errors throw.
 */
export async function deleteLockedMessage(ctx: Pick<MessageStore, 'db' | 'tableName' | 'clock'>, key: Key, condition: MessageCondition): Promise<LockedDelete> {
  try {
    await ctx.db.send(new DeleteCommand(withRefusedItem(conditionedWrite(ctx, { Delete: { Key: { pk: key.pk, sk: key.sk } } }, condition)) as never));
    return 'deleted';
  } catch (e) {
    if (refusedItsOwnDelete(e)) return 'deleted';
    if (refusedAfterUnsureAttempt(e) && (await landedUnderLock(ctx, { Delete: { Key: key } }))) return 'deleted';
    if (conditionFailed(e)) return 'conditionFailed';
    if (isConflict(e)) return 'conflict';
    throw e;
  }
}

/** The most message writes one transaction under a session lock carries: DynamoDB's 100 parts, less the lock's check. */
export const MAX_WRITES_UNDER_ONE_LOCK = 99;

/** What a message's part of a refused transaction says: not as read, met another transaction, or fine. */
export type PartAnswer = 'conditionFailed' | 'conflict' | 'fine';

/** What several message writes under one session lock came to; a refusal for any other reason throws. */
export type SharedLockOutcome = { kind: 'written' } | { kind: 'lockLost' } | { kind: 'busy' } | { kind: 'refused'; parts: PartAnswer[] };

/**
 * Several conditional writes of messages taken under one session lock, with one check of that
 * lock, in one transaction (N4, R9): a batch pays for the lock's check once, not per message.
 *
 * Keys: each write's, then the session item's (`lock.key`). Condition: each write's
 * `condition` on its message; `sessionLockHeld` on the session item. At most
 * MAX_WRITES_UNDER_ONE_LOCK writes. Success: 'written', every one of them. Failure, nothing
 * written: 'lockLost' when the session lock was not held (whatever the messages' parts say);
 * 'busy' when the session item met another transaction; otherwise 'refused' with each
 * message part's answer ('conditionFailed', 'conflict', or 'fine': it alone would have been
 * written). Any other error (throttling) throws.
 */
export async function writeMessagesUnderSessionLock(
  ctx: MessageStore,
  writes: readonly { write: MessageWrite; condition: MessageCondition }[],
  lock: SessionLockCheck,
): Promise<SharedLockOutcome> {
  if (writes.length === 0 || writes.length > MAX_WRITES_UNDER_ONE_LOCK) throw new RangeError(`${writes.length} writes under one session lock`);
  const parts = writes.map(({ write, condition }) =>
    'Update' in write ? { Update: conditionedWrite(ctx, write, condition) } : { Delete: conditionedWrite(ctx, write, condition) },
  );
  try {
    await ctx.db.send(new TransactWriteCommand({ TransactItems: [...parts, sessionLockCheckPart(ctx, lock)] as never }));
    return { kind: 'written' };
  } catch (e) {
    const codes = cancellationCodes(e);
    // Refused for load or a conflict at the retry of an attempt that may have landed: unknown.
    if (!codes || refusedAfterUnsureAttempt(e)) throw e;
    const own = codes[writes.length];
    if (own === CONDITION_FAILED) return { kind: 'lockLost' };
    if (own === TRANSACTION_CONFLICT) return { kind: 'busy' };
    const answers = writes.map((_, i): PartAnswer | undefined =>
      codes[i] === CONDITION_FAILED
        ? 'conditionFailed'
        : codes[i] === TRANSACTION_CONFLICT
          ? 'conflict'
          : codes[i] === 'None' || codes[i] === undefined
            ? 'fine'
            : undefined,
    );
    // Throttling (or a reason this code does not know) on any part: the caller sees DynamoDB's error.
    if ((own !== undefined && own !== 'None') || answers.some((a) => a === undefined) || answers.every((a) => a === 'fine')) throw e;
    return { kind: 'refused', parts: answers as PartAnswer[] };
  }
}

/** A write of one message under a condition the caller states (what "still available" means for it). */
export interface GuardedWrite {
  key: Key;
  condition: string;
  names?: Record<string, string>;
  values: Record<string, unknown>;
}

/**
 * Peek-lock's take: applies `update`, which sets the lock (`lockToken = :token`, a token
 * random per take). Key: `write.key`. Condition: `write.condition`. Success: the message as it
 * now is; also when the SDK retried the take after it landed (its answer lost) and the retry's
 * refusal (ALL_OLD, no read unit) shows this take's own token: read as "taken by another", the
 * message would be locked by nobody and its lock's end would count a delivery (R3). When every
 * attempt's answer was lost (`mayHaveLanded`), the message is read back consistently (1 read
 * unit, on that path only): holding this take's token, it is taken, and handed out rather than
 * left to spend a delivery behind a failed receive (R10). Failure: undefined when the condition
 * did not hold (taken, settled or moved meanwhile); other errors throw.
 */
export async function lockMessage(ctx: MessageStore, write: GuardedWrite, update: string): Promise<MessageItem | undefined> {
  try {
    const updated = await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: write.key,
        ConditionExpression: write.condition,
        UpdateExpression: update,
        ExpressionAttributeNames: write.names,
        ExpressionAttributeValues: write.values,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return messageOfStored(updated.Attributes as StoredMessageItem);
  } catch (e) {
    const token = write.values[':token'];
    if (!isConditionFailure(e)) {
      const found = token !== undefined && mayHaveLanded(e) ? await readBack(ctx, () => readStored(ctx, write.key, true)) : undefined;
      if (found && found !== UNREAD && found.lockToken === token) return messageOfStored(found);
      throw e;
    }
    const found = itemAtRefusal<StoredMessageItem>(e);
    return found && token !== undefined && found.lockToken === token ? messageOfStored(found) : undefined;
  }
}

/**
 * Receive-and-delete's take (R3): deletes the message. Key: `write.key`. Condition:
 * `write.condition`. Success: the message as it was. With `asRead`, the message as its only
 * taker read it moments before (a session's lock holder, N3), also when the SDK retried the
 * delete after it landed (its answer, which carried the message, lost) and the retry found it
 * gone (`refusedItsOwnDelete`): read as "taken by another", it would be lost (R10). So too
 * when every attempt's answer was lost (`mayHaveLanded`): the only taker reads the key back
 * consistently (1 read unit, on that path only), and gone means its own delete landed. Failure:
 * undefined when the condition did not hold; other errors throw.
 */
export async function deleteMessage(ctx: MessageStore, write: GuardedWrite, asRead?: MessageItem): Promise<MessageItem | undefined> {
  try {
    const old = await ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: write.key,
        ConditionExpression: write.condition,
        ExpressionAttributeNames: write.names,
        ExpressionAttributeValues: write.values,
        ReturnValues: 'ALL_OLD',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return messageOfStored(old?.Attributes as StoredMessageItem);
  } catch (e) {
    if (isConditionFailure(e)) return asRead && refusedItsOwnDelete(e) ? asRead : undefined;
    const gone = asRead !== undefined && mayHaveLanded(e) && (await readBack(ctx, () => getMessage(ctx, write.key, true))) === undefined;
    if (gone) return asRead;
    throw e;
  }
}

/**
 * Receive-and-delete's take by one of several takers (R3, R10): deletes the message read as
 * `asRead`, in a transaction of one. Key: `write.key`. Condition: `write.condition`. Success:
 * `asRead`. A plain delete's retry that finds the message gone cannot tell its own landed delete
 * from another taker's; the SDK fills in the transaction's ClientRequestToken once and repeats
 * it, so DynamoDB answers a retry of a landed delete as it answered the first, for 10 minutes.
 * When every attempt's answer is lost, the delete is sent again under its token (`transactOnce`):
 * a delete that landed is handed out, never dropped from a receive that answers without it (R10).
 * Twice a plain delete's write units for the message item (not its index entry). Failure:
 * undefined when the condition did not hold (another taker was first); a conflict or any other
 * refusal throws.
 */
export async function deleteMessageOnce(ctx: MessageStore, write: GuardedWrite, asRead: MessageItem): Promise<MessageItem | undefined> {
  const deleted = await conditionally(
    transactOnce(ctx, [
      {
        Delete: {
          TableName: ctx.tableName,
          Key: write.key,
          ConditionExpression: write.condition,
          ExpressionAttributeNames: write.names,
          ExpressionAttributeValues: write.values,
        },
      },
    ]),
  );
  return deleted ? asRead : undefined;
}

/** Its time to live has run out by `:now` (T4). */
const hasExpired = 'expiresAt <= :now';
/** No lock is live at `:now`: never locked, or its lock has run out (R6). */
const notLockedNow = '(attribute_not_exists(lockedUntil) OR lockedUntil <= :now)';
/** Delivered as often as the reader saw: no receive took it since (R3). */
const deliveredTimes = 'deliveryCount = :dc';

/**
 * T4's removal of an expired message that its entity does not dead-letter, without reading
 * it first: the ready index entry already says all the condition needs. Key: `key`.
 * Condition: `hasExpired AND notLockedNow AND deliveredTimes`. Success: true. Failure: false
 * when the condition did not hold (taken, settled or moved meanwhile: nothing to do); other
 * errors throw.
 */
export async function deleteExpiredMessage(
  ctx: Pick<MessageStore, 'db' | 'tableName'>,
  key: Key,
  seen: { deliveryCount: number; now: number },
): Promise<boolean> {
  const deleted = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: { pk: key.pk, sk: key.sk },
        ConditionExpression: `${hasExpired} AND ${notLockedNow} AND ${deliveredTimes}`,
        ExpressionAttributeValues: { ':now': seen.now, ':dc': seen.deliveryCount },
      }),
    ),
  );
  return deleted !== undefined;
}

/** Stored and never handed out: no receive has locked, taken or counted a delivery of it (R1, R3). */
const neverTaken = 'attribute_exists(pk) AND deliveryCount = :zero AND attribute_not_exists(lockToken)';

/**
 * Takes back a message just stored by a send whose entity check then failed (send.ts): the
 * message goes only while nobody has received it. Key: `key`. Condition: `neverTaken`.
 * Success: true (removed). Failure: false when a receive took it meanwhile (or it is gone
 * already); other errors throw.
 */
export async function takeBackNewMessage(ctx: Pick<MessageStore, 'db' | 'tableName'>, key: Key): Promise<boolean> {
  const deleted = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: { pk: key.pk, sk: key.sk },
        ConditionExpression: neverTaken,
        ExpressionAttributeValues: { ':zero': 0 },
      }),
    ),
  );
  return deleted !== undefined;
}

/**
 * Reads one message item. Key: `key`. No condition. `consistent` reads what every write before
 * it left (1 read unit for a small item instead of 0.5). Returns the item, or undefined when
 * there is none.
 */
export async function getMessage(ctx: Pick<MessageStore, 'db' | 'tableName'>, key: Key, consistent: boolean): Promise<MessageItem | undefined> {
  const item = await readStored(ctx, key, consistent);
  return item ? messageOfStored(item) : undefined;
}

/** `getMessage`'s item as stored (its lock token in stored form): what a write's read-back compares. */
async function readStored(ctx: Pick<MessageStore, 'db' | 'tableName'>, key: Key, consistent: boolean): Promise<StoredMessageItem | undefined> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: { pk: key.pk, sk: key.sk }, ...(consistent ? { ConsistentRead: true } : {}) }));
  return got.Item as StoredMessageItem | undefined;
}

/** A renewed lock's write: the new end, the entry's place in the ready index with it, and the version bumped. */
const renewLockUpdate = 'SET lockedUntil = :until, rsk = :rsk, v = if_not_exists(v, :zero) + :one';

/**
 * Renews a peek-lock (R4): `lockedUntil` becomes `until` and the ready entry sorts at it (rsk
 * only matters while the message is in the ready index; deferred ones are not). Key: `key`.
 * Condition: `held` (the lock as the caller states it: its token, not run out). Success: true.
 * Failure: false when the condition did not hold (the lock is lost); other errors throw.
 */
export async function renewMessageLock(
  ctx: Pick<MessageStore, 'db' | 'tableName'>,
  key: Key,
  held: MessageCondition,
  until: number,
  rsk: string,
): Promise<boolean> {
  const renewed = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        ConditionExpression: held.expression,
        UpdateExpression: renewLockUpdate,
        ExpressionAttributeValues: { ...held.values, ':until': until, ':rsk': rsk, ':zero': 0, ':one': 1 },
      }),
    ),
  );
  return renewed !== undefined;
}

/**
 * Reads message items by key, consistently (what every write before it left: 1 read unit for
 * an item up to 4 KB), 100 a call, unprocessed keys asked again (batch-get.ts). No condition.
 * Returns the items found, by `keyId`; a missing key has none. Errors throw.
 */
export async function getMessagesConsistently(ctx: Pick<MessageStore, 'db' | 'tableName' | 'clock'>, keys: readonly Key[]): Promise<Map<string, MessageItem>> {
  const { items } = await batchGetItems<StoredMessageItem>(ctx, keys, { consistent: true });
  return new Map(items.map((stored) => [keyId(stored), messageOfStored(stored)]));
}

/**
 * Takes back a session message that a record of an earlier session lock held (N3, R3): its
 * stored delivery count becomes the count it was handed out with, so every settlement of that
 * delivery fails from now on and the next delivery counts one more. Key: `key`. Condition: the
 * stored count is still `handedOut - 1` (neither settled, taken back already, nor gone), so a
 * take-back done twice writes once. Success: true. Failure: false; other errors throw.
 */
export async function returnHeldMessage(ctx: Pick<MessageStore, 'db' | 'tableName'>, key: Key, handedOut: number): Promise<boolean> {
  const returned = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: { pk: key.pk, sk: key.sk },
        UpdateExpression: 'SET deliveryCount = :count, v = if_not_exists(v, :zero) + :one',
        ConditionExpression: 'deliveryCount = :before',
        ExpressionAttributeValues: { ':count': handedOut, ':before': handedOut - 1, ':zero': 0, ':one': 1 },
      }),
    ),
  );
  return returned !== undefined;
}

/**
 * T5: a session message its record holds, protected from DynamoDB's TTL while a renewal takes
 * its session lock past its expiry: its `ttl` goes, nothing else (not its count, nor `v`: the
 * holder's token names the count its settlement conditions on, and a guarded write that read
 * the message before stays right). Its due entry stands, so the sweeper still meets it at its
 * expiry (and finds it held). Key: `key`. Condition: the stored count is still `handedOut - 1`
 * (still held by that delivery; settled, taken back or gone, it needs nothing). Success: true.
 * Failure: false; other errors throw. Done twice, it writes the same.
 */
export async function protectHeldMessage(ctx: Pick<MessageStore, 'db' | 'tableName'>, key: Key, handedOut: number): Promise<boolean> {
  const removed = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: { pk: key.pk, sk: key.sk },
        UpdateExpression: 'REMOVE #ttl',
        ConditionExpression: 'deliveryCount = :before',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':before': handedOut - 1 },
      }),
    ),
  );
  return removed !== undefined;
}
