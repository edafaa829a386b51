/**
 * E6 after a partition split: DynamoDB orders stream records per item, not per partition
 * key, so once a hot message partition's items are split across sibling shards, the records
 * of one key arrive from two shards processed in parallel, out of order between them. Each
 * record is counted once, whichever shard brings it first and however often it comes again.
 */
import { BatchGetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { countedMarkerKey } from '../../lib/store/keys.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { apiClient } from '../support/api.js';
import { faultyDeps, is, transactionConflict } from '../support/faults.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers } from '../support/queue-helpers.js';
import { insertRecord, messageItem, modifyRecord, streamEvent, userRemoveRecord } from '../support/stream.js';

type Deps = Awaited<ReturnType<typeof testDeps>>;

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Deps;
let api: ReturnType<typeof apiClient>;
let consume: ReturnType<typeof createStreamHandler>;

beforeAll(async () => {
  // Today's layout: the records are made from its msg/ items.
  deps = { ...(await testDeps(clock, 'stream-shards')), ...indexLayout };
  api = apiClient(deps);
  consume = createStreamHandler(deps);
});

const { createQueue, send, receive } = queueHelpers(() => api);
const at = () => ({ at: clock.now() });

async function runtime(q: string) {
  const res = await api('GET', `/queues/${q}`);
  expect(res.status).toBe(200);
  const r = res.body.runtime;
  return { active: r.activeMessageCount, deferred: r.deferredMessageCount, total: r.totalMessageCount };
}

/** Three messages of one partition key, sent, one of them received and deferred. */
async function threeMessages(q: string) {
  await createQueue(q);
  const sent = [await send(q, { body: 'a' }), await send(q, { body: 'b' }), await send(q, { body: 'c' })];
  const [a, b, c] = await Promise.all(sent.map(async (m) => (await messageItem(deps, q, 'active', m.sequenceNumber))!));
  const [locked] = await receive(`/queues/${q}`, { maxMessages: 1 });
  const la = (await messageItem(deps, q, 'active', locked.sequenceNumber))!;
  expect((await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/defer`, { lockToken: locked.lockToken })).status).toBe(204);
  const da = (await messageItem(deps, q, 'active', locked.sequenceNumber))!;
  return { a: a!, b: b!, c: c!, la, da };
}

describe('E6: records of one partition key from sibling shards', () => {
  it('E6: a shard whose records are older than ones already counted from its sibling is still counted, once', async () => {
    const q = 'e6-split';
    const { a, b, c, la, da } = await threeMessages(q);
    // In stream order: insert a, insert b, lock a, insert c, defer a. After the split, a's item
    // lives on one shard and b's and c's on its sibling.
    const records = [insertRecord(a, at()), insertRecord(b, at()), modifyRecord(a, la, at()), insertRecord(c, at()), modifyRecord(la, da, at())];
    const shardA = [records[0]!, records[2]!, records[4]!];
    const shardBC = [records[1]!, records[3]!];
    // The shard of a is processed first, up to the deferral (the latest record of the key).
    expect((await consume(streamEvent(...shardA))).batchItemFailures).toEqual([]);
    expect((await consume(streamEvent(...shardBC))).batchItemFailures).toEqual([]);
    expect(await runtime(q)).toEqual({ active: 2, deferred: 1, total: 3 });
    // Lambda delivers at least once: both shards again, and in other batchings.
    await consume(streamEvent(...shardBC));
    await consume(streamEvent(...shardA));
    for (const r of records) await consume(streamEvent(r));
    expect(await runtime(q)).toEqual({ active: 2, deferred: 1, total: 3 });
  });

  it('E6: a removal counted from one shard does not hide the older insert its sibling brings later', async () => {
    const q = 'e6-split-remove';
    await createQueue(q);
    const sentX = await send(q, { body: 'x' });
    const sentY = await send(q, { body: 'y' });
    const x = (await messageItem(deps, q, 'active', sentX.sequenceNumber))!;
    const y = (await messageItem(deps, q, 'active', sentY.sequenceNumber))!;
    const records = [insertRecord(x, at()), insertRecord(y, at()), userRemoveRecord(y, at())];
    await consume(streamEvent(records[1]!, records[2]!)); // y's shard: insert and removal
    await consume(streamEvent(records[0]!)); // x's shard, behind
    expect(await runtime(q)).toEqual({ active: 1, deferred: 0, total: 1 });
  });

  it('E6: a batch refused by DynamoDB (conflicts past the retries) is retried by Lambda and counted once', async () => {
    const q = 'e6-conflict';
    await createQueue(q);
    const sent = await send(q, { body: 'z' });
    const z = (await messageItem(deps, q, 'active', sent.sequenceNumber))!;
    const record = insertRecord(z, at());
    const refusing = createStreamHandler(
      faultyDeps(deps, {
        match: is(TransactWriteCommand),
        times: 100,
        interleave: async () => {
          throw transactionConflict(2);
        },
      }),
    );
    const first = await refusing(streamEvent(record));
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: record.dynamodb!.SequenceNumber }]);
    expect(await runtime(q)).toEqual({ active: 0, deferred: 0, total: 0 });
    expect((await consume(streamEvent(record))).batchItemFailures).toEqual([]);
    expect(await runtime(q)).toEqual({ active: 1, deferred: 0, total: 1 });
    // A record of a deleted entity counts nowhere and does not hold the batch up.
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    expect((await consume(streamEvent(insertRecord({ ...z, sk: '9' }, at()), record))).batchItemFailures).toEqual([]);
  });
});

/** The event ids each item's counted marker holds, sorted. */
async function markedEvents(items: { pk: string; sk: string }[]): Promise<string[][]> {
  const found = new Map<string, string[]>();
  for (let i = 0; i < items.length; i += 100) {
    const keys = items.slice(i, i + 100).map(countedMarkerKey);
    const out = await deps.db.send(new BatchGetCommand({ RequestItems: { [deps.tableName]: { Keys: keys, ConsistentRead: true } } }));
    for (const m of out.Responses?.[deps.tableName] ?? []) found.set(m.pk as string, [...(m.events as Set<string>)].sort());
  }
  return items.map((item) => found.get(countedMarkerKey(item).pk) ?? []);
}

describe('E6: a batch that needs more than one transaction', () => {
  it('E6: 150 messages sent and then deferred, all inserts first, leave one marker each holding both records; a refusal of the second transaction is retried from its earliest record and counted once', async () => {
    // prepare: 150 stored messages of one queue, as the stream carries their inserts, then their deferrals
    const q = 'e6-chunks';
    await createQueue(q);
    const sent = await send(q, { body: 'template' });
    const template = (await messageItem(deps, q, 'active', sent.sequenceNumber))!;
    const items = Array.from({ length: 150 }, (_, i) => ({ ...template, sk: `${template.sk.slice(0, -4)}${String(i).padStart(4, '0')}` }));
    const inserts = items.map((item) => insertRecord(item, at()));
    const deferrals = items.map((item) => modifyRecord(item, { ...item, state: 'Deferred' }, at()));
    const batch = [...inserts, ...deferrals];
    const transactions: number[] = [];
    let markerWrites = 0; // marker updates in transactions DynamoDB accepted
    const metered = {
      ...deps,
      db: {
        send: async (command: { input: { TransactItems?: { Update?: { Key?: { pk?: string } } }[] } }) => {
          const out = await deps.db.send(command as never);
          markerWrites += (command.input.TransactItems ?? []).filter((p) => p.Update?.Key?.pk?.startsWith('counted/')).length;
          return out;
        },
      } as unknown as Deps['db'],
    };
    const refusingSecond = createStreamHandler(
      faultyDeps(metered, {
        match: is(TransactWriteCommand),
        nth: 2,
        times: 100,
        interleave: async (command) => {
          transactions.push(((command as { input: { TransactItems: unknown[] } }).input.TransactItems ?? []).length);
          throw transactionConflict(2);
        },
      }),
    );
    const before = await runtime(q);
    // act: the first delivery counts the first transaction's items and fails on the second
    const first = await refusingSecond(streamEvent(...batch));
    const afterFirst = await runtime(q);
    // act: Lambda retries from the reported record on
    const failedAt = first.batchItemFailures[0]?.itemIdentifier;
    const from = batch.findIndex((r) => r.dynamodb?.SequenceNumber === failedAt);
    const retry = await createStreamHandler(metered)(streamEvent(...batch.slice(from)));
    const events = await markedEvents(items);
    // assess: every message's insert and deferral shared one transaction; nothing was counted twice
    expect(before).toEqual({ active: 0, deferred: 0, total: 0 }); // the template's own insert is never delivered
    expect(transactions.length).toBeGreaterThan(0);
    expect(first.batchItemFailures).toHaveLength(1);
    expect(afterFirst).toEqual({ active: 0, deferred: 99, total: 99 }); // 99 markers and the stats update fill the first
    expect(retry.batchItemFailures).toEqual([]);
    expect(from).toBe(99); // the insert of the refused transaction's first item
    expect(markerWrites).toBe(150);
    expect(events).toEqual(items.map((_, i) => [inserts[i]!.eventID, deferrals[i]!.eventID].sort()));
    expect(await runtime(q)).toEqual({ active: 0, deferred: 150, total: 150 });
  });
});
