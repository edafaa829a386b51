/**
 * Issue #10 "Across scopes": what a token may reach through the body as well as the path,
 * keys of a deleted entity, and paths the authorizer cannot read. All over the API handler
 * with tokens signed as a client signs them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../lib/auth/index.js';
import type { Deps } from '../../lib/deps.js';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();
let deps: Deps;
let admin: ReturnType<typeof apiClient>;
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
const as = (token: string | null) => apiClient(deps, { token });
const token = (resourceUri: string, keyName: string, key: string) => signToken({ resourceUri, keyName, key, expiresAt: inAnHour() });

beforeAll(async () => {
  deps = await testDeps(clock, 'scopes');
  admin = apiClient(deps);
  await admin('PUT', '/queues/a', {});
  await admin('PUT', '/topics/t', {});
  await admin('PUT', '/topics/t/subscriptions/s', {});
});

const queueNames = async () => ((await admin('GET', '/queues')).body.items as { name: string }[]).map((q) => q.name).sort();

describe('#10.23 paths the authorizer cannot read', () => {
  const unreadable: [string, string][] = [
    ['/queues/a%2Fb', 'queueName'],
    ['/queues/a%00b', 'queueName'],
    ['/queues/a%ZZ', 'queueName'],
    ['/queues/a%2Fb/messages', 'queueName'],
    ['/topics/t%ZZ', 'topicName'],
    ['/topics/t/subscriptions/s%2Fx/messages/receive', 'subscriptionName'],
    ['/queues/a/messages/%ZZ/complete', 'path segment 4'],
  ];

  it('#10.23: a bad name is a 400 naming the field, even with the root key, and changes nothing', async () => {
    const before = await queueNames();
    for (const [path, field] of unreadable) {
      for (const method of ['PUT', 'GET', 'POST', 'DELETE']) {
        const r = await admin(method, path, {});
        expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(400);
        expect(r.body.error.code).toBe('BadRequest');
        expect(r.body.error.message.startsWith(`${field}:`), r.body.error.message).toBe(true);
      }
    }
    expect(await queueNames()).toEqual(before);
  });

  it('#10.23: a genuine token scoped elsewhere gets the same 400 (the answer reads only the path); a token that is not genuine still gets 401', async () => {
    const rule = await admin('PUT', '/queues/a/authorization-rules/reader', { rights: ['Listen'] });
    const scoped = as(token('http://localhost/queues/a', 'reader', rule.body.primaryKey));
    const forged = as(token('http://localhost/', 'RootManageSharedAccessKey', 'not-the-key'));
    for (const [path, field] of unreadable) {
      const r = await scoped('PUT', path, {});
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error.message.startsWith(`${field}:`)).toBe(true);
      const f = await forged('PUT', path, {});
      expect(f.status).toBe(401);
      expect(f.body.error.code).toBe('Unauthorized');
    }
    const none = await as(null)('GET', '/queues/a%2Fb');
    expect(none.status).toBe(401);
  });

  it('#10.23: a wrong token on a good path stays 401, a genuine one without the right 403', async () => {
    const rule = await admin('PUT', '/queues/a/authorization-rules/only-send', { rights: ['Send'] });
    const sender = as(token('http://localhost/queues/a', 'only-send', rule.body.primaryKey));
    expect((await sender('GET', '/queues/a')).status).toBe(403);
    expect((await sender('GET', '/queues/zz')).status).toBe(403);
    expect((await as(token('http://localhost/', 'only-send', 'wrong'))('GET', '/queues/a')).status).toBe(401);
  });
});

