/**
 * R10 at Lambda's answer limit: receives and peeks of messages near S5's 256 KB over the local
 * runtime's HTTP, which answers 502 (as API Gateway does) when a handler's result passes
 * Lambda's 6 MB. Every message taken is handed out: fewer than `maxMessages` per answer, none
 * lost, none locked without being handed out; and the client pages on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Long from 'long';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, ServiceBusClient } from '../../lib/client/index.js';
import { connectionStringToken, startTestRuntime } from '../support/runtime.js';
import type { Json } from '../support/api.js';

let runtime: LocalRuntime;
let token: string;
let client: ServiceBusClient;

beforeAll(async () => {
  runtime = await startTestRuntime('receive-large', { inMemory: true });
  token = connectionStringToken(runtime);
  client = new ServiceBusClient(`Endpoint=${runtime.url}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey}`);
}, 60_000);
afterAll(async () => {
  await client?.close();
  await runtime?.stop();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { authorization: token, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function ok(method: string, path: string, body?: unknown, status = 200): Promise<Json> {
  const res = await call(method, path, body);
  expect(res.status, String(JSON.stringify(res.body)).slice(0, 300)).toBe(status);
  return res.body;
}

const KB = 1024;
/** A body whose S5 size is `bytes`: a string of `x`. */
const bodyOf = (bytes: number, i: number) => `${String(i).padStart(4, '0')}${'x'.repeat(bytes - 6)}`;

async function fill(path: string, count: number, bytes: number, extra: Record<string, unknown> = {}): Promise<string[]> {
  const seqs: string[] = [];
  for (let i = 0; i < count; i++) seqs.push((await ok('POST', `${path}/messages`, { body: bodyOf(bytes, i), ...extra }, 201)).sequenceNumber);
  return seqs;
}

/** Receives until an answer is empty; every answer is a 200 and carries fewer than asked. */
async function drain(path: string, body: Record<string, unknown>, max: number): Promise<Json[]> {
  const got: Json[] = [];
  for (let calls = 0; calls < 10; calls++) {
    const messages: Json[] = (await ok('POST', path, { ...body, maxMessages: max })).messages;
    if (messages.length === 0) break;
    expect(messages.length).toBeLessThan(max);
    got.push(...messages);
  }
  return got;
}

const seqsOf = (messages: Json[]) => messages.map((m) => m.sequenceNumber as string);

