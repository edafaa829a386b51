/**
 * A batch complete that removes every message of one lock reminder's batch deletes the
 * reminder too (R4, R9 with R6 for batches), so no receive pays the lapse's reads for a batch
 * with nothing left. Anything less than the whole batch (part of it, tokens of two batches, a
 * batch whose receive lost a take) leaves the reminder for the lapse, which brings back what is
 * still locked (R6). A Lambda dying before or after that delete, a delete refused for load, and
 * an index that still shows the deleted reminder lose and double nothing (D3, R10). Real
 * DynamoDB Local; crashes and faults through test/support/faults.ts and dynamo-faults.ts.
 */
import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { faultyStore, onOperations } from '../support/dynamo-faults.js';
import type { Msg } from '../support/queue-helpers.js';
import { countsOf, idsOf, isRangeQuery, LOCK, reminderQueues, SECOND, type Api, type Deps } from '../support/reminder-queues.js';

const { clock, open, queueWith, receiveWith, got, settle, reminders, ids, recorded } = reminderQueues();
let deps: Deps;
let api: Api;

beforeAll(async () => ({ deps, api } = await open('reminder-complete', indexLayout)));

const completeAll = (using: Api, queue: string, ms: Msg[]) => using('POST', `/queues/${queue}/messages/complete`, { lockTokens: ms.map((m) => m.lockToken) });
const allOk = (res: { status: number; body: { results?: { ok?: boolean }[] } }) => {
  expect(res.status).toBe(200);
  expect((res.body.results ?? []).every((r) => r.ok)).toBe(true);
};

const onReminder = (c: unknown) => JSON.stringify(inputOf(c)).includes('"remind/');
const isReminderDelete = both(is(DeleteCommand), onReminder);
const isReminderRead = both(is(GetCommand), onReminder);

describe('R4/R9/R6: a batch complete of a whole batch deletes its lock reminder', () => {
  it('R6: completing every message of a batch in one request deletes its reminder; the lapse reads neither it nor the messages', async () => {
    const q = await queueWith('whole', 10);
    const batch = await got(q, 10);
    expect(batch).toHaveLength(10);
    expect(await reminders(q)).toHaveLength(1);
    const { api: watched, calls } = recorded();
    allOk(await completeAll(watched, q, batch));
    expect(calls.filter(isReminderDelete)).toHaveLength(1);
    expect(await reminders(q)).toEqual([]);
    clock.advance(LOCK + 1);
    const later = recorded();
    expect(await receiveWith(later.api, q)).toEqual([]);
    expect(later.calls.filter(isReminderRead)).toEqual([]);
    expect(later.calls.filter(isRangeQuery)).toEqual([]);
    expect(await ids(q)).toEqual([]);
  });

  it('R6/R4: a batch renewed and abandoned in part, then completed whole in one request, leaves no reminder', async () => {
    const q = await queueWith('renewed', 3);
    const batch = await got(q, 3);
    clock.advance(10 * SECOND);
    expect((await settle(q, batch[0]!, 'renew-lock')).status).toBe(200);
    allOk(await completeAll(api, q, batch));
    expect(await reminders(q)).toEqual([]);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await ids(q)).toEqual([]);
  });

  it('R6: part of a batch completed, in one request or one by one, leaves the reminder, and the lapse brings the rest back', async () => {
    const q = await queueWith('part', 10);
    const batch = await got(q, 10);
    const { api: watched, calls } = recorded();
    allOk(await completeAll(watched, q, batch.slice(0, 8)));
    expect((await settle(q, batch[8]!, 'complete')).status).toBe(204);
    // Fewer tokens than the batch planned: no delete is even tried.
    expect(calls.filter(isReminderDelete)).toEqual([]);
    expect(await reminders(q)).toHaveLength(1);
    clock.advance(LOCK + 1);
    const back = await got(q);
    expect(idsOf(back)).toEqual(['m-9']);
    expect(countsOf(back)).toEqual([2]);
    allOk(await completeAll(api, q, back));
    expect(await ids(q)).toEqual([]);
  });

  it("R6: tokens of two batches completed together, as many as each batch's size, name neither reminder: both stay and bring back their rest", async () => {
    const q = await queueWith('mixed', 4);
    const a = await got(q, 2);
    const b = await got(q, 2);
    expect(idsOf([...a, ...b])).toEqual(['m-0', 'm-1', 'm-2', 'm-3']);
    expect(await reminders(q)).toHaveLength(2);
    allOk(await completeAll(api, q, [a[0]!, b[0]!]));
    expect(await reminders(q)).toHaveLength(2);
    clock.advance(LOCK + 1);
    const back = await got(q);
    expect(idsOf(back)).toEqual(['m-1', 'm-3']);
    expect(countsOf(back)).toEqual([2, 2]);
    allOk(await completeAll(api, q, back));
    expect(await ids(q)).toEqual([]);
  });

  it('R6/R10: a batch whose receive lost a planned take to another receiver is never whole: its reminder stays for the lapse', async () => {
    const q = await queueWith('lost-take', 3);
    // Before the batch's second take, another receiver takes m-1 on its own.
    let other: Msg[] = [];
    const racing = apiClient(
      faultyDeps(deps, {
        match: both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '').includes('lockToken = :token')),
        nth: 2,
        interleave: async () => void (other = await got(q, 1)),
      }),
    );
    const batch = await receiveWith(racing, q, 3);
    expect(idsOf(other)).toEqual(['m-1']);
    // A take lost makes a receiver jump a random distance ahead, so m-2 may be left for later.
    expect(idsOf(batch)[0]).toBe('m-0');
    expect(idsOf(batch).every((id) => id === 'm-0' || id === 'm-2')).toBe(true);
    allOk(await completeAll(api, q, batch));
    expect(await reminders(q)).toHaveLength(1);
    const left = await got(q, 1);
    expect(idsOf(left)).toEqual(batch.length === 2 ? [] : ['m-2']);
    if (left.length > 0) allOk(await completeAll(api, q, left));
    // The other receiver's lock is its own: it still settles, and the lapse finds nothing else.
    expect((await settle(q, other[0]!, 'complete')).status).toBe(204);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
    expect(await ids(q)).toEqual([]);
  });
});

