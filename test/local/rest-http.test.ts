/**
 * Service Bus's REST data plane over HTTP on the local runtime (the api function, as API
 * Gateway runs it): the real, unmodified `azure-sb` package; raw HTTP for what it cannot
 * express (batches, property typing and refusals, timeouts, 404/410, the message-id lock URL
 * form, tokens in the forms curl guides sign); and messages crossing between the REST plane
 * and `sluice/client` with body and properties intact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { request as httpsRequest } from 'node:https';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, ServiceBusClient } from '../../lib/client/index.js';
import { signToken } from '../../lib/auth/index.js';
import { startTestRuntime } from '../support/runtime.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type SbMessage = { body: string; brokerProperties: Record<string, any>; customProperties?: Record<string, any>; location?: string; contentType?: string };
type ServiceBusService = Record<string, (...args: any[]) => void>;
const azure = createRequire(import.meta.url)('azure-sb') as { createServiceBusService(cs: string): ServiceBusService };

/** An azure-sb call as a promise: its callback's error, or its result. */
function call<T = unknown>(sb: ServiceBusService, method: string, ...args: unknown[]): Promise<T> {
  return new Promise((resolve, reject) => sb[method]!(...args, (error: unknown, result: T) => (error ? reject(error) : resolve(result))));
}
/* eslint-enable @typescript-eslint/no-explicit-any */

let runtime: LocalRuntime;
let sb: ServiceBusService;
let client: ServiceBusClient;
let admin: ServiceBusAdministrationClient;

const connectionString = () => `Endpoint=${runtime.url}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey}`;
const token = (resource: string, keyName = 'RootManageSharedAccessKey', key = runtime.rootKey) =>
  signToken({ resourceUri: resource, keyName, key, expiresAt: Math.floor(Date.now() / 1000) + 3600 });

beforeAll(async () => {
  runtime = await startTestRuntime('resthttp', { inMemory: true });
  sb = azure.createServiceBusService(connectionString());
  client = new ServiceBusClient(connectionString());
  admin = new ServiceBusAdministrationClient(connectionString());
});

afterAll(async () => {
  await client?.close();
  await runtime?.stop();
});

let n = 0;
async function newQueue(): Promise<string> {
  const name = `hq${++n}`;
  await admin.createQueue(name);
  return name;
}

