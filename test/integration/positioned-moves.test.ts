/**
 * Moves into a positioned queue land on positions, as a send does (moves.ts `moveMessage`,
 * positioned-send.ts `drawForMove`): a resubmit (D7) and a dead letter forwarded by
 * `forwardDeadLetteredMessagesTo` (F3) get a position drawn for them and are put there in
 * the transaction that deletes their source (D3), so they are received in line with the
 * sends around them. A crash between the draw and the transaction leaves the source where it
 * was and a hole that a receiver tombstones; a tombstone on the drawn position makes the move
 * draw again.
 */
import { DeleteCommand, ScanCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { both, faultyDeps, inputOf, is, transactionConflict, type Fault } from '../support/faults.js';
import { isPositionedSeq } from '../../lib/store/sequence.js';
import { HOLE_AFTER_MS, putTombstone } from '../../lib/store/positions.js';
import { positionOfSk } from '../../lib/store/keys.js';
import type { Deps } from '../../lib/deps.js';
import { createBroker } from '../../lib/broker/index.js';
import { messageItems, streamEvent, TableStreamReader, ttlRemovalRecord } from '../support/stream.js';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { PARK_AFTER_FAILURES } from '../../lib/broker/stream.js';
import { getParkedRecord } from '../../lib/store/stream-failures.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { indexLayout } from '../support/default-layout.js';
import { positionedLayout } from '../support/positioned-layout.js';

const SECOND = 1000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 7, 0));
let base: Awaited<ReturnType<typeof testDeps>>;
let deps: Deps;
let broker: ReturnType<typeof createBroker>;
let api: ReturnType<typeof apiClient>;
/** The same table with today's layout for new entities: a source queue that is not positioned. */
let todayApi: ReturnType<typeof apiClient>;
let queues = 0;

beforeAll(async () => {
  base = { ...(await testDeps(clock, 'posmoves', undefined, { stream: true })), ...indexLayout };
  deps = { ...base, newEntityLayout: positionedLayout };
  broker = createBroker(deps);
  api = apiClient(deps);
  todayApi = apiClient(base);
});

async function newQueue(props: Record<string, unknown> = {}, client = api) {
  const name = `pm${++queues}`;
  const made = await client('PUT', `/queues/${name}`, { lockDuration: 'PT30S', ...props });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return name;
}

async function send(q: string, body: string, client = api) {
  const sent = await client('POST', `/queues/${q}/messages`, { body });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
}

