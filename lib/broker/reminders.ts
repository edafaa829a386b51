/**
 * Lock reminders (R6 for batches that take their messages out of the `ready` index; the items
 * and their writes are in lib/store/reminders.ts). A peek-lock pass of a plain queue or
 * subscription about to take two or more messages of one partition writes one reminder for
 * them first, then locks each with the reminder's lock end and a token it lists. A receive
 * that meets the reminder lapsed brings each message still locked under its token back to
 * where a lapsed lock sorts, fences each the batch never took, and only then deletes the
 * reminder: any crash leaves it, and the next receive does the same again. A batch complete
 * that removed every message a reminder planned deletes it at once (forgetCompletedBatches),
 * so no receive pays the lapse's reads for a batch with nothing left.
 */
import {
  getReminder,
  putReminder,
  readMessagesByKey,
  readMessagesInRange,
  restoreLapsedMessage,
  fenceUntakenMessage,
  deleteReminder,
  type ReminderItem,
} from '../store/reminders.js';
import { getMessage } from '../store/messages.js';
import { keyId, padSeq, readySortKey, reminderKey, type Key } from '../store/keys.js';
import type { MessageItem } from '../messages/item.js';
import { batchIdOfLockTokens, batchSizeOfLockToken, newBatchLockToken, sequenceOfLockToken } from '../messages/lock-token.js';
import { isStoreBusy } from '../store/outcomes.js';
import type { BrokerContext } from './context.js';

/** A batch's planned takes: the lock token for each message (by sort key) and the one lock end they share. */
export interface ReminderPlan {
  until: number;
  tokens: Map<string, string>;
}

/**
 * Writes the reminder of a batch about to take `planned` (messages of ready partition `pk`,
 * with the delivery count each was read with), every lock ending at `until`. Returns the plan
 * the takes follow; a take outside it locks on its own (its entry sorts at its lock's end).
 */
export async function remindBeforeTaking(
  ctx: BrokerContext,
  pk: string,
  planned: readonly { sk: string; deliveryCount?: number }[],
  until: number,
): Promise<ReminderPlan> {
  const tokens = new Map<string, string>();
  const takes: Record<string, number> = {};
  for (const c of planned) {
    const token = newBatchLockToken(BigInt(c.sk), planned.length);
    tokens.set(c.sk, token);
    takes[token] = c.deliveryCount ?? 0;
  }
  const key = reminderKey(pk, batchIdOfLockTokens([...tokens.values()]));
  await putReminder(ctx, { ...key, rpk: pk, rsk: readySortKey(until, 0n), until, takes });
  return { until, tokens };
}

/**
 * R4/R9 with R6: after a batch complete, deletes the reminder of each batch whose every planned
 * take it completed. `completed`: the tokens whose message the complete removed (each delete
 * conditioned on the token, so that take landed and nothing holds the message any more), with
 * the message's partition. A reminder exists to bring back or fence its batch's messages once
 * the lock lapses; with every one gone it would find nothing to do, so deleting it now costs
 * the same write its lapse would (the table and the index entry) and spares the lapse's reads.
 *
 * Which tokens make a batch, without reading the reminder: a token states its batch's size
 * (`newBatchLockToken`), and the reminder's key is the hash of the batch's token set, so only
 * the whole set names it. Tokens of one partition stating size n are tried when exactly n
 * were completed; a set that mixes batches, or holds tokens from before, names no reminder
 * (its conditional delete fails: one write unit, and no reminder is touched). A batch whose
 * takes did not all land (a race lost, a take still on its way) is never complete here: its
 * reminder stays for the lapse, which fences what is still on its way.
 *
 * Only after the deletes of the messages: a crash before this, or a refusal for load, leaves
 * the reminder for the lapse, as before. Other errors throw (the messages stay completed).
 */
export async function forgetCompletedBatches(ctx: BrokerContext, completed: readonly { token: string; pk: string }[]): Promise<void> {
  const batches = new Map<string, { pk: string; size: number; tokens: Set<string> }>();
  for (const { token, pk } of completed) {
    const size = batchSizeOfLockToken(token);
    if (size < 2) continue;
    const id = `${pk}\n${size}`;
    const batch = batches.get(id) ?? { pk, size, tokens: new Set<string>() };
    batch.tokens.add(token);
    batches.set(id, batch);
  }
  const whole = [...batches.values()].filter((b) => b.tokens.size === b.size);
  const outcomes = await Promise.allSettled(whole.map((b) => deleteReminder(ctx, reminderKey(b.pk, batchIdOfLockTokens([...b.tokens])))));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected' && !isStoreBusy(o.reason));
  if (failed) throw failed.reason;
}

