/**
 * Entity reads shared by concurrent requests (lib/broker/entity-reads.ts): a request is
 * answered only by a read that started after it asked (E4: it sees every change made before
 * the request began), and the requests that ask while a read is in flight share the next one.
 * A fake `db` whose reads the test answers one by one, so these run without DynamoDB.
 */
import { describe, expect, it } from 'vitest';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { EntityReads } from '../../lib/broker/entity-reads.js';
import type { EntityItem } from '../../lib/store/entities.js';

const key = { pk: 'queues', sk: 'q' };

/** A db whose GetItems wait until the test answers them, in order. */
function pendingDb() {
  const reads: { answer: (item: Partial<EntityItem> | undefined) => void; fail: (e: Error) => void }[] = [];
  const db = {
    send: () =>
      new Promise((resolve, reject) => {
        reads.push({ answer: (item) => resolve({ Item: item }), fail: reject });
      }),
  } as unknown as DynamoDBDocumentClient;
  return { store: { db, tableName: 'fake' }, reads };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('E4: entity reads shared by concurrent requests', () => {
  it('E4: a lone request reads once; requests that ask during a read wait for the next read, which starts when it ends, and share it', async () => {
    const { store, reads } = pendingDb();
    const entityReads = new EntityReads();
    const first = entityReads.current(store, key);
    await tick();
    expect(reads).toHaveLength(1);
    const second = entityReads.current(store, key);
    const third = entityReads.current(store, key);
    await tick();
    expect(reads).toHaveLength(1); // not before the first read has ended
    reads[0]!.answer({ eid: 'old' });
    expect((await first)?.eid).toBe('old');
    await tick();
    expect(reads).toHaveLength(2);
    reads[1]!.answer({ eid: 'new' });
    expect([(await second)?.eid, (await third)?.eid]).toEqual(['new', 'new']);
  });

  it('E4: every caller gets its own copy, and the last read is remembered with when it started', async () => {
    const { store, reads } = pendingDb();
    const entityReads = new EntityReads();
    const a = entityReads.current(store, key);
    await tick();
    const b = entityReads.current(store, key);
    reads[0]!.answer({ eid: 'e', accessedAt: 1 });
    await a;
    await tick();
    reads[1]!.answer({ eid: 'e', accessedAt: 1 });
    const [x, y] = [await a, await b];
    x!.accessedAt = 2;
    expect(y!.accessedAt).toBe(1);
    expect(entityReads.lastSeen(key)?.entity?.accessedAt).toBe(1);
    expect(entityReads.lastSeen({ pk: 'queues', sk: 'other' })).toBeUndefined();
  });

  it('E4: a failed read fails only the requests it answers; the next request reads again', async () => {
    const { store, reads } = pendingDb();
    const entityReads = new EntityReads();
    const failed = entityReads.current(store, key);
    await tick();
    reads[0]!.fail(new Error('throttled'));
    await expect(failed).rejects.toThrow('throttled');
    const again = entityReads.current(store, key);
    await tick();
    expect(reads).toHaveLength(2);
    reads[1]!.answer(undefined);
    expect(await again).toBeUndefined();
    expect(entityReads.lastSeen(key)).toEqual({ entity: undefined, at: expect.any(Number) });
  });
});