async function receive(path: string, body: Record<string, unknown> = {}, client = api): Promise<Json[]> {
  const res = await client('POST', `${path}/messages/receive`, { maxWaitTime: 'PT0S', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.messages as Json[];
}

const settle = (path: string, m: Json, verb: string, body: Record<string, unknown> = {}, client = api) =>
  client('POST', `${path}/messages/${m.sequenceNumber}/${verb}`, { lockToken: m.lockToken, ...body });
const bodiesOf = (messages: Json[]) => messages.map((m) => m.body as string);
const positionedSeqs = (messages: Json[]) => messages.map((m) => isPositionedSeq(BigInt(m.sequenceNumber as string)));

/** Sends `body` to `q` and dead-letters it there, so it waits in `q`'s dead-letter subqueue. */
async function deadLettered(q: string, body: string) {
  await send(q, body);
  const [m] = await receive(`/queues/${q}`);
  expect(m).toMatchObject({ body });
  expect((await settle(`/queues/${q}`, m!, 'deadletter', { deadLetterReason: 'test' })).status).toBe(204);
}

const peekDlq = async (q: string) => bodiesOf((await api('GET', `/queues/${q}/$deadletterqueue/messages?maxMessages=10`)).body.messages as Json[]);

/** The transaction that moves a message onto a position: it puts a `pos/` item. */
const isPositionedMove = both(is(TransactWriteCommand), (c) =>
  ((inputOf(c).TransactItems ?? []) as { Put?: { Item?: { pk?: unknown } } }[]).some((t) => String(t.Put?.Item?.pk ?? '').startsWith('pos/')),
);
/** A receiver gives up on a move's drawn position just before the move's transaction reaches it. */
async function tombstoneThePut(command: unknown) {
  const put = ((inputOf(command).TransactItems ?? []) as { Put?: { Item?: { pk: string; sk: string } } }[]).find((t) =>
    String(t.Put?.Item?.pk ?? '').startsWith('pos/'),
  )!.Put!.Item!;
  expect(await putTombstone(deps, put.pk, positionOfSk(put.sk))).toBe(true);
}
const isDraw = both(is(UpdateCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('posnext/'));

describe('moves into a positioned queue land on positions', () => {
  it('D7: a resubmitted message lands on a position and is received in line with the sends before and after it', async () => {
    const q = await newQueue();
    await deadLettered(q, 'a');
    await send(q, 'x');
    const res = await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {});
    expect(res.body).toMatchObject({ resubmitted: 1, remaining: false });
    await send(q, 'b');
    expect((await api('GET', `/queues/${q}`)).body.runtime.activeMessageCount).toBe(3);
    const got = await receive(`/queues/${q}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['x', 'a', 'b']);
    expect(positionedSeqs(got)).toEqual([true, true, true]);
    expect(got[1]).not.toHaveProperty('deadLetterReason');
    for (const m of got) expect((await settle(`/queues/${q}`, m, 'complete')).status).toBe(204);
    expect(await peekDlq(q)).toEqual([]);
  });

  it('D7: resubmitting to another positioned queue (`to`) puts the message on its positions', async () => {
    const q = await newQueue();
    const to = await newQueue();
    await deadLettered(q, 'moved');
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, { to: `queues/${to}` })).body).toMatchObject({ resubmitted: 1 });
    await send(to, 'after');
    const got = await receive(`/queues/${to}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['moved', 'after']);
    expect(positionedSeqs(got)).toEqual([true, true]);
  });

  it('T4: a message resubmitted into a queue with a time to live carries no ttl at its position (DynamoDB would empty it)', async () => {
    const q = await newQueue({ defaultMessageTimeToLive: 'PT1H' });
    await deadLettered(q, 'ttl');
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 1 });
    const [m] = await receive(`/queues/${q}`, { mode: 'peekLock' });
    expect(m).toMatchObject({ body: 'ttl' });
    expect(isPositionedSeq(BigInt(m!.sequenceNumber as string))).toBe(true);
    const stored = await deps.db.send(
      new ScanCommand({
        TableName: deps.tableName,
        FilterExpression: 'begins_with(pk, :pos) AND messageId = :id',
        ExpressionAttributeValues: { ':pos': 'pos/', ':id': m!.messageId },
      }),
    );
    expect(stored.Items).toHaveLength(1);
    expect(stored.Items![0]).not.toHaveProperty('ttl');
    expect(stored.Items![0]).toHaveProperty('expiresAt');
  });

  it('F3, D1: a dead letter of a positioned queue forwarded to a positioned queue lands on a position, with its reason', async () => {
    const dst = await newQueue();
    const src = await newQueue({ forwardDeadLetteredMessagesTo: dst });
    await send(dst, 'before');
    await deadLettered(src, 'forwarded');
    await send(dst, 'after');
    expect((await api('GET', `/queues/${dst}`)).body.runtime.activeMessageCount).toBe(3);
    const got = await receive(`/queues/${dst}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['before', 'forwarded', 'after']);
    expect(positionedSeqs(got)).toEqual([true, true, true]);
    expect(got[1]).toMatchObject({ deadLetterReason: 'test', deadLetterSource: `queues/${src}` });
    expect(await peekDlq(src)).toEqual([]);
  });

  it("F3, D2: a dead letter of a queue in today's layout forwarded to a positioned queue lands on a position", async () => {
    const dst = await newQueue();
    const src = await newQueue({ forwardDeadLetteredMessagesTo: dst, maxDeliveryCount: 1 }, todayApi);
    await send(src, 'poison', todayApi);
    const [m] = await receive(`/queues/${src}`, {}, todayApi);
    expect(isPositionedSeq(BigInt(m!.sequenceNumber as string))).toBe(false);
    expect((await settle(`/queues/${src}`, m!, 'abandon', {}, todayApi)).status).toBe(204);
    await send(dst, 'after');
    const got = await receive(`/queues/${dst}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['poison', 'after']);
    expect(positionedSeqs(got)).toEqual([true, true]);
    expect(got[0]).toMatchObject({ deadLetterReason: 'MaxDeliveryCountExceeded' });
    expect(await receive(`/queues/${src}`, {}, todayApi)).toEqual([]);
  });
});

