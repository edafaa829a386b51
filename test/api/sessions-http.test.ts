/**
 * The session routes over HTTP against the local runtime (docs/http-api.md, "Sessions"),
 * for a queue and a subscription: each route's answer, its 400s naming the field (and
 * changing nothing), and A2 on every one of them: Listen is needed, a Send-only token is
 * refused with 403 and no token with 401.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { routeTable } from '../../lib/api/routes.js';
import { signToken } from '../../lib/auth/index.js';
import { localClock, startRuntime } from '../client/support.js';

let runtime: LocalRuntime;
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
let root: string;

beforeAll(async () => {
  runtime = await startRuntime('sessions-http');
  root = signToken({ resourceUri: `${runtime.url}/`, keyName: 'RootManageSharedAccessKey', key: runtime.rootKey, expiresAt: inAnHour() });
});
afterAll(async () => {
  await runtime?.stop();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = { status: number; body: any };

async function call(method: string, path: string, body?: unknown, token: string | null = root): Promise<Reply> {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function ok(reply: Promise<Reply>, status = 200): Promise<Reply['body']> {
  const r = await reply;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A 400 whose message starts with `field` (B2). */
async function badRequest(reply: Promise<Reply>, field: string) {
  const r = await reply;
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.error.code).toBe('BadRequest');
  expect(r.body.error.message.startsWith(field), r.body.error.message).toBe(true);
}

const seg = encodeURIComponent;

const shapes = [
  {
    name: 'queue',
    R: '/queues/sq',
    send: '/queues/sq',
    create: async () => ok(call('PUT', '/queues/sq', { requiresSession: true, lockDuration: 'PT30S' }), 201),
  },
  {
    name: 'subscription',
    R: '/topics/st/subscriptions/ss',
    send: '/topics/st',
    create: async () => {
      await ok(call('PUT', '/topics/st', {}), 201);
      await ok(call('PUT', '/topics/st/subscriptions/ss', { requiresSession: true, lockDuration: 'PT30S' }), 201);
    },
  },
];

