/**
 * The stream consumer: runtime counts (E6) and DynamoDB TTL removals (T7's backstop).
 *
 * Counts: each message insert, change or removal moves one message between the buckets
 * of E6. Counting is idempotent per stream record: a record that moves a count leaves its
 * eventID in its message item's marker (kept past the stream's 24 hours), written in the
 * same transaction as the count it adds, so a replayed record, in whatever batch it comes
 * again, adds nothing. DynamoDB orders stream records per item only: after a partition split
 * the records of one message partition come from sibling shards processed in parallel, which
 * a per-partition watermark would take for replays. Per record, nothing is lost or doubled,
 * and counts never drift permanently.
 *
 * Cost: a record that moves no count (a lock, an abandon, a renewal) writes nothing. The
 * records of one message item in one batch (an insert, a removal, a deferral, an activation)
 * cost one marker update. When they cancel out (a message sent and completed within one
 * batch: the stream waits up to 5 s and takes up to 1,000 records) nothing is added, so the
 * marker is written alone, 1 write unit for the whole life. Otherwise it is part of the count
 * transaction, 2 write units, and each batch adds to each entity's counts once in that
 * transaction: 2 write units per entity per batch; a life whose insert and removal come in
 * different batches costs 4. Markers expire through TTL, which costs nothing.
 *
 * TTL removals: DynamoDB deleted an expired message. If its entity dead-letters on
 * expiration (T6), the message is put into the dead-letter subqueue under a sequence
 * number derived from the stream record, so a replay finds it there and adds no second copy.
 * Locked, deferred or dead-lettered messages carry no TTL; should one be removed anyway,
 * it is put back.
 */
import { itemOfImage } from '../store/stream-image.js';
import type { AttributeValue as StreamAttributeValue, DynamoDBRecord } from 'aws-lambda';
import type { MessageItem } from '../messages/item.js';
import { handledMarkerKey, keyId, parseMessagePk, type Key } from '../store/keys.js';
import { addCounts, countedEvents, markCountedAlone, type Bucket, type Counts, type ItemRecords } from '../store/counts.js';
import { handledMarkerPart } from '../store/markers.js';
import { reasons } from '../fate/delivery.js';
import type { BrokerContext } from './context.js';
import { cancellationCodes, isStoreBusy, onlyConditionsFailed, partFailedCondition } from '../store/outcomes.js';
import { entityResolver } from './lookup.js';
import { deadLetterTargets, expiryDescription } from './moves.js';
import { announceSessionMessages } from './message-items.js';
import { putNewMessages } from '../store/messages.js';
import { backoff } from '../backoff.js';

/** On AWS: a REMOVE by the DynamoDB service principal. DynamoDB Local names the event itself. */
export function isTtlRemoval(record: DynamoDBRecord): boolean {
  if (record.eventName === 'REMOVE') return record.userIdentity?.type === 'Service' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com';
  return (record.eventName as string) === 'UNKNOWN_TO_SDK_VERSION' && !record.dynamodb?.NewImage && !!record.dynamodb?.OldImage;
}

const image = (i: Record<string, StreamAttributeValue> | undefined) => itemOfImage<MessageItem>(i);

export function bucketOf(m: Pick<MessageItem, 'subqueue' | 'state'>): Bucket {
  if (m.subqueue === 'deadletter') return 'deadLetter';
  if (m.subqueue === 'transfer') return 'transfer';
  if (m.state === 'Deferred') return 'deferred';
  if (m.state === 'Scheduled') return 'scheduled';
  return 'active';
}

const padStreamSeq = (s: string) => s.padStart(40, '0');

/** One record that moves counts: its entity, its place in its shard, its message item, its event id and what it adds. */
interface Counted {
  eid: string;
  seq: string;
  item: Key;
  event: string;
  delta: Counts;
}

const zero = (): Counts => ({ active: 0, deadLetter: 0, scheduled: 0, transfer: 0, deferred: 0, sizeInBytes: 0 });
const moves = (d: Counts) => Object.values(d).some((n) => n !== 0);

export function deltaOf(oldImage: MessageItem | undefined, newImage: MessageItem | undefined) {
  const d = zero();
  if (oldImage) {
    d[bucketOf(oldImage)] -= 1;
    d.sizeInBytes -= oldImage.size ?? 0;
  }
  if (newImage) {
    d[bucketOf(newImage)] += 1;
    d.sizeInBytes += newImage.size ?? 0;
  }
  return d;
}

