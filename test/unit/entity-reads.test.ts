/**
 * Entity reads shared by concurrent requests (lib/broker/entity-reads.ts): a request is
 * answered only by a read that started after it asked (E4: it sees every change made before
 * the request began), and the requests that ask while a read is in flight share the next one.
 * A fake `db` whose reads the test answers one by one, so these run without DynamoDB.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
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

/** Work of a request's own, beside its read, that the test ends. */
function work() {
  let end!: () => void;
  const done = new Promise<void>((r) => (end = r));
  return { done, end };
}

/**
 * An EntityReads on a clock the test moves, that has seen a read take 10 ms and a request's own
 * work take 100 ms, and has the work of another request still running: requests of the entity
 * come concurrently. A read is then put off by up to 90 ms after its first request asks.
 */
async function busyReads() {
  const { store, reads } = pendingDb();
  let t = 0;
  const clock = { at: (ms: number) => (t = ms) };
  const entityReads = new EntityReads(() => t);
  const first = work();
  const lone = entityReads.current(store, key, first.done); // alone: read at once
  await tick();
  expect(reads).toHaveLength(1);
  clock.at(10);
  reads[0]!.answer({ eid: 'e' });
  await lone;
  clock.at(100);
  first.end();
  await tick();
  clock.at(150);
  const background = entityReads.current(store, key, work().done); // its work goes on
  await tick();
  expect(reads).toHaveLength(2);
  clock.at(160);
  reads[1]!.answer({ eid: 'e' });
  await background;
  return { store, reads, clock, entityReads };
}

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

  describe('while requests come concurrently, the next read waits until one of them needs it', () => {
    afterEach(() => vi.useRealTimers());

    it("E4: requests with their own work share one read, started when the first one's work ends, after all of them asked", async () => {
      const { store, reads, clock, entityReads } = await busyReads();
      clock.at(200);
      const x = work();
      const y = work();
      const first = entityReads.current(store, key, x.done);
      clock.at(230);
      const second = entityReads.current(store, key, y.done);
      await tick();
      expect(reads).toHaveLength(2); // put off: neither needs it yet
      clock.at(240);
      x.end();
      await tick();
      expect(reads).toHaveLength(3); // started now, after both asked
      const lateWork = work();
      const late = entityReads.current(store, key, lateWork.done); // asked after it started: not answered by it
      reads[2]!.answer({ eid: 'shared' });
      expect([(await first)?.eid, (await second)?.eid]).toEqual(['shared', 'shared']);
      y.end(); // the work of a request answered already starts nothing
      await tick();
      expect(reads).toHaveLength(3);
      clock.at(260);
      lateWork.end();
      await tick();
      expect(reads).toHaveLength(4);
      reads[3]!.answer({ eid: 'later' });
      expect((await late)?.eid).toBe('later');
    });

    it('E4: a request with no work of its own starts the read at once, for every request waiting for it', async () => {
      const { store, reads, clock, entityReads } = await busyReads();
      clock.at(200);
      const withWork = entityReads.current(store, key, work().done);
      await tick();
      expect(reads).toHaveLength(2);
      const without = entityReads.current(store, key);
      await tick();
      expect(reads).toHaveLength(3);
      reads[2]!.answer({ eid: 'e2' });
      expect([(await withWork)?.eid, (await without)?.eid]).toEqual(['e2', 'e2']);
    });

    it("E4: a read put off starts by itself once it would end after the work is likely done (the recent durations), whatever the work's own end", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { store, reads, clock, entityReads } = await busyReads();
      clock.at(200);
      const pending = entityReads.current(store, key, work().done); // its work never ends
      await tick();
      expect(reads).toHaveLength(2);
      clock.at(250);
      vi.advanceTimersByTime(50);
      await tick();
      expect(reads).toHaveLength(2);
      clock.at(300); // 200 + (100 ms of work − 10 ms of read), and more
      vi.advanceTimersByTime(50);
      await tick();
      expect(reads).toHaveLength(3);
      reads[2]!.answer({ eid: 'e3' });
      expect((await pending)?.eid).toBe('e3');
    });

    it('a process whose requests come one at a time (a Lambda) reads at once, as before', async () => {
      const { store, reads } = pendingDb();
      let t = 0;
      const entityReads = new EntityReads(() => t);
      for (let i = 0; i < 3; i++) {
        const own = work();
        const got = entityReads.current(store, key, own.done);
        await tick();
        expect(reads).toHaveLength(i + 1);
        t += 10;
        reads[i]!.answer({ eid: 'e' });
        t += 90;
        own.end();
        expect((await got)?.eid).toBe('e');
      }
    });
  });
});
