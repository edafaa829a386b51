/**
 * Ready marks, the writer's side without I/O: the marks of one batch go in one write, only
 * for partitioned entities, and a process marks a partition again only after REMARK_MS.
 */
import { describe, expect, it } from 'vitest';
import type { BrokerContext } from '../../lib/broker/context.js';
import type { EntityItem } from '../../lib/broker/entities.js';
import { markReady, noteEntity, REMARK_MS } from '../../lib/broker/ready-marks.js';
import { SequenceGenerator } from '../../lib/store/sequence.js';

function fakeContext() {
  let now = Date.UTC(2032, 0, 1);
  const sent: { Key: unknown; UpdateExpression: string }[] = [];
  const ctx = {
    tableName: `unit-${Math.random()}`,
    clock: { now: () => now, sleep: async () => {} },
    db: { send: async (c: { input: { Key: unknown; UpdateExpression: string } }) => void sent.push(c.input) },
    sequences: new SequenceGenerator(),
  } as unknown as BrokerContext;
  return { ctx, sent, advance: (ms: number) => (now += ms) };
}

const entity = (eid: string, partitions: number, readyMarks = partitions > 1) => ({ eid, path: `queues/${eid}`, partitions, readyMarks }) as EntityItem;
const items = (eid: string, partitions: number[]) => partitions.map((partition) => ({ eid, subqueue: 'active' as const, partition }));

describe('ready marks: writing them', () => {
  it('marks the partitions of a batch, routed message by message, in one write', async () => {
    const { ctx, sent } = fakeContext();
    noteEntity(entity('e1', 16));

    await Promise.all([3, 7, 3, 12].map((p) => markReady(ctx, items('e1', [p]))));

    expect(sent).toHaveLength(1);
    expect(sent[0]!.Key).toEqual({ pk: 'ready/e1', sk: 'ready' });
    expect(sent[0]!.UpdateExpression).toBe('SET #p3 = :now, #p7 = :now, #p12 = :now');
  });

  it('marks nothing for unpartitioned entities, dead-letter subqueues, or entities made before marks', async () => {
    const { ctx, sent } = fakeContext();
    noteEntity(entity('e2', 1));
    noteEntity(entity('e3', 16, false));
    noteEntity(entity('e4', 16));

    await markReady(ctx, [...items('e2', [0]), ...items('e3', [5]), { eid: 'e4', subqueue: 'deadletter', partition: 0 }]);

    expect(sent).toEqual([]);
  });

  it('marks a partition again only after REMARK_MS', async () => {
    const { ctx, sent, advance } = fakeContext();
    noteEntity(entity('e5', 16));
    await markReady(ctx, items('e5', [1]));
    advance(REMARK_MS - 1);
    await markReady(ctx, items('e5', [1]));
    expect(sent).toHaveLength(1);

    advance(1);
    await markReady(ctx, items('e5', [1]));
    expect(sent).toHaveLength(2);
  });
});
