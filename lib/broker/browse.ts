/** Peek (R8), cancel scheduled (S6), purge and resubmit (D7). */
import { BatchWriteCommand, DeleteCommand, GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { BrokerError, badRequest } from '../errors.js';
import { parseEntityTarget, type EntityRef, type ReceiveTarget } from '../entities/paths.js';
import { presentMessage, type MessageItem, type ReceivedMessage } from '../messages/item.js';
import { messageKey, messagePk, padSeq, readyUpperBound, scheduledCopiesKey, tableIndex, TIME_DIGITS } from '../store/keys.js';
import { partitionOfSeq } from '../store/sequence.js';
import { queryPages } from '../store/query.js';
import { parseOrThrow, parseSequenceNumber, queryInteger, sequenceNumberText } from '../validation.js';
import { type BrokerContext } from './context.js';
import { cancelledOnCondition, conditionally } from '../store/outcomes.js';
import { idleDeadline, requireEntity, touchEntity, type EntityItem } from './entities.js';
import { buildMessageItem } from './message-items.js';
import { assertCanSend } from './entities.js';
import type { Grant } from '../auth/index.js';
import { requireSendOn } from './authorization.js';
import { messageInputOf, moveMessage, unchanged } from './moves.js';
import { liveSessionLock } from './sessions.js';
import { AnswerBudget } from './answer-budget.js';

/** The query string of a peek. */
export const peekSchema = z.strictObject({
  fromSequenceNumber: sequenceNumberText.default('0'),
  maxMessages: queryInteger(1, 100)
    .default(10)
    .meta({ description: "At most this many. A page carries fewer when more would pass Lambda's 6 MB answer limit (R10): peek on from the last one." }),
});

const partitionCount = (entity: EntityItem, target: Pick<ReceiveTarget, 'subqueue'>) => (target.subqueue === 'active' ? entity.partitions : 1);

/** R8: from a sequence number on, without locking; scheduled and deferred included with their state. */
export async function peek(ctx: BrokerContext, target: ReceiveTarget, query: Record<string, string | undefined>): Promise<ReceivedMessage[]> {
  const q = parseOrThrow(peekSchema, query);
  const entity = await requireEntity(ctx, target);
  await touchEntity(ctx, entity);
  const from = padSeq(q.fromSequenceNumber);
  const found: MessageItem[] = [];
  // A partition's page may end early (DynamoDB's 1 MB a Query): nothing past its last entry
  // is answered, or the next peek, from the last one answered on, would skip its rest.
  let readTo: string | undefined;
  for (let p = 0; p < partitionCount(entity, target); p++) {
    const out = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk AND sk >= :from',
        ExpressionAttributeValues: { ':pk': messagePk(entity.eid, target.subqueue, p), ':from': from },
        Limit: q.maxMessages,
      }),
    );
    const items = (out.Items ?? []) as MessageItem[];
    found.push(...items);
    const last = items.at(-1)?.sk;
    if (out.LastEvaluatedKey && last !== undefined && (readTo === undefined || last < readTo)) readTo = last;
  }
  found.sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
  const now = ctx.clock.now();
  // R10: no more than the answer can carry; the caller peeks on from the last one.
  const budget = new AnswerBudget();
  const answer: ReceivedMessage[] = [];
  for (const item of found.slice(0, q.maxMessages)) {
    if (readTo !== undefined && item.sk > readTo) break;
    const message = presentMessage(item, now);
    if (!budget.addIfFits(message)) break;
    answer.push(message);
  }
  return answer;
}

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

/** Time one API call may spend on a long purge or resubmit before answering (API Gateway allows 30 s). */
const WORK_BUDGET_MS = 20_000;

/**
 * D7 purge: every message of the entity or subqueue that bulk deletion may take (R11: not
 * locked, not deferred), page by page.
 */
export async function purge(ctx: BrokerContext, target: ReceiveTarget): Promise<{ purged: number }> {
  if (target.kind === 'topic') throw badRequest('path', 'a topic holds no messages; purge its subscriptions');
  const entity = await requireEntity(ctx, target);
  const purged = await deleteEligible(ctx, entity, target, { max: Number.MAX_SAFE_INTEGER });
  return { purged };
}

export const deleteMessagesSchema = z
  .strictObject({
    maxMessageCount: z.number().int().min(1).max(4000),
    beforeEnqueueTime: z.iso.datetime({ offset: true }).optional(),
  })
  .meta({ description: 'At most how many messages to delete, and the enqueue time they must be older than (default: now).' });