export async function processStream(ctx: BrokerContext, records: DynamoDBRecord[]): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> {
  const failures: string[] = [];
  const resolve = entityResolver(ctx);
  const counted: Counted[] = [];
  for (const record of records) {
    const keys = record.dynamodb?.Keys;
    const pk = keys?.pk?.S;
    const seq = record.dynamodb?.SequenceNumber;
    if (!pk || !seq || !parseMessagePk(pk)) continue;
    const oldImage = image(record.dynamodb?.OldImage);
    const newImage = image(record.dynamodb?.NewImage);
    const eid = (newImage ?? oldImage)?.eid;
    if (!eid) continue;
    if (isTtlRemoval(record) && oldImage) {
      try {
        await handleTtlRemoval(ctx, record, oldImage, resolve);
      } catch {
        // Lambda retries from here; what comes after it is counted then.
        failures.push(seq);
        break;
      }
    }
    const delta = deltaOf(oldImage, newImage);
    if (!moves(delta)) continue;
    const sk = keys?.sk?.S ?? '';
    counted.push({ eid, seq, item: { pk, sk }, event: record.eventID ?? `${pk}/${sk}@${seq}`, delta });
  }
  const unapplied = await applyCounts(ctx, counted);
  if (unapplied !== undefined) failures.push(unapplied);
  // Lambda retries from the earliest failure; every record counted before is marked, so its replay adds nothing.
  failures.sort((a, b) => (padStreamSeq(a) < padStreamSeq(b) ? -1 : 1));
  return { batchItemFailures: failures.length ? [{ itemIdentifier: failures[0]! }] : [] };
}

/** How long a counted record is remembered: longer than the stream keeps records (24 h). */
const COUNTED_MEMORY_S = 25 * 3600;

/** A count transaction refused for load or a conflict is tried again after 12-25 ms, doubling up to 0.5-1 s. */
const COUNT_RETRY_BACKOFF = { baseMs: 25, capMs: 1000 };

/** DynamoDB's limit of items in one transaction. */
const MAX_TRANSACTION_ITEMS = 100;

/** How many markers of records that cancel out are written at once. */
const ALONE_CONCURRENCY = 16;

/**
 * Adds the records' deltas to their entities' counts. A message item whose records cancel out
 * (its insert and its removal in this batch) only needs its marker: one write of its own. The
 * rest go in transactions of at most 100 items (a marker per message item, an update per
 * entity), a message item's records in one transaction so that they share one marker. Returns
 * the lowest sequence number among the records not applied when DynamoDB kept refusing, for
 * Lambda to retry from (the records after it that were applied are recognised then by their
 * markers).
 */
async function applyCounts(ctx: BrokerContext, counted: Counted[]): Promise<string | undefined> {
  const ttl = Math.floor(ctx.clock.now() / 1000) + COUNTED_MEMORY_S;
  const groups = groupedByItem(unique(counted));
  const together = groups.filter((g) => !cancelsOut(g));
  const unapplied: Counted[] = [];
  const alone = groups.filter(cancelsOut);
  for (let i = 0; i < alone.length; i += ALONE_CONCURRENCY) {
    await Promise.all(
      alone.slice(i, i + ALONE_CONCURRENCY).map(async (group) => {
        try {
          if (!(await markCountedAlone(ctx, markerRecords(group), ttl))) together.push(group);
        } catch {
          unapplied.push(...group);
        }
      }),
    );
  }
  const chunks: Counted[][] = [];
  let chunk: Counted[] = [];
  let items = 0;
  const eids = new Set<string>();
  for (const group of together) {
    const eid = group[0]!.eid; // a message item belongs to one entity
    if (items + 1 + eids.size + (eids.has(eid) ? 0 : 1) > MAX_TRANSACTION_ITEMS) {
      chunks.push(chunk);
      chunk = [];
      items = 0;
      eids.clear();
    }
    chunk.push(...group);
    items++;
    eids.add(eid);
  }
  if (chunk.length) chunks.push(chunk);
  for (let i = 0; i < chunks.length; i++) {
    if (!(await applyChunk(ctx, chunks[i]!, ttl))) {
      unapplied.push(...chunks.slice(i).flat());
      break;
    }
  }
  return unapplied.map((c) => c.seq).sort((a, b) => (padStreamSeq(a) < padStreamSeq(b) ? -1 : 1))[0];
}

/** What the records add together. */
function sumOf(records: readonly Counted[]): Counts {
  const sum = zero();
  for (const c of records) for (const k of Object.keys(sum) as (keyof Counts)[]) sum[k] += c.delta[k];
  return sum;
}

/** Whether an item's records together move no count (each bucket and the size sum to zero). */
const cancelsOut = (group: readonly Counted[]) => !moves(sumOf(group));

/** Records grouped by `keyOf`, in the order their groups first appear. */
function groupedBy(records: readonly Counted[], keyOf: (c: Counted) => string): Counted[][] {
  const groups = new Map<string, Counted[]>();
  for (const c of records) {
    const id = keyOf(c);
    const group = groups.get(id) ?? [];
    group.push(c);
    groups.set(id, group);
  }
  return [...groups.values()];
}

