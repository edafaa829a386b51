/** Cancel scheduled (S6): a scheduled message, or a topic's scheduled copies, removed before their time. */
import { BrokerError } from '../errors.js';
import type { EntityRef } from '../entities/paths.js';
import { lowerScheduledHold } from '../store/entities.js';
import { messageKey, messagePk, readyUpperBound, scheduledCopiesKey } from '../store/keys.js';
import { getScheduledCopies } from '../store/markers.js';
import { deleteScheduled, deleteScheduledCopies, latestReadyAbove } from '../store/message-pages.js';
import { getMessage } from '../store/messages.js';
import { partitionOfSeq } from '../store/sequence.js';
import { parseSequenceNumber } from '../validation.js';
import type { BrokerContext } from './context.js';
import { cancelledOnCondition } from '../store/outcomes.js';
import { idleDeadline, requireEntity, type EntityItem } from './entities.js';

/** S6: DELETE {send}/messages/scheduled/{n}; 404 once it is no longer scheduled. */
export async function cancelScheduled(ctx: BrokerContext, ref: EntityRef, seqText: string): Promise<void> {
  const seq = parseSequenceNumber(seqText);
  const entity = await requireEntity(ctx, ref);
  const partition = partitionOfSeq(seq);
  const notScheduled = new BrokerError('MessageNotFound', `no scheduled message with sequence number ${seqText}`);
  if (entity.kind === 'topic') return cancelScheduledCopies(ctx, entity, seq, notScheduled);
  if (partition >= entity.partitions) throw notScheduled;
  const cancelled = await deleteScheduled(ctx, messageKey(entity.eid, 'active', partition, seq), ctx.clock.now());
  if (!cancelled) throw notScheduled;
  await releaseHold(ctx, entity, cancelled.enqueuedAt);
}

/**
 * I2 after a cancel: when the cancelled message was the latest the queue waited for, its
 * hold moves back to the latest message still ahead (one newest-first read of the ready
 * index per partition, where scheduled messages sort by due time; a lock held past now
 * counts too, erring on keeping the queue a few minutes longer). A topic keeps its hold
 * until the cancelled time: recounting every subscription is not worth it. So does a queue
 * that requires sessions: its messages sort under one index key per session, which these
 * reads do not see, so recounting would drop the hold of a session message still ahead.
 */
async function releaseHold(ctx: BrokerContext, entity: EntityItem, cancelledAt: number): Promise<void> {
  const held = entity.scheduledUntil;
  if (entity.autoDeleteOnIdle === null || held === undefined || cancelledAt < held || entity.requiresSession) return;
  const upper = readyUpperBound(ctx.clock.now());
  let latest = 0;
  for (let p = 0; p < entity.partitions; p++) {
    latest = Math.max(latest, await latestReadyAbove(ctx, messagePk(entity.eid, 'active', p), upper));
  }
  // Unless a send raised it meanwhile: that hold stands.
  await lowerScheduledHold(ctx, entity, held, latest, idleDeadline({ ...entity, scheduledUntil: latest }));
}

/** S6 on a topic: every copy still scheduled goes, in one transaction when they fit; 404 when none is left. */
async function cancelScheduledCopies(ctx: BrokerContext, topic: EntityItem, seq: bigint, notScheduled: BrokerError): Promise<void> {
  const key = scheduledCopiesKey(topic.eid, seq);
  const copies = await getScheduledCopies(ctx, topic.eid, seq);
  const now = ctx.clock.now();
  const stillScheduled: { pk: string; sk: string }[] = [];
  for (const copy of copies) {
    const item = await getMessage(ctx, copy, true);
    if (item?.state === 'Scheduled' && item.enqueuedAt > now) stillScheduled.push(copy);
  }
  if (stillScheduled.length === 0) throw notScheduled;
  for (let i = 0; i < stillScheduled.length; i += 99) {
    const slice = stillScheduled.slice(i, i + 99);
    try {
      await deleteScheduledCopies(ctx, slice, now, i + 99 >= stillScheduled.length ? key : undefined);
    } catch (e) {
      if (cancelledOnCondition(e)) throw notScheduled; // its time came meanwhile
      throw e;
    }
  }
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { cancelScheduled };
