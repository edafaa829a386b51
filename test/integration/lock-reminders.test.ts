/**
 * Lock reminders: a peek-lock receive of two or more messages of a plain queue takes them out
 * of the `ready` index under one reminder item that sits there at the batch's lock end (R6
 * for batches). A lapsed batch comes back in order with its delivery counts (R2, R6); renew,
 * abandon and complete act on reminder-mode messages as on any lock (R4); a Lambda dying at
 * each step of taking or of bringing a batch back, and a throttle part-way, lose and double
 * nothing (D3, R10); D2 at the lapse, the lapsed-lock hint (H1) and the reaper (E4) see the
 * batch. Real DynamoDB Local; crashes and throttles through test/support/faults.ts.
 */
import { GetCommand, PutCommand, QueryCommand, UpdateCommand, DeleteCommand, BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { createNotifyHandler } from '../../functions/notify/handler.js';
import { createBroker } from '../../lib/broker/index.js';
import { signToken } from '../../lib/auth/index.js';
import { hintLapsedLocks } from '../../lib/notifications/hints.js';
import type { ConnectionPoster } from '../../lib/notifications/watchers.js';
import type { ServerFrame } from '../../lib/notifications/protocol.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { readyMarksKey, readySortKey, reminderPk } from '../../lib/store/keys.js';
import { CLEAR_AFTER_MS } from '../../lib/broker/ready-marks.js';
import { apiClient, TEST_ROOT_KEY } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { messageItems } from '../support/stream.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import type { Msg } from '../support/queue-helpers.js';
import { countsOf, idsOf, LOCK, reminderQueues, SECOND, type Api, type Deps } from '../support/reminder-queues.js';

const { clock, open, queueWith, got, settle, eidOf, reminders, ids } = reminderQueues();
let deps: Deps;
let api: Api;

beforeAll(async () => ({ deps, api } = await open('reminders', indexLayout)));

const receive = async (using: ReturnType<typeof apiClient>, queue: string, maxMessages: number) => {
  const res = await using('POST', `/queues/${queue}/messages/receive`, { maxMessages });
  return res;
};

describe('R6/R2: a batch lock taken out of the ready index comes back when it lapses', () => {
  it('R6/R2: a lapsed batch is received again in sequence order with its delivery counts; a single take keeps its own lock', async () => {
    const q = await queueWith('lapse', 4);
    const first = await got(q, 3);
    expect(idsOf(first)).toEqual(['m-0', 'm-1', 'm-2']);
    // Out of the index under one reminder at the batch's one lock end.
    const items = await messageItems(deps, q, 'active');
    const locked = items.filter((m) => m.lockToken);
    expect(locked.map((m) => m.rsk)).toEqual([undefined, undefined, undefined]);
    expect(new Set(locked.map((m) => m.lockedUntil)).size).toBe(1);
    const [reminder] = await reminders(q);
    expect(reminder).toMatchObject({ until: locked[0]!.lockedUntil, rpk: locked[0]!.pk, rsk: readySortKey(locked[0]!.lockedUntil!, 0n) });
    // A pass taking one: today's lock, its entry at its lock's end.
    const single = await got(q, 1);
    const singleItem = (await messageItems(deps, q, 'active')).find((m) => m.messageId === 'm-3')!;
    expect(idsOf(single)).toEqual(['m-3']);
    expect(singleItem.rsk).toBe(readySortKey(singleItem.lockedUntil!, BigInt(singleItem.sk)));
    expect(await reminders(q)).toHaveLength(1);
    // Within the lock nothing is receivable; past it, all four, in order, delivered twice.
    expect(await got(q)).toEqual([]);
    clock.advance(LOCK + 1);
    const again = await got(q);
    expect(idsOf(again)).toEqual(['m-0', 'm-1', 'm-2', 'm-3']);
    expect(countsOf(again)).toEqual([2, 2, 2, 2]);
    // The old tokens are lost (R5); the new ones settle.
    expect((await settle(q, first[0]!, 'complete')).status).toBe(410);
    expect((await reminders(q)).length).toBe(1); // the new batch's
    for (const m of again) expect((await settle(q, m, 'complete')).status).toBe(204);
    expect(await ids(q)).toEqual([]);
  });

  it('R4: renew puts a batch message back in the index at its new lock end; abandon makes it available at once; complete removes it', async () => {
    const q = await queueWith('settle', 3);
    const [a, b, c] = await got(q, 3);
    clock.advance(10 * SECOND);
    const renewed = await settle(q, a!, 'renew-lock');
    expect(renewed.status).toBe(200);
    const aItem = (await messageItems(deps, q, 'active')).find((m) => m.messageId === 'm-0')!;
    expect(aItem.rsk).toBe(readySortKey(aItem.lockedUntil!, BigInt(aItem.sk)));
    expect((await settle(q, b!, 'abandon')).status).toBe(204);
    const back = await got(q, 1);
    expect(idsOf(back)).toEqual(['m-1']);
    expect(countsOf(back)).toEqual([2]);
    expect((await settle(q, c!, 'complete')).status).toBe(204);
    // Past the batch's lock end, within the renewal: the reminder finds nothing to bring back.
    clock.advance(LOCK - 10 * SECOND + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
    expect((await settle(q, a!, 'complete')).status).toBe(204);
    expect((await settle(q, back[0]!, 'complete')).status).toBe(204);
    expect(await ids(q)).toEqual([]);
  });

  it('R6: a reminder met after its messages were completed brings nothing back and is deleted', async () => {
    const q = await queueWith('done', 5);
    const batch = await got(q, 5);
    // One at a time: a batch complete of the whole batch deletes the reminder itself (lock-reminder-complete.test.ts).
    for (const m of batch) expect((await settle(q, m, 'complete')).status).toBe(204);
    expect(await reminders(q)).toHaveLength(1);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
    expect(await ids(q)).toEqual([]);
  });
});

/** A crash (or `interleave`) at `fault` during one receive through the faulty client; then everything through a healthy one. */
const take = (fault: Fault) => apiClient(faultyDeps(deps, fault));
const isTake = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '').includes('lockToken = :token'));
const isReminderPut = both(is(PutCommand), (c) => String((inputOf(c).Item as { pk?: string } | undefined)?.pk ?? '').startsWith('remind/'));
const isRestore = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression ?? '').startsWith('SET rsk = :rsk'));
const isReminderDelete = both(is(DeleteCommand), (c) => String((inputOf(c).Key as { pk?: string } | undefined)?.pk ?? '').startsWith('remind/'));

