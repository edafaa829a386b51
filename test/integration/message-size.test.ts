/**
 * "A message's life": a 1 KB JSON event's item fits in 1 KB, so each write of its life
 * (send, lock, complete) costs one write unit on the table. Its body is stored compressed
 * (lib/messages/body.ts) only when that saves a write unit, and every path that reads a body
 * gives back the text that was sent: receive, peek, receive-and-delete, deferral, dead-letter
 * copies, resubmit, forwarding, topic fan-out, and the stream's TTL backstop (with binaries
 * base64-encoded, as Lambda delivers them).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb-streams';
import { CapacityMeter } from '../../bench/capacity.js';
import { incompressibleBody, jsonEvent } from '../../bench/payloads.js';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { toLambdaImage } from '../../infra/local/stream-records.js';
import { bodyTextOf } from '../../lib/messages/body.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { itemBytes } from '../../lib/item-size.js';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { messageItem, messageItems, nextStreamSequence } from '../support/stream.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
/** Creates queues in today's layout: the tests that read a message's msg/ item and its write units. */
let indexApi: ReturnType<typeof apiClient>;
let meter: CapacityMeter;

beforeAll(async () => {
  deps = await testDeps(clock, 'message-size');
  meter = new CapacityMeter(deps.db);
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;

async function ok(method: string, path: string, body?: unknown, status = 200) {
  const res = await api(method, path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
}
const createQueue = (name: string, props: Record<string, unknown> = {}) => ok('PUT', `/queues/${name}`, props, 201);
async function createIndexQueue(name: string, props: Record<string, unknown> = {}) {
  const res = await indexApi('PUT', `/queues/${name}`, props);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}
const send = (path: string, message: Record<string, unknown>) => ok('POST', `${path}/messages`, message, 201);
const receive = async (path: string, body: Record<string, unknown> = {}): Promise<Msg[]> => (await ok('POST', `${path}/messages/receive`, body)).messages;
const peek = async (path: string): Promise<Msg[]> => (await ok('GET', `${path}/messages?maxMessages=100`)).messages;
const complete = (path: string, m: Msg) => ok('POST', `${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken }, 204);
const dlq = (path: string) => `${path}/$deadletterqueue`;

const event = jsonEvent(7);

describe('a 1 KB JSON event fits in one write unit', () => {
  it('is stored compressed, under 1 KB sent and locked, and each write of its life costs 1 unit on the table', async () => {
    await createIndexQueue('size-json', { lockDuration: 'PT5M' });
    expect(Buffer.byteLength(JSON.stringify(event))).toBe(1024);
    const sendTally = await meter.measure(() => send('/queues/size-json', { body: event, applicationProperties: { tenant: 'eu-1' } }));
    const sent = sendTally.result;
    const stored = (await messageItem(deps, 'size-json', 'active', sent.sequenceNumber))!;
    expect(stored.body).toBeInstanceOf(Uint8Array);
    expect(itemBytes(stored)).toBeLessThanOrEqual(1024);

    const got = await meter.measure(() => receive('/queues/size-json'));
    const [m] = got.result;
    expect(m.body).toEqual(event);
    const locked = (await messageItem(deps, 'size-json', 'active', sent.sequenceNumber))!;
    expect(locked.lockToken).toBeDefined();
    expect(itemBytes(locked)).toBeLessThanOrEqual(1024);
    const done = await meter.measure(() => complete('/queues/size-json', m));

    const messageWrites = [...sendTally.tally.calls, ...got.tally.calls, ...done.tally.calls].filter((c) => c.kind === 'write' && c.label.includes('message'));
    expect(messageWrites.map((c) => c.type)).toEqual(['PutItem', 'UpdateItem', 'DeleteItem']);
    for (const w of messageWrites) expect(w.reported.table, `${w.type}: ${JSON.stringify(w.reported)}`).toBe(1);
  });

  it("N3/N4: in a session too: under 1 KB, held by its session's record (no write of the message, 1 unit for the record), 1 unit for the complete under the session lock", async () => {
    await createQueue('size-session', { requiresSession: true, lockDuration: 'PT5M' });
    const path = '/queues/size-session';
    for (let n = 0; n < 10; n++) {
      const sessionId = `order-${n}`;
      const sent = await send(path, { body: jsonEvent(n), sessionId, applicationProperties: { tenant: 'eu-1' } });
      const { sessionLockToken } = await ok('POST', `${path}/sessions/accept`, { sessionId });
      const got = await meter.measure(() => ok('POST', `${path}/sessions/${sessionId}/receive`, { sessionLockToken, maxMessages: 1 }));
      const [m] = got.result.messages;
      expect(m.body).toEqual(jsonEvent(n));
      expect(m.deliveryCount).toBe(1);
      const held = (await messageItem(deps, 'size-session', 'active', sent.sequenceNumber))!;
      expect(held.slk).toBeUndefined();
      expect(itemBytes(held), `event ${n}`).toBeLessThanOrEqual(1024);
      const done = await meter.measure(() => complete(path, m));
      const lock = got.tally.calls.filter((c) => c.kind === 'write' && c.label.includes('message'));
      const record = got.tally.calls.filter((c) => c.kind === 'write' && c.label.includes('session'));
      const settle = done.tally.calls.filter((c) => c.kind === 'write' && c.label.includes('message'));
      expect(lock).toEqual([]);
      // The record is not projected into the ready index: the session item's write costs its table unit only.
      expect(record.map((c) => [c.type, c.reported.table, c.reported.total])).toEqual([['UpdateItem', 1, 1]]);
      // The session lock is read, not checked in a transaction (which bills each part twice): the delete is the message's only write.
      expect(settle.map((c) => [c.type, c.reported.table])).toEqual([['DeleteItem', 1]]);
      await ok('POST', `${path}/sessions/${sessionId}/release`, { sessionLockToken }, 204);
    }
  });

  it('keeps a small body as text: compressing it would save nothing', async () => {
    await createIndexQueue('size-small');
    const sent = await send('/queues/size-small', { body: { orderId: 'ORD-1', total: 12.5 } });
    const stored = (await messageItem(deps, 'size-small', 'active', sent.sequenceNumber))!;
    expect(stored.body).toBe('{"orderId":"ORD-1","total":12.5}');
  });

  it('keeps an incompressible 1 KB body as text: compressed, it would still take two units', async () => {
    await createIndexQueue('size-random');
    const body = incompressibleBody(1024);
    const sent = await send('/queues/size-random', { body });
    const stored = (await messageItem(deps, 'size-random', 'active', sent.sequenceNumber))!;
    expect(stored.body).toBe(JSON.stringify(body));
    const [m] = await receive('/queues/size-random', { mode: 'receiveAndDelete' });
    expect(m.body).toBe(body);
  });

  it('compresses a large JSON body and reports its uncompressed size (S5)', async () => {
    await createIndexQueue('size-large');
    const big = jsonEvent(3, 64 * 1024);
    const sent = await send('/queues/size-large', { body: big });
    const stored = (await messageItem(deps, 'size-large', 'active', sent.sequenceNumber))!;
    expect(stored.body).toBeInstanceOf(Uint8Array);
    expect(stored.size).toBe(64 * 1024);
    expect(itemBytes(stored)).toBeLessThan(16 * 1024);
    expect((await peek('/queues/size-large'))[0].body).toEqual(big);
  });
});

describe('every path that reads a compressed body gives back the text that was sent', () => {
  it('peek, receive-and-delete, deferral and deferred receive', async () => {
    await createQueue('paths-basic');
    await send('/queues/paths-basic', { body: event });
    expect((await peek('/queues/paths-basic'))[0].body).toEqual(event);
    const [m] = await receive('/queues/paths-basic');
    await ok('POST', `/queues/paths-basic/messages/${m.sequenceNumber}/defer`, { lockToken: m.lockToken, propertiesToModify: { deferred: true } }, 204);
    const deferred = await ok('POST', '/queues/paths-basic/messages/deferred', { sequenceNumbers: [m.sequenceNumber] });
    expect(deferred.messages[0].body).toEqual(event);
    expect(deferred.messages[0].applicationProperties).toEqual({ deferred: true });
    await complete('/queues/paths-basic', deferred.messages[0]);
    await send('/queues/paths-basic', { body: event });
    const [taken] = await receive('/queues/paths-basic', { mode: 'receiveAndDelete' });
    expect(taken.body).toEqual(event);
  });

  it('a dead-letter copy, and the message resubmitted from the dead-letter subqueue', async () => {
    await createQueue('paths-dlq');
    await send('/queues/paths-dlq', { body: event, subject: 'order' });
    const [m] = await receive('/queues/paths-dlq');
    await ok(
      'POST',
      `/queues/paths-dlq/messages/${m.sequenceNumber}/deadletter`,
      { lockToken: m.lockToken, deadLetterReason: 'Broken', deadLetterErrorDescription: 'x'.repeat(200) },
      204,
    );
    const [dead] = await messageItems(deps, 'paths-dlq', 'deadletter');
    expect(dead!.body).toBeInstanceOf(Uint8Array);
    expect(JSON.parse(bodyTextOf(dead!.body))).toEqual(event);
    expect((await peek(dlq('/queues/paths-dlq')))[0]).toMatchObject({ body: event, subject: 'order', deadLetterReason: 'Broken' });
    expect((await ok('POST', `${dlq('/queues/paths-dlq')}/resubmit`, {})).resubmitted).toBe(1);
    const [again] = await receive('/queues/paths-dlq');
    expect(again).toMatchObject({ body: event, subject: 'order' });
  });

  it('forwarding, and a topic fanning out to its subscriptions', async () => {
    await createQueue('paths-fwd-target');
    await createQueue('paths-fwd', { forwardTo: 'paths-fwd-target' });
    await send('/queues/paths-fwd', { body: event });
    expect((await receive('/queues/paths-fwd-target'))[0].body).toEqual(event);

    await ok('PUT', '/topics/paths-topic', {}, 201);
    for (const s of ['a', 'b']) await ok('PUT', `/topics/paths-topic/subscriptions/${s}`, {}, 201);
    await send('/topics/paths-topic', { body: event });
    for (const s of ['a', 'b']) expect((await receive(`/topics/paths-topic/subscriptions/${s}`))[0].body).toEqual(event);
  });

  it("the stream's TTL backstop dead-letters a compressed message from a Lambda-shaped record (base64 binary)", async () => {
    await createIndexQueue('paths-ttl', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const sent = await send('/queues/paths-ttl', { body: event });
    const item = (await messageItem(deps, 'paths-ttl', 'active', sent.sequenceNumber)) as MessageItem;
    expect(item.body).toBeInstanceOf(Uint8Array);
    clock.advance(2 * 60_000);
    await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: { pk: item.pk, sk: item.sk } }));
    const oldImage = toLambdaImage(marshall(item) as Record<string, AttributeValue>);
    expect(typeof oldImage.body?.B).toBe('string');
    const sequenceNumber = nextStreamSequence();
    const result = await createStreamHandler(deps)({
      Records: [
        {
          eventID: `ev-${sequenceNumber}`,
          eventName: 'REMOVE',
          eventSource: 'aws:dynamodb',
          userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
          dynamodb: {
            Keys: { pk: { S: item.pk }, sk: { S: item.sk } },
            OldImage: oldImage,
            SequenceNumber: sequenceNumber,
            ApproximateCreationDateTime: Math.floor(clock.now() / 1000),
            StreamViewType: 'NEW_AND_OLD_IMAGES',
          },
        },
      ],
    });
    expect(result?.batchItemFailures ?? []).toEqual([]);
    const [dead] = await receive(dlq('/queues/paths-ttl'));
    expect(dead).toMatchObject({ body: event, deadLetterReason: 'TTLExpiredException' });
  });
});
