/** Resubmit (D7): dead-lettered messages sent back to their entity, or elsewhere, as new messages. */
import type { RequestOf } from '../requests/schemas.js';
import type { Grant } from '../auth/grants.js';
import { badRequest } from '../errors.js';
import { parseEntityTarget, type ReceiveTarget } from '../entities/paths.js';
import type { MessageItem } from '../messages/item.js';
import { messageKey, messagePk } from '../store/keys.js';
import { messagePages } from '../store/message-pages.js';
import { getMessage } from '../store/messages.js';
import { partitionOfSeq } from '../store/sequence.js';
import { requireSendOn } from './authorization.js';
import { API_WORK_BUDGET_MS } from './budget.js';
import type { BrokerContext } from './context.js';
import { assertCanSend, requireEntity, type EntityItem } from './entities.js';
import { buildMessageItem } from './message-items.js';
import { messageInputOf, moveMessage, unchanged } from './moves.js';
import { isPositioned } from './layouts.js';

/**
 * D7 resubmit: dead-lettered messages go back to the parent (or `to`) as new messages with
 * the dead-letter fields cleared. Each message moves in one transaction (D3), so a crash or
 * a timeout leaves every message in exactly one place; calling again continues. Into a
 * positioned queue each lands on a position drawn for it, as a send would put it.
 */
export async function resubmit(
  ctx: BrokerContext,
  target: ReceiveTarget,
  b: RequestOf<'ResubmitRequest'>,
  grant: Grant,
): Promise<{ resubmitted: number; remaining: boolean }> {
  if (target.subqueue === 'active') throw badRequest('path', 'resubmit works on a dead-letter subqueue');
  const source = await requireEntity(ctx, target); // the path's entity: the token reaches it
  const destinationRef = b.to !== undefined ? parseEntityTarget(b.to, 'to') : target;
  // B3: the destination needs Send too, before anything says whether it exists; also the
  // parent, for a token whose `sr` reaches only the dead-letter subqueue.
  requireSendOn(grant, [destinationRef], 'to');
  if (destinationRef.kind === 'topic') throw badRequest('to', 'resubmitting to a topic is not supported yet; name a queue or subscription');
  const destination = b.to !== undefined ? await requireEntity(ctx, destinationRef) : source;
  if (b.to !== undefined) assertCanSend(destination);
  // Into a positioned queue a resubmitted message lands on a position, in line with later sends (moves.ts `moveMessage`).
  const positioned = new Set(isPositioned(destination) ? [destination.eid] : []);
  const started = Date.now();
  const limit = b.maxMessages ?? Number.MAX_SAFE_INTEGER;
  let resubmitted = 0;
  const candidates = b.sequenceNumbers ? specificMessages(ctx, source, target, b.sequenceNumbers) : allMessages(ctx, source, target);
  // Skipped messages are still there, so the caller must hear that some remain (R11).
  let skipped = false;
  for await (const item of candidates) {
    if (resubmitted >= limit) return { resubmitted, remaining: true };
    if (Date.now() - started > API_WORK_BUDGET_MS) return { resubmitted, remaining: true };
    if (item.lockedUntil && item.lockedUntil > ctx.clock.now()) {
      skipped = true; // an operator holds it
      continue;
    }
    const fresh = buildMessageItem(ctx, destination, messageInputOf(item), { body: item.body, size: item.size });
    if (await moveMessage(ctx, item, unchanged(item), fresh, positioned)) resubmitted++;
    else skipped = true; // changed meanwhile (locked, most likely): it may still be there
  }
  return { resubmitted, remaining: skipped };
}

async function* allMessages(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget): AsyncGenerator<MessageItem> {
  const pk = messagePk(entity.eid, target.subqueue, 0);
  for await (const page of messagePages(ctx, pk)) {
    for (const item of page) yield item;
  }
}

async function* specificMessages(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seqs: string[]): AsyncGenerator<MessageItem> {
  for (const text of seqs) {
    const seq = BigInt(text);
    if (partitionOfSeq(seq) !== 0) continue;
    const item = await getMessage(ctx, messageKey(entity.eid, target.subqueue, 0, seq), true);
    if (item) yield item;
  }
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { resubmit };