describe('D3/R10: a receive dying at each step of a batch, or of bringing one back, loses and doubles nothing', () => {
  it('D3: dying after the reminder and before the first lock: the messages stay receivable; the reminder later finds nothing', async () => {
    const q = await queueWith('crash-remind', 3);
    const res = await receive(take({ match: isReminderPut, phase: 'after' }), q, 3);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await reminders(q)).toHaveLength(1);
    const now = await got(q, 3);
    expect(idsOf(now)).toEqual(['m-0', 'm-1', 'm-2']);
    expect(countsOf(now)).toEqual([1, 1, 1]);
    for (const m of now) expect((await settle(q, m, 'complete')).status).toBe(204);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
  });

  it('D3: dying after some locks: the taken come back at the lapse, the rest are receivable at once, each once', async () => {
    const q = await queueWith('crash-locks', 3);
    const res = await receive(take({ match: isTake, nth: 2, phase: 'before' }), q, 3);
    // R10: what was taken is the answer.
    expect(res.status).toBe(200);
    expect(idsOf(res.body.messages as Msg[])).toEqual(['m-0']);
    const rest = await got(q, 3);
    expect(idsOf(rest)).toEqual(['m-1', 'm-2']);
    clock.advance(LOCK + 1);
    const again = await got(q);
    expect(idsOf(again)).toEqual(['m-0', 'm-1', 'm-2']);
    expect(countsOf(again)).toEqual([2, 2, 2]);
    for (const m of again) expect((await settle(q, m, 'complete')).status).toBe(204);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
    expect(await ids(q)).toEqual([]);
  });

  it('D3: dying after bringing a batch back and before deleting its reminder: the next receive deletes it, nothing twice', async () => {
    const q = await queueWith('crash-restore', 2);
    await got(q, 2);
    clock.advance(LOCK + 1);
    const res = await receive(take({ match: isReminderDelete, phase: 'before' }), q, 10);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await reminders(q)).toHaveLength(1);
    const again = await got(q);
    expect(idsOf(again)).toEqual(['m-0', 'm-1']);
    expect(countsOf(again)).toEqual([2, 2]);
    expect((await reminders(q)).map((r) => r.until)).toEqual([clock.now() + LOCK]);
    for (const m of again) expect((await settle(q, m, 'complete')).status).toBe(204);
  });

  it('D3: dying half-way through bringing a batch back: the next receive finishes it', async () => {
    const q = await queueWith('crash-half', 3);
    await got(q, 3);
    clock.advance(LOCK + 1);
    const res = await receive(take({ match: isRestore, nth: 2, phase: 'before' }), q, 10);
    expect(res.status).toBeGreaterThanOrEqual(500);
    const again = await got(q);
    expect(idsOf(again)).toEqual(['m-0', 'm-1', 'm-2']);
    expect(countsOf(again)).toEqual([2, 2, 2]);
    for (const m of again) expect((await settle(q, m, 'complete')).status).toBe(204);
  });

  it('R10: a throttle part-way through bringing a batch back fails only that receive; nothing is lost or doubled', async () => {
    const q = await queueWith('throttle', 3);
    await got(q, 3);
    clock.advance(LOCK + 1);
    const throttle = async () => {
      const e = new Error('Rate of requests exceeds the allowed throughput.');
      e.name = 'ProvisionedThroughputExceededException';
      throw e;
    };
    const res = await receive(take({ match: isRestore, nth: 2, interleave: throttle }), q, 10);
    expect(res.status).toBe(503);
    const again = await got(q);
    expect(idsOf(again)).toEqual(['m-0', 'm-1', 'm-2']);
    expect(countsOf(again)).toEqual([2, 2, 2]);
    expect((await reminders(q)).length).toBe(1); // the new batch's
  });

  it('R10: keys a BatchGet leaves unprocessed keep the reminder for the next receive', async () => {
    const q = await queueWith('unprocessed', 2);
    await got(q, 2);
    clock.advance(LOCK + 1);
    // Every BatchGet of this receive answers nothing, its keys unprocessed.
    const real = deps.db.send.bind(deps.db) as (command: unknown) => Promise<unknown>;
    const db = new Proxy(deps.db, {
      get(target, prop) {
        if (prop === 'send')
          return async (command: unknown) =>
            command instanceof BatchGetCommand
              ? { Responses: {}, UnprocessedKeys: { [deps.tableName]: (command.input.RequestItems as Record<string, unknown>)[deps.tableName] } }
              : real(command);
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    expect(await (await receive(apiClient({ ...deps, db }), q, 10)).body.messages).toEqual([]);
    expect(await reminders(q)).toHaveLength(1);
    const again = await got(q);
    expect(idsOf(again)).toEqual(['m-0', 'm-1']);
  });

  it('D3: a take of a lapsed batch still on its way when the reminder is dealt with is fenced, and fails', async () => {
    const q = await queueWith('late', 2);
    // The batch's reminder is written, and its second take waits (in flight) until after the lapse.
    let late: (() => Promise<void>) | undefined;
    const hold = take({
      match: isTake,
      nth: 2,
      interleave: async (command) => {
        late = async () => {
          await deps.db.send(command as never);
        };
        throw Object.assign(new Error('held'), { name: 'InjectedCrash' });
      },
    });
    const res = await receive(hold, q, 2);
    expect(idsOf(res.body.messages as Msg[])).toEqual(['m-0']);
    clock.advance(LOCK + 1);
    // This receive deals with the reminder (m-0 back, m-1 never taken: fenced) and takes one.
    const back = await got(q, 1);
    expect(idsOf(back)).toEqual(['m-0']);
    // The held take arrives now: refused by the fence, so m-1 is not locked out of the index
    // with no reminder left; it is receivable, delivered once.
    await expect(late!()).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    const rest = await got(q);
    expect(idsOf(rest)).toEqual(['m-1']);
    expect(countsOf(rest)).toEqual([1]);
    for (const m of [...back, ...rest]) expect((await settle(q, m, 'complete')).status).toBe(204);
    expect(await ids(q)).toEqual([]);
  });
});

describe('D2, H1, E4: what else reads a batch taken out of the index', () => {
  it('D2: a batch on its last allowed delivery is dead-lettered by the sweeper at the lapse; the reminder then finds nothing', async () => {
    const q = await queueWith('d2', 2, { maxDeliveryCount: 1 });
    await got(q, 2);
    clock.advance(LOCK + 1);
    await createSweeperHandler(deps)();
    const dead = await api('GET', `/queues/${q}/$deadletterqueue/messages?maxMessages=10`);
    expect(dead.status).toBe(200);
    expect(idsOf(dead.body.messages as Msg[]).sort()).toEqual(['m-0', 'm-1']);
    expect(await got(q)).toEqual([]);
    expect(await reminders(q)).toEqual([]);
    expect(await ids(q)).toEqual([]);
  });

  it('D2: met by a receive first, a lapsed batch on its last delivery is dead-lettered, never delivered again', async () => {
    const q = await queueWith('d2-receive', 2, { maxDeliveryCount: 1 });
    await got(q, 2);
    clock.advance(LOCK + 1);
    expect(await got(q)).toEqual([]);
    const dead = await api('GET', `/queues/${q}/$deadletterqueue/messages?maxMessages=10`);
    expect(idsOf(dead.body.messages as Msg[]).sort()).toEqual(['m-0', 'm-1']);
  });

  /** A watcher of `q` through the real notify handler; its hints land in `frames`. */
  async function watched(q: string) {
    const frames: ServerFrame[] = [];
    const poster: ConnectionPoster = {
      post: async (_id, frame) => {
        frames.push(frame);
        return true;
      },
    };
    const notify = createNotifyHandler(deps, { poster });
    const token = signToken({
      resourceUri: `http://localhost/queues/${q}`,
      keyName: 'RootManageSharedAccessKey',
      key: TEST_ROOT_KEY,
      expiresAt: Math.floor(Date.now() / 1000) + 600,
    });
    await notify({
      requestContext: { routeKey: '$connect', connectionId: `c-${q}`, connectedAt: Date.now() },
    } as unknown as APIGatewayProxyWebsocketEventV2);
    const answer = await notify({
      requestContext: { routeKey: 'subscribe', connectionId: `c-${q}`, connectedAt: Date.now() },
      body: JSON.stringify({ action: 'subscribe', entity: `queues/${q}`, token }),
    } as unknown as APIGatewayProxyWebsocketEventV2);
    expect(JSON.parse(answer.body!)).toMatchObject({ type: 'subscribed' });
    return { frames, poster };
  }

  it('H1: a lapsed batch hints the entity in the sweeper minute, as a lapsed lock does', async () => {
    const q = await queueWith('hinted', 2);
    const { frames, poster } = await watched(q);
    await got(q, 2);
    const broker = createBroker(deps);
    // Locked out of the index: nothing became visible in the last minute.
    const since = clock.now() - 1;
    await hintLapsedLocks(broker.ctx, poster, clock.now() - 60 * SECOND);
    expect(frames).toEqual([]);
    clock.advance(LOCK + 1);
    await hintLapsedLocks(broker.ctx, poster, since);
    expect(frames).toEqual([{ type: 'available', entity: `queues/${q}` }]);
  });

  it('H1: two sweeper runs at the same instant look at an empty window: no lapse hint error, and the lapsed batch is hinted once', async () => {
    clock.advance(3 * 60 * SECOND); // the earlier tests' lapses out of the first run's look back
    const q = await queueWith('same-instant', 2);
    const { frames, poster } = await watched(q);
    const sweeper = createSweeperHandler(deps, { poster });
    await got(q, 2);
    // The clock does not move between runs: the second run's window (since, now] is empty.
    for (const report of [await sweeper(), await sweeper()]) {
      expect(report.lapseHintError).toBeUndefined();
      expect(report).toMatchObject({ lapseHints: 0 });
    }
    clock.advance(LOCK + 1);
    const lapsed = await sweeper();
    const same = await sweeper();
    expect(lapsed.lapseHintError).toBeUndefined();
    expect(lapsed).toMatchObject({ lapseHints: 1 });
    expect(same.lapseHintError).toBeUndefined();
    expect(same).toMatchObject({ lapseHints: 0 });
    expect(frames).toEqual([{ type: 'available', entity: `queues/${q}` }]);
    expect(idsOf(await got(q))).toEqual(['m-0', 'm-1']);
  });

  it('R2: a partition whose messages a batch holds keeps its ready mark through its reminder, and the lapsed batch is received', async () => {
    expect((await api('PUT', '/queues/marked', { enablePartitioning: true, lockDuration: 'PT5M' })).status).toBe(201);
    for (const i of [0, 1]) expect((await api('POST', '/queues/marked/messages', { body: { i }, messageId: `m-${i}`, partitionKey: 'a' })).status).toBe(201);
    clock.advance(CLEAR_AFTER_MS - 60 * SECOND);
    expect(idsOf(await got('marked', 2))).toEqual(['m-0', 'm-1']);
    // Past the age a mark may be cleared at, the lock not lapsed: a receive reads the partition
    // whole and finds the reminder, not nothing, so the mark stays.
    clock.advance(60 * SECOND + 1);
    expect(await got('marked')).toEqual([]);
    const eid = await eidOf('marked');
    const marks = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: readyMarksKey(eid), ConsistentRead: true }));
    expect(Object.keys(marks.Item ?? {}).filter((k) => /^p\d+$/.test(k))).toHaveLength(1);
    clock.advance(CLEAR_AFTER_MS);
    const again = await got('marked');
    expect(idsOf(again)).toEqual(['m-0', 'm-1']);
    expect(countsOf(again)).toEqual([2, 2]);
  });

  it('E4: the reaper removes a deleted queue reminders with its messages', async () => {
    const q = await queueWith('reaped', 3);
    const eid = await eidOf(q);
    await got(q, 3);
    expect(await reminders(q)).toHaveLength(1);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    const reap = createReaperHandler(deps);
    await reap();
    await reap();
    const left = await deps.db.send(
      new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': reminderPk(`msg/${eid}/a/0`) } }),
    );
    expect(left.Items).toEqual([]);
    const messages = await deps.db.send(
      new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `msg/${eid}/a/0` } }),
    );
    expect(messages.Items as MessageItem[]).toEqual([]);
  });
});