/** What became of one planned take when its reminder lapsed. */
type Settled = { kind: 'done' } | { kind: 'restored'; item: MessageItem } | { kind: 'later' };
const DONE: Settled = { kind: 'done' };

/**
 * Deals with the lapsed reminders met in a page (index rows of reminder items, `rsk` at or
 * before now): returns the messages put back in the index, ordinary lapsed-lock candidates
 * now. A reminder whose messages are all dealt with is deleted; one with a message in an
 * unknown state (unread through throttling) stays for the next receive.
 */
export async function restoreLapsed(ctx: BrokerContext, rows: readonly Key[], now: number): Promise<MessageItem[]> {
  const restored: MessageItem[] = [];
  for (const row of rows) {
    const reminder = await getReminder(ctx, row);
    // Deleted by another receive since the page was read: it dealt with the messages.
    if (!reminder || reminder.until > now) continue;
    const outcomes = await settleTakes(ctx, reminder, now);
    for (const o of outcomes) if (o.kind === 'restored') restored.push(o.item);
    if (outcomes.every((o) => o.kind !== 'later')) await deleteReminder(ctx, reminder);
  }
  return restored;
}

/**
 * The fewest planned takes read by a Query of their range rather than by key. A lapsed batch
 * is most often all completed, and then the Query costs 1 read unit where reading by key costs
 * one a message. A pair stays read by key: the Query saves it one unit at most, and nothing (or
 * costs one more, for items over 2 KB) when another message in its range makes it read by key too.
 */
const QUERY_FROM_TAKES = 3;

async function settleTakes(ctx: BrokerContext, reminder: ReminderItem, now: number): Promise<Settled[]> {
  const takes = Object.entries(reminder.takes).map(([token, deliveryCount]) => {
    const seq = sequenceOfLockToken(token);
    return { token, deliveryCount, seq, key: { pk: reminder.rpk, sk: padSeq(seq) } };
  });
  // Consistent: a message missing here is gone for good, so the reminder may go. Every write
  // below is conditional, and a refused fence is followed by a read again.
  const read = takes.length >= QUERY_FROM_TAKES ? readMessagesInRange : readMessagesByKey;
  const { items, unread } = await read(
    ctx,
    takes.map((t) => t.key),
  );
  const unknown = new Set(unread.map(keyId));
  // Every write finishes before a failure (a throttle) is passed on: none is left in flight
  // behind the answer, and the reminder stays for the next receive to finish the rest.
  const outcomes = await Promise.allSettled(
    takes.map((take) =>
      unknown.has(keyId(take.key)) ? ({ kind: 'later' } as Settled) : settleTake(ctx, reminder, take, items.get(keyId(take.key)), now, true),
    ),
  );
  const failed = outcomes.find((o) => o.status === 'rejected');
  if (failed) throw failed.reason;
  return outcomes.map((o) => (o as PromiseFulfilledResult<Settled>).value);
}

/**
 * One planned take of a lapsed batch, from the message as read:
 * - gone: completed, moved or reaped; a take can no longer land (it needs the item in the index);
 * - locked under the batch's token and out of the index: put back where its lapsed lock sorts;
 *   in the index under that token (renewed, or put back already): nothing to do;
 * - delivered as often as the batch saw: the batch never took it, so it is fenced against the
 *   take arriving late; when the fence is refused the take may just have landed, so it is read
 *   again, consistently;
 * - delivered since by another lock: the batch's take can never land (its condition names the
 *   count it read), and that lock's holder has it.
 */
async function settleTake(
  ctx: BrokerContext,
  reminder: ReminderItem,
  take: { token: string; deliveryCount: number; seq: bigint; key: Key },
  item: MessageItem | undefined,
  now: number,
  readAgain: boolean,
): Promise<Settled> {
  if (!item) return DONE;
  if (item.lockToken === take.token) {
    if (item.rsk !== undefined) return DONE;
    if ((item.lockedUntil ?? 0) > now) return { kind: 'later' };
    const back = await restoreLapsedMessage(ctx, take.key, { token: take.token, until: item.lockedUntil!, seq: take.seq, now });
    // Refused: settled, renewed or put back by another receive since the read.
    return back ? { kind: 'restored', item: back } : DONE;
  }
  // Read again after a refused fence and still as the batch saw it: fenced already.
  if ((item.deliveryCount ?? 0) !== take.deliveryCount || !readAgain) return DONE;
  if (await fenceUntakenMessage(ctx, take.key, { deliveryCount: take.deliveryCount, until: reminder.until })) return DONE;
  return settleTake(ctx, reminder, take, await getMessage(ctx, take.key, true), now, false);
}