/**
 * The SDK's `deleteMessages`/`purgeMessages`: up to maxMessageCount messages enqueued before
 * `beforeEnqueueTime` (default: now), oldest partition pages first, locked and deferred ones
 * left where they are (R11).
 */
export async function deleteMessages(ctx: BrokerContext, target: ReceiveTarget, body: unknown): Promise<{ deleted: number }> {
  const b = parseOrThrow(deleteMessagesSchema, body ?? {});
  if (target.kind === 'topic') throw badRequest('path', 'a topic holds no messages; delete from its subscriptions');
  const entity = await requireEntity(ctx, target);
  const before = b.beforeEnqueueTime !== undefined ? Date.parse(b.beforeEnqueueTime) : ctx.clock.now();
  const deleted = await deleteEligible(ctx, entity, target, { max: b.maxMessageCount, before });
  return { deleted };
}

/** What bulk deletion reads of a message: enough to tell whether it may take it (R11). */
interface BulkCandidate {
  pk: string;
  sk: string;
  slk?: string;
  sessionId?: string;
}

/** How many conditional deletes bulk deletion has in flight at once. */
const BULK_DELETE_PARALLEL = 25;

/**
 * R11: deletes up to `max` messages of the target (enqueued before `before`, when given) that
 * no receiver holds and that are not deferred. Service Bus leaves locked messages to their
 * holder; it leaves deferred messages too (they are set aside for a receive by sequence
 * number, and its batch delete does not take them). Each delete is conditional on the same
 * facts the read filtered on, so a message locked between the read and the delete stays;
 * a conditional delete costs what an unconditional one does. A session message's own lock
 * time is not renewed with its session's lock, so one taken under a session lock that is still
 * live is left too (one read of the session item per session met).
 */
async function deleteEligible(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, limits: { max: number; before?: number }): Promise<number> {
  const started = Date.now();
  const now = ctx.clock.now();
  const eligible = `#state <> :deferred AND (attribute_not_exists(lockedUntil) OR lockedUntil <= :now)${limits.before !== undefined ? ' AND enqueuedAt < :before' : ''}`;
  const values = { ':deferred': 'Deferred', ':now': now, ...(limits.before !== undefined ? { ':before': limits.before } : {}) };
  const sessionLive = new Map<string, Promise<boolean>>();
  const heldBySession = (c: BulkCandidate) => {
    if (c.slk === undefined || c.sessionId === undefined) return Promise.resolve(false);
    const key = `${c.sessionId}\n${c.slk}`;
    if (!sessionLive.has(key)) {
      sessionLive.set(
        key,
        liveSessionLock(ctx, { eid: entity.eid, sessionId: c.sessionId, slk: c.slk }).then((until) => until !== undefined),
      );
    }
    return sessionLive.get(key)!;
  };
  const deleteOne = async (c: BulkCandidate): Promise<number> => {
    if (await heldBySession(c)) return 0;
    const out = await conditionally(
      ctx.db.send(
        new DeleteCommand({
          TableName: ctx.tableName,
          Key: { pk: c.pk, sk: c.sk },
          ConditionExpression: eligible,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: values,
        }),
      ),
    );
    return out ? 1 : 0;
  };
  let deleted = 0;
  for (let p = 0; p < partitionCount(entity, target) && deleted < limits.max; p++) {
    const pages = queryPages<BulkCandidate>(ctx, {
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: eligible,
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':pk': messagePk(entity.eid, target.subqueue, p), ...values },
      ProjectionExpression: 'pk, sk, slk, sessionId',
      Limit: 250,
    });
    for await (const page of pages) {
      const wanted = page.slice(0, limits.max - deleted);
      for (let i = 0; i < wanted.length; i += BULK_DELETE_PARALLEL) {
        const done = await Promise.all(wanted.slice(i, i + BULK_DELETE_PARALLEL).map(deleteOne));
        deleted += done.reduce((a, b) => a + b, 0);
      }
      if (Date.now() - started > WORK_BUDGET_MS) return deleted;
      if (deleted >= limits.max) break;
    }
  }
  return deleted;
}

/** BatchWriteItem deletes with retries of what DynamoDB leaves unprocessed. */
/** One page of the keys under `pk`, deleted: how many (0: nothing is left). */
export async function deleteKeyPage(ctx: BrokerContext, pk: string, page: { limit: number; consistentRead?: boolean }): Promise<number> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ProjectionExpression: 'pk, sk',
      Limit: page.limit,
      ...(page.consistentRead ? { ConsistentRead: true } : {}),
    }),
  );
  return deleteKeys(ctx, (out.Items ?? []) as { pk: string; sk: string }[]);
}