/** Records grouped by message item, in the order their items first appear. */
const groupedByItem = (records: readonly Counted[]) => groupedBy(records, (c) => keyId(c.item));

/** One message item's records as its marker takes them. */
const markerRecords = (group: readonly Counted[]): ItemRecords => ({ item: group[0]!.item, events: group.map((c) => c.event) });

/** A record's identity: its item and its event. */
const recordId = (item: Key, event: string) => `${keyId(item)}\n${event}`;

/**
 * One transaction: the records' events in their items' markers (only where none is there yet)
 * and each entity's counts (only while its stats item exists). A marker that already holds
 * one of the events was written by an earlier delivery: it is read, the events it holds drop
 * out, and the rest is tried again; an entity without stats was deleted (its counts went with
 * it) and drops out too. False when conflicts or throttling outlast the retries.
 */
async function applyChunk(ctx: BrokerContext, chunk: Counted[], ttl: number): Promise<boolean> {
  let pending = chunk;
  for (let attempt = 0; attempt < 8 && pending.length > 0; attempt++) {
    const sums = new Map(groupedBy(pending, (c) => c.eid).map((records) => [records[0]!.eid, sumOf(records)]));
    const entities = [...sums.keys()];
    const items = groupedByItem(pending).map(markerRecords);
    try {
      await addCounts(ctx, items, ttl, sums);
      return true;
    } catch (e) {
      const codes = cancellationCodes(e);
      if (onlyConditionsFailed(codes)) {
        const gone = new Set(entities.filter((_, i) => partFailedCondition(codes, items.length + i)));
        const counted = await countedBefore(
          ctx,
          items.filter((_, i) => partFailedCondition(codes, i)),
        ).catch(unlessBusy);
        if (counted) {
          pending = pending.filter((c) => !gone.has(c.eid) && !counted.has(recordId(c.item, c.event)));
          continue;
        }
      } else unlessBusy(e);
      // A conflict with another consumer on a stats item or a marker, or throttling (of the
      // transaction or of a marker's read): again shortly, then Lambda retries from here.
      await backoff(ctx.clock, attempt, COUNT_RETRY_BACKOFF);
    }
  }
  return pending.length === 0;
}

/** The events the markers of `items` already hold, as `item id + event id`. */
async function countedBefore(ctx: BrokerContext, items: readonly ItemRecords[]): Promise<Set<string>> {
  const counted = new Set<string>();
  for (const { item } of items) for (const event of await countedEvents(ctx, item)) counted.add(recordId(item, event));
  return counted;
}

/** Throttling or a conflict is waited out (undefined); any other error is thrown on. */
function unlessBusy(e: unknown): undefined {
  if (isStoreBusy(e)) return undefined;
  throw e;
}

/** A record delivered twice in one batch adds its delta once. */
function unique(records: readonly Counted[]): Counted[] {
  const seen = new Set<string>();
  return records.filter((c) => {
    const id = recordId(c.item, c.event);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** How long a TTL removal is remembered as handled: longer than the stream keeps records (24 h). */
const HANDLED_MEMORY_S = 2 * 24 * 3600;

async function handleTtlRemoval(ctx: BrokerContext, record: DynamoDBRecord, item: MessageItem, resolve: ReturnType<typeof entityResolver>) {
  const entity = await resolve(item.entity, item.eid);
  if (!entity) return; // orphan of a deleted entity (E4): nothing to keep
  const removedAt = (record.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000;
  const protectedItem = item.subqueue !== 'active' || item.state === 'Deferred' || (item.lockedUntil !== undefined && item.lockedUntil > removedAt);
  let targets: MessageItem[];
  if (protectedItem) {
    // T5, T8, T9, D6: never removed by TTL. Should it happen, the message comes back as it was.
    const { ttl: _ttl, ...restored } = item;
    targets = [restored as MessageItem];
  } else if (entity.deadLetteringOnMessageExpiration) {
    targets = await deadLetterTargets(ctx, entity, item, { reason: reasons.expired, description: expiryDescription });
  } else {
    return; // T6: deleted
  }
  // The marker and the copies in one transaction: a replayed record finds the marker and
  // adds nothing, even after the copy was received and completed (D3).
  const marker = {
    ...handledMarkerKey(item, record.eventID ?? `${item.sk}@${removedAt}`),
    ttl: Math.floor(ctx.clock.now() / 1000) + HANDLED_MEMORY_S,
  };
  await announceSessionMessages(ctx, targets);
  try {
    // A message put back keeps its own number: only copies are renumbered after a collision.
    await putNewMessages(ctx, targets, {
      before: () => [handledMarkerPart(ctx, marker)],
      ...(protectedItem ? { retries: 0 } : {}),
    });
  } catch (e) {
    if (!partFailedCondition(cancellationCodes(e), 0)) throw e; // else handled before
  }
}