describe('expiry forwarding onto positions (T6, F3)', () => {
  /** A message of a today-layout queue forwarding its dead letters to `dst`, expired and removed by "TTL": the stream record that says so. */
  async function removedByTtl(dst: string) {
    const src = await newQueue({ defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true, forwardDeadLetteredMessagesTo: dst }, todayApi);
    await send(src, 'removed', todayApi);
    const [item] = await messageItems(base, src, 'active');
    clock.advance(2 * 60 * SECOND);
    await base.db.send(new DeleteCommand({ TableName: base.tableName, Key: { pk: item!.pk, sk: item!.sk } }));
    return ttlRemovalRecord(item as MessageItem, 'aws', { at: clock.now() });
  }

  it('T6, F3: an expired message of a positioned queue, forwarded under its lease, lands on a position of the target', async () => {
    const dst = await newQueue();
    const src = await newQueue({ defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true, forwardDeadLetteredMessagesTo: dst });
    await send(src, 'expiring');
    clock.advance(2 * 60 * SECOND);
    expect(await receive(`/queues/${src}`)).toEqual([]);
    await send(dst, 'after');
    const got = await receive(`/queues/${dst}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['expiring', 'after']);
    expect(positionedSeqs(got)).toEqual([true, true]);
    expect(got[0]).toMatchObject({ deadLetterReason: 'TTLExpiredException' });
    expect(await peekDlq(src)).toEqual([]);
  });

  it("T6, F3, D3: the stream's TTL backstop forwards a removed message onto a position, once under a replayed record", async () => {
    const dst = await newQueue();
    const record = await removedByTtl(dst);
    // The first try dies between the draw and its transaction: a hole, and the record kept for the retry.
    const first = await createStreamHandler(faultyDeps(deps, { match: isDraw, phase: 'after' }))(streamEvent(record));
    expect(first.batchItemFailures).toHaveLength(1);
    for (let i = 0; i < 2; i++) expect((await createStreamHandler(deps)(streamEvent(record))).batchItemFailures).toEqual([]);
    await send(dst, 'after');
    clock.advance(6 * SECOND); // the hole ages into a tombstone
    const got = await receive(`/queues/${dst}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['removed', 'after']);
    expect(positionedSeqs(got)).toEqual([true, true]);
    expect(got[0]).toMatchObject({ deadLetterReason: 'TTLExpiredException' });
  });

  it("T6, F3, D3: the stream's TTL backstop whose drawn places keep being taken waits it out with Lambda (load, never parked), then forwards once", async () => {
    const dst = await newQueue();
    const record = await removedByTtl(dst);
    // Every draw of every try meets a receiver's tombstone, more tries than a bad record gets before it is parked.
    const taken = faultyDeps(deps, { match: isPositionedMove, times: Number.MAX_SAFE_INTEGER, interleave: tombstoneThePut });
    for (let i = 0; i < PARK_AFTER_FAILURES + 1; i++) expect((await createStreamHandler(taken)(streamEvent(record))).batchItemFailures).toHaveLength(1);
    expect(await getParkedRecord(deps, record.eventID!)).toBeUndefined();
    expect((await createStreamHandler(deps)(streamEvent(record))).batchItemFailures).toEqual([]);
    await send(dst, 'after');
    const got = await receive(`/queues/${dst}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['removed', 'after']);
    expect(got[0]).toMatchObject({ deadLetterReason: 'TTLExpiredException' });
  });
});

describe('E6: a message moved onto a position is counted once', () => {
  it('E6, D7: the stream counts the dead letter off and passes over its positioned copy, which the positions count', async () => {
    const reader = new TableStreamReader(base);
    await reader.read(); // the stream so far
    const q = await newQueue();
    await deadLettered(q, 'counted');
    expect((await broker.processStream(await reader.read())).batchItemFailures).toEqual([]);
    expect((await api('GET', `/queues/${q}`)).body.runtime).toMatchObject({ activeMessageCount: 0, deadLetterMessageCount: 1, totalMessageCount: 1 });
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 1 });
    const records = await reader.read();
    expect(records.some((r) => r.eventName === 'INSERT' && r.dynamodb?.Keys?.pk?.S?.startsWith('pos/'))).toBe(true);
    expect((await broker.processStream(records)).batchItemFailures).toEqual([]);
    expect((await api('GET', `/queues/${q}`)).body.runtime).toMatchObject({ activeMessageCount: 1, deadLetterMessageCount: 0, totalMessageCount: 1 });
  });
});

describe('D3: a move onto a position loses nothing and doubles nothing', () => {
  const crashing = (fault: Fault) => apiClient(faultyDeps(deps, fault));

  it('D3, D7: a crash between the draw and the transaction leaves the source; the hole is tombstoned; a retry moves it once', async () => {
    const q = await newQueue();
    await deadLettered(q, 'a');
    const res = await crashing({ match: isDraw, phase: 'after' })('POST', `/queues/${q}/$deadletterqueue/resubmit`, {});
    expect(res.status).toBe(500);
    expect(await peekDlq(q)).toEqual(['a']);
    await send(q, 'b');
    // The hole holds 'b' back until 'b' is older than the hole threshold, then gets its tombstone.
    expect(await receive(`/queues/${q}`)).toEqual([]);
    clock.advance(6 * SECOND);
    const [b] = await receive(`/queues/${q}`);
    expect(b).toMatchObject({ body: 'b' });
    expect((await settle(`/queues/${q}`, b!, 'complete')).status).toBe(204);
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 1 });
    const got = await receive(`/queues/${q}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['a']);
    expect(positionedSeqs(got)).toEqual([true]);
    expect(await peekDlq(q)).toEqual([]);
    expect((await settle(`/queues/${q}`, got[0]!, 'complete')).status).toBe(204);
    expect(await receive(`/queues/${q}`, { maxMessages: 10 })).toEqual([]);
  });

  it('D3, D7: a crash after the transaction leaves the message on its position once; a retry finds nothing left to move', async () => {
    const q = await newQueue();
    await deadLettered(q, 'a');
    const res = await crashing({ match: isPositionedMove, phase: 'after' })('POST', `/queues/${q}/$deadletterqueue/resubmit`, {});
    expect(res.status).toBe(500);
    expect(await peekDlq(q)).toEqual([]);
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 0, remaining: false });
    const got = await receive(`/queues/${q}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['a']);
    expect(positionedSeqs(got)).toEqual([true]);
  });

  it('D3, D7: a move whose transaction meets another transaction waits and puts the message at the position it drew, once', async () => {
    const q = await newQueue();
    await deadLettered(q, 'a');
    const sent: string[] = [];
    const fault: Fault = {
      match: isPositionedMove,
      times: 2,
      interleave: async (command) => {
        sent.push(JSON.stringify(inputOf(command).TransactItems));
        throw transactionConflict(2);
      },
    };
    const res = await crashing(fault)('POST', `/queues/${q}/$deadletterqueue/resubmit`, {});
    expect(res.body).toMatchObject({ resubmitted: 1, remaining: false });
    // The same position each time: a conflict is no tombstone, so nothing is drawn again.
    expect(new Set(sent).size).toBe(1);
    await send(q, 'b');
    const got = await receive(`/queues/${q}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['a', 'b']);
    expect(positionedSeqs(got)).toEqual([true, true]);
  });

  it.each(['dies', 'lives'] as const)(
    'D3, F3: a forwarding move whose transaction fails (the process %s) keeps the message under its lock; it is forwarded once later',
    async (afterwards) => {
      const dst = await newQueue();
      const src = await newQueue({ forwardDeadLetteredMessagesTo: dst });
      await send(src, 'once');
      const [m] = await receive(`/queues/${src}`);
      const res = await settle(`/queues/${src}`, m!, 'deadletter', { deadLetterReason: 'test' }, crashing({ match: isPositionedMove, afterwards }));
      expect(res.status).toBe(500);
      // Nothing landed in dst; the message is still held under its lock in src.
      expect(await receive(`/queues/${dst}`)).toEqual([]);
      expect((await settle(`/queues/${src}`, m!, 'deadletter', { deadLetterReason: 'test' })).status).toBe(204);
      // A process that lives gives its drawn position up at once; a dead one leaves it a hole in
      // dst, which may hold the retry's copy behind it until the hole ages (S1).
      if (afterwards === 'dies') clock.advance(HOLE_AFTER_MS);
      const got = await receive(`/queues/${dst}`, { maxMessages: 10 });
      expect(bodiesOf(got)).toEqual(['once']);
      expect(positionedSeqs(got)).toEqual([true]);
      expect(await receive(`/queues/${src}`)).toEqual([]);
      expect(await peekDlq(src)).toEqual([]);
    },
  );

  it('D3, D7: a tombstone on the drawn position makes the move draw again, and the message lands once', async () => {
    const q = await newQueue();
    await deadLettered(q, 'a');
    const fault: Fault = { match: isPositionedMove, interleave: tombstoneThePut };
    const moving = faultyDeps(deps, fault);
    const res = await apiClient(moving)('POST', `/queues/${q}/$deadletterqueue/resubmit`, {});
    expect(res.body).toMatchObject({ resubmitted: 1, remaining: false });
    expect(moving.faults.tripped).toBe(1);
    await send(q, 'b');
    const got = await receive(`/queues/${q}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['a', 'b']);
    expect(positionedSeqs(got)).toEqual([true, true]);
    expect(await peekDlq(q)).toEqual([]);
  });
});
