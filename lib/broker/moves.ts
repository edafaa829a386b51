/**
 * Moving a message between subqueues (D3): one DynamoDB transaction deletes it from where
 * it is, on the condition that it is still as the mover saw it, and puts it where it goes.
 * A crash before the transaction changes nothing; after it, the move is complete; a second
 * mover racing the first fails its condition. So a message is never lost or duplicated.
 */
import { entityPathDisplay } from '../entities/paths.js';
import { applicationPropertiesOf, type MessageItem } from '../messages/item.js';
import { bodyTextOf, packBody } from '../messages/body.js';
import { optionalSystemProperties, type MessageInput } from '../messages/schema.js';
import { messageKey, POSITIONED_PK_PREFIX, positionOfSk, readySortKey } from '../store/keys.js';
import type { Subqueue } from '../entities/kinds.js';
import { removalPart, type Removal } from '../store/positions.js';
import { removalFor } from './layouts.js';
import { lockTokenIs, lockTokenValues, storedMessage } from '../store/message-layout.js';
import {
  conditionedWrite,
  putNewMessages,
  type TransactionPart,
  sessionLockCheckPart,
  writeMessageGuarded,
  type MessageCondition,
  type MessageWrite,
  type SessionLockCheck,
} from '../store/messages.js';
import { reasons } from '../fate/delivery.js';
import type { BrokerContext } from './context.js';
import { cancellationCodes, partFailedCondition, TRANSACTION_CONFLICT } from '../store/outcomes.js';
import { BrokerError, sessionLockLost } from '../errors.js';
import type { EntityItem } from './entities.js';
import { resolveTarget, route } from './deliver.js';
import { announceSessionMessages } from './message-items.js';
import { markReady } from './ready-marks.js';
import { backoff } from '../backoff.js';
import { drawForMove, splitForPositions } from './positioned-send.js';

/** The condition a move or settlement places on the message it read. */
export interface Guard extends MessageCondition {
  /** A session message's settlement: its session lock must be held as well (N4). */
  session?: SessionLockCheck;
}

/**
 * One guarded write of a message: on its own, or, for a session message, in one transaction
 * with the check of its session lock. Answers false when the message's guard failed; a lost
 * session lock is SessionLockLost (N4), whatever the message's part says.
 */
export async function writeGuarded(ctx: BrokerContext, write: MessageWrite, guard: Guard): Promise<boolean> {
  const outcome = await writeMessageGuarded(ctx, write, guard, guard.session);
  if (outcome === 'lockLost') throw sessionLockLost();
  if (outcome === 'conflict') throw busy();
  return outcome === 'written';
}

export const busy = () =>
  new BrokerError('Throttled', 'the message is being changed by another operation; try again', { retryable: true, retryAfterSeconds: 1 });

/** Unchanged since it was read (version check). */
export const unchanged = (item: MessageItem): Guard =>
  item.v === undefined ? { expression: 'attribute_exists(pk) AND attribute_not_exists(v)', values: {} } : { expression: 'v = :v', values: { ':v': item.v } };

/** Held under this lock token, and the lock has not run out (R5). For the message the token numbers (settle.ts `locate`). */
export const lockHeld = (lockToken: string, now: number): Guard => ({
  expression: `${lockTokenIs} AND lockedUntil > :now`,
  values: { ...lockTokenValues(lockToken), ':now': now },
});

export interface DeadLetterInfo {
  reason?: string;
  description?: string;
}

/** The copy that lands in a dead-letter subqueue (D4): same content, new sequence number. */
export function deadLetterCopy(
  ctx: BrokerContext,
  entity: EntityItem,
  item: MessageItem,
  info: DeadLetterInfo,
  subqueue: Subqueue = 'deadletter',
): MessageItem {
  const now = ctx.clock.now();
  const seq = ctx.sequences.next(now, 0);
  const copy: MessageItem = {
    ...messageKey(entity.eid, subqueue, 0, seq),
    seq: seq.toString(),
    eid: entity.eid,
    entity: entity.path,
    subqueue,
    partition: 0,
    messageId: item.messageId,
    body: item.body,
    enqueuedAt: item.enqueuedAt,
    state: 'Active',
    deliveryCount: item.deliveryCount,
    size: item.size,
    deadLetterSource: entityPathDisplay(entity),
    enqueuedSequenceNumber: item.enqueuedSequenceNumber && item.subqueue !== 'active' ? item.enqueuedSequenceNumber : item.seq,
    v: 0,
  };
  if (info.reason !== undefined) copy.deadLetterReason = info.reason;
  if (info.description !== undefined) copy.deadLetterErrorDescription = info.description;
  const carried = [...optionalSystemProperties, 'props', 'hops'] as const;
  for (const key of carried) if (item[key] !== undefined) (copy as unknown as Record<string, unknown>)[key] = item[key];
  // T9/D6: no ttl, no agenda entry: nothing leaves a dead-letter subqueue on its own.
  copy.rpk = copy.pk;
  copy.rsk = readySortKey(now, seq);
  // The reason and source make the copy larger than the message: it may now pay to compress.
  copy.body = packBody(storedMessage(copy), copy.body);
  return copy;
}

