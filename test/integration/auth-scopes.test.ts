/**
 * Across scopes (B3): what a token may reach through the body as well as the path,
 * keys of a deleted entity, and paths the authorizer cannot read. All over the API handler
 * with tokens signed as a client signs them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../lib/auth/index.js';
import type { Deps } from '../../lib/deps.js';
import { apiClient, type Reply } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { createBroker } from '../../lib/broker/index.js';
import { deleteEntity } from '../../lib/broker/entities.js';

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
  await admin('PUT', '/topics/t/subscriptions/s2', {});
  await admin('PUT', '/queues/b', {});
});

const ok = async (reply: Promise<Reply>, status?: number) => {
  const r = await reply;
  if (r.status >= 300 || (status !== undefined && r.status !== status)) throw new Error(`setup: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
};

/** A dead-lettered message in `path`'s dead-letter subqueue, put there with the root key. */
async function deadLetter(path: string, sendTo = path) {
  await ok(admin('POST', `${sendTo}/messages`, { body: 'dead' }), 201);
  const got = await ok(admin('POST', `${path}/messages/receive`, {}));
  const [m] = got.messages;
  await ok(admin('POST', `${path}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken }));
}
const peekCount = async (path: string) => (await ok(admin('GET', `${path}/messages?maxMessages=100`))).messages.length as number;

const queueNames = async () => ((await admin('GET', '/queues')).body.items as { name: string }[]).map((q) => q.name).sort();

describe('B2: paths the authorizer cannot read', () => {
  const unreadable: [string, string][] = [
    ['/queues/a%2Fb', 'queueName'],
    ['/queues/a%00b', 'queueName'],
    ['/queues/a%ZZ', 'queueName'],
    ['/queues/a%2Fb/messages', 'queueName'],
    ['/topics/t%ZZ', 'topicName'],
    ['/topics/t/subscriptions/s%2Fx/messages/receive', 'subscriptionName'],
    ['/queues/a/messages/%ZZ/complete', 'path segment 4'],
  ];

  it('B2: a bad name is a 400 naming the field, even with the root key, and changes nothing', async () => {
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

  it('B2: a genuine token scoped elsewhere gets the same 400 (the answer reads only the path); a token that is not genuine still gets 401', async () => {
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

  it('B2: a wrong token on a good path stays 401, a genuine one without the right 403', async () => {
    const rule = await admin('PUT', '/queues/a/authorization-rules/only-send', { rights: ['Send'] });
    const sender = as(token('http://localhost/queues/a', 'only-send', rule.body.primaryKey));
    expect((await sender('GET', '/queues/a')).status).toBe(403);
    expect((await sender('GET', '/queues/zz')).status).toBe(403);
    expect((await as(token('http://localhost/', 'only-send', 'wrong'))('GET', '/queues/a')).status).toBe(401);
  });
});

describe('B3: entities named in the body need Send there too, with the same token', () => {
  it('B3: Manage on queue a cannot forward a into b, or dead letters into b, and cannot tell whether a target exists (403 before 404)', async () => {
    // prepare
    const rule = await ok(admin('PUT', '/queues/a/authorization-rules/a-admin', { rights: ['Manage'] }), 201);
    const aAdmin = as(token('http://localhost/queues/a', 'a-admin', rule.primaryKey));
    // act + assess
    for (const body of [
      { forwardTo: 'queues/b' },
      { forwardTo: 'b' },
      { forwardTo: 'topics/t' },
      { forwardTo: 'queues/does-not-exist' },
      { forwardDeadLetteredMessagesTo: 'queues/b' },
      { forwardDeadLetteredMessagesTo: 'b' },
      { forwardDeadLetteredMessagesTo: 'queues/does-not-exist' },
      { lockDuration: 'PT1M', forwardTo: 'queues/B' },
    ]) {
      const r = await aAdmin('PUT', '/queues/a', body);
      expect(r.status, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`).toBe(403);
      expect(r.body.error.code).toBe('Forbidden');
    }
    const a = await ok(admin('GET', '/queues/a'));
    expect(a).toMatchObject({ forwardTo: null, forwardDeadLetteredMessagesTo: null, lockDuration: 'PT1M' });
    // what the token may do, it still may
    expect((await aAdmin('PUT', '/queues/a', { lockDuration: 'PT2M' })).status).toBe(200);
    expect((await aAdmin('PUT', '/queues/a', { forwardTo: null })).status).toBe(200);
    // a send to a stays in a
    const before = await peekCount('/queues/b');
    await ok(aAdmin('POST', '/queues/a/messages', { body: 'mine' }), 201);
    expect(await peekCount('/queues/b')).toBe(before);
  });

  it("B3: Manage on queue a cannot resubmit a's dead letters into b; without `to` they go back to a", async () => {
    // prepare
    await deadLetter('/queues/a');
    const rule = await ok(admin('PUT', '/queues/a/authorization-rules/a-resubmitter', { rights: ['Manage'] }), 201);
    const aAdmin = as(token('http://localhost/queues/a', 'a-resubmitter', rule.primaryKey));
    const inB = await peekCount('/queues/b');
    // act + assess
    for (const to of ['queues/b', '/queues/b', 'queues/B', 'queues/does-not-exist', 'topics/t/subscriptions/s']) {
      const r = await aAdmin('POST', '/queues/a/$deadletterqueue/resubmit', { to });
      expect(r.status, `${to}: ${JSON.stringify(r.body)}`).toBe(403);
      expect(r.body.error.code).toBe('Forbidden');
    }
    expect(await peekCount('/queues/b')).toBe(inB);
    expect(await peekCount('/queues/a/$deadletterqueue')).toBeGreaterThan(0);
    // a token whose sr reaches only the dead-letter subqueue cannot put messages into the queue either
    const dlqOnly = as(token('http://localhost/queues/a/$deadletterqueue', 'a-resubmitter', rule.primaryKey));
    expect((await dlqOnly('POST', '/queues/a/$deadletterqueue/resubmit', {})).status).toBe(403);
    expect((await dlqOnly('GET', '/queues/a/$deadletterqueue/messages')).status).toBe(200);
    const back = await aAdmin('POST', '/queues/a/$deadletterqueue/resubmit', {});
    expect(back.status).toBe(200);
    expect(back.body.resubmitted).toBeGreaterThan(0);
    expect(await peekCount('/queues/b')).toBe(inB);
  });

  it('B3: on a subscription the same holds; a target the token covers (its own topic, a sibling subscription) is allowed', async () => {
    // prepare
    await deadLetter('/topics/t/subscriptions/s', '/topics/t');
    const rule = await ok(admin('PUT', '/topics/t/authorization-rules/t-admin', { rights: ['Manage'] }), 201);
    const tAdmin = as(token('http://localhost/topics/t', 't-admin', rule.primaryKey));
    // act + assess: outside topic t
    for (const body of [{ forwardTo: 'queues/b' }, { forwardDeadLetteredMessagesTo: 'queues/b' }, { forwardTo: 't' }]) {
      const r = await tAdmin('PUT', '/topics/t/subscriptions/s', body);
      expect(r.status, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`).toBe(403);
    }
    expect((await tAdmin('POST', '/topics/t/subscriptions/s/$deadletterqueue/resubmit', { to: 'queues/b' })).status).toBe(403);
    // inside topic t
    expect((await tAdmin('PUT', '/topics/t/subscriptions/s', { forwardDeadLetteredMessagesTo: 'topics/t' })).status).toBe(200);
    expect((await tAdmin('PUT', '/topics/t/subscriptions/s', { forwardDeadLetteredMessagesTo: null })).status).toBe(200);
    const moved = await tAdmin('POST', '/topics/t/subscriptions/s/$deadletterqueue/resubmit', { to: 'topics/t/subscriptions/s2' });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.resubmitted).toBe(1);
  });

  it('B3: a namespace rule with Manage may forward anywhere; a namespace Send+Listen rule still cannot manage', async () => {
    const rule = await ok(admin('PUT', '/authorization-rules/ns-admin', { rights: ['Manage'] }), 201);
    const nsAdmin = as(token('http://localhost/', 'ns-admin', rule.primaryKey));
    expect((await nsAdmin('PUT', '/queues/a', { forwardTo: 'queues/b' })).status).toBe(200);
    expect((await nsAdmin('PUT', '/queues/a', { forwardTo: null, forwardDeadLetteredMessagesTo: 'b' })).status).toBe(200);
    expect((await nsAdmin('PUT', '/queues/a', { forwardDeadLetteredMessagesTo: null })).status).toBe(200);
    // the token's sr narrows it as well: a namespace rule signing for /queues/a reaches only a
    const narrowed = as(token('http://localhost/queues/a', 'ns-admin', rule.primaryKey));
    expect((await narrowed('PUT', '/queues/a', { forwardTo: 'queues/b' })).status).toBe(403);
  });
});

describe('A2: keys of a deleted entity open nothing', () => {
  const MINUTE = 60_000;

  /** A Send rule on `path` and a client holding its token, whose handler has cached the rule by one send. */
  async function cachedSender(path: string, keyName: string) {
    const rule = await ok(admin('PUT', `${path}/authorization-rules/${keyName}`, { rights: ['Send'] }), 201);
    const sender = as(token(`http://localhost${path}`, keyName, rule.primaryKey));
    expect((await sender('POST', `${path}/messages`, { body: 'first life' })).status).toBe(201);
    return { sender, rule, fresh: () => as(token(`http://localhost${path}`, keyName, rule.primaryKey)) };
  }

  it('A2: after DELETE and PUT, the old Send key fails in a handler that had cached it, and in a fresh one', async () => {
    // prepare: the sender's handler is another instance than admin's (another Lambda)
    await ok(admin('PUT', '/queues/reborn', {}), 201);
    const { sender, fresh } = await cachedSender('/queues/reborn', 'old-sender');
    // act
    await ok(admin('DELETE', '/queues/reborn'), 204);
    await ok(admin('PUT', '/queues/reborn', {}), 201);
    // assess
    const cached = await sender('POST', '/queues/reborn/messages', { body: 'second life' });
    expect(cached.status, JSON.stringify(cached.body)).toBe(401);
    expect((await fresh()('POST', '/queues/reborn/messages', { body: 'second life' })).status).toBe(401);
    expect(await peekCount('/queues/reborn')).toBe(0);
    // the new incarnation has no rules; one of the same name gets new keys
    expect((await admin('GET', '/queues/reborn/authorization-rules')).body.items).toEqual([]);
  });

  it('A2: after the reaper deletes an idle queue and PUT re-creates it, the old Send key fails, cached or not', async () => {
    // prepare
    await ok(admin('PUT', '/queues/idle-reborn', { autoDeleteOnIdle: 'PT5M' }), 201);
    const { sender, fresh } = await cachedSender('/queues/idle-reborn', 'idle-sender');
    // act: idle past its deadline; the reaper (another function) deletes it
    clock.advance(10 * MINUTE);
    const report = await createBroker(deps).reap();
    expect(report.entitiesDeleted).toContain('queues/idle-reborn');
    await ok(admin('PUT', '/queues/idle-reborn', {}), 201);
    // assess
    expect((await sender('POST', '/queues/idle-reborn/messages', { body: 'second life' })).status).toBe(401);
    expect((await fresh()('POST', '/queues/idle-reborn/messages', { body: 'second life' })).status).toBe(401);
    expect(await peekCount('/queues/idle-reborn')).toBe(0);
  });

  it('A2: rules left behind by a deletion that died before removing them open nothing, and a rule of the same name gets new keys', async () => {
    // prepare: a topic-level rule and a subscription-level rule
    await ok(admin('PUT', '/topics/crash', {}), 201);
    await ok(admin('PUT', '/topics/crash/subscriptions/sub', {}), 201);
    const topicRule = await ok(admin('PUT', '/topics/crash/authorization-rules/leftover', { rights: ['Send', 'Listen'] }), 201);
    const subRule = await ok(admin('PUT', '/topics/crash/subscriptions/sub/authorization-rules/leftover', { rights: ['Listen'] }), 201);
    // act: the entity goes, its rules stay (as when the deleting function dies in between)
    await deleteEntity(createBroker(deps).ctx, { kind: 'topic', name: 'crash' });
    await ok(admin('PUT', '/topics/crash', {}), 201);
    await ok(admin('PUT', '/topics/crash/subscriptions/sub', {}), 201);
    // assess
    expect((await as(token('http://localhost/topics/crash', 'leftover', topicRule.primaryKey))('POST', '/topics/crash/messages', { body: 1 })).status).toBe(
      401,
    );
    expect(
      (
        await as(token('http://localhost/topics/crash/subscriptions/sub', 'leftover', subRule.primaryKey))(
          'POST',
          '/topics/crash/subscriptions/sub/messages/receive',
          {},
        )
      ).status,
    ).toBe(401);
    expect((await admin('GET', '/topics/crash/authorization-rules')).body.items).toEqual([]);
    expect((await admin('GET', '/topics/crash/authorization-rules/leftover')).status).toBe(404);
    const again = await admin('PUT', '/topics/crash/authorization-rules/leftover', { rights: ['Send'] });
    expect(again.status).toBe(201);
    expect(again.body.primaryKey).not.toBe(topicRule.primaryKey);
    expect(again.body.secondaryKey).not.toBe(topicRule.secondaryKey);
    expect((await as(token('http://localhost/topics/crash', 'leftover', again.body.primaryKey))('POST', '/topics/crash/messages', { body: 1 })).status).toBe(
      201,
    );
  });

  it('A2: a rule keeps working for its own incarnation, across handlers', async () => {
    await ok(admin('PUT', '/queues/steady', {}), 201);
    const { sender, fresh } = await cachedSender('/queues/steady', 'steady-sender');
    await ok(admin('PUT', '/queues/steady', { lockDuration: 'PT2M' }), 200);
    expect((await sender('POST', '/queues/steady/messages', { body: 2 })).status).toBe(201);
    expect((await fresh()('POST', '/queues/steady/messages', { body: 3 })).status).toBe(201);
  });
});