describe('R10: a receive takes no more than its answer can carry', () => {
  it('R10: receive-and-delete of 25 messages of 250 KB answers in several calls and loses none', async () => {
    await ok('PUT', '/queues/big-rad', {}, 201);
    const sent = await fill('/queues/big-rad', 25, 250 * KB);
    const got = await drain('/queues/big-rad/messages/receive', { mode: 'receiveAndDelete' }, 25);
    expect(seqsOf(got)).toEqual(sent);
    expect(got.every((m, i) => m.body === bodyOf(250 * KB, i))).toBe(true);
  }, 120_000);

  it('R10: peek-lock of 25 messages of 250 KB locks only what it hands out', async () => {
    await ok('PUT', '/queues/big-lock', { lockDuration: 'PT5M' }, 201);
    const sent = await fill('/queues/big-lock', 25, 250 * KB);
    const first: Json[] = (await ok('POST', '/queues/big-lock/messages/receive', { maxMessages: 25 })).messages;
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(25);
    // Every message not handed out is as it was: never delivered, not locked.
    const peeked = await peekAll('/queues/big-lock', 25);
    expect(seqsOf(peeked)).toEqual(sent);
    const handed = new Set(seqsOf(first));
    for (const m of peeked) expect(m.deliveryCount, m.sequenceNumber).toBe(handed.has(m.sequenceNumber) ? 1 : 0);
    const rest = await drain('/queues/big-lock/messages/receive', {}, 25);
    expect(seqsOf([...first, ...rest])).toEqual(sent);
    expect([...first, ...rest].every((m) => m.deliveryCount === 1 && m.lockToken)).toBe(true);
  }, 120_000);

  it('R10: a session receive of 25 messages of 250 KB answers in several calls and loses none', async () => {
    await ok('PUT', '/queues/big-sessions', { requiresSession: true }, 201);
    const sent = await fill('/queues/big-sessions', 25, 250 * KB, { sessionId: 's1' });
    const { sessionLockToken } = await ok('POST', '/queues/big-sessions/sessions/accept', { sessionId: 's1' });
    const got = await drain('/queues/big-sessions/sessions/s1/receive', { sessionLockToken, mode: 'receiveAndDelete' }, 25);
    expect(seqsOf(got)).toEqual(sent);
  }, 120_000);

  it('R10/N3: a peek-lock session receive of 25 messages of 250 KB holds only what each answer carries: each is delivered once', async () => {
    await ok('PUT', '/queues/big-held', { requiresSession: true, lockDuration: 'PT5M' }, 201);
    const sent = await fill('/queues/big-held', 25, 250 * KB, { sessionId: 's1' });
    const { sessionLockToken } = await ok('POST', '/queues/big-held/sessions/accept', { sessionId: 's1' });
    // Nothing is settled between the calls: what an answer could not carry must not stay held by the record.
    const got = await drain('/queues/big-held/sessions/s1/receive', { sessionLockToken }, 25);
    expect(seqsOf(got)).toEqual(sent);
    expect(got.every((m) => m.deliveryCount === 1 && m.lockToken)).toBe(true);
    for (const m of got) await ok('POST', `/queues/big-held/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken }, 204);
  }, 120_000);

  it('R10: deferred messages of 250 KB received by number come in several answers, the rest left deferred', async () => {
    await ok('PUT', '/queues/big-deferred', { lockDuration: 'PT5M' }, 201);
    const sent = await fill('/queues/big-deferred', 25, 250 * KB);
    const taken = await drain('/queues/big-deferred/messages/receive', {}, 25);
    for (const m of taken) await ok('POST', `/queues/big-deferred/messages/${m.sequenceNumber}/defer`, { lockToken: m.lockToken }, 204);
    const first: Json[] = (await ok('POST', '/queues/big-deferred/messages/deferred', { sequenceNumbers: sent })).messages;
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(25);
    const rest = sent.filter((s) => !seqsOf(first).includes(s));
    const second: Json[] = (await ok('POST', '/queues/big-deferred/messages/deferred', { sequenceNumbers: rest })).messages;
    expect(seqsOf(second)).toEqual(rest);
  }, 120_000);
});

async function peekAll(path: string, max: number): Promise<Json[]> {
  const out: Json[] = [];
  let from = '0';
  for (let calls = 0; calls < 10; calls++) {
    const page: Json[] = (await ok('GET', `${path}/messages?fromSequenceNumber=${from}&maxMessages=${max}`)).messages;
    if (page.length === 0) break;
    out.push(...page);
    from = String(BigInt(page.at(-1).sequenceNumber) + 1n);
  }
  return out;
}

describe('R10: a peek keeps to the same limit', () => {
  it('R10: a peek of 25 messages of 250 KB answers part of them, and peeking on from the last finds the rest in order', async () => {
    await ok('PUT', '/queues/big-peek', {}, 201);
    const sent = await fill('/queues/big-peek', 25, 250 * KB);
    const first: Json[] = (await ok('GET', '/queues/big-peek/messages?maxMessages=25')).messages;
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(25);
    expect(seqsOf(await peekAll('/queues/big-peek', 25))).toEqual(sent);
  }, 120_000);

  it('R10: bodies that escaping doubles still fit the answer', async () => {
    await ok('PUT', '/queues/big-quotes', {}, 201);
    // Each `"` is two bytes of the body's JSON and four in the answer's body string.
    const quoted = (i: number) => `${i}:${'"'.repeat(125 * KB - 8)}`;
    for (let i = 0; i < 25; i++) await ok('POST', '/queues/big-quotes/messages', { body: quoted(i) }, 201);
    const peeked = await peekAll('/queues/big-quotes', 25);
    expect(peeked.map((m) => m.body)).toEqual(Array.from({ length: 25 }, (_, i) => quoted(i)));
    const got = await drain('/queues/big-quotes/messages/receive', { mode: 'receiveAndDelete' }, 25);
    expect(got).toHaveLength(25);
  }, 120_000);
});

describe('R10: the client pages on', () => {
  it('R10: receiveMessages(100) of messages of 62 KB answers without failing and loses none', async () => {
    const admin = new ServiceBusAdministrationClient(
      `Endpoint=${runtime.url}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey}`,
    );
    await admin.createQueue('client-62k');
    const sender = client.createSender('client-62k');
    const body = 'y'.repeat(62 * KB);
    for (let i = 0; i < 100; i++) await sender.sendMessages({ body, messageId: `m${i}` });
    const receiver = client.createReceiver('client-62k', { receiveMode: 'receiveAndDelete' });
    const got: string[] = [];
    for (let calls = 0; calls < 5 && got.length < 100; calls++) {
      got.push(...(await receiver.receiveMessages(100, { maxWaitTimeInMs: 1000 })).map((m) => m.messageId as string));
    }
    expect(got).toEqual(Array.from({ length: 100 }, (_, i) => `m${i}`));
  }, 120_000);

  it('R10: receiveDeferredMessages of 25 messages of 250 KB asks again for what an answer could not carry', async () => {
    const receiver = client.createReceiver('big-deferred-client');
    await ok('PUT', '/queues/big-deferred-client', { lockDuration: 'PT5M' }, 201);
    await fill('/queues/big-deferred-client', 25, 250 * KB);
    const taken = await drain('/queues/big-deferred-client/messages/receive', {}, 25);
    for (const m of taken) await ok('POST', `/queues/big-deferred-client/messages/${m.sequenceNumber}/defer`, { lockToken: m.lockToken }, 204);
    const got = await receiver.receiveDeferredMessages(seqsOf(taken).map((n) => Long.fromString(n)));
    expect(got.map((m) => m.sequenceNumber!.toString())).toEqual(seqsOf(taken));
  }, 120_000);

  it('R10: peekMessages(n) asks again after a short page until it has n or the entity has no more', async () => {
    const receiver = client.createReceiver('big-peek');
    const all = await receiver.peekMessages(25);
    expect(all).toHaveLength(25);
    expect(all.map((m) => (m.body as string).slice(0, 4))).toEqual(Array.from({ length: 25 }, (_, i) => String(i).padStart(4, '0')));
    expect(await receiver.peekMessages(5)).toEqual([]);
  }, 120_000);
});
