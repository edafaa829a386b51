/** Cancel scheduled (S6): a scheduled message, or a topic's scheduled copies, removed before their time. */
import { DeleteCommand, GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { BrokerError } from '../errors.js';
import type { EntityRef } from '../entities/paths.js';
import type { MessageItem } from '../messages/item.js';
import { messageKey, messagePk, readyUpperBound, scheduledCopiesKey, tableIndex, TIME_DIGITS } from '../store/keys.js';
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
  try {
    await ctx.db
      .send(
        new DeleteCommand({
          TableName: ctx.tableName,
          Key: messageKey(entity.eid, 'active', partition, seq),
          ConditionExpression: '#state = :scheduled AND enqueuedAt > :now',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':scheduled': 'Scheduled', ':now': ctx.clock.now() },
          ReturnValues: 'ALL_OLD',
        }),
      )
      .then((out) => releaseHold(ctx, entity, (out.Attributes as MessageItem).enqueuedAt));
  } catch (e) {
    if (e instanceof Error && e.name === 'ConditionalCheckFailedException') throw notScheduled;
    throw e;
  }
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
    const out = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        IndexName: tableIndex.ready,
        KeyConditionExpression: 'rpk = :pk AND rsk > :upper',
        ExpressionAttributeValues: { ':pk': messagePk(entity.eid, 'active', p), ':upper': upper },
        ProjectionExpression: 'rsk',
        ScanIndexForward: false,
        Limit: 1,
      }),
    );
    const rsk = out.Items?.[0]?.rsk as string | undefined;
    if (rsk) latest = Math.max(latest, Number(rsk.slice(0, TIME_DIGITS)));
  }
  try {
    await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        // The agenda entry moves back too (the reaper re-checks the entity when it comes).
        UpdateExpression: `SET dsk = :deadline ${latest > 0 ? ', scheduledUntil = :latest' : 'REMOVE scheduledUntil'}`,
        // Unless a send raised it meanwhile: that hold stands.
        ConditionExpression: 'eid = :eid AND scheduledUntil = :held AND attribute_exists(dpk)',
        ExpressionAttributeValues: {
          ':eid': entity.eid,
          ':held': held,
          ':deadline': idleDeadline({ ...entity, scheduledUntil: latest }),
          ...(latest > 0 ? { ':latest': latest } : {}),
        },
      }),
    );
  } catch (e) {
    if (!(e instanceof Error && e.name === 'ConditionalCheckFailedException')) throw e;
  }
}

/** S6 on a topic: every copy still scheduled goes, in one transaction when they fit; 404 when none is left. */
async function cancelScheduledCopies(ctx: BrokerContext, topic: EntityItem, seq: bigint, notScheduled: BrokerError): Promise<void> {
  const key = scheduledCopiesKey(topic.eid, seq);
  const marker = (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: true }))).Item;
  const copies = (marker?.copies ?? []) as { pk: string; sk: string }[];
  const now = ctx.clock.now();
  const stillScheduled: { pk: string; sk: string }[] = [];
  for (const copy of copies) {
    const item = (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: copy, ConsistentRead: true }))).Item as MessageItem | undefined;
    if (item?.state === 'Scheduled' && item.enqueuedAt > now) stillScheduled.push(copy);
  }
  if (stillScheduled.length === 0) throw notScheduled;
  for (let i = 0; i < stillScheduled.length; i += 99) {
    const slice = stillScheduled.slice(i, i + 99);
    try {
      await ctx.db.send(
        new TransactWriteCommand({
          TransactItems: [
            ...slice.map((Key) => ({
              Delete: {
                TableName: ctx.tableName,
                Key,
                ConditionExpression: '#state = :scheduled AND enqueuedAt > :now',
                ExpressionAttributeNames: { '#state': 'state' },
                ExpressionAttributeValues: { ':scheduled': 'Scheduled', ':now': now },
              },
            })),
            ...(i + 99 >= stillScheduled.length ? [{ Delete: { TableName: ctx.tableName, Key: key } }] : []),
          ],
        }),
      );
    } catch (e) {
      if (cancelledOnCondition(e)) throw notScheduled; // its time came meanwhile
      throw e;
    }
  }
}
