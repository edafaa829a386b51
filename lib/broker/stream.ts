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
 *
 * Failures: load (throttling, conflicts, timeouts, the network, a move answering busy) is waited out briefly, then
 * the record is reported failed and Lambda retries it for as long as the event source mapping
 * allows (no retry limit; infra/constructs/workers.ts). A record that fails for any other
 * reason PARK_AFTER_FAILURES times is parked in the table (store/stream-failures.ts) with an
 * entry in the sweeper's agenda, and the batch goes on past it: one bad record never holds its
 * shard, and what it says (a TTL removal's old image is the whole message) is applied later by
 * the sweeper, through the same markers, so exactly once.
 */
import { messageOfImage } from '../store/stream-image.js';
import type { DynamoDBRecord } from 'aws-lambda';
import type { MessageItem } from '../messages/item.js';
import { handledMarkerKey, keyId, parseMessagePk, type Key } from '../store/keys.js';
import { addCounts, countedEvents, markCountedAlone, type Bucket, type Counts, type ItemRecords } from '../store/counts.js';
import { handledMarkerPart } from '../store/markers.js';
import { reasons } from '../fate/delivery.js';
import type { BrokerContext } from './context.js';
import { cancellationCodes, isStoreBusy, isTransient, onlyConditionsFailed, partFailedCondition } from '../store/outcomes.js';
import { noteStreamFailure, parkRecord } from '../store/stream-failures.js';
import { entityResolver } from './lookup.js';
import { deadLetterTargets, expiryDescription, markTargets, placeTaken, withDrawnPositions } from './moves.js';
import { announceSessionMessages } from './message-items.js';
import { liveSessionLock } from './session-lock.js';
import { putNewMessages } from '../store/messages.js';
import { backoff } from '../backoff.js';
import { BrokerError } from '../errors.js';

/** On AWS: a REMOVE by the DynamoDB service principal. DynamoDB Local names the event itself. */
export function isTtlRemoval(record: DynamoDBRecord): boolean {
  if (record.eventName === 'REMOVE') return record.userIdentity?.type === 'Service' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com';
  return (record.eventName as string) === 'UNKNOWN_TO_SDK_VERSION' && !record.dynamodb?.NewImage && !!record.dynamodb?.OldImage;
}

export function bucketOf(m: Pick<MessageItem, 'subqueue' | 'state'>): Bucket {
  if (m.subqueue === 'deadletter') return 'deadLetter';
  if (m.subqueue === 'transfer') return 'transfer';
  if (m.state === 'Deferred') return 'deferred';
  if (m.state === 'Scheduled') return 'scheduled';
  return 'active';
}

const padStreamSeq = (s: string) => s.padStart(40, '0');

/** What one stream record of a message item says, as the consumer applies it and a parked record keeps it. */
export interface StreamChange {
  /** The message item's key. */
  item: Key;
  eid: string;
  /** The record's place in its shard (what Lambda's partial batch response names). */
  seq: string;
  /** The record's event id: what the consumer's markers remember it by. */
  event: string;
  /** DynamoDB's TTL removed the item (T7). */
  ttlRemoval: boolean;
  /** When the change was made (epoch ms, the record's ApproximateCreationDateTime). */
  at: number;
  oldImage?: MessageItem;
  newImage?: MessageItem;
}

/** One record that moves counts: its entity, its place in its shard, its message item, its event id and what it adds. */
interface Counted {
  eid: string;
  seq: string;
  item: Key;
  event: string;
  delta: Counts;
  change: StreamChange;
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

/** A record of a message item as a change; undefined for any other record (nothing to do). */
export function changeOf(record: DynamoDBRecord): StreamChange | undefined {
  const keys = record.dynamodb?.Keys;
  const pk = keys?.pk?.S;
  const seq = record.dynamodb?.SequenceNumber;
  if (!pk || !seq || !parseMessagePk(pk)) return undefined;
  const oldImage = messageOfImage(record.dynamodb?.OldImage);
  const newImage = messageOfImage(record.dynamodb?.NewImage);
  const eid = (newImage ?? oldImage)?.eid;
  if (!eid) return undefined;
  const sk = keys?.sk?.S ?? '';
  return {
    item: { pk, sk },
    eid,
    seq,
    event: record.eventID ?? `${pk}/${sk}@${seq}`,
    ttlRemoval: isTtlRemoval(record),
    at: (record.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000,
    ...(oldImage ? { oldImage } : {}),
    ...(newImage ? { newImage } : {}),
  };
}

export interface StreamBatchResult {
  batchItemFailures: { itemIdentifier: string }[];
  /** Records parked in this batch (`parkedAfterFailure`), for the handler's log. */
  parked: number;
}

export async function processStream(ctx: BrokerContext, records: DynamoDBRecord[]): Promise<StreamBatchResult> {
  const changes = records.map(changeOf).filter((c): c is StreamChange => c !== undefined);
  const { failedFrom, parked } = await applyChanges(ctx, changes, true);
  return { batchItemFailures: failedFrom !== undefined ? [{ itemIdentifier: failedFrom }] : [], parked };
}

/**
 * Applies a parked record again (the sweeper): its TTL removal and its counts, recognised by
 * the same markers as a replay of the stream, so a record the stream applied meanwhile adds
 * nothing. Undefined when it is applied; otherwise why not (it stays parked).
 */
export async function applyParkedChange(ctx: BrokerContext, change: StreamChange): Promise<string | undefined> {
  const { failedFrom, error } = await applyChanges(ctx, [change], false);
  return failedFrom === undefined ? undefined : errorText(error ?? 'refused for load or conflicts');
}

/**
 * The batch's TTL removals, then its counts. With `parking`, a record that keeps failing for
 * a reason other than load is parked (and then counts as handled); without (the sweeper
 * applying a parked record), it only fails. Returns the record Lambda must retry from, if
 * any, and the last error met.
 */
async function applyChanges(ctx: BrokerContext, changes: StreamChange[], parking: boolean): Promise<{ failedFrom?: string; parked: number; error?: unknown }> {
  const failures: string[] = [];
  const resolve = entityResolver(ctx);
  const counted: Counted[] = [];
  let parked = 0;
  let error: unknown;
  const park = async (failing: StreamChange[], e: unknown) => parking && (await parkedAfterFailure(ctx, failing, e));
  for (const change of changes) {
    if (change.ttlRemoval && change.oldImage) {
      try {
        await handleTtlRemoval(ctx, change, change.oldImage, resolve);
      } catch (e) {
        error = e;
        // Parked, its counts go with it: the sweeper applies the whole record.
        if (await park([change], e)) {
          parked++;
          continue;
        }
        // Lambda retries from here; what comes after it is counted then.
        failures.push(change.seq);
        break;
      }
    }
    const delta = deltaOf(change.oldImage, change.newImage);
    if (!moves(delta)) continue;
    counted.push({ eid: change.eid, seq: change.seq, item: change.item, event: change.event, delta, change });
  }
  const { unapplied, failing } = await applyCounts(ctx, counted);
  if (unapplied !== undefined) failures.push(unapplied);
  for (const group of failing) {
    error = group.error;
    const parkedNow = await park(
      group.records.map((c) => c.change),
      group.error,
    );
    if (parkedNow) parked += group.records.length;
    else failures.push(lowestSeq(group.records.map((c) => c.seq))!);
  }
  // Lambda retries from the earliest failure; every record counted before is marked, so its replay adds nothing.
  return { failedFrom: lowestSeq(failures), parked, error };
}

const lowestSeq = (seqs: readonly string[]) => [...seqs].sort((a, b) => (padStreamSeq(a) < padStreamSeq(b) ? -1 : 1))[0];

/** An error as the operator reads it (a parked record's `lastError`): its name and message. */
export const errorText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/**
 * After how many failures (other than for load) a record is parked. One bad moment (a Lambda
 * that died half-way, a bug fixed by the next deploy) is Lambda's to retry; a record that
 * fails again and again would otherwise hold its shard until the stream drops it.
 */
export const PARK_AFTER_FAILURES = 3;

/** The attributes of a message image that its counts read (bucketOf, deltaOf). */
const countedAttributes = ['eid', 'subqueue', 'state', 'size'] as const;
const countedPart = (m: MessageItem | undefined) =>
  m && (Object.fromEntries(countedAttributes.filter((k) => m[k] !== undefined).map((k) => [k, m[k]])) as unknown as MessageItem);

/**
 * What a parked record keeps: a TTL removal's old image whole (it is the message, T6), and of
 * any other record only what its counts need, so two large images never outgrow an item.
 */
function parkable(change: StreamChange): Record<string, unknown> {
  const { oldImage, newImage, ...rest } = change;
  if (change.ttlRemoval) return { ...rest, ...(oldImage ? { oldImage } : {}) };
  const before = countedPart(oldImage);
  const after = countedPart(newImage);
  return { ...rest, ...(before ? { oldImage: before } : {}), ...(after ? { newImage: after } : {}) };
}

/**
 * Counts a failure of each of `changes` (records that fail together: a TTL removal, or one
 * message item's records in one count transaction) and parks them once each has failed
 * PARK_AFTER_FAILURES times. True when all of them are parked (or were before: a replay parks
 * nothing more), so the batch may go on past them. Load (throttling, conflicts, timeouts, the
 * network) is never counted: Lambda retries those records for as long as it lasts.
 */
async function parkedAfterFailure(ctx: BrokerContext, changes: readonly StreamChange[], e: unknown): Promise<boolean> {
  if (isTransient(e) || isBusy(e)) return false;
  const now = ctx.clock.now();
  const lastError = errorText(e);
  try {
    const failures: number[] = [];
    for (const change of changes) failures.push(await noteStreamFailure(ctx, change.item, change.event, lastError, Math.floor(now / 1000) + HANDLED_MEMORY_S));
    if (failures.some((n) => n < PARK_AFTER_FAILURES)) return false;
    for (const change of changes) {
      // Due at once: the sweeper's next run tries it.
      await parkRecord(
        ctx,
        { item: change.item, eventId: change.event, record: parkable(change), parkedAt: now, attempts: PARK_AFTER_FAILURES, lastError },
        now,
      );
    }
    return true;
  } catch {
    return false; // not noted or not parked: Lambda retries the record, and it fails or parks then
  }
}

/**
 * A move that answered busy (moves.ts `busy`: conflicts that outlasted its waits, or receivers'
 * tombstones on the positions it drew, again and again) met load, not a bad record.
 */
const isBusy = (e: unknown) => e instanceof BrokerError && e.code === 'Throttled';

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
 * entity), a message item's records in one transaction so that they share one marker.
 *
 * Returns `unapplied`, the lowest sequence number among the records not applied when DynamoDB
 * kept refusing for load, for Lambda to retry from (the records after it that were applied are
 * recognised then by their markers); and `failing`, the message items whose records failed for
 * another reason: a transaction that fails so is tried again item by item, to find them.
 */
async function applyCounts(ctx: BrokerContext, counted: Counted[]): Promise<{ unapplied?: string; failing: { records: Counted[]; error: unknown }[] }> {
  const ttl = Math.floor(ctx.clock.now() / 1000) + COUNTED_MEMORY_S;
  const groups = groupedByItem(unique(counted));
  const together = groups.filter((g) => !cancelsOut(g));
  const unapplied: Counted[] = [];
  const failing: { records: Counted[]; error: unknown }[] = [];
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
    let applied: boolean;
    try {
      applied = await applyChunk(ctx, chunks[i]!, ttl);
    } catch {
      for (const group of groupedByItem(chunks[i]!)) {
        try {
          if (!(await applyChunk(ctx, group, ttl))) unapplied.push(...group);
        } catch (e) {
          failing.push({ records: group, error: e });
        }
      }
      continue;
    }
    if (!applied) {
      unapplied.push(...chunks.slice(i).flat());
      break;
    }
  }
  return { unapplied: lowestSeq(unapplied.map((c) => c.seq)), failing };
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

async function handleTtlRemoval(ctx: BrokerContext, change: StreamChange, item: MessageItem, resolve: ReturnType<typeof entityResolver>) {
  const entity = await resolve(item.entity, item.eid);
  if (!entity) return; // orphan of a deleted entity (E4): nothing to keep
  const removedAt = change.at;
  // T5: a message its session's record holds under a live lock carries no lock of its own
  // (removed anyway: a clock off by more than the record's margin), so the session is asked.
  const protectedItem =
    item.subqueue !== 'active' ||
    item.state === 'Deferred' ||
    (item.lockedUntil !== undefined && item.lockedUntil > removedAt) ||
    (item.sessionId !== undefined && (await liveSessionLock(ctx, item)) !== undefined);
  let targets: MessageItem[];
  const positioned = new Set<string>();
  if (protectedItem) {
    // T5, T8, T9, D6: never removed by TTL. Should it happen, the message comes back as it was.
    const { ttl: _ttl, ...restored } = item;
    targets = [restored as MessageItem];
  } else if (entity.deadLetteringOnMessageExpiration) {
    targets = await deadLetterTargets(ctx, entity, item, { reason: reasons.expired, description: expiryDescription }, positioned);
  } else {
    return; // T6: deleted
  }
  // The marker and the copies in one transaction: a replayed record finds the marker and
  // adds nothing, even after the copy was received and completed (D3).
  const marker = {
    ...handledMarkerKey(item, change.event),
    ttl: Math.floor(ctx.clock.now() / 1000) + HANDLED_MEMORY_S,
  };
  await announceSessionMessages(ctx, targets);
  // As every mover does (moves.ts): a copy forwarded into a partitioned entity, or a message
  // put back whose partition's mark a receive cleared while it was gone, is found by receives.
  await markTargets(ctx, targets);
  // A copy forwarded into a positioned queue (F3) lands on a position drawn for it, in the same transaction (moves.ts).
  await withDrawnPositions(ctx, targets, positioned, async (today, parts) => {
    try {
      // A message put back keeps its own number: only copies are renumbered after a collision.
      await putNewMessages(ctx, today, {
        before: () => [handledMarkerPart(ctx, marker)],
        after: parts,
        ...(protectedItem ? { retries: 0 } : {}),
      });
      return { moved: true, value: undefined };
    } catch (e) {
      const codes = cancellationCodes(e);
      if (partFailedCondition(codes, 0)) return { moved: false, value: undefined }; // handled before
      if (placeTaken(codes, 1 + today.length, parts)) return 'placeTaken';
      throw e;
    }
  });
}
