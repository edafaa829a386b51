/**
 * E6 for a positioned queue: the stream counts its messages in today's layout (scheduled ones,
 * deferred ones and dead letters, which stay or move there, and anything a migration has not
 * moved yet), and the active messages at positions are added here, read from each partition
 * when counts are asked for (store/positioned-counts.ts says what that costs and how far the
 * figure may be off). Locked messages count as active, as Service Bus counts them.
 */
import type { BrokerContext } from './context.js';
import type { EntityItem } from '../store/entities.js';
import { isPositioned } from './layouts.js';
import { positionedPk } from '../store/keys.js';
import { tallyPartition, type PartitionTally } from '../store/positioned-counts.js';

export type CountedEntity = Pick<EntityItem, 'eid' | 'layout' | 'partitions'>;

/** The active messages at positions of `entity`, all its partitions summed. */
export async function positionedTally(ctx: BrokerContext, entity: Pick<EntityItem, 'eid' | 'partitions'>): Promise<PartitionTally> {
  const partitions = Array.from({ length: Math.max(1, entity.partitions) }, (_, p) => positionedPk(entity.eid, 'active', p));
  const tallies = await Promise.all(partitions.map((pk) => tallyPartition(ctx, pk)));
  const sum: PartitionTally = { active: 0, sizeInBytes: 0, held: 0, unread: 0 };
  for (const t of tallies) for (const k of Object.keys(sum) as (keyof PartitionTally)[]) sum[k] += t[k];
  return sum;
}

/**
 * The stream's counts of `entities` (`counted`, by eid) with each positioned entity's
 * messages at positions added to its active count and size. An entity the stream has not
 * counted yet gets its positioned figures alone.
 */
export async function withPositionedCounts<S extends { active?: number; sizeInBytes?: number }>(
  ctx: BrokerContext,
  entities: readonly CountedEntity[],
  counted: ReadonlyMap<string, S>,
): Promise<Map<string, S>> {
  const stats = new Map(counted);
  await Promise.all(
    entities.filter(isPositioned).map(async (entity) => {
      const tally = await positionedTally(ctx, entity);
      const s = stats.get(entity.eid) ?? ({} as S);
      stats.set(entity.eid, { ...s, active: (s.active ?? 0) + tally.active, sizeInBytes: (s.sizeInBytes ?? 0) + tally.sizeInBytes });
    }),
  );
  return stats;
}