/** A raw request signed for the runtime's root (or `auth` as given). */
function raw(method: string, path: string, init: { headers?: Record<string, string>; body?: string | Uint8Array; auth?: string } = {}) {
  return fetch(`${runtime.url}${path}`, {
    method,
    headers: { authorization: init.auth ?? token(`${runtime.url}/`), ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
}

describe('azure-sb (unmodified) against the REST data plane', () => {
  it('sends, peek-locks, renews, unlocks, completes, and finds the queue empty', async () => {
    const q = await newQueue();
    await call(sb, 'sendQueueMessage', q, {
      body: 'Hello world!',
      brokerProperties: { MessageId: 'm-1', Label: 'greeting' },
      customProperties: { Priority: 'High', n: 3 },
    });
    const first = await call<SbMessage>(sb, 'receiveQueueMessage', q, { isPeekLock: true, timeoutIntervalInS: 5 });
    expect(first.body).toBe('Hello world!');
    expect(first.brokerProperties).toMatchObject({ MessageId: 'm-1', Label: 'greeting', DeliveryCount: 1 });
    expect(first.customProperties).toMatchObject({ priority: 'High', n: 3 });
    expect(first.location).toMatch(new RegExp(`/${q}/messages/\\d+/[0-9a-f-]{36}$`));
    const lockedUntil = Date.parse(first.brokerProperties.LockedUntilUtc);
    runtime.clock.advance(1100);
    await call(sb, 'renewLockForMessage', first);
    await call(sb, 'unlockMessage', first);
    const again = await call<SbMessage>(sb, 'receiveQueueMessage', q, { isPeekLock: true, timeoutIntervalInS: 5 });
    expect(again.brokerProperties.DeliveryCount).toBe(2);
    expect(Date.parse(again.brokerProperties.LockedUntilUtc)).toBeGreaterThanOrEqual(lockedUntil);
    await call(sb, 'deleteMessage', again);
    await expect(call(sb, 'receiveQueueMessage', q, { timeoutIntervalInS: 1 })).rejects.toBe('No messages to receive');
  });

  it('receive-and-delete takes the message at once', async () => {
    const q = await newQueue();
    await call(sb, 'sendQueueMessage', q, 'once');
    const got = await call<SbMessage>(sb, 'receiveQueueMessage', q, { timeoutIntervalInS: 5 });
    expect(got.body).toBe('once');
    expect(got.location).toBeUndefined();
    await expect(call(sb, 'receiveQueueMessage', q, { isPeekLock: true, timeoutIntervalInS: 1 })).rejects.toBe('No messages to receive');
  });

  it('F1: a topic send reaches the subscription', async () => {
    await admin.createTopic('ht');
    await admin.createSubscription('ht', 'sub');
    await call(sb, 'sendTopicMessage', 'ht', { body: 'fan', customProperties: { color: 'red' } });
    const got = await call<SbMessage>(sb, 'receiveSubscriptionMessage', 'ht', 'sub', { isPeekLock: true, timeoutIntervalInS: 5 });
    expect(got.body).toBe('fan');
    expect(got.customProperties).toMatchObject({ color: 'red' });
    await call(sb, 'deleteMessage', got);
  });

  it('a send to an entity that does not exist fails with 410', async () => {
    const error = await call(sb, 'sendQueueMessage', 'hq-none', 'x').catch((e: unknown) => e);
    expect((error as { statusCode?: number }).statusCode).toBe(410);
  });
});

describe('REST and sluice/client: one message, both ways, body and properties intact', () => {
  it('azure-sb to sluice/client: the JSON body as its value, properties typed (names as API Gateway passes them)', async () => {
    const q = await newQueue();
    const when = new Date('2026-01-02T03:04:05Z');
    await call(sb, 'sendQueueMessage', q, {
      body: '{"orderId":7}',
      contentType: 'application/json',
      brokerProperties: { MessageId: 'o-7', CorrelationId: 'c-7', Label: 'order', ReplyTo: 'replies', TimeToLive: 3600 },
      customProperties: { Priority: 'High', count: 3, ratio: 0.5, urgent: true, when },
    });
    const receiver = client.createReceiver(q);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m!.body).toEqual({ orderId: 7 });
    expect(m).toMatchObject({
      messageId: 'o-7',
      correlationId: 'c-7',
      subject: 'order',
      replyTo: 'replies',
      contentType: 'application/json',
      timeToLive: 3_600_000,
    });
    expect(m!.applicationProperties).toEqual({ priority: 'High', count: 3, ratio: 0.5, urgent: true, when });
    await receiver.completeMessage(m!);
    await receiver.close();
  });

  it('text that is not JSON reaches sluice/client as bytes, as the SDK reads a data body', async () => {
    const q = await newQueue();
    await call(sb, 'sendQueueMessage', q, 'plain text');
    const receiver = client.createReceiver(q, { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(Buffer.from(m!.body as Uint8Array).toString()).toBe('plain text');
    await receiver.close();
  });

  it('R4: sluice/client abandoning a REST-sent text message with new properties keeps its body as sent', async () => {
    const q = await newQueue();
    await call(sb, 'sendQueueMessage', q, { body: 'plain text', customProperties: { stage: 1 } });
    const receiver = client.createReceiver(q);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    await receiver.abandonMessage(m!, { stage: 2, seen: new Date('2026-01-02T03:04:05Z') });
    await receiver.close();
    const again = await call<SbMessage>(sb, 'receiveQueueMessage', q, { timeoutIntervalInS: 5 });
    expect(again.body).toBe('plain text');
    expect(again.customProperties).toMatchObject({ stage: 2, seen: new Date('2026-01-02T03:04:05Z') });
    expect(again.brokerProperties.DeliveryCount).toBe(2);
  });

  it('sluice/client to azure-sb: JSON text, bytes as sent, properties typed by their spelling', async () => {
    const q = await newQueue();
    const sender = client.createSender(q);
    const when = new Date('2026-01-02T03:04:05Z');
    await sender.sendMessages({
      body: { a: 1 },
      messageId: 's-1',
      subject: 'from-sdk',
      contentType: 'application/json',
      applicationProperties: { color: 'red', n: 2, ok: false, when },
    });
    await sender.sendMessages({ body: Buffer.from([0, 1, 2, 250]), messageId: 's-2' });
    await sender.close();
    const json = await call<SbMessage>(sb, 'receiveQueueMessage', q, { timeoutIntervalInS: 5 });
    expect(json.body).toBe('{"a":1}');
    expect(json.contentType).toBe('application/json');
    expect(json.brokerProperties).toMatchObject({ MessageId: 's-1', Label: 'from-sdk' });
    expect(json.customProperties).toMatchObject({ color: 'red', n: 2, ok: false, when });
    const bytes = await raw('DELETE', `/${q}/messages/head?timeout=5`);
    expect(bytes.status).toBe(200);
    expect(Buffer.from(await bytes.arrayBuffer())).toEqual(Buffer.from([0, 1, 2, 250]));
  });

  it('bytes sent over REST reach sluice/client as a Buffer and a REST receiver as the same bytes', async () => {
    const q = await newQueue();
    const bytes = new Uint8Array([0, 255, 128, 7]);
    for (let i = 0; i < 2; i++)
      expect((await raw('POST', `/${q}/messages`, { headers: { 'content-type': 'application/octet-stream' }, body: bytes })).status).toBe(201);
    const receiver = client.createReceiver(q, { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(Buffer.isBuffer(m!.body)).toBe(true);
    expect(Buffer.from(m!.body as Uint8Array)).toEqual(Buffer.from(bytes));
    expect(m!.contentType).toBe('application/octet-stream');
    await receiver.close();
    const got = await raw('DELETE', `/${q}/messages/head?timeout=5`);
    expect(got.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await got.arrayBuffer())).toEqual(Buffer.from(bytes));
  });

  it('Sluice-Property-Names keeps the spelling of names API Gateway lower-cases', async () => {
    const q = await newQueue();
    const sent = await raw('POST', `/${q}/messages`, { headers: { Priority: '"High"', 'Sluice-Property-Names': 'Priority' }, body: '"x"' });
    expect(sent.status).toBe(201);
    const receiver = client.createReceiver(q, { receiveMode: 'receiveAndDelete' });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m!.applicationProperties).toEqual({ Priority: 'High' });
    expect(m!.body).toBe('x');
    await receiver.close();
  });
});

describe('REST data plane over raw HTTP', () => {
  it('S4: a batch (application/vnd.microsoft.servicebus.json) is stored in order with its UserProperties', async () => {
    const q = await newQueue();
    const sent = await raw('POST', `/${q}/messages`, {
      headers: { 'content-type': 'application/vnd.microsoft.servicebus.json' },
      body: JSON.stringify([
        { Body: 'This is the first message', UserProperties: { Color: 'Red' }, BrokerProperties: { Label: 'M1' } },
        { Body: 'This is the second message', UserProperties: { Color: 'Green' }, BrokerProperties: { Label: 'M2', TimeToLiveTimeSpan: '0.00:00:40' } },
      ]),
    });
    expect(sent.status).toBe(201);
    for (const [label, color, body] of [
      ['M1', 'Red', 'This is the first message'],
      ['M2', 'Green', 'This is the second message'],
    ]) {
      const got = await raw('DELETE', `/${q}/messages/head?timeout=5`);
      expect(await got.text()).toBe(body);
      expect(JSON.parse(got.headers.get('brokerproperties')!).Label).toBe(label);
      expect(got.headers.get('color')).toBe(`"${color}"`);
    }
  });

  it('B2: a property whose value has no type is a 400 with an XML Error naming the header; nothing is stored', async () => {
    const q = await newQueue();
    const bad = await raw('POST', `/${q}/messages`, { headers: { Priority: 'High' }, body: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/xml/);
    expect(await bad.text()).toMatch(/^<Error><Code>400<\/Code><Detail>priority: must be a quoted string/);
    expect((await raw('DELETE', `/${q}/messages/head?timeout=0`)).status).toBe(204);
  });

  it('R2: an empty queue answers 204 after the timeout; a missing entity 410; a lost lock 404', async () => {
    const q = await newQueue();
    const started = Date.now();
    const empty = await raw('POST', `/${q}/messages/head?timeout=1`);
    expect(empty.status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect((await raw('POST', '/hq-missing/messages/head?timeout=0')).status).toBe(410);
    await raw('POST', `/${q}/messages`, { headers: { BrokerProperties: '{"MessageId":"by-id"}' }, body: 'x' });
    const got = await raw('POST', `/${q}/messages/head?timeout=5`);
    expect(got.status).toBe(201);
    const { LockToken } = JSON.parse(got.headers.get('brokerproperties')!) as { LockToken: string };
    // The message-id form of the lock URL.
    expect((await raw('POST', `/${q}/messages/by-id/${LockToken}`)).status).toBe(200);
    expect((await raw('DELETE', `/${q}/messages/by-id/${LockToken}`)).status).toBe(200);
    expect((await raw('DELETE', new URL(got.headers.get('location')!).pathname)).status).toBe(404);
  });

  it('A2: tokens signed as curl guides do (entity URL, host only) reach only what their rule covers', async () => {
    const a = await newQueue();
    const b = await newQueue();
    const rule = await (
      await fetch(`${runtime.url}/queues/${a}/authorization-rules/app`, {
        method: 'PUT',
        headers: { authorization: token(`${runtime.url}/`), 'content-type': 'application/json' },
        body: JSON.stringify({ rights: ['Send'] }),
      })
    ).json();
    const onA = token(`${runtime.url}/${a}`, 'app', (rule as { primaryKey: string }).primaryKey);
    expect((await raw('POST', `/${a}/messages`, { auth: onA, body: 'x' })).status).toBe(201);
    expect((await raw('POST', `/${b}/messages`, { auth: onA, body: 'x' })).status).toBe(401);
    expect((await raw('POST', `/${a}/messages/head?timeout=0`, { auth: onA })).status).toBe(401);
    expect((await raw('DELETE', `/${a}/$DeadLetterQueue/messages/head?timeout=0`, { auth: onA })).status).toBe(401);
    const hostOnly = token(new URL(runtime.url).host);
    expect((await raw('DELETE', `/${a}/messages/head?timeout=5`, { auth: hostOnly })).status).toBe(200);
    expect((await raw('POST', `/${a}/messages`, { auth: 'SharedAccessSignature sr=x&sig=y&se=1&skn=z', body: 'x' })).status).toBe(401);
  });

  it('A2: the lock URL and the subscription paths need a token for that entity with Listen', async () => {
    const a = await newQueue();
    const b = await newQueue();
    const rule = await (
      await fetch(`${runtime.url}/queues/${b}/authorization-rules/reader`, {
        method: 'PUT',
        headers: { authorization: token(`${runtime.url}/`), 'content-type': 'application/json' },
        body: JSON.stringify({ rights: ['Listen'] }),
      })
    ).json();
    const onB = token(`${runtime.url}/${b}`, 'reader', (rule as { primaryKey: string }).primaryKey);
    await raw('POST', `/${a}/messages`, { body: 'x' });
    const got = await raw('POST', `/${a}/messages/head?timeout=5`);
    const lock = new URL(got.headers.get('location')!).pathname;
    for (const method of ['DELETE', 'PUT', 'POST']) expect((await raw(method, lock, { auth: onB })).status, method).toBe(401);
    // The same lock token under b's path names no message of b's.
    expect((await raw('DELETE', lock.replace(`/${a}/`, `/${b}/`), { auth: onB })).status).toBe(404);
    await admin.createTopic('ht2');
    await admin.createSubscription('ht2', 's');
    expect((await raw('POST', '/ht2/Subscriptions/s/messages/head?timeout=0', { auth: onB })).status).toBe(401);
    expect((await raw('DELETE', lock)).status).toBe(200);
  });

  it("Sluice's own API answers as before on the same paths' neighbours", async () => {
    const q = await newQueue();
    const sent = await raw('POST', `/queues/${q}/messages`, { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ body: { a: 1 } }) });
    expect(sent.status).toBe(201);
    expect(((await sent.json()) as { sequenceNumber: string }).sequenceNumber).toMatch(/^\d+$/);
    const got = await raw('DELETE', `/${q}/messages/head?timeout=5`);
    expect(await got.text()).toBe('{"a":1}');
  });
});

describe('REST data plane over the local runtime with --tls', () => {
  let tls: LocalRuntime;
  beforeAll(async () => {
    tls = await startTestRuntime('resttls', { inMemory: true, tls: true });
  });
  afterAll(async () => {
    await tls?.stop();
  });

  /** One HTTPS request trusting the runtime's certificate. */
  function secure(
    method: string,
    path: string,
    body = '',
    headers: Record<string, string> = {},
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
    const authorization = token(`${tls.url}/`, 'RootManageSharedAccessKey', tls.rootKey);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        `${tls.url}${path}`,
        { method, ca: tls.certificate!.pem, headers: { authorization, 'content-length': Buffer.byteLength(body), ...headers } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('the lock URL names https and the host the client used, and settles there', async () => {
    expect((await secure('PUT', '/queues/tq', '{}', { 'content-type': 'application/json' })).status).toBe(201);
    expect((await secure('POST', '/tq/messages', 'over tls')).status).toBe(201);
    const got = await secure('POST', '/tq/messages/head?timeout=5');
    expect(got.status).toBe(201);
    expect(got.text).toBe('over tls');
    const location = new URL(String(got.headers.location));
    expect(location.origin).toBe(tls.url);
    expect((await secure('DELETE', location.pathname)).status).toBe(200);
  });
});
