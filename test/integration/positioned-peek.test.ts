/**
 * Peek of a positioned queue (R8, lib/broker/peek.ts): its positioned messages in position
 * order, then the messages it keeps in today's layout (scheduled, deferred) by sequence number;
 * `fromSequenceNumber` of either kind; never a tombstone, a void request's message or a part of
 * a request not yet whole; and nothing written. Requests are seeded through the store
 * (lib/store/positions.ts) where a test needs one the API cannot make.
 */
import { DeleteCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { deferredSortKey, messageKey, positionedPk } from '../../lib/store/keys.js';
import { drawPositions, putAtPositions, putTombstone } from '../../lib/store/positions.js';
import { claim, completeAtPosition } from '../../lib/store/leases.js';
import { positionedSeq, scheduledSeq } from '../../lib/store/sequence.js';
import { storedMessage } from '../../lib/store/message-layout.js';
import type { Json } from '../support/api.js';
import { is } from '../support/faults.js';
import { eidOf, peekIds, positionedWorld, type Api, type PositionedDeps } from '../support/positioned-queues.js';

const world = positionedWorld('pospeek');
let deps: PositionedDeps;
let api: Api;

beforeAll(async () => {
  ({ deps, api } = await world.open());
});

const send = (queue: string, messageId: string, extra: Record<string, unknown> = {}) =>
  api('POST', `/queues/${queue}/messages`, { body: messageId, messageId, ...extra });

/** A message item as a positioned send stores it, for seeding requests the API cannot make. */
const payload = (queue: string, messageId: string) => ({
  messageId,
  entity: `queues/${queue}`,
  body: JSON.stringify(messageId),
  state: 'Active',
  deliveryCount: 0,
  enqueuedAt: 0,
  size: 10,
  v: 0,
});

const peeked = async (queue: string, query: string) => (await api('GET', `/queues/${queue}/messages?${query}`)).body.messages as Json[];

describe('R8: peek of a positioned queue', () => {
  it("R8, S2: positioned and scheduled messages (numbered from the position counter) in position order, then today's layout's time-numbered (deferred), each with its state", async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const later = new Date(world.clock.now() + 60_000).toISOString();
    await send(q, 's1', { scheduledEnqueueTime: later });
    await send(q, 'p1');
    await api('POST', `/queues/${q}/messages/batch`, { messages: ['p2', 'p3'].map((id) => ({ body: id, messageId: id })) });
    world.clock.advance(1);
    await send(q, 's2', { scheduledEnqueueTime: later });
    // A deferred message keeps its (time-based) number in today's layout.
    world.clock.advance(1);
    const seq = BigInt(world.clock.now()) << 16n;
    await deps.db.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: storedMessage({
          ...messageKey(eid, 'active', 0, seq),
          ...payload(q, 'd1'),
          seq: seq.toString(),
          eid,
          subqueue: 'active',
          partition: 0,
          state: 'Deferred',
          rpk: messageKey(eid, 'active', 0, seq).pk,
          rsk: deferredSortKey(seq),
        } as never),
      }),
    );
    const messages = await peeked(q, 'maxMessages=10');
    expect(messages.map((m) => [m.messageId, m.state])).toEqual([
      ['s1', 'Scheduled'],
      ['p1', 'Active'],
      ['p2', 'Active'],
      ['p3', 'Active'],
      ['s2', 'Scheduled'],
      ['d1', 'Deferred'],
    ]);
    expect(messages.slice(0, 5).map((m) => m.sequenceNumber)).toEqual(
      [scheduledSeq(0, 0, 1), positionedSeq(1, 0), positionedSeq(2, 0), positionedSeq(3, 0), scheduledSeq(3, 0, 1)].map(String),
    );
    // From a positioned number on, from a scheduled one on, from the position the scheduled one follows, and from one past it.
    expect((await peeked(q, `fromSequenceNumber=${positionedSeq(2, 0)}`)).map((m) => m.messageId)).toEqual(['p2', 'p3', 's2', 'd1']);
    expect((await peeked(q, `fromSequenceNumber=${messages[4].sequenceNumber as string}`)).map((m) => m.messageId)).toEqual(['s2', 'd1']);
    expect((await peeked(q, `fromSequenceNumber=${positionedSeq(3, 0)}&maxMessages=2`)).map((m) => m.messageId)).toEqual(['p3', 's2']);
    expect((await peeked(q, `fromSequenceNumber=${positionedSeq(4, 0)}&maxMessages=2`)).map((m) => m.messageId)).toEqual(['d1']);
    expect(await peekIds(api, q, 'maxMessages=2')).toEqual(['s1', 'p1']);
  });

  it('R8, S1: tombstones, the messages of void requests and requests not yet whole are never shown', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const pk = positionedPk(eid, 'active', 0);
    await send(q, 'a');
    // A void request of three: its second position tombstoned before its put.
    const voidDraw = await drawPositions(deps, pk, 3);
    await putTombstone(deps, pk, voidDraw.first + 1);
    expect(
      await putAtPositions(
        deps,
        pk,
        voidDraw,
        ['v0', 'v1', 'v2'].map((id) => payload(q, id)),
      ),
    ).toBe('retry');
    // A lone tombstone (a hole a receiver gave up on).
    const hole = await drawPositions(deps, pk, 1);
    await putTombstone(deps, pk, hole.first);
    await send(q, 'b');
    // A request of two still being put: its first message landed, its second not yet.
    const pending = await drawPositions(deps, pk, 2);
    await deps.db.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: { ...payload(q, 'w0'), pk, sk: String(pending.first).padStart(19, '0'), at: 0, rf: pending.first, rn: 2 },
      }),
    );
    await send(q, 'c');
    expect(await peekIds(api, q)).toEqual(['a', 'b', 'c']);
    expect(await peekIds(api, q, `fromSequenceNumber=${positionedSeq(voidDraw.first + 2, 0)}`)).toEqual(['b', 'c']);
    expect(await peekIds(api, q, 'maxMessages=2')).toEqual(['a', 'b']);
  });

  it('R8: a request a receiver took whole and partly completed still shows what is left of it', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const pk = positionedPk(eid, 'active', 0);
    await api('POST', `/queues/${q}/messages/batch`, { messages: ['r0', 'r1', 'r2', 'r3'].map((id) => ({ body: id, messageId: id })) });
    const taken = await claim(deps, pk, 2, { lockMs: 60_000 });
    expect(taken.messages.map((m) => m.item.messageId)).toEqual(['r0', 'r1']);
    expect(await completeAtPosition(deps, pk, taken.messages[0]!.token)).toBe('completed');
    expect(await peekIds(api, q)).toEqual(['r1', 'r2', 'r3']);
    expect(await completeAtPosition(deps, pk, taken.messages[1]!.token)).toBe('completed');
    expect(await peekIds(api, q)).toEqual(['r2', 'r3']);
    expect(await peekIds(api, q, `fromSequenceNumber=${positionedSeq(4, 0)}`)).toEqual(['r3']);
  });

  it('R8: a request whose middle message was completed shows the messages on either side of it', async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    const pk = positionedPk(eid, 'active', 0);
    await api('POST', `/queues/${q}/messages/batch`, { messages: ['r0', 'r1', 'r2'].map((id) => ({ body: id, messageId: id })) });
    const taken = await claim(deps, pk, 3, { lockMs: 60_000 });
    expect(await completeAtPosition(deps, pk, taken.messages[1]!.token)).toBe('completed');
    expect(await peekIds(api, q)).toEqual(['r0', 'r2']);
    expect(await peekIds(api, q, `fromSequenceNumber=${positionedSeq(2, 0)}`)).toEqual(['r2']);
  });

  it('R8: from the middle of a whole request, the rest of it shows', async () => {
    const q = await world.newQueue();
    await api('POST', `/queues/${q}/messages/batch`, { messages: ['r0', 'r1', 'r2', 'r3'].map((id) => ({ body: id, messageId: id })) });
    expect(await peekIds(api, q, `fromSequenceNumber=${positionedSeq(3, 0)}`)).toEqual(['r2', 'r3']);
  });

  it('R8: a partitioned positioned queue shows every partition, by sequence number', async () => {
    const q = await world.newQueue({ enablePartitioning: true });
    const sent = await api('POST', `/queues/${q}/messages/batch`, {
      messages: Array.from({ length: 12 }, (_, i) => ({ body: i, messageId: `m${i}`, partitionKey: `k${i % 5}` })),
    });
    const bySeq = (sent.body.results as Json[])
      .map((r) => ({ id: r.messageId as string, seq: BigInt(r.sequenceNumber as string) }))
      .sort((a, b) => (a.seq < b.seq ? -1 : 1))
      .map((r) => r.id);
    expect(await peekIds(api, q)).toEqual(bySeq);
    expect(await peekIds(api, q, 'maxMessages=5')).toEqual(bySeq.slice(0, 5));
  });

  it('R8: peek writes nothing to the store', async () => {
    const q = await world.newQueue();
    await send(q, 'x');
    await send(q, 'y', { scheduledEnqueueTime: new Date(world.clock.now() + 60_000).toISOString() });
    const reader = world.process({ match: is(PutCommand, UpdateCommand, DeleteCommand, TransactWriteCommand), times: Infinity, interleave: async () => {} });
    expect(await peekIds(reader.api, q)).toEqual(['x', 'y']);
    expect(reader.log.seen).toBe(0);
  });
});
