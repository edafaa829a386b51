/**
 * The broker over HTTP, as a client calls it: the real local runtime (real handlers, the
 * stream poller drained through /_local/jobs/streams, the sweeper through /_local/jobs),
 * signed with a Service Bus SAS token made from the printed connection string.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import type { Json } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { connectionStringToken, startTestRuntime } from '../support/runtime.js';

let runtime: LocalRuntime;
let token: string;

beforeAll(async () => {
  runtime = await startTestRuntime('http');
  token = connectionStringToken(runtime);
});

afterAll(async () => {
  await runtime?.stop();
});

type Call = (method: string, path: string, body?: unknown, auth?: boolean) => Promise<{ status: number; body: Json; headers: Headers }>;

/** Calls `on` (the file's runtime unless a test starts its own) with its connection string's token. */
const callOn =
  (on: () => LocalRuntime, tokenOf: () => string): Call =>
  async (method, path, body, auth = true) => {
    const res = await fetch(`${on().url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: tokenOf() } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
const call = callOn(
  () => runtime,
  () => token,
);

describe('over HTTP against the local runtime', () => {
  it('A1/R1/R4: create, send, peek-lock, complete, as the README walks through it', async () => {
    expect((await call('PUT', '/queues/orders', { defaultMessageTimeToLive: 'PT10M' })).status).toBe(201);
    const sent = await call('POST', '/queues/orders/messages', { body: { id: 1 }, applicationProperties: { color: 'red' } });
    expect(sent.status).toBe(201);
    expect(sent.body.sequenceNumber).toMatch(/^\d+$/);
    const got = await call('POST', '/queues/orders/messages/receive', { mode: 'peekLock' });
    const [m] = got.body.messages;
    expect(m).toMatchObject({ body: { id: 1 }, deliveryCount: 1, timeToLive: 'PT10M' });
    expect((await call('POST', `/queues/orders/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    const again = await call('POST', `/queues/orders/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
    expect(again.status).toBe(410);
    expect(again.body.error).toMatchObject({ code: 'MessageLockLost', retryable: false });
  });

  it('A3: without a token nothing is answered but 401', async () => {
    const res = await call('GET', '/queues/orders', undefined, false);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('Unauthorized');
  });

  it('T6/T7/E3/E6: the clock moves, the sweeper dead-letters, the stream brings the counts', async () => {
    // Today's layout: the sweeper run right after expiry must move the message, where a positioned
    // queue's pass may wait (T7); a runtime of its own, as the layout is the runtime's.
    const todays = await startTestRuntime('http-todays', indexLayout);
    try {
      const call = callOn(
        () => todays,
        () => connectionStringToken(todays),
      );
      await call('PUT', '/queues/expiring', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
      await call('POST', '/queues/expiring/messages', { body: 'late' });
      const moved = await call('POST', '/_local/clock', { advance: 'PT2M' });
      expect(moved.status).toBe(200);
      const swept = await call('POST', '/_local/jobs/sweeper');
      expect(swept.body).toMatchObject({ expired: 1 });
      // `$` percent-encoded, as some clients send it.
      const dead = await call('GET', '/queues/expiring/%24deadletterqueue/messages');
      expect(dead.body.messages).toHaveLength(1);
      expect(dead.body.messages[0]).toMatchObject({ body: 'late', deadLetterReason: 'TTLExpiredException', deadLetterSource: 'queues/expiring' });
      await call('POST', '/_local/jobs/streams');
      const counts = (await call('GET', '/queues/expiring')).body.runtime;
      expect(counts).toMatchObject({ activeMessageCount: 0, deadLetterMessageCount: 1, totalMessageCount: 1 });
    } finally {
      await todays.stop();
    }
  });

  it('R2: a long poll answers as soon as a message arrives', async () => {
    await call('PUT', '/queues/waiting', {});
    const polling = call('POST', '/queues/waiting/messages/receive', { maxWaitTime: 'PT10S' });
    await new Promise((r) => setTimeout(r, 300));
    await call('POST', '/queues/waiting/messages', { body: 'arrived' });
    const started = Date.now();
    const got = await polling;
    expect(got.body.messages.map((m: { body: string }) => m.body)).toEqual(['arrived']);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('B1/B2: malformed JSON gets a 400 naming the body, in the error shape', async () => {
    const res = await fetch(`${runtime.url}/queues/orders/messages`, { method: 'POST', headers: { authorization: token }, body: '{nope' });
    const body = (await res.json()) as Json;
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ code: 'BadRequest', retryable: false });
    expect(body.error.message).toContain('body');
    expect(typeof body.error.requestId).toBe('string');
  });
});
