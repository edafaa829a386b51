/**
 * Service Bus's REST data plane (lib/protocols/rest) over the broker on DynamoDB Local: the
 * six operations, batches, timeouts, lost locks and missing entities, subscriptions and
 * dead-letter subqueues, and the grant checks (A2). HTTP, SAS and the dispatch are tested
 * over the local runtime in test/local/rest-http.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BrokerError } from '../../lib/errors.js';
import { createBroker, type Broker } from '../support/broker.js';
import type { Grant } from '../../lib/auth/index.js';
import { REST_STATUSES, serveRest, type RestAnswer } from '../../lib/protocols/rest/serve.js';
import { serviceBusErrorAnswer } from '../../lib/protocols/errors.js';
import { HookedClock } from '../support/hooked-clock.js';
import { testDeps } from '../support/table.js';
import { indexLayout } from '../support/default-layout.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { entityKey } from '../../lib/store/keys.js';
import type { Deps } from '../../lib/deps.js';

// Years ahead of real time, so DynamoDB Local's own TTL never removes a message behind a test's back.
const clock = new HookedClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let broker: Broker;
let deps: Deps;

beforeAll(async () => {
  deps = await testDeps(clock, 'restplane');
  broker = createBroker(deps);
});

const ROOT: Grant = { scope: [], rights: ['Manage', 'Send', 'Listen'] };
const SECOND = 1000;

interface Call {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  grant?: Grant;
}

/** What a client would get: the answer, or the error's REST status and detail. */
async function rest({ method, path, headers = {}, body = '', grant = ROOT }: Call, on: Broker = broker): Promise<RestAnswer & { detail?: string }> {
  const [p, q = ''] = path.split('?');
  const query = Object.fromEntries(new URLSearchParams(q));
  try {
    return await serveRest(on.parsed, {
      method,
      rawPath: p!,
      query,
      headers,
      host: 'sb.example',
      scheme: 'https',
      body: typeof body === 'string' ? new TextEncoder().encode(body) : body,
      grant,
    });
  } catch (e) {
    if (!(e instanceof BrokerError)) throw e;
    const answer = serviceBusErrorAnswer(e, 'test', () => {}, REST_STATUSES);
    return { status: answer.status, headers: answer.headers ?? {}, body: '', detail: e.message };
  }
}

let n = 0;
/** A queue made by `by` (new entities in its deps' layout). */
async function newQueue(props: Record<string, unknown> = {}, by: Broker = broker): Promise<string> {
  const name = `rq${++n}`;
  await by.putEntity({ kind: 'queue', name }, props, ROOT);
  return name;
}

const brokerProps = (a: RestAnswer) => JSON.parse(a.headers.BrokerProperties!) as Record<string, unknown>;
const lockPath = (a: RestAnswer) => new URL(a.headers.Location!).pathname;