/** A move that met another transaction waits 10-20 ms, then 20-40, then 40-80, before answering busy. */
const MOVE_CONFLICT_BACKOFF = { baseMs: 20, capMs: 80 };

/** How many times a move draws positions for its copies when a receiver's tombstone took them. */
const POSITION_DRAWS = 3;

/** What a move's transaction answered (`withDrawnPositions`): whether its copies landed, or that a tombstone took a drawn position. */
export type DrawnMove<T> = { moved: boolean; value: T } | 'placeTaken';

/**
 * Whether a cancelled transaction failed on one of `parts`, the puts at drawn positions that
 * follow its first `before` parts: a receiver's tombstone took that position.
 */
export const placeTaken = (codes: readonly string[] | undefined, before: number, parts: readonly TransactionPart[]): boolean =>
  parts.some((_, i) => partFailedCondition(codes, before + i));

/**
 * D3 onto positions, for every mover: the targets bound for a positioned queue's active
 * subqueue (`positioned` names the incarnations, positioned-send.ts `goesToPositions`) land on
 * positions, as a send's copies do. Their positions are drawn first (positioned-send.ts
 * `drawForMove`); `write` runs the mover's one transaction with the other targets and the
 * parts that put these at their positions, each conditioned on its position being empty. A
 * crash after the draw leaves holes, which receivers tombstone, and the source where it was.
 * When a receiver's tombstone took a drawn position (`write` answers 'placeTaken'), the
 * positions are drawn again, at most `POSITION_DRAWS` times, then busy. Every way out that
 * did not move tombstones what was drawn, so no receiver waits for it.
 */
export async function withDrawnPositions<T>(
  ctx: BrokerContext,
  targets: readonly MessageItem[],
  positioned: ReadonlySet<string>,
  write: (today: MessageItem[], parts: TransactionPart[]) => Promise<DrawnMove<T>>,
): Promise<T> {
  const { onPositions: toPositions, today } = splitForPositions(targets, positioned);
  for (let draws = 1; ; draws++) {
    const drawn = toPositions.length > 0 ? await drawForMove(ctx, toPositions) : undefined;
    let answer: DrawnMove<T>;
    try {
      answer = await write(today, drawn?.parts ?? []);
    } catch (e) {
      await drawn?.giveUp();
      throw e;
    }
    if (answer !== 'placeTaken' && answer.moved) return answer.value;
    await drawn?.giveUp();
    if (answer !== 'placeTaken') return answer.value;
    if (draws >= POSITION_DRAWS) throw busy();
  }
}

/**
 * Marks the partitions a move's targets go into ready (ready-marks.ts), before the targets
 * exist, so no receive of a partitioned entity misses them. A target whose incarnation is
 * gone is unreachable either way: the move goes on, so its source is not stuck.
 */
export async function markTargets(ctx: BrokerContext, targets: readonly MessageItem[]): Promise<void> {
  await markReady(ctx, [...targets]).catch((e: unknown) => {
    if (!(e instanceof BrokerError && e.code === 'EntityNotFound')) throw e;
  });
}

/**
 * The transaction part that takes `item` away under `guard`: a delete, or on a ticketed
 * partition (`removal` 'marker') its `done` marker in its place, under the same condition, so
 * its position never reads as a dead sender's hole (store/tickets.ts).
 */
function sourceRemoval(ctx: BrokerContext, item: MessageItem, guard: Guard, removal: Removal): Record<string, unknown> {
  if (removal === 'marker') return removalPart(ctx, item.pk, positionOfSk(item.sk), 'marker', guard);
  return { Delete: conditionedWrite(ctx, { Delete: { Key: { pk: item.pk, sk: item.sk } } }, guard) };
}

/** How a move takes `item` from where it is: a message at a position of a ticketed entity leaves a `done` marker. */
export const removalOf = (entity: Pick<EntityItem, 'layout' | 'ticketed'>, item: Pick<MessageItem, 'pk'>): Removal =>
  item.pk.startsWith(POSITIONED_PK_PREFIX) ? removalFor(entity) : 'delete';

/**
 * Deletes `item` (under `guard`), or leaves its `done` marker (`removal`), and puts the targets in one transaction. Answers false when
 * the guard failed (someone else moved or settled it first). A sequence collision on a
 * target is retried with a fresh number. A target bound for a positioned queue (`positioned`)
 * is put at a position drawn for it, inside the same transaction (`withDrawnPositions`).
 */
