/**
 * A request body is as required over HTTP as the route table says, and docs/openapi.json with
 * it: a route whose body is required refuses a request without one with a 400 naming `body`
 * (B2) before anything is read or changed; a route whose body is optional takes its absence
 * for every default. The three bodies that hold a field with no default (delete's
 * `maxMessageCount`, the session lock token of a session receive, renewal and release) are
 * required, and each is shown changing nothing when it is left out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { routeTable } from '../../lib/api/routes.js';
import type { Json } from '../support/api.js';
import { connectionStringToken, startTestRuntime } from '../support/runtime.js';

let runtime: LocalRuntime;
let token: string;

beforeAll(async () => {
  runtime = await startTestRuntime('bodies');
  token = connectionStringToken(runtime);
});
afterAll(async () => {
  await runtime?.stop();
});

/** A request as a client on the wire sends it: `body` undefined sends none at all, and no content type. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { authorization: token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function ok(reply: Promise<{ status: number; body: Json }>, status = 200): Promise<Json> {
  const r = await reply;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

/** A 400 whose message starts with `field` (B2). */
async function badRequest(reply: Promise<{ status: number; body: Json }>, field: string) {
  const r = await reply;
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.error.code).toBe('BadRequest');
  expect(r.body.error.message.startsWith(`${field}:`), r.body.error.message).toBe(true);
}

/** A route's path with its parameters filled in: well-formed, so only the body can be wrong. */
const pathOf = (template: string) =>
  template
    .replace('{sequenceNumber}', '1')
    .replace('{sessionId}', 's')
    .replace(/\{\w+\}/g, 'x');

describe('B2: every route takes an absent body as the route table says', () => {
  const withBody = routeTable.filter((r) => r.body && !r.localOnly && !r.undocumented);

  it('the delete and session routes in question call their bodies required', () => {
    const named = (schema: string) => withBody.filter((r) => r.body!.schema === schema).map((r) => r.body!.required);
    expect(named('DeleteMessagesRequest')).toEqual(Array(6).fill(true));
    expect(named('SessionReceiveOptions')).toEqual(Array(2).fill(true));
    expect(named('SessionLockRequest')).toEqual(Array(4).fill(true));
  });

  it('B2: without a body, a required one is a 400 naming body and an optional one takes the defaults', async () => {
    // Optional bodies first, in table order: they create the entities the later routes name.
    const ordered = [...withBody.filter((r) => !r.body!.required), ...withBody.filter((r) => r.body!.required)];
    for (const r of ordered) {
      const path = pathOf(r.path);
      const reply = await call(r.method.toUpperCase(), path);
      const what = `${r.method.toUpperCase()} ${path} (${r.operationId}) answered ${reply.status} ${JSON.stringify(reply.body)}`;
      if (r.body!.required) {
        expect([reply.status, reply.body?.error?.message?.split(':')[0]], what).toEqual([400, 'body']);
      } else {
        expect(reply.status === 400 && reply.body.error.message.startsWith('body'), what).toBe(false);
      }
    }
  });
});

describe('the three bodies with a field that has no default', () => {
  beforeAll(async () => {
    await ok(call('PUT', '/queues/plain', {}), 201);
    await ok(call('PUT', '/queues/sessions', { requiresSession: true, lockDuration: 'PT30S' }), 201);
  });

  it('R11: POST {R}/messages/delete without a body, with null or with {} is a 400 and deletes nothing', async () => {
    for (const n of [1, 2]) await ok(call('POST', '/queues/plain/messages', { body: n }), 201);
    await badRequest(call('POST', '/queues/plain/messages/delete'), 'body');
    await badRequest(call('POST', '/queues/plain/messages/delete', null), 'body');
    await badRequest(call('POST', '/queues/plain/messages/delete', {}), 'maxMessageCount');
    expect((await ok(call('GET', '/queues/plain/messages'))).messages.map((m: { body: number }) => m.body)).toEqual([1, 2]);
    expect(await ok(call('POST', '/queues/plain/messages/delete', { maxMessageCount: 10 }))).toEqual({ deleted: 2 });
  });

  it('N3: POST {R}/sessions/{id}/receive without a body is a 400, and the message stays undelivered for the lock holder', async () => {
    await ok(call('POST', '/queues/sessions/messages', { body: 'r', sessionId: 'recv' }), 201);
    const { sessionLockToken } = await ok(call('POST', '/queues/sessions/sessions/accept', { sessionId: 'recv' }));
    await badRequest(call('POST', '/queues/sessions/sessions/recv/receive'), 'body');
    await badRequest(call('POST', '/queues/sessions/sessions/recv/receive', null), 'body');
    await badRequest(call('POST', '/queues/sessions/sessions/recv/receive', {}), 'sessionLockToken');
    const { messages } = await ok(call('POST', '/queues/sessions/sessions/recv/receive', { sessionLockToken }));
    expect(messages).toMatchObject([{ body: 'r', sessionId: 'recv', deliveryCount: 1 }]);
    await ok(call('POST', `/queues/sessions/messages/${messages[0].sequenceNumber}/complete`, { lockToken: messages[0].lockToken }), 204);
    await ok(call('POST', '/queues/sessions/sessions/recv/release', { sessionLockToken }), 204);
  });

  it('N4: renew-lock and release without a body are 400s, and the session lock holds as it was', async () => {
    const accepted = await ok(call('POST', '/queues/sessions/sessions/accept', { sessionId: 'held' }));
    const { sessionLockToken } = accepted;
    for (const action of ['renew-lock', 'release']) {
      await badRequest(call('POST', `/queues/sessions/sessions/held/${action}`), 'body');
      await badRequest(call('POST', `/queues/sessions/sessions/held/${action}`, null), 'body');
      await badRequest(call('POST', `/queues/sessions/sessions/held/${action}`, {}), 'sessionLockToken');
    }
    const taken = await call('POST', '/queues/sessions/sessions/accept', { sessionId: 'held' });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'SessionCannotBeLocked']);
    expect(await ok(call('POST', '/queues/sessions/sessions/held/renew-lock', { sessionLockToken }))).toEqual({ lockedUntil: expect.any(String) });
    await ok(call('POST', '/queues/sessions/sessions/held/release', { sessionLockToken }), 204);
    await ok(call('POST', '/queues/sessions/sessions/accept', { sessionId: 'held' }));
  });
});
