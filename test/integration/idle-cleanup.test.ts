/**
 * What the reaper leaves behind when it deletes an idle queue (I1 with E4), how it
 * behaves when two runs overlap, and how fast it gets to eligible entities (I4). Each test
 * has its own table and ManualClock; nothing sleeps.
 */
import { describe, expect, it } from 'vitest';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { indexLayout } from '../support/default-layout.js';
import { GRACE, idleWorld } from '../support/idle-world.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { entityKey, messagePk, positionedPk, tombstoneKey } from '../../lib/store/keys.js';
import type { Subqueue } from '../../lib/entities/kinds.js';
import type { Deps } from '../../lib/deps.js';
import type { EntityItem } from '../../lib/broker/entities.js';
import { brokerContext } from '../../lib/broker/context.js';
import { buildMessageItem } from '../../lib/broker/send.js';
import { parseMessage } from '../../lib/messages/schema.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** `layout`: the world's queues' layout when the test pins one (indexLayout where it counts and writes msg/ items). */
async function world(layout: Pick<Deps, 'newEntityLayout'> = {}) {
  const { clock, t0, deps, api, reaper, at, ok, raw, countItems } = await idleWorld({ prefix: 'idle-gc', ...layout });
  /** The queue's entity item, read past the API (its eid keys its messages). */
  const entity = async (name: string) => (await raw(entityKey('queue', name))) as EntityItem | undefined;
  /** Stored messages of one incarnation, every subqueue and partition. */
  const messagesLeft = async (e: Pick<EntityItem, 'eid' | 'partitions'>) => {
    let n = 0;
    for (const s of ['active', 'deadletter', 'transfer'] as Subqueue[]) {
      const partitions = s === 'active' ? e.partitions : 1;
      for (let p = 0; p < partitions; p++) n += await countItems(messagePk(e.eid, s, p));
    }
    return n;
  };
  const fill = async (queue: string, n: number, extra: (i: number) => Record<string, unknown> = () => ({})) => {
    for (let i = 0; i < n; i += 100) {
      const messages = Array.from({ length: Math.min(100, n - i) }, (_, k) => ({ body: `old-${i + k}`, ...extra(i + k) }));
      await ok('POST', `/queues/${queue}/messages/batch`, { messages });
    }
  };
  /**
   * Many messages quickly: items built exactly as a send builds them (buildMessageItem),
   * written 25 at a time past the API. Only for bulk; the API path is covered by `fill`.
   */
  const bulkFill = async (queue: string, n: number) => {
    // A second sequence generator in the millisecond the API's last used could hand out the
    // same numbers, and these unconditional writes would replace those messages: a frozen
    // clock makes that likely, so bulk items get a millisecond of their own.
    clock.current = clock.now() + 1;
    const ctx = brokerContext(deps);
    const e = (await entity(queue))!;
    const items = Array.from({ length: n }, (_, i) => buildMessageItem(ctx, e, parseMessage({ body: `bulk-${i}` })));
    for (let i = 0; i < items.length; i += 25) {
      let request: Record<string, unknown> | undefined = { [deps.tableName]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) };
      while (request && Object.keys(request).length) {
        const out = await deps.db.send(new BatchWriteCommand({ RequestItems: request as never }));
        request = out.UnprocessedItems as Record<string, unknown> | undefined;
      }
    }
  };
  return { clock, t0, deps, api, reaper, at, ok, raw, entity, countItems, messagesLeft, fill, bulkFill };
}
type World = Awaited<ReturnType<typeof world>>;

/** Runs the reaper until the incarnation has no message left (at most `runs` times); answers the counts seen. */
async function reapUntilEmpty(w: World, e: Pick<EntityItem, 'eid' | 'partitions'>, runs = 5) {
  const seen: number[] = [];
  for (let run = 0; run < runs; run++) {
    await w.reaper();
    seen.push(await w.messagesLeft(e));
    if (seen[seen.length - 1] === 0) break;
  }
  return seen;
}

/** E4: nothing of the old incarnation comes back under the name. */
async function expectFreshQueue(w: World, name: string) {
  expect((await w.api('PUT', `/queues/${name}`, {})).status).toBe(201);
  const got = await w.ok('POST', `/queues/${name}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 100 });
  expect(got.body.messages).toEqual([]);
  expect((await w.ok('POST', `/queues/${name}/$deadletterqueue/messages/receive`, { maxMessages: 100 })).body.messages).toEqual([]);
  expect((await w.ok('GET', `/queues/${name}/messages?maxMessages=100`)).body.messages).toEqual([]);
  const runtime = (await w.ok('GET', `/queues/${name}`)).body.runtime;
  expect(runtime.totalMessageCount).toBe(0);
  // New messages are the only ones a receive ever returns.
  await w.ok('POST', `/queues/${name}/messages`, { body: 'new' });
  const again = await w.ok('POST', `/queues/${name}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 100 });
  expect(again.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['new']);
}