describe('REST data plane: send and receive', () => {
  it('peek-lock answers 201 with the body as sent, BrokerProperties, typed property headers and a Location on the same host', async () => {
    const q = await newQueue();
    const sent = await rest({
      method: 'POST',
      path: `/${q}/messages`,
      headers: { 'content-type': 'text/plain', brokerproperties: '{"MessageId":"m-1","Label":"M1","TimeToLive":60}', priority: '"High"', n: '3', ok: 'true' },
      body: 'This is a message.',
    });
    expect(sent.status).toBe(201);
    const got = await rest({ method: 'POST', path: `/${q}/Messages/Head?timeout=5` });
    expect(got.status).toBe(201);
    expect(got.body).toBe('This is a message.');
    expect(got.headers).toMatchObject({ 'Content-Type': 'text/plain', priority: '"High"', n: '3', ok: 'true' });
    const bp = brokerProps(got);
    expect(bp).toMatchObject({ MessageId: 'm-1', Label: 'M1', TimeToLive: 60, DeliveryCount: 1, State: 'Active' });
    // The sequence number is a bare JSON number past 2^53, as Service Bus writes it: read exactly from the text.
    const seq = /"SequenceNumber":(\d+)/.exec(got.headers.BrokerProperties!)![1];
    expect(got.headers.Location).toBe(`https://sb.example/${q}/messages/${seq}/${String(bp.LockToken)}`);
    // Sluice's own API sees the same message, its text body marked for sluice/client.
    const [viaSluice] = await broker.peek({ kind: 'queue', name: q, subqueue: 'active' }, {});
    expect(viaSluice).toMatchObject({
      body: 'This is a message.',
      subject: 'M1',
      contentType: 'text/plain',
      applicationProperties: { priority: 'High', n: 3, ok: true },
    });
  });

  it('R1: receive-and-delete answers 200 and removes the message; an empty queue answers 204', async () => {
    const q = await newQueue();
    await rest({ method: 'POST', path: `/${q}/messages`, headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    const got = await rest({ method: 'DELETE', path: `/${q}/messages/head?timeout=5` });
    expect(got.status).toBe(200);
    expect(got.body).toBe('{"a":1}');
    expect(got.headers.Location).toBeUndefined();
    expect(brokerProps(got).LockToken).toBeUndefined();
    expect((await rest({ method: 'DELETE', path: `/${q}/messages/head?timeout=5` })).status).toBe(204);
  });

  it('R2: ?timeout= waits at most 20 s whatever is asked, and a bad timeout is a 400 naming it', async () => {
    const q = await newQueue();
    const before = clock.now();
    const got = await rest({ method: 'POST', path: `/${q}/messages/head?timeout=60` });
    expect(got.status).toBe(204);
    expect(clock.now() - before).toBeGreaterThanOrEqual(20 * SECOND);
    expect(clock.now() - before).toBeLessThan(22 * SECOND);
    const bad = await rest({ method: 'POST', path: `/${q}/messages/head?timeout=soon` });
    expect(bad.status).toBe(400);
    expect(bad.detail).toMatch(/^timeout:/);
  });

  it('a message arriving during the wait is handed out', async () => {
    const q = await newQueue();
    clock.onSleep = async () => {
      await rest({ method: 'POST', path: `/${q}/messages`, body: 'late' });
    };
    const got = await rest({ method: 'POST', path: `/${q}/messages/head?timeout=5` });
    expect(got.status).toBe(201);
    expect(got.body).toBe('late');
  });

  it('bytes that are not UTF-8 come back as the same bytes', async () => {
    const q = await newQueue();
    const bytes = new Uint8Array([0, 255, 128, 1, 2]);
    await rest({ method: 'POST', path: `/${q}/messages`, headers: { 'content-type': 'application/octet-stream' }, body: bytes });
    const got = await rest({ method: 'DELETE', path: `/${q}/messages/head?timeout=5` });
    expect(Buffer.from(got.body)).toEqual(Buffer.from(bytes));
    expect(got.headers['Content-Type']).toBe('application/octet-stream');
  });

  it('B2: a bad property or BrokerProperties is a 400 naming it, and nothing is stored', async () => {
    const q = await newQueue();
    const bad = await rest({ method: 'POST', path: `/${q}/messages`, headers: { priority: 'High' }, body: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.detail).toMatch(/^priority:/);
    const badBp = await rest({ method: 'POST', path: `/${q}/messages`, headers: { brokerproperties: '{"TimeToLive":"soon"}' }, body: 'x' });
    expect(badBp.detail).toMatch(/^BrokerProperties\.TimeToLive:/);
    expect((await rest({ method: 'DELETE', path: `/${q}/messages/head?timeout=5` })).status).toBe(204);
  });

  it('N1: a REST receive on an entity that requires sessions is refused (Service Bus serves sessions over REST neither)', async () => {
    const q = await newQueue({ requiresSession: true });
    expect((await rest({ method: 'POST', path: `/${q}/messages/head?timeout=5` })).status).toBe(400);
  });
});

describe('REST data plane: the lock URL', () => {
  async function locked(q: string) {
    await rest({ method: 'POST', path: `/${q}/messages`, headers: { brokerproperties: '{"MessageId":"order-7"}' }, body: 'x' });
    const got = await rest({ method: 'POST', path: `/${q}/messages/head?timeout=5` });
    expect(got.status).toBe(201);
    return got;
  }

  it('R4/R5: DELETE completes (200); the lock is then lost (404)', async () => {
    const q = await newQueue();
    const url = lockPath(await locked(q));
    expect((await rest({ method: 'DELETE', path: url })).status).toBe(200);
    expect((await rest({ method: 'DELETE', path: url })).status).toBe(404);
    expect((await rest({ method: 'DELETE', path: `/${q}/messages/head?timeout=5` })).status).toBe(204);
  });

  it('R3/R4: PUT unlocks (abandon): the message comes back with DeliveryCount 2', async () => {
    const q = await newQueue();
    const url = lockPath(await locked(q));
    expect((await rest({ method: 'PUT', path: url })).status).toBe(200);
    const again = await rest({ method: 'POST', path: `/${q}/messages/head?timeout=5` });
    expect(brokerProps(again).DeliveryCount).toBe(2);
  });

  it('R4/R5: POST renews the lock; an expired lock is a 404', async () => {
    const q = await newQueue({ lockDuration: 'PT30S' });
    const got = await locked(q);
    const url = lockPath(got);
    clock.advance(20 * SECOND);
    expect((await rest({ method: 'POST', path: url })).status).toBe(200);
    clock.advance(20 * SECOND); // past the first lock, inside the renewed one
    expect((await rest({ method: 'DELETE', path: url })).status).toBe(200);
    const second = lockPath(await locked(q));
    clock.advance(31 * SECOND);
    expect((await rest({ method: 'DELETE', path: second })).status).toBe(404);
  });

  it('the message-id form settles too; a message id that is not the message is a 404', async () => {
    const q = await newQueue();
    const got = await locked(q);
    const token = String(brokerProps(got).LockToken);
    expect((await rest({ method: 'DELETE', path: `/${q}/messages/order-8/${token}` })).status).toBe(404);
    expect((await rest({ method: 'DELETE', path: `/${q}/messages/order-7/${token}` })).status).toBe(200);
  });

  it('a malformed lock token is a 400 naming it', async () => {
    const q = await newQueue();
    const bad = await rest({ method: 'DELETE', path: `/${q}/messages/1/not-a-token` });
    expect(bad.status).toBe(400);
    expect(bad.detail).toMatch(/^lockToken:/);
  });
});

describe('REST data plane: missing entities, topics, subscriptions, dead letters', () => {
  it('an entity that does not exist is 410 Gone for every operation', async () => {
    for (const [method, path] of [
      ['POST', '/nothere/messages'],
      ['POST', '/nothere/messages/head?timeout=5'],
      ['DELETE', '/nothere/messages/head?timeout=5'],
      ['DELETE', '/nothere/messages/1/00000000-0000-0001-0000-000000000000'],
      ['POST', '/t-nothere/Subscriptions/s/messages/head?timeout=5'],
    ] as const) {
      expect((await rest({ method, path, body: method === 'POST' && path.endsWith('messages') ? 'x' : '' })).status, `${method} ${path}`).toBe(410);
    }
  });

  it('F1: a send to a topic reaches its subscriptions, received at {t}/Subscriptions/{s}', async () => {
    await broker.putEntity({ kind: 'topic', name: 'rt' }, {}, ROOT);
    await broker.putEntity({ kind: 'subscription', topic: 'rt', name: 's1' }, {}, ROOT);
    expect((await rest({ method: 'POST', path: '/rt/messages', headers: { color: '"red"' }, body: 'fan' })).status).toBe(201);
    const got = await rest({ method: 'POST', path: '/rt/Subscriptions/s1/messages/head?timeout=5' });
    expect(got.status).toBe(201);
    expect(got.headers.color).toBe('"red"');
    expect(got.headers.Location).toMatch(/^https:\/\/sb\.example\/rt\/Subscriptions\/s1\/messages\/\d+\//);
    expect((await rest({ method: 'DELETE', path: lockPath(got) })).status).toBe(200);
    expect((await rest({ method: 'POST', path: '/rt/Subscriptions/s1/messages', body: 'x' })).status).toBe(400);
  });

  it('D5: the dead-letter subqueue is received at /$DeadLetterQueue with its reason as a property; sending there is refused', async () => {
    const q = await newQueue();
    await rest({ method: 'POST', path: `/${q}/messages`, body: 'bad' });
    const [m] = await broker.receive({ kind: 'queue', name: q, subqueue: 'active' }, {});
    await broker.settle({ kind: 'queue', name: q, subqueue: 'active' }, m!.sequenceNumber, 'deadletter', {
      lockToken: m!.lockToken,
      deadLetterReason: 'poison',
    });
    const got = await rest({ method: 'DELETE', path: `/${q}/%24DeadLetterQueue/messages/head?timeout=5` });
    expect(got.status).toBe(200);
    expect(got.body).toBe('bad');
    expect(got.headers.DeadLetterReason).toBe('"poison"');
    expect((await rest({ method: 'POST', path: `/${q}/$DeadLetterQueue/messages`, body: 'x' })).status).toBe(400);
  });
});

describe('REST data plane: batches', () => {
  it('S4: a batch is stored in order, more than 100 entries included', async () => {
    const q = await newQueue();
    const entries = Array.from({ length: 130 }, (_, i) => ({ Body: `m${i}`, BrokerProperties: { MessageId: `id${i}` }, UserProperties: { Index: i } }));
    const sent = await rest({
      method: 'POST',
      path: `/${q}/messages`,
      headers: { 'content-type': 'application/vnd.microsoft.servicebus.json' },
      body: JSON.stringify(entries),
    });
    expect(sent.status).toBe(201);
    const all = await broker.peek({ kind: 'queue', name: q, subqueue: 'active' }, { maxMessages: '100' });
    expect(all.map((m) => m.body)).toEqual(entries.slice(0, 100).map((e) => e.Body));
    expect(all[5]!.applicationProperties).toMatchObject({ Index: 5 });
  });

  it('S4: one bad entry refuses the whole batch, naming it, and stores nothing', async () => {
    const q = await newQueue();
    const bad = await rest({
      method: 'POST',
      path: `/${q}/messages`,
      headers: { 'content-type': 'application/vnd.microsoft.servicebus.json' },
      body: JSON.stringify([{ Body: 'ok' }, { Body: 'x', BrokerProperties: { Label: 5 } }]),
    });
    expect(bad.status).toBe(400);
    expect(bad.detail).toMatch(/^\[1\]\.BrokerProperties\.Label:/);
    expect(await broker.peek({ kind: 'queue', name: q, subqueue: 'active' }, {})).toEqual([]);
  });
});

describe('REST data plane: a store that fails part of a batch', () => {
  it('S4: the answer is a retryable 500 naming the message that was not stored; the others are stored once', async () => {
    // Today's layout (indexLayout), whose batch puts each message on its own: a positioned
    // batch stores a partition's messages whole or not at all.
    const q = await newQueue({}, createBroker({ ...deps, ...indexLayout }));
    const failing = createBroker(faultyDeps(deps, { match: both(is(PutCommand), (c) => inputOf(c).Item?.messageId === 'b'), afterwards: 'lives' }));
    const entries = ['a', 'b', 'c'].map((id) => ({ Body: id, BrokerProperties: { MessageId: id } }));
    const sent = await rest(
      { method: 'POST', path: `/${q}/messages`, headers: { 'content-type': 'application/vnd.microsoft.servicebus.json' }, body: JSON.stringify(entries) },
      failing,
    );
    expect(sent.status).toBe(500);
    expect(sent.detail).toMatch(/1 of 3 messages were not stored \(MessageId b\)/);
    const stored = await broker.peek({ kind: 'queue', name: q, subqueue: 'active' }, {});
    expect(stored.map((m) => m.messageId)).toEqual(['a', 'c']);
  });

  it('S4: on a ticketed queue, whose batch stores a partition whole or not at all, one failed put fails all three, each named, and none is stored', async () => {
    const q = await newQueue({}, createBroker({ ...deps, newEntityLayout: 'tickets' }));
    const entity = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', q) }));
    expect(entity.Item).toMatchObject({ layout: 'positions', ticketed: true });
    const failing = createBroker(faultyDeps(deps, { match: both(is(PutCommand), (c) => inputOf(c).Item?.messageId === 'b'), afterwards: 'lives' }));
    const entries = ['a', 'b', 'c'].map((id) => ({ Body: id, BrokerProperties: { MessageId: id } }));
    const sent = await rest(
      { method: 'POST', path: `/${q}/messages`, headers: { 'content-type': 'application/vnd.microsoft.servicebus.json' }, body: JSON.stringify(entries) },
      failing,
    );
    expect(sent.status).toBe(500);
    expect(sent.detail).toMatch(/3 of 3 messages were not stored \(MessageId a, b, c\)/);
    expect(await broker.peek({ kind: 'queue', name: q, subqueue: 'active' }, {})).toEqual([]);
    // The client's retry of the batch stores each message once.
    const retried = await rest({
      method: 'POST',
      path: `/${q}/messages`,
      headers: { 'content-type': 'application/vnd.microsoft.servicebus.json' },
      body: JSON.stringify(entries),
    });
    expect(retried.status).toBe(201);
    expect((await broker.peek({ kind: 'queue', name: q, subqueue: 'active' }, { maxMessages: '10' })).map((m) => m.messageId)).toEqual(['a', 'b', 'c']);
  });
});

describe('REST data plane: grants (A2)', () => {
  it('A2: a token for one queue reaches neither another queue nor a topic of the same name, and Send does not receive', async () => {
    const a = await newQueue();
    const b = await newQueue();
    await broker.putEntity({ kind: 'topic', name: a }, {}, ROOT).catch(() => undefined);
    const onA: Grant = { scope: ['queues', a], rights: ['Send', 'Listen'] };
    expect((await rest({ method: 'POST', path: `/${a}/messages`, body: 'x', grant: onA })).status).toBe(201);
    expect((await rest({ method: 'POST', path: `/${b}/messages`, body: 'x', grant: onA })).status).toBe(401);
    expect((await rest({ method: 'POST', path: `/${b}/messages/head?timeout=5`, grant: onA })).status).toBe(401);
    const sendOnly: Grant = { scope: ['queues', a], rights: ['Send'] };
    expect((await rest({ method: 'POST', path: `/${a}/messages/head?timeout=5`, grant: sendOnly })).status).toBe(401);
    expect((await rest({ method: 'DELETE', path: `/${a}/$DeadLetterQueue/messages/head?timeout=5`, grant: sendOnly })).status).toBe(401);
    const got = await rest({ method: 'POST', path: `/${a}/messages/head?timeout=5`, grant: onA });
    expect((await rest({ method: 'DELETE', path: lockPath(got), grant: sendOnly })).status).toBe(401);
    const onB: Grant = { scope: ['queues', b], rights: ['Listen'] };
    expect((await rest({ method: 'DELETE', path: `/${b}/messages/${lockPath(got).split('/').slice(-2).join('/')}`, grant: onB })).status).toBe(404);
  });

  it('A2: a token for a topic sends to the topic only, and a subscription token receives only there', async () => {
    await broker.putEntity({ kind: 'topic', name: 'gt' }, {}, ROOT);
    await broker.putEntity({ kind: 'subscription', topic: 'gt', name: 'a' }, {}, ROOT);
    await broker.putEntity({ kind: 'subscription', topic: 'gt', name: 'b' }, {}, ROOT);
    const onTopic: Grant = { scope: ['topics', 'gt'], rights: ['Send'] };
    expect((await rest({ method: 'POST', path: '/gt/messages', body: 'x', grant: onTopic })).status).toBe(201);
    const onSubA: Grant = { scope: ['topics', 'gt', 'subscriptions', 'a'], rights: ['Listen'] };
    expect((await rest({ method: 'POST', path: '/gt/messages', body: 'x', grant: onSubA })).status).toBe(401);
    expect((await rest({ method: 'DELETE', path: '/gt/Subscriptions/b/messages/head?timeout=5', grant: onSubA })).status).toBe(401);
    expect((await rest({ method: 'DELETE', path: '/gt/Subscriptions/a/messages/head?timeout=5', grant: onSubA })).status).toBe(200);
  });
});