export async function moveMessage(
  ctx: BrokerContext,
  item: MessageItem,
  guard: Guard,
  target: MessageItem | MessageItem[],
  positioned: ReadonlySet<string> = new Set(),
  removal: Removal = 'delete',
): Promise<boolean> {
  const targets = Array.isArray(target) ? target : [target];
  await announceSessionMessages(ctx, targets);
  await markTargets(ctx, targets);
  const source = sourceRemoval(ctx, item, guard, removal);
  return withDrawnPositions(ctx, targets, positioned, async (today, placed) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await putNewMessages(ctx, today, {
          before: () => [source],
          after: [...placed, ...(guard.session ? [sessionLockCheckPart(ctx, guard.session)] : [])],
        });
        return { moved: true, value: true };
      } catch (e) {
        const failed = cancellationCodes(e);
        if (!failed) throw e;
        if (guard.session && partFailedCondition(failed, today.length + 1 + placed.length)) throw sessionLockLost();
        if (partFailedCondition(failed, 0)) return { moved: false, value: false };
        // A receiver gave up on a drawn position (its tombstone is there): draw again.
        if (placeTaken(failed, 1 + today.length, placed)) return 'placeTaken';
        if (failed.includes(TRANSACTION_CONFLICT)) {
          // Another transaction holds one of the items: wait a little (the drawn positions kept), then let the caller retry.
          if (attempt < 3) {
            await backoff(ctx.clock, attempt, MOVE_CONFLICT_BACKOFF);
            continue;
          }
          throw busy();
        }
        throw e;
      }
    }
  });
}

/**
 * D1, D2, R4: into the entity's dead-letter subqueue with a reason, or (F3) on to the entity
 * named by `forwardDeadLetteredMessagesTo`. When that target is gone or disabled, the message
 * stays in its own dead-letter subqueue rather than being lost.
 */
export async function deadLetter(ctx: BrokerContext, entity: EntityItem, item: MessageItem, guard: Guard, info: DeadLetterInfo): Promise<boolean> {
  const positioned = new Set<string>();
  return moveMessage(ctx, item, guard, await deadLetterTargets(ctx, entity, item, info, positioned), positioned, removalOf(entity, item));
}

/**
 * Where a dead-lettered message goes: its own dead-letter subqueue, or on (F3). `positioned`,
 * when given, is filled with the incarnations a forwarded copy went into whose active
 * subqueue is positioned (as a send's routing fills it): a mover that passes it on to
 * `moveMessage` puts those copies on positions; one that does not puts every copy in today's
 * layout, which a positioned queue receives after its positions.
 */
export async function deadLetterTargets(
  ctx: BrokerContext,
  entity: EntityItem,
  item: MessageItem,
  info: DeadLetterInfo,
  positioned?: Set<string>,
): Promise<MessageItem[]> {
  const copy = deadLetterCopy(ctx, entity, item, info);
  if (entity.forwardDeadLetteredMessagesTo && item.subqueue === 'active') {
    const forwarded = await forwardDeadLetter(ctx, entity, item, copy, positioned);
    if (forwarded) return forwarded;
  }
  return [copy];
}

async function forwardDeadLetter(
  ctx: BrokerContext,
  entity: EntityItem,
  item: MessageItem,
  copy: MessageItem,
  positioned: Set<string> | undefined,
): Promise<MessageItem[] | undefined> {
  const named = entity.forwardDeadLetteredMessagesTo ?? '';
  const target = await resolveTarget(ctx, named, 'forwardDeadLetteredMessagesTo').catch(() => undefined);
  if (!target || target.status === 'Disabled' || target.status === 'SendDisabled') return undefined;
  const input = messageInputOf(item);
  const routed = await route(ctx, target, input, {
    hops: (item.hops ?? 0) + 1,
    copied: true,
    size: item.size,
    body: item.body,
    ...(positioned ? { positioned } : {}),
  });
  if (routed.items.length === 0 || routed.items.length > 99) return undefined;
  // The reason travels with the message, so the operator at the target sees why it came.
  return routed.items.map((i) => ({
    ...i,
    deadLetterReason: copy.deadLetterReason,
    ...(copy.deadLetterErrorDescription !== undefined ? { deadLetterErrorDescription: copy.deadLetterErrorDescription } : {}),
    deadLetterSource: copy.deadLetterSource,
    enqueuedSequenceNumber: copy.enqueuedSequenceNumber,
  }));
}

/** A stored message back in the form a sender gives, for re-routing it. */
export function messageInputOf(item: MessageItem): MessageInput {
  const input: MessageInput = {
    body: JSON.parse(bodyTextOf(item.body)) as unknown,
    messageId: item.messageId,
    applicationProperties: applicationPropertiesOf(item),
  };
  for (const key of optionalSystemProperties) {
    if (item[key] !== undefined) input[key] = item[key];
  }
  return input;
}

export const expiryDescription = 'The message expired and was dead-lettered.';

/** T6: dead-lettered with TTLExpiredException when the entity asks for it, else deleted. */
export async function expire(ctx: BrokerContext, entity: EntityItem, item: MessageItem, guard: Guard): Promise<boolean> {
  if (entity.deadLetteringOnMessageExpiration) {
    return deadLetter(ctx, entity, item, guard, { reason: reasons.expired, description: expiryDescription });
  }
  return writeGuarded(ctx, { Delete: { Key: { pk: item.pk, sk: item.sk } } }, guard);
}