describe.each(shapes)('session routes on a $name', ({ R, send, create }) => {
  beforeAll(create);

  it('N2/N3/N4/N5/N6/N8: accept, receive in order, settle, renew, state, deferred, list, release', async () => {
    for (const n of [1, 2, 3]) await ok(call('POST', `${send}/messages`, { body: n, sessionId: 'Order 1' }), 201);
    const accepted = await ok(call('POST', `${R}/sessions/accept`, { maxWaitTime: 'PT1S' }));
    expect(accepted).toEqual({ sessionId: 'Order 1', sessionLockToken: expect.any(String), lockedUntil: expect.any(String) });
    const S = `${R}/sessions/${seg('Order 1')}`;
    const lock = { sessionLockToken: accepted.sessionLockToken };

    // Another accept of the same session: 409 SessionCannotBeLocked; of any next one: 408 ServiceTimeout.
    const taken = await call('POST', `${R}/sessions/accept`, { sessionId: 'Order 1' });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'SessionCannotBeLocked']);
    const none = await call('POST', `${R}/sessions/accept`, { maxWaitTime: 'PT0S' });
    expect([none.status, none.body.error.code]).toEqual([408, 'ServiceTimeout']);

    const { messages } = await ok(call('POST', `${S}/receive`, { ...lock, maxMessages: 2 }));
    expect(messages.map((m: { body: number }) => m.body)).toEqual([1, 2]);
    expect(messages[0]).toMatchObject({ sessionId: 'Order 1', lockedUntil: accepted.lockedUntil, deliveryCount: 1 });
    await ok(call('POST', `${R}/messages/${messages[0].sequenceNumber}/complete`, { lockToken: messages[0].lockToken }), 204);
    await ok(call('POST', `${R}/messages/${messages[1].sequenceNumber}/defer`, { lockToken: messages[1].lockToken }), 204);

    await localClock(runtime, 'PT10S');
    const renewed = await ok(call('POST', `${S}/renew-lock`, lock));
    expect(Date.parse(renewed.lockedUntil)).toBeGreaterThan(Date.parse(accepted.lockedUntil));

    expect(await ok(call('GET', `${S}/state?sessionLockToken=${seg(lock.sessionLockToken)}`))).toEqual({ sessionId: 'Order 1', state: null });
    const state = Buffer.from('{"step":"paid"}').toString('base64');
    await ok(call('PUT', `${S}/state`, { ...lock, state }), 204);
    expect(await ok(call('GET', `${S}/state?sessionLockToken=${seg(lock.sessionLockToken)}`))).toEqual({ sessionId: 'Order 1', state });

    const deferred = await ok(call('POST', `${S}/deferred`, { ...lock, sequenceNumbers: [messages[1].sequenceNumber] }));
    expect(deferred.messages).toMatchObject([{ body: 2, sessionId: 'Order 1' }]);
    await ok(call('POST', `${R}/messages/${deferred.messages[0].sequenceNumber}/complete`, { lockToken: deferred.messages[0].lockToken }), 204);

    const listed = await ok(call('GET', `${R}/sessions?top=10`));
    expect(listed.items).toContain('Order 1');
    expect(listed).toHaveProperty('next');

    await ok(call('POST', `${S}/release`, lock), 204);
    // Released: the lock token is no longer the session's.
    const lost = await call('POST', `${S}/renew-lock`, lock);
    expect([lost.status, lost.body.error.code]).toEqual([410, 'SessionLockLost']);
    // Released at once: the next receiver takes the session and its last message.
    const next = await ok(call('POST', `${R}/sessions/accept`, { sessionId: 'Order 1' }));
    const rest = await ok(call('POST', `${S}/receive`, { sessionLockToken: next.sessionLockToken }));
    expect(rest.messages.map((m: { body: number }) => m.body)).toEqual([3]);
    await ok(call('POST', `${R}/messages/${rest.messages[0].sequenceNumber}/complete`, { lockToken: rest.messages[0].lockToken }), 204);
    await ok(call('POST', `${S}/release`, { sessionLockToken: next.sessionLockToken }), 204);
  });

  it('B2: bad input gets a 400 that names the field, and changes nothing', async () => {
    const accepted = await ok(call('POST', `${R}/sessions/accept`, { sessionId: 'bad-input' }));
    const S = `${R}/sessions/bad-input`;
    const lock = { sessionLockToken: accepted.sessionLockToken };
    await ok(call('PUT', `${S}/state`, { ...lock, state: Buffer.from('"kept"').toString('base64') }), 204);

    await badRequest(call('POST', `${R}/sessions/accept`, { sessionId: '' }), 'sessionId');
    await badRequest(call('POST', `${R}/sessions/accept`, { sessionId: 'x'.repeat(129) }), 'sessionId');
    // N1: `.` and `..` are dot segments no URL path can carry, so no message may enter such a session.
    await badRequest(call('POST', `${R}/sessions/accept`, { sessionId: '..' }), 'sessionId');
    await badRequest(call('POST', `${send}/messages`, { body: 'x', sessionId: '.' }), 'sessionId');
    await badRequest(
      call('POST', `${send}/messages/batch`, {
        messages: [
          { body: 'x', sessionId: 'fine' },
          { body: 'y', sessionId: '..' },
        ],
      }),
      'messages[1].sessionId',
    );
    await badRequest(call('POST', `${R}/sessions/accept`, { maxWaitTime: 'PT21S' }), 'maxWaitTime');
    await badRequest(call('POST', `${R}/sessions/accept`, { surplus: 1 }), 'surplus');
    await badRequest(call('GET', `${R}/sessions?top=0`), 'top');
    await badRequest(call('POST', `${S}/receive`, {}), 'sessionLockToken');
    await badRequest(call('POST', `${S}/receive`, { ...lock, maxMessages: 0 }), 'maxMessages');
    await badRequest(call('POST', `${S}/receive`, { ...lock, mode: 'grab' }), 'mode');
    await badRequest(call('POST', `${S}/renew-lock`, {}), 'sessionLockToken');
    await badRequest(call('POST', `${S}/release`, { sessionLockToken: 5 }), 'sessionLockToken');
    await badRequest(call('GET', `${S}/state`), 'sessionLockToken');
    await badRequest(call('PUT', `${S}/state`, { ...lock, state: 5 }), 'state');
    await badRequest(call('PUT', `${S}/state`, { state: null }), 'sessionLockToken');
    await badRequest(call('POST', `${S}/deferred`, { ...lock, sequenceNumbers: [] }), 'sequenceNumbers');
    await badRequest(call('POST', `${S}/deferred`, { ...lock, sequenceNumbers: ['x'] }), 'sequenceNumbers');
    await badRequest(call('POST', `${R}/sessions/${'y'.repeat(129)}/receive`, lock), 'sessionId');

    // Nothing changed: the state is as it was, and the lock still holds (the release below is the first).
    expect(await ok(call('GET', `${S}/state?sessionLockToken=${seg(lock.sessionLockToken)}`))).toEqual({
      sessionId: 'bad-input',
      state: Buffer.from('"kept"').toString('base64'),
    });
    await ok(call('POST', `${S}/release`, lock), 204);
  });

  it('a session id is one percent-encoded segment that may hold `/`, `\\`, spaces and any case; a bad escape is a 400 naming sessionId', async () => {
    const id = 'Tenant/42\\a b';
    await ok(call('POST', `${send}/messages`, { body: 'x', sessionId: id }), 201);
    const accepted = await ok(call('POST', `${R}/sessions/accept`, { sessionId: id }));
    expect(accepted.sessionId).toBe(id);
    const S = `${R}/sessions/${seg(id)}`;
    const got = await ok(call('POST', `${S}/receive`, { sessionLockToken: accepted.sessionLockToken }));
    expect(got.messages.map((m: { sessionId: string }) => m.sessionId)).toEqual([id]);
    await ok(call('POST', `${R}/messages/${got.messages[0].sequenceNumber}/complete`, { lockToken: got.messages[0].lockToken }), 204);
    // Another case is another session.
    const other = await ok(call('POST', `${R}/sessions/accept`, { sessionId: id.toLowerCase() }));
    expect(other.sessionId).toBe(id.toLowerCase());
    await ok(call('POST', `${R}/sessions/${seg(id.toLowerCase())}/release`, { sessionLockToken: other.sessionLockToken }), 204);
    await ok(call('POST', `${S}/release`, { sessionLockToken: accepted.sessionLockToken }), 204);
    await badRequest(call('POST', `${R}/sessions/a%ZZ/receive`, { sessionLockToken: accepted.sessionLockToken }), 'sessionId');
  });

  it('N1: sessions on an entity that does not require them are refused with a 400 naming path', async () => {
    const plain = R.replace(/s([qs])$/, 'plain$1');
    await ok(call('PUT', plain, {}), 201);
    await badRequest(call('POST', `${plain}/sessions/accept`, { sessionId: 'a' }), 'path');
    await badRequest(call('POST', `${plain}/sessions/accept`, {}), 'path');
  });

  it('a session route on a dead-letter subqueue or a topic is no route (404)', async () => {
    expect((await call('POST', `${R}/$deadletterqueue/sessions/accept`, {})).status).toBe(404);
    expect((await call('POST', '/topics/st/sessions/accept', {})).status).toBe(404);
  });
});

