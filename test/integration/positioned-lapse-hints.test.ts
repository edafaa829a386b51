/**
 * H1 on a positioned queue, ticketed and claimed by cursor: a message that becomes available
 * again wakes the entity's waiting consumers as in today's layout. An abandon (R4) through the
 * notify function's stream filter (its write raises `g` and removes `gl`); a lock that lapses
 * (R3) through the sweeper's minute (`hintLapsedLocks`: the counter's tickets, the cursor's
 * leases), only while the lock still holds a message. The hint is best effort: a read refused
 * in its look fails neither the sweep nor the message. Real DynamoDB Local; the watchers are
 * made by the real notify handler; faults through test/support/faults.ts.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { createNotifyHandler } from '../../functions/notify/handler.js';
import { createBroker } from '../../lib/broker/index.js';
import { positionedPassDue } from '../../lib/broker/positioned-expiry.js';
import { signToken } from '../../lib/auth/index.js';
import { passesFilters } from '../../infra/local/event-filter.js';
import { availableIn, hintLapsedLocks } from '../../lib/notifications/hints.js';
import type { ConnectionPoster } from '../../lib/notifications/watchers.js';
import type { ServerFrame } from '../../lib/notifications/protocol.js';
import { entityKey, positionCounterKey, positionedPk, positionKey } from '../../lib/store/keys.js';
import { hintFilterPatterns } from '../../lib/store/stream-filter.js';
import type { StoredMessageItem } from '../../lib/store/message-layout.js';
import type { EntityLayout } from '../../lib/deps.js';
import { apiClient, TEST_ROOT_KEY, type Json } from '../support/api.js';
import { faultyDeps, inputOf, is } from '../support/faults.js';
import { modifyRecord } from '../support/stream.js';
import { ManualClock, testDeps } from '../support/table.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 7));
let base: Awaited<ReturnType<typeof testDeps>>;
let queues = 0;

// A table per test: the sweeper's minute looks at every watched entity of its table.
beforeEach(async () => {
  base = await testDeps(clock, 'lapsehints');
});

const layouts: EntityLayout[] = ['positions', 'tickets'];

describe.each(layouts)('H1 on a positioned queue (%s)', (layout) => {
  const deps = () => ({ ...base, newEntityLayout: layout });
  const api = (method: string, path: string, body?: unknown) => apiClient(deps())(method, path, body);

  /** A queue of this layout with `count` messages, and one watcher of it (the real notify handler); its hints land in `frames`. */
  async function watchedQueue(count: number) {
    const q = `q${layout}${++queues}`;
    expect((await api('PUT', `/queues/${q}`, { lockDuration: 'PT30S' })).status).toBe(201);
    const entity = await base.db.send(new GetCommand({ TableName: base.tableName, Key: entityKey('queue', q), ConsistentRead: true }));
    expect(entity.Item).toMatchObject({ layout: 'positions', ...(layout === 'tickets' ? { ticketed: true } : {}) });
    for (let i = 0; i < count; i++) expect((await api('POST', `/queues/${q}/messages`, { body: { i }, messageId: `m-${i}` })).status).toBe(201);
    const frames: ServerFrame[] = [];
    const poster: ConnectionPoster = {
      post: async (_id, frame) => {
        frames.push(frame);
        return true;
      },
    };
    const notify = createNotifyHandler(deps(), { poster });
    const connectionId = `c-${q}`;
    const token = signToken({
      resourceUri: `http://localhost/queues/${q}`,
      keyName: 'RootManageSharedAccessKey',
      key: TEST_ROOT_KEY,
      expiresAt: Math.floor(Date.now() / 1000) + 600,
    });
    await notify({ requestContext: { routeKey: '$connect', connectionId, connectedAt: Date.now() } } as unknown as APIGatewayProxyWebsocketEventV2);
    const answer = await notify({
      requestContext: { routeKey: 'subscribe', connectionId, connectedAt: Date.now() },
      body: JSON.stringify({ action: 'subscribe', entity: `queues/${q}`, token }),
    } as unknown as APIGatewayProxyWebsocketEventV2);
    expect(JSON.parse(answer.body!)).toMatchObject({ type: 'subscribed' });
    const eid = entity.Item!.eid as string;
    return { q, eid, pk: positionedPk(eid, 'active', 0), frames, poster };
  }

  const receive = async (q: string, maxMessages: number): Promise<Json[]> => {
    const res = await api('POST', `/queues/${q}/messages/receive`, { maxMessages });
    expect(res.status).toBe(200);
    return res.body.messages as Json[];
  };
  const settle = (q: string, m: Json, action: string) => api('POST', `/queues/${q}/messages/${m.sequenceNumber}/${action}`, { lockToken: m.lockToken });
  const ctx = () => createBroker(deps()).ctx;
  const hinted = (q: string) => [{ type: 'available', entity: `queues/${q}` }];

  it('H1/R3: a lapsed batch hints the entity in the sweeper minute, as a lapsed lock does', async () => {
    const { q, frames, poster } = await watchedQueue(2);
    expect(await receive(q, 2)).toHaveLength(2);
    // Held: nothing lapsed in the last minute.
    const since = clock.now() - 1;
    await hintLapsedLocks(ctx(), poster, clock.now() - 60 * SECOND);
    expect(frames).toEqual([]);
    clock.advance(LOCK + 1);
    expect(await hintLapsedLocks(ctx(), poster, since)).toBe(1);
    expect(frames).toEqual(hinted(q));
    // The window after it is quiet again: one hint for one lapse.
    const after = clock.now();
    clock.advance(SECOND);
    expect(await hintLapsedLocks(ctx(), poster, after)).toBe(0);
    const again = await receive(q, 10);
    expect(again.map((m) => m.messageId)).toEqual(['m-0', 'm-1']);
    expect(again.map((m) => m.deliveryCount)).toEqual([2, 2]);
    for (const m of again) expect((await settle(q, m, 'complete')).status).toBe(204);
  });

  it('H1/R3: the sweeper handler sends the lapse hint in the minute after the lock ends (R3 counts the delivery)', async () => {
    const { q, frames, poster } = await watchedQueue(1);
    const sweeper = createSweeperHandler(deps(), { poster });
    expect(await receive(q, 1)).toHaveLength(1);
    expect(await sweeper()).toMatchObject({ lapseHints: 0 });
    clock.advance(60 * SECOND);
    expect(await sweeper()).toMatchObject({ lapseHints: 1 });
    expect(frames).toEqual(hinted(q));
    const [m] = await receive(q, 1);
    expect(m).toMatchObject({ messageId: 'm-0', deliveryCount: 2 });
    expect((await settle(q, m, 'complete')).status).toBe(204);
  });

  it("H1/R3: a lapse is hinted in the quarter-hour minute too, when the sweeper's own pass takes the lock back", async () => {
    const { q, frames, poster } = await watchedQueue(1);
    const sweeper = createSweeperHandler(deps(), { poster });
    // The next run falls in the first minute of a quarter hour, where the positioned pass runs
    // (positionedPassDue) and takes back what lapsed before the hint's look reads the lock.
    const quarter = 15 * 60 * SECOND;
    clock.advance(Math.ceil(clock.now() / quarter) * quarter + quarter - 60 * SECOND + 5 * SECOND - clock.now());
    expect(positionedPassDue(clock.now())).toBe(false);
    expect(await receive(q, 1)).toHaveLength(1);
    expect(await sweeper()).toMatchObject({ lapseHints: 0 });
    clock.advance(60 * SECOND);
    expect(positionedPassDue(clock.now())).toBe(true);
    expect(await sweeper()).toMatchObject({ lapseHints: 1 });
    expect(frames).toEqual(hinted(q));
    const [m] = await receive(q, 1);
    expect(m).toMatchObject({ messageId: 'm-0', deliveryCount: 2 });
    expect((await settle(q, m, 'complete')).status).toBe(204);
  });

  it('H1/R3: two sweeper runs at the same instant look at an empty window: no lapse hint error, and the lapse is hinted once', async () => {
    const { q, frames, poster } = await watchedQueue(1);
    const sweeper = createSweeperHandler(deps(), { poster });
    expect(await receive(q, 1)).toHaveLength(1);
    // The clock does not move between runs: the second run's window (since, now] is empty.
    for (const report of [await sweeper(), await sweeper()]) {
      expect(report.lapseHintError).toBeUndefined();
      expect(report).toMatchObject({ lapseHints: 0 });
    }
    clock.advance(60 * SECOND);
    const lapsed = await sweeper();
    const same = await sweeper();
    expect(lapsed.lapseHintError).toBeUndefined();
    expect(lapsed).toMatchObject({ lapseHints: 1 });
    expect(same.lapseHintError).toBeUndefined();
    expect(same).toMatchObject({ lapseHints: 0 });
    expect(frames).toEqual(hinted(q));
    const [m] = await receive(q, 1);
    expect(m).toMatchObject({ messageId: 'm-0', deliveryCount: 2 });
    expect((await settle(q, m, 'complete')).status).toBe(204);
  });

  it('H1: a batch completed under its lock gives no hint at its lapse (no consumer sent to an empty receive)', async () => {
    const { q, frames, poster } = await watchedQueue(3);
    const taken = await receive(q, 3);
    expect(taken).toHaveLength(3);
    for (const m of taken) expect((await settle(q, m, 'complete')).status).toBe(204);
    const since = clock.now() - 1;
    clock.advance(LOCK + 1);
    expect(await hintLapsedLocks(ctx(), poster, since)).toBe(0);
    expect(frames).toEqual([]);
  });

  it('H1/R3: a lock on a message taken again from `back` (a lease after an abandon) hints at its lapse too', async () => {
    const { q, frames, poster } = await watchedQueue(1);
    const [m] = await receive(q, 1);
    expect((await settle(q, m, 'abandon')).status).toBe(204);
    const [again] = await receive(q, 1);
    expect(again).toMatchObject({ messageId: 'm-0', deliveryCount: 2 });
    const since = clock.now() - 1;
    clock.advance(LOCK + 1);
    expect(await hintLapsedLocks(ctx(), poster, since)).toBe(1);
    expect(frames).toEqual(hinted(q));
    const [third] = await receive(q, 1);
    expect(third).toMatchObject({ messageId: 'm-0', deliveryCount: 3 });
    expect((await settle(q, third, 'complete')).status).toBe(204);
  });

  it("H1/R4: an abandon's write passes notify's filter and names the queue; a lapse's take-back and a complete do not", async () => {
    const { q, eid, pk } = await watchedQueue(2);
    const [a, b] = await receive(q, 2);
    const read = async (p: number) =>
      (await base.db.send(new GetCommand({ TableName: base.tableName, Key: positionKey(pk, p), ConsistentRead: true }))).Item as StoredMessageItem;
    const at = clock.now();
    // Find each message's position by its id (a token names it; the item is what the stream shows).
    const items = (
      await base.db.send(
        new QueryCommand({ TableName: base.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
      )
    ).Items as StoredMessageItem[];
    const byId = new Map(items.map((i) => [i.messageId as string, i]));
    const beforeA = byId.get(a.messageId)!;
    expect((await settle(q, a, 'abandon')).status).toBe(204);
    const afterA = await read(Number(beforeA.sk));
    const abandoned = modifyRecord(beforeA, afterA, { at });
    expect(passesFilters(hintFilterPatterns, abandoned)).toBe(true);
    expect(availableIn([abandoned], at)).toEqual(new Map([[`queues/${q}`, eid]]));
    // Its take-back at a lapse marks the lock it came from (`gl`): hinted at the lapse, not here.
    const takenBack = modifyRecord(afterA, { ...afterA, g: Number((afterA as { g?: number }).g) + 1, gl: 7 } as StoredMessageItem, { at });
    expect(passesFilters(hintFilterPatterns, takenBack)).toBe(false);
    expect(availableIn([takenBack], at).size).toBe(0);
    // A complete of the other: deleted (cursor) or a `done` marker (tickets), never a hint.
    const beforeB = byId.get(b.messageId)!;
    expect((await settle(q, b, 'complete')).status).toBe(204);
    const afterB = await read(Number(beforeB.sk));
    if (afterB) expect(passesFilters(hintFilterPatterns, modifyRecord(beforeB, afterB, { at }))).toBe(false);
    // A change that leaves `g` as it was (R3's `ug` mark of a message taken and not handed out) names nothing, filter or not.
    const marked = modifyRecord(afterA, { ...afterA, ug: 1 } as StoredMessageItem, { at });
    expect(availableIn([marked], at).size).toBe(0);
    const [back] = await receive(q, 1);
    expect(back).toMatchObject({ messageId: a.messageId, deliveryCount: 2 });
    expect((await settle(q, back, 'complete')).status).toBe(204);
  });

  it("H1: a read refused in the lapse hint's look fails neither the sweep nor the message (the next receive finds it, R3)", async () => {
    const { q, pk, frames, poster } = await watchedQueue(1);
    expect(await receive(q, 1)).toHaveLength(1);
    const lookedAt = (c: unknown) =>
      (is(GetCommand)(c) && inputOf(c).Key?.pk === positionCounterKey(pk).pk) ||
      (is(QueryCommand)(c) && String(inputOf(c).ExpressionAttributeValues?.[':pk'] ?? '').startsWith('lease/'));
    const faulty = faultyDeps(deps(), { match: lookedAt, times: 1000, afterwards: 'lives' });
    const sweeper = createSweeperHandler(faulty, { poster });
    await sweeper();
    clock.advance(60 * SECOND);
    const report = await sweeper();
    expect(faulty.faults.tripped).toBeGreaterThan(0);
    expect(report.lapseHintError).toMatch(/injected crash/);
    expect(report.lapseHints).toBeUndefined();
    expect(frames).toEqual([]);
    // The hint is lost (H1 allows it: the fallback poll); the message is not.
    const [m] = await receive(q, 1);
    expect(m).toMatchObject({ messageId: 'm-0', deliveryCount: 2 });
    expect((await settle(q, m, 'complete')).status).toBe(204);
  });
});
