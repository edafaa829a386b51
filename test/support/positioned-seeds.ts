/**
 * Positioned queues for the counts and expiry tests, before send and receive are wired to the
 * layout: a queue made through the API with the deployment's switch on, and messages seeded
 * through the store as a send will put them (a message item as `buildMessageItem` makes it,
 * drawn and put at positions), locked with `claim`. Each file gets its own table and clock
 * (workers keep modules between files, so nothing here is module state).
 */
import { createBroker } from '../../lib/broker/index.js';
import { buildMessageItem } from '../../lib/broker/message-items.js';
import type { EntityItem } from '../../lib/store/entities.js';
import { positionedPk } from '../../lib/store/keys.js';
import { storedMessage } from '../../lib/store/message-layout.js';
import { drawPositions, putAtPositions, type PositionStore } from '../../lib/store/positions.js';
import type { MessageInput } from '../../lib/messages/schema.js';
import type { EntityLayout } from '../../lib/deps.js';
import { apiClient, type Json } from './api.js';
import { queueItem } from './stream.js';
import { ManualClock, testDeps, type TestTableOptions } from './table.js';

export type PositionedDeps = Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };

/** A quarter past noon and seven minutes: off the sweeper's positioned pass unless a test moves there. */
export const START = Date.UTC(2030, 0, 1, 12, 7, 0);

/** `layout`: the switch value the queues are made under (`tickets`: their heads are taken by ticket). */
export function positionedQueues(prefix: string, layout: EntityLayout = 'positions') {
  const clock = new ManualClock(START);
  const world = {} as { deps: PositionedDeps; broker: ReturnType<typeof createBroker>; api: ReturnType<typeof apiClient> };

  const open = async (table?: TestTableOptions) => {
    world.deps = { ...(await testDeps(clock, prefix, undefined, table)), newEntityLayout: layout };
    world.broker = createBroker(world.deps);
    world.api = apiClient(world.deps);
  };

  /** A positioned queue (PUT through the API), its entity item as stored. */
  const createQueue = async (name: string, properties: Record<string, unknown> = {}): Promise<EntityItem> => {
    const put = await world.api('PUT', `/queues/${name}`, properties);
    if (put.status !== 201) throw new Error(`PUT /queues/${name}: ${put.status} ${JSON.stringify(put.body)}`);
    const entity = await queueItem(world.deps, name);
    if (entity?.layout !== 'positions') throw new Error(`queue ${name} did not take the positioned layout`);
    return entity;
  };

  /** One send request of `messages` into `partition`, as the store makes it: its items, the positions drawn and the puts' outcome. */
  const seed = async (entity: EntityItem, messages: MessageInput[], partition = 0, ctx: PositionStore = world.deps) => {
    const pk = positionedPk(entity.eid, 'active', partition);
    const items = messages.map((m) => {
      const { pk: _pk, sk: _sk, ...rest } = storedMessage(buildMessageItem(world.broker.ctx, entity, m));
      return rest as Record<string, unknown>;
    });
    const draw = await drawPositions(ctx, pk, items.length);
    const outcome = await putAtPositions(ctx, pk, draw, items);
    return { pk, draw, outcome, sizes: items.map((i) => i.size as number) };
  };

  /** What GET /queues/{name} shows as its runtime (E6). */
  const runtime = async (name: string): Promise<Json> => {
    const got = await world.api('GET', `/queues/${name}`);
    if (got.status !== 200) throw new Error(`GET /queues/${name}: ${got.status}`);
    return got.body.runtime;
  };

  return { clock, world, open, createQueue, seed, runtime };
}

/** `n` small JSON bodies, named `prefix0` .. */
export const bodies = (prefix: string, n: number, extra: Partial<MessageInput> = {}): MessageInput[] =>
  Array.from({ length: n }, (_, i) => ({ body: { n: `${prefix}${i}` }, ...extra }));