describe('A2: every session route needs Listen', () => {
  const sessionRoutes = routeTable.filter((r) => r.path.includes('/sessions'));

  it('the route table has the 8 session routes for queues and for subscriptions, all Listen', () => {
    expect(sessionRoutes.length).toBe(16);
    expect(new Set(sessionRoutes.map((r) => r.right))).toEqual(new Set(['Listen']));
  });

  it('a Send-only token gets 403 and no token 401 on each; a Listen token gets through', async () => {
    await ok(call('PUT', '/queues/authq', { requiresSession: true }), 201);
    await ok(call('PUT', '/topics/autht', {}), 201);
    await ok(call('PUT', '/topics/autht/subscriptions/auths', { requiresSession: true }), 201);
    const tokenFor = async (scope: string, rights: string[], name: string) => {
      const rule = await ok(call('PUT', `${scope}/authorization-rules/${name}`, { rights }), 201);
      return signToken({ resourceUri: `${runtime.url}${scope}`, keyName: name, key: rule.primaryKey, expiresAt: inAnHour() });
    };
    const scopes = { queue: '/queues/authq', subscription: '/topics/autht/subscriptions/auths' } as const;
    // Send on the queue, and on the topic (which covers its subscriptions).
    const senders = { queue: await tokenFor('/queues/authq', ['Send'], 'sender'), subscription: await tokenFor('/topics/autht', ['Send'], 'sender') };
    for (const r of sessionRoutes) {
      const entity = r.entity as 'queue' | 'subscription';
      const path = r.path.replace(/^\/queues\/\{q\}|^\/topics\/\{t\}\/subscriptions\/\{s\}/, scopes[entity]).replace('{sessionId}', 'auth-1');
      const sender = senders[entity];
      const body = r.method === 'get' ? undefined : {};
      const refused = await call(r.method.toUpperCase(), path, body, sender);
      expect([r.operationId, refused.status, refused.body.error.code]).toEqual([r.operationId, 403, 'Forbidden']);
      const anonymous = await call(r.method.toUpperCase(), path, body, null);
      expect([r.operationId, anonymous.status]).toEqual([r.operationId, 401]);
    }
    // Listen on the entity passes the authorizer: what comes back is the broker's answer, not 401/403.
    const listener = await tokenFor('/queues/authq', ['Listen'], 'listener');
    const accepted = await call('POST', '/queues/authq/sessions/accept', { sessionId: 'auth-1' }, listener);
    expect(accepted.status).toBe(200);
    const listed = await call('GET', '/queues/authq/sessions', undefined, listener);
    expect(listed.status).toBe(200);
  });
});
