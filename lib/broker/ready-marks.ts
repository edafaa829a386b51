/**
 * Ready marks: an empty receive on a partitioned entity reads one small item instead of
 * querying all 16 partitions of the ready index (8 read units). The item holds, for each
 * partition that may hold a message in the ready index, the time a writer marked it.
 *
 * What keeps a message from ever hiding behind a missing mark:
 * - Whatever puts a message into an active partition (send, fan-out copy, forward, resubmit,
 *   dead-letter forwarding) marks the partition first and writes the message after. A crash in
 *   between leaves a mark over nothing, which a receive clears later; never a message unmarked.
 * - A receive clears a mark only when the partition's ready index holds nothing at all (locked
 *   and scheduled messages become receivable by time alone, so they keep it), the mark is older
 *   than CLEAR_AFTER_MS, and it is still the mark the receive read (a conditional write: a mark
 *   written since makes the clear fail). A writer that marked earlier started its put within
 *   REMARK_MS of its mark, a put ends within a request's lifetime (29 s), and the index shows
 *   it well within the 5 minutes CLEAR_AFTER_MS leaves.
 * - Only the entity's own incarnation is marked (the key is the eid), and the entity item says
 *   whether it keeps marks (`readyMarks`), so entities created before marks existed are read
 *   partition by partition, as before.
 *
 * Cost: one write (a small item, 1 unit) when a process first puts into a partition or has not
 * marked it for REMARK_MS; a batch marks all its partitions in one write; at a steady flow,
 * one write per partition per 10 s per Lambda instance. A receive reads the item (0.5 unit) and
 * queries only marked partitions; a clear is one write, once each time a partition runs dry.
 * The item is created with the entity, in the same transaction, and removed by the reaper with
 * the rest of a deleted incarnation. A mark is conditional on the item, so a late writer into an
 * incarnation the reaper has cleared fails instead of leaving a stray item behind.
 */
import { entityNotFound } from '../errors.js';
import type { MessageItem } from '../messages/item.js';
import type { Subqueue } from '../entities/kinds.js';
import { clearReadyMark, getReadyMarks, setReadyMarks } from '../store/markers.js';
import { type BrokerContext } from './context.js';

/**
 * What marks read of an entity item: its incarnation, path and partitioning. Narrow, so that
 * the entity store, which creates the marks item with the entity, sits above this module.
 */
export interface MarkedEntity {
  eid: string;
  path: string;
  partitions: number;
  readyMarks?: boolean;
}

/** A writer marks a partition again after this long, even if its process marked it already. */
export const REMARK_MS = 10_000;
/** A mark at least this old may be cleared by a receive that finds its partition empty. */
export const CLEAR_AFTER_MS = 5 * 60_000;

/** Does this entity's receive read marks (partitioned, created since marks exist)? */
export const keepsReadyMarks = (entity: Pick<MarkedEntity, 'partitions' | 'readyMarks'>, subqueue: Subqueue = 'active') =>
  subqueue === 'active' && entity.partitions > 1 && entity.readyMarks === true;

/** The item an entity that keeps marks is created with. */
export { readyMarksItem } from '../store/markers.js';

/**
 * Which incarnations keep marks, learned from the entity as each message item is built
 * (an eid's partitioning never changes), so the writers below need only the items.
 */
const keepers = new Map<string, { keeps: boolean; path: string }>();
const KEEPERS_MAX = 100_000;
export function noteEntity(entity: MarkedEntity): void {
  // Least recently noted out first, one at a time: never the entity of an item being written
  // (it was noted just now), as clearing the whole map could, which would leave it unmarked.
  keepers.delete(entity.eid);
  keepers.set(entity.eid, { keeps: keepsReadyMarks(entity), path: entity.path });
  if (keepers.size > KEEPERS_MAX) keepers.delete(keepers.keys().next().value!);
}

/** When this process last marked `table|eid|partition` (clock time). */
const marked = new Map<string, number>();

/**
 * Marks every active partition `items` go into; resolves once the marks are durable, so the
 * caller writes the items after. Partitions this process marked within REMARK_MS are skipped,
 * and the marks of the messages of one batch (each routed on its own) go in one write.
 */
export async function markReady(ctx: BrokerContext, items: Pick<MessageItem, 'eid' | 'subqueue' | 'partition'>[]): Promise<void> {
  const now = ctx.clock.now();
  const waits: Promise<void>[] = [];
  for (const item of items) {
    if (item.subqueue !== 'active' || !keepers.get(item.eid)?.keeps) continue;
    const at = marked.get(`${ctx.tableName}|${item.eid}|${item.partition}`);
    // A clock that went back (never on AWS) counts as fresh: the mark then only looks newer.
    if (at !== undefined && now - at < REMARK_MS) continue;
    waits.push(requestMark(ctx, item.eid, item.partition));
  }
  await Promise.all(waits);
}

/** Marks requested in this turn of the event loop, per table and incarnation: one write for all. */
const gathering = new Map<string, { partitions: Set<number>; written: Promise<void> }>();

function requestMark(ctx: BrokerContext, eid: string, partition: number): Promise<void> {
  const key = `${ctx.tableName}|${eid}`;
  let batch = gathering.get(key);
  if (!batch) {
    const partitions = new Set<number>();
    const written = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      gathering.delete(key);
      return writeMarks(ctx, eid, [...partitions]);
    });
    batch = { partitions, written };
    gathering.set(key, batch);
  }
  batch.partitions.add(partition);
  return batch.written;
}

async function writeMarks(ctx: BrokerContext, eid: string, partitions: number[]): Promise<void> {
  const now = ctx.clock.now();
  const written = await setReadyMarks(ctx, eid, partitions, now);
  // E4: the incarnation is gone and its leftovers with it; the message is not written.
  if (!written) throw entityNotFound(keepers.get(eid)?.path ?? eid);
  if (marked.size > 100_000) marked.clear();
  for (const p of partitions) marked.set(`${ctx.tableName}|${eid}|${p}`, now);
}

/** A partition a receive reads, and the mark to clear if it turns out to hold nothing at all. */
export interface PartitionToRead {
  partition: number;
  clearable?: number;
}

/**
 * The partitions a receive reads, in `order`: all of them for an entity without marks; else
 * the marked ones, each with its mark when that is old enough to clear. One 0.5-unit read.
 */
export async function partitionsToRead(ctx: BrokerContext, entity: MarkedEntity, subqueue: Subqueue, order: number[]): Promise<PartitionToRead[]> {
  if (!keepsReadyMarks(entity, subqueue)) return order.map((partition) => ({ partition }));
  const markOf = await getReadyMarks(ctx, entity.eid);
  const oldEnough = ctx.clock.now() - CLEAR_AFTER_MS;
  const out: PartitionToRead[] = [];
  for (const partition of order) {
    const mark = markOf(partition);
    if (mark === undefined) continue;
    out.push(mark < oldEnough ? { partition, clearable: mark } : { partition });
  }
  return out;
}

/** Removes a partition's mark if it is still the one read; a newer mark stays (it may cover a message). */
export async function clearMark(ctx: BrokerContext, entity: Pick<MarkedEntity, 'eid'>, partition: number, mark: number): Promise<void> {
  await clearReadyMark(ctx, entity.eid, partition, mark);
}