describe('I1/E4: the messages of a queue deleted for idleness', () => {
  it('I1/E4: an idle queue with 300 messages (some dead-lettered) is deleted, then the reaper removes every message; the name comes back empty', async () => {
    const w = await world(indexLayout);
    await w.ok('PUT', '/queues/big', { autoDeleteOnIdle: 'PT5M' });
    await w.fill('big', 20);
    await w.bulkFill('big', 280);
    const locked = await w.ok('POST', '/queues/big/messages/receive', { maxMessages: 5 });
    for (const m of locked.body.messages as { sequenceNumber: string; lockToken: string }[]) {
      await w.ok('POST', `/queues/big/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken });
    }
    const before = await w.entity('big');
    expect(before).toBeDefined();
    const incarnation = { eid: before!.eid, partitions: before!.partitions };
    expect(await w.countItems(messagePk(incarnation.eid, 'active', 0))).toBe(295);
    expect(await w.countItems(messagePk(incarnation.eid, 'deadletter', 0))).toBe(5);

    w.at(5 * MINUTE + GRACE + SECOND);
    const first = await w.reaper();
    expect(first.entitiesDeleted).toEqual(['queues/big']);
    expect((await w.api('GET', '/queues/big')).status).toBe(404);

    const left = [await w.messagesLeft(incarnation), ...(await reapUntilEmpty(w, incarnation))];
    expect(left[left.length - 1]).toBe(0);
    for (let i = 1; i < left.length; i++) expect(left[i]).toBeLessThanOrEqual(left[i - 1]!);
    // The tombstone goes once a pass finds every partition empty.
    await w.reaper();
    expect(await w.raw(tombstoneKey(incarnation.eid))).toBeUndefined();

    await expectFreshQueue(w, 'big');
  });

  it('I1/E4: an idle ticketed queue is deleted, then the reaper removes every message at its positions; the name comes back empty', async () => {
    const w = await world({ newEntityLayout: 'tickets' });
    await w.ok('PUT', '/queues/ticketed', { autoDeleteOnIdle: 'PT5M' });
    await w.fill('ticketed', 20);
    const e = (await w.entity('ticketed'))!;
    expect(e).toMatchObject({ layout: 'positions', ticketed: true });
    const atPositions = () => w.countItems(positionedPk(e.eid, 'active', 0));
    expect(await atPositions()).toBeGreaterThanOrEqual(20);

    w.at(5 * MINUTE + GRACE + SECOND);
    expect((await w.reaper()).entitiesDeleted).toEqual(['queues/ticketed']);
    for (let run = 0; run < 5 && (await atPositions()) > 0; run++) await w.reaper();

    expect(await atPositions()).toBe(0);
    await expectFreshQueue(w, 'ticketed');
  });

  it('I1/E4: a partitioned idle queue is emptied in every partition', async () => {
    const w = await world(indexLayout);
    await w.ok('PUT', '/queues/parts', { autoDeleteOnIdle: 'PT5M', enablePartitioning: true });
    await w.fill('parts', 32, (i) => ({ partitionKey: `k${i}` }));
    const e = (await w.entity('parts'))!;
    expect(e.partitions).toBeGreaterThan(1);
    expect(await w.messagesLeft(e)).toBe(32);

    w.at(5 * MINUTE + GRACE + SECOND);
    expect((await w.reaper()).entitiesDeleted).toEqual(['queues/parts']);
    const left = await reapUntilEmpty(w, e);

    expect(left[left.length - 1]).toBe(0);
    await expectFreshQueue(w, 'parts');
  });

  it('I1/E4: a receive on a queue re-created before the reaper has cleaned up never returns an old message', async () => {
    const w = await world();
    await w.ok('PUT', '/queues/q', { autoDeleteOnIdle: 'PT5M' });
    await w.fill('q', 20);

    w.at(5 * MINUTE + GRACE + SECOND);
    // The idle deletion runs, but the clean-up has not got to the messages yet when the name is reused.
    const e = (await w.entity('q'))!;
    const report = await w.reaper();
    expect(report.entitiesDeleted).toEqual(['queues/q']);
    await w.ok('PUT', '/queues/q', {});
    const got = await w.ok('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 100 });
    expect(got.body.messages).toEqual([]);
    expect((await w.ok('GET', '/queues/q/messages?maxMessages=100')).body.messages).toEqual([]);

    await reapUntilEmpty(w, e);
    expect(await w.messagesLeft(e)).toBe(0);
  });
});

describe('I1: two reaper runs at once', () => {
  it('I1/E4: two reaper runs started together over a due queue with messages: no error, the queue is gone, every message removed', async () => {
    const w = await world();
    await w.ok('PUT', '/queues/twice', { autoDeleteOnIdle: 'PT5M' });
    await w.fill('twice', 10);
    await w.bulkFill('twice', 140);
    const e = (await w.entity('twice'))!;

    w.at(5 * MINUTE + GRACE + SECOND);
    const [a, b] = await Promise.all([w.reaper(), createReaperHandler(w.deps)()]);

    const deleted = [...(a.entitiesDeleted as string[]), ...(b.entitiesDeleted as string[])];
    expect(deleted).toEqual(['queues/twice']); // exactly one run deleted it
    expect((await w.api('GET', '/queues/twice')).status).toBe(404);
    const left = await reapUntilEmpty(w, e);
    expect(left[left.length - 1]).toBe(0);
    await w.reaper();
    expect(await w.raw(tombstoneKey(e.eid))).toBeUndefined();
  });

  it('I1/E4: two reaper runs at once over an idle topic with subscriptions: no error, everything gone', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/tt', { autoDeleteOnIdle: 'PT5M' });
    for (const s of ['a', 'b', 'c']) await w.ok('PUT', `/topics/tt/subscriptions/${s}`, {});
    await w.ok('POST', '/topics/tt/messages/batch', { messages: Array.from({ length: 10 }, (_, i) => ({ body: i })) });
    const subs = await Promise.all(['a', 'b', 'c'].map(async (s) => (await w.raw(entityKey('subscription', s, 'tt'))) as EntityItem));

    w.at(5 * MINUTE + GRACE + SECOND);
    await Promise.all([w.reaper(), createReaperHandler(w.deps)()]);

    expect((await w.api('GET', '/topics/tt')).status).toBe(404);
    for (const s of subs) {
      expect(await w.raw(entityKey('subscription', s.name, 'tt'))).toBeUndefined();
      const left = await reapUntilEmpty(w, s);
      expect(left[left.length - 1]).toBe(0);
    }
  });
});

describe('I4: the reaper reaches every eligible entity in time', () => {
  it('I4: 51 queues that become eligible together are all deleted within two reaper runs (one run a minute)', async () => {
    const w = await world();
    const names = Array.from({ length: 51 }, (_, i) => `many-${i}`);
    await Promise.all(names.map((n) => w.ok('PUT', `/queues/${n}`, { autoDeleteOnIdle: 'PT5M' })));

    w.at(5 * MINUTE + GRACE + SECOND);
    const deleted = [...((await w.reaper()).entitiesDeleted as string[])];
    w.at(6 * MINUTE + SECOND);
    deleted.push(...((await w.reaper()).entitiesDeleted as string[]));

    expect(deleted.length).toBe(51);
    const listed = await w.ok('GET', '/queues');
    expect(listed.body.items).toEqual([]);
  });

  it('I4/I3: forwarding queues past their idle deadline do not hold up the deletion of an idle queue', async () => {
    // Entities the reaper skips (I3 forwarding, pending scheduled messages) keep their old
    // idle deadline on the `due` index; 25 of them fill the reaper's page of 25 every run.
    const w = await world();
    await w.ok('PUT', '/queues/target', {});
    await Promise.all(Array.from({ length: 25 }, (_, k) => w.ok('PUT', `/queues/fwd-${k}`, { autoDeleteOnIdle: 'PT5M', forwardTo: 'queues/target' })));
    w.at(SECOND);
    await w.ok('PUT', '/queues/idle', { autoDeleteOnIdle: 'PT5M' });

    // Eligible at t0 + 5m + 1s; I4: gone at most 2 minutes later.
    for (const offset of [5 * MINUTE + GRACE + 2 * SECOND, 6 * MINUTE + 2 * SECOND, 7 * MINUTE + SECOND]) {
      w.at(offset);
      await w.reaper();
    }

    expect((await w.api('GET', '/queues/idle')).status).toBe(404);
    expect((await w.api('GET', '/queues/fwd-0')).status).toBe(200); // I3
  });
});