export async function deleteKeys(ctx: BrokerContext, keys: { pk: string; sk: string }[]): Promise<number> {
  for (let i = 0; i < keys.length; i += 25) {
    let request: Record<string, unknown[]> | undefined = {
      [ctx.tableName]: keys.slice(i, i + 25).map((k) => ({ DeleteRequest: { Key: { pk: k.pk, sk: k.sk } } })),
    };
    for (let attempt = 0; request && Object.keys(request).length; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
      const out = await ctx.db.send(new BatchWriteCommand({ RequestItems: request as never }));
      request = out.UnprocessedItems as typeof request;
    }
  }
  return keys.length;
}

export const resubmitSchema = z
  .strictObject({
    sequenceNumbers: z.array(sequenceNumberText).min(1).max(1000).optional(),
    maxMessages: z.number().int().min(1).max(10_000).optional(),
    to: z.string().min(1).max(600).optional(),
  })
  .meta({
    description:
      'Which dead-lettered messages to resubmit (all by default), at most how many, and where to (`queues/q` or `topics/t/subscriptions/s`; default: the parent entity).',
  });

/**
 * D7 resubmit: dead-lettered messages go back to the parent (or `to`) as new messages with
 * the dead-letter fields cleared. Each message moves in one transaction (D3), so a crash or
 * a timeout leaves every message in exactly one place; calling again continues.
 */
export async function resubmit(ctx: BrokerContext, target: ReceiveTarget, body: unknown, grant: Grant): Promise<{ resubmitted: number; remaining: boolean }> {
  const b = parseOrThrow(resubmitSchema, body ?? {});
  if (target.subqueue === 'active') throw badRequest('path', 'resubmit works on a dead-letter subqueue');
  const source = await requireEntity(ctx, target); // the path's entity: the token reaches it
  const destinationRef = b.to !== undefined ? parseEntityTarget(b.to, 'to') : target;
  // B3: the destination needs Send too, before anything says whether it exists; also the
  // parent, for a token whose `sr` reaches only the dead-letter subqueue.
  requireSendOn(grant, [destinationRef], 'to');
  if (destinationRef.kind === 'topic') throw badRequest('to', 'resubmitting to a topic is not supported yet; name a queue or subscription');
  const destination = b.to !== undefined ? await requireEntity(ctx, destinationRef) : source;
  if (b.to !== undefined) assertCanSend(destination);
  const started = Date.now();
  const limit = b.maxMessages ?? Number.MAX_SAFE_INTEGER;
  let resubmitted = 0;
  const candidates = b.sequenceNumbers ? specificMessages(ctx, source, target, b.sequenceNumbers) : allMessages(ctx, source, target);
  // Skipped messages are still there, so the caller must hear that some remain (R11).
  let skipped = false;
  for await (const item of candidates) {
    if (resubmitted >= limit) return { resubmitted, remaining: true };
    if (Date.now() - started > WORK_BUDGET_MS) return { resubmitted, remaining: true };
    if (item.lockedUntil && item.lockedUntil > ctx.clock.now()) {
      skipped = true; // an operator holds it
      continue;
    }
    const fresh = buildMessageItem(ctx, destination, messageInputOf(item), { body: item.body, size: item.size });
    if (await moveMessage(ctx, item, unchanged(item), fresh)) resubmitted++;
    else skipped = true; // changed meanwhile (locked, most likely): it may still be there
  }
  return { resubmitted, remaining: skipped };
}

async function* allMessages(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget): AsyncGenerator<MessageItem> {
  const pk = messagePk(entity.eid, target.subqueue, 0);
  for await (const page of queryPages<MessageItem>(ctx, { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, Limit: 100 })) {
    for (const item of page) yield item;
  }
}

async function* specificMessages(ctx: BrokerContext, entity: EntityItem, target: ReceiveTarget, seqs: string[]): AsyncGenerator<MessageItem> {
  for (const text of seqs) {
    const seq = BigInt(text);
    if (partitionOfSeq(seq) !== 0) continue;
    const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: messageKey(entity.eid, target.subqueue, 0, seq), ConsistentRead: true }));
    if (got.Item) yield got.Item as MessageItem;
  }
}
