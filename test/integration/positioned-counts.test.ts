/**
 * E6 for a positioned queue (lib/broker/positioned-counts.ts, lib/store/positioned-counts.ts):
 * the entity view's runtime counts its messages at positions, locked ones as active, read only
 * when asked; what stays in today's layout (scheduled, deferred, dead letters) is still counted
 * by the stream. Each approximation the figure allows is pinned: settled messages, lapsed
 * leases, holes, tombstones and void requests, in the head's sample and past it.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { jobBudget } from '../../lib/broker/budget.js';
import { sweepPositionedExpiry } from '../../lib/broker/positioned-expiry.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildMessageItem } from '../../lib/broker/message-items.js';
import { positionKey } from '../../lib/store/keys.js';
import { claim, completeAtPosition } from '../../lib/store/leases.js';
import { putNewMessages } from '../../lib/store/messages.js';
import { HEAD_SAMPLE, tallyPartition } from '../../lib/store/positioned-counts.js';
import { drawPositions, HOLE_AFTER_MS, putTombstone } from '../../lib/store/positions.js';
import { TableStreamReader } from '../support/stream.js';
import { bodies, positionedQueues } from '../support/positioned-seeds.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const { clock, world, open, createQueue, seed, runtime } = positionedQueues('pos-counts');

beforeAll(async () => {
  await open({ stream: true });
});

const sum = (ns: number[]) => ns.reduce((a, b) => a + b, 0);

describe('E6: active messages at positions', () => {
  it('E6: unclaimed messages count as active, with their size, exactly while the head sample holds them all', async () => {
    const entity = await createQueue('plain');
    const a = await seed(entity, bodies('a', 3));
    const b = await seed(entity, bodies('b', 1));
    const r = await runtime('plain');
    expect(r).toMatchObject({ activeMessageCount: 4, totalMessageCount: 4, scheduledMessageCount: 0, deadLetterMessageCount: 0 });
    expect(r.sizeInBytes).toBe(sum([...a.sizes, ...b.sizes]));
  });

  it('E6: a locked message counts as active; a complete counts it off at once, under a lease still held', async () => {
    const entity = await createQueue('locked');
    const { pk, sizes } = await seed(entity, bodies('m', 3));
    const held = await claim(world.deps, pk, 2, { lockMs: LOCK });
    expect(held.messages).toHaveLength(2);
    expect((await runtime('locked')).activeMessageCount).toBe(3);
    expect(await completeAtPosition(world.deps, pk, held.messages[0]!.token)).toBe('completed');
    const r = await runtime('locked');
    expect(r.activeMessageCount).toBe(2);
    expect(r.sizeInBytes).toBe(sizes[1]! + sizes[2]!);
  });

  it('E6: a lapsed lease not yet taken back still counts its messages left, once; taken back, they count once still', async () => {
    const entity = await createQueue('lapsed');
    const { pk } = await seed(entity, bodies('m', 4));
    const held = await claim(world.deps, pk, 4, { lockMs: LOCK });
    await completeAtPosition(world.deps, pk, held.messages[1]!.token);
    clock.advance(LOCK + SECOND);
    expect((await runtime('lapsed')).activeMessageCount).toBe(3);
    // A claim of one takes the lapsed lease back: one taken again, two waiting in `back`.
    const again = await claim(world.deps, pk, 1, { lockMs: LOCK });
    expect(again.messages).toHaveLength(1);
    expect((await runtime('lapsed')).activeMessageCount).toBe(3);
    for (const m of again.messages) await completeAtPosition(world.deps, pk, m.token);
    const rest = await claim(world.deps, pk, 10, { lockMs: LOCK });
    for (const m of rest.messages) await completeAtPosition(world.deps, pk, m.token);
    expect((await runtime('lapsed')).activeMessageCount).toBe(0);
    expect((await runtime('lapsed')).sizeInBytes).toBe(0);
  });

  it('E6: in the head sample, a hole, a tombstone and the messages of a void request count nothing', async () => {
    const entity = await createQueue('holes');
    const { pk } = await seed(entity, bodies('a', 1));
    // A sender that died after its draw: two positions nobody puts.
    await drawPositions(world.deps, pk, 2);
    await seed(entity, bodies('b', 1));
    expect((await runtime('holes')).activeMessageCount).toBe(2);
    // A request of three whose last put came after a receiver gave up on it: void, never delivered.
    const draw = await drawPositions(world.deps, pk, 3);
    expect(await putTombstone(world.deps, pk, draw.first + 2)).toBe(true);
    const voided = bodies('v', 2).map((m) => {
      const { pk: _p, sk: _s, ...rest } = buildMessageItem(world.broker.ctx, entity, m);
      return { ...rest, rf: draw.first, rn: 3, at: draw.at };
    });
    for (const [i, item] of voided.entries())
      await world.deps.db.send(new PutCommand({ TableName: world.deps.tableName, Item: { ...item, ...positionKey(pk, draw.first + i) } }));
    expect((await runtime('holes')).activeMessageCount).toBe(2);
  });

  it('E6: past the sample every drawn position counts, a hole too, until a claim passes it; the size past it is their mean', async () => {
    const entity = await createQueue('backlog');
    const { pk, sizes } = await seed(entity, bodies('a', HEAD_SAMPLE + 5));
    await drawPositions(world.deps, pk, 1); // a hole past the sample
    const last = await seed(entity, bodies('z', 1));
    const before = await runtime('backlog');
    // The hole counts as a message: one too many, until a claim tombstones and passes it.
    expect(before.activeMessageCount).toBe(HEAD_SAMPLE + 5 + 1 + 1);
    const mean = sum(sizes.slice(0, HEAD_SAMPLE)) / HEAD_SAMPLE;
    expect(before.sizeInBytes).toBe(Math.round(sum(sizes.slice(0, HEAD_SAMPLE)) + 7 * mean));
    clock.advance(HOLE_AFTER_MS + SECOND);
    const all = await claim(world.deps, pk, 100, { lockMs: LOCK });
    expect(all.messages).toHaveLength(HEAD_SAMPLE + 6);
    const after = await runtime('backlog');
    expect(after.activeMessageCount).toBe(HEAD_SAMPLE + 6);
    expect(after.sizeInBytes).toBe(sum([...sizes, ...last.sizes]));
    for (const m of all.messages) await completeAtPosition(world.deps, pk, m.token);
    expect((await runtime('backlog')).activeMessageCount).toBe(0);
  });

  it("E6: a void request's message left below the cursor (its claim died before the clean-up) counts nothing, and the sweeper's pass deletes it", async () => {
    const entity = await createQueue('deadweight');
    const { pk } = await seed(entity, bodies('a', 1));
    const draw = await drawPositions(world.deps, pk, 2);
    const [landed] = bodies('v', 1).map((m) => {
      const { pk: _p, sk: _s, ...rest } = buildMessageItem(world.broker.ctx, entity, m);
      return { ...rest, rf: draw.first, rn: 2, at: draw.at };
    });
    await world.deps.db.send(new PutCommand({ TableName: world.deps.tableName, Item: { ...landed, ...positionKey(pk, draw.first) } }));
    clock.advance(HOLE_AFTER_MS + SECOND);
    const c = await claim(world.deps, pk, 10, { lockMs: LOCK });
    expect(c.messages).toHaveLength(1);
    // As a claim that died after its cursor write leaves it: the passed message not deleted.
    await world.deps.db.send(new PutCommand({ TableName: world.deps.tableName, Item: { ...landed, ...positionKey(pk, draw.first) } }));
    expect((await runtime('deadweight')).activeMessageCount).toBe(1);
    // The sweeper's pass deletes it, so it never counts once its tombstone is gone.
    expect((await sweepPositionedExpiry(world.broker.ctx, jobBudget())).voidRemoved).toBe(1);
    const gone = await world.deps.db.send(new GetCommand({ TableName: world.deps.tableName, Key: positionKey(pk, draw.first), ConsistentRead: true }));
    expect(gone.Item).toBeUndefined();
    expect((await runtime('deadweight')).activeMessageCount).toBe(1);
  });

  it('E6: a partitioned positioned queue counts every partition', async () => {
    const entity = await createQueue('spread', { enablePartitioning: true });
    expect(entity.partitions).toBe(16);
    await seed(entity, bodies('a', 2), 0);
    await seed(entity, bodies('b', 3), 5);
    await seed(entity, bodies('c', 1), 15);
    expect((await runtime('spread')).activeMessageCount).toBe(6);
  });

  it('E6: reads only what is held and the sample, whatever the backlog', async () => {
    const entity = await createQueue('cost');
    const { pk } = await seed(entity, bodies('a', 40));
    const held = await claim(world.deps, pk, 3, { lockMs: LOCK });
    const read = await readsOf(() => tallyPartition(world.deps, pk));
    await seed(entity, bodies('b', 60));
    const readMore = await readsOf(() => tallyPartition(world.deps, pk));
    expect(read.items).toBe(held.messages.length + HEAD_SAMPLE + 2); // the counter, the cursor, the held ones, the sample
    expect(readMore).toEqual(read);
    expect(read.calls).toBe(4);
  });
});

describe("E6: a positioned queue's messages in today's layout are the stream's", () => {
  it('E6: scheduled, deferred and dead-lettered messages count through the stream, beside the active ones at positions', async () => {
    const reader = new TableStreamReader(world.deps);
    await reader.read(); // the stream so far
    const entity = await createQueue('mixed');
    await seed(entity, bodies('a', 2));
    const scheduled = await world.api('POST', '/queues/mixed/messages', {
      body: { s: 1 },
      scheduledEnqueueTime: new Date(clock.now() + 3_600_000).toISOString(),
    });
    expect(scheduled.status).toBe(201);
    const deferred = { ...buildMessageItem(world.broker.ctx, entity, { body: { d: 1 } }), state: 'Deferred' as const };
    const dead = buildMessageItem(
      world.broker.ctx,
      entity,
      { body: { x: 1 } },
      { subqueue: 'deadletter', deadLetter: { reason: 'r', source: 'mixed', enqueuedSequenceNumber: '1' } },
    );
    await putNewMessages(world.broker.ctx, [deferred, dead]);
    // Every record so far, the positioned puts among them, which the stream passes over.
    const records = await reader.read();
    expect(records.some((r) => r.dynamodb?.Keys?.pk?.S?.startsWith('pos/'))).toBe(true);
    expect((await world.broker.processStream(records)).batchItemFailures).toEqual([]);
    expect(await runtime('mixed')).toMatchObject({
      activeMessageCount: 2,
      scheduledMessageCount: 1,
      deferredMessageCount: 1,
      deadLetterMessageCount: 1,
      totalMessageCount: 5,
    });
  });
});

/** The read calls `work` makes and the items they read (billed by their size). */
async function readsOf(work: () => Promise<unknown>): Promise<{ calls: number; items: number }> {
  const seen = { calls: 0, items: 0 };
  const name = `reads-${Math.random()}`;
  world.deps.client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const o = out.output as { ScannedCount?: number; Item?: unknown; Count?: number };
      seen.calls++;
      seen.items += o.ScannedCount ?? (o.Item ? 1 : 0);
      return out;
    },
    { step: 'initialize', name },
  );
  try {
    await work();
  } finally {
    world.deps.client.middlewareStack.remove(name);
  }
  return seen;
}