describe('D3/R10: the reminder delete of a batch complete, crashed, refused or behind a lagging index', () => {
  it('D3: dying before the reminder delete: the messages are completed, and the lapse deletes the reminder, bringing nothing back', async () => {
    const q = await queueWith('crash-before', 3);
    const batch = await got(q, 3);
    const res = await completeAll(apiClient(faultyDeps(deps, { match: isReminderDelete, phase: 'before' })), q, batch);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await ids(q)).toEqual([]);
    expect(await reminders(q)).toHaveLength(1);
    // A retry of the complete finds every token used (R5), and leaves the reminder too.
    const retried = await completeAll(api, q, batch);
    expect(retried.status).toBe(200);
    expect((retried.body.results as { error?: { code: string } }[]).map((r) => r.error?.code)).toEqual(batch.map(() => 'MessageLockLost'));
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
  });

  it('D3: dying after the reminder delete: the messages and the reminder are gone; nothing comes back', async () => {
    const q = await queueWith('crash-after', 3);
    const batch = await got(q, 3);
    const res = await completeAll(apiClient(faultyDeps(deps, { match: isReminderDelete, phase: 'after' })), q, batch);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await ids(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
  });

  it("R10: a reminder delete refused for load through the SDK's retries: every message is still answered completed, and the lapse deletes the reminder", async () => {
    const q = await queueWith('throttled', 3);
    const batch = await got(q, 3);
    const store = faultyStore(
      deps.db,
      { throttle: { when: (call) => onOperations('DeleteItem')(call) && JSON.stringify(call.input).includes('remind/') } },
      { fastRetries: true },
    );
    allOk(await completeAll(apiClient({ ...deps, db: store.db }), q, batch));
    expect(store.log.throttledOut).toBe(1);
    expect(await ids(q)).toEqual([]);
    expect(await reminders(q)).toHaveLength(1);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
  });

  it('R6/R10: an index that still shows the deleted reminder at the lapse: the receive reads it, finds it gone, and takes nothing twice', async () => {
    const q = await queueWith('lagging', 3);
    const store = faultyStore(deps.db, { indexLag: 3 });
    const lagging = apiClient({ ...deps, db: store.db });
    const batch = await receiveWith(lagging, q, 3);
    // The index catches up with the reminder and shows it (a look at the whole partition, as
    // the sweeper's and an open read's are), then lags its delete.
    const eid = (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: { pk: 'queues', sk: q } }))).Item!.eid as string;
    const look = () =>
      store.db.send(
        new QueryCommand({
          TableName: deps.tableName,
          IndexName: 'ready',
          KeyConditionExpression: 'rpk = :pk',
          ExpressionAttributeValues: { ':pk': `msg/${eid}/a/0` },
        }),
      );
    const shown = async () => ((await look()).Items ?? []).filter((i) => String(i.pk).startsWith('remind/')).length;
    let seen = 0;
    for (let i = 0; i < 4 && seen === 0; i++) seen = await shown();
    expect(seen).toBe(1);
    allOk(await completeAll(lagging, q, batch));
    expect(await reminders(q)).toEqual([]);
    expect(
      (
        await api('POST', `/queues/${q}/messages/batch`, {
          messages: [
            { body: 1, messageId: 'n-0' },
            { body: 2, messageId: 'n-1' },
          ],
        })
      ).status,
    ).toBe(201);
    clock.advance(LOCK + 1);
    const before = store.log.staleReads;
    let reminderReads = 0;
    const watched = apiClient(faultyDeps({ ...deps, db: store.db }, { match: isReminderRead, times: Infinity, interleave: async () => void reminderReads++ }));
    const next = await receiveWith(watched, q, 10);
    expect(store.log.staleReads).toBeGreaterThan(before);
    // The ghost row is read by key (eventually consistent, as before) and found deleted: nothing done for it.
    expect(reminderReads).toBe(1);
    // The lagging index also shows the batch's completed messages where they were: takes of
    // those fail, as takes of messages another receiver holds do, so this receive may answer
    // fewer (R10). Whatever it took is new, and taken once.
    expect(idsOf(next).every((id) => id.startsWith('n-'))).toBe(true);
    expect(countsOf(next)).toEqual(next.map(() => 1));
    const rest = await got(q, 10);
    expect([...idsOf(next), ...idsOf(rest)].sort()).toEqual(['n-0', 'n-1']);
    expect(countsOf(rest)).toEqual(rest.map(() => 1));
    for (const taken of [next, rest]) if (taken.length > 0) allOk(await completeAll(api, q, taken));
    expect(await ids(q)).toEqual([]);
    // Reminders of batches that planned ghosts are not whole; their lapse finds nothing to bring back.
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
  });
});
