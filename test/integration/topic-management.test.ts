/**
 * Topic, subscription and rule management over the API handler: properties and defaults
 * (E2), names (E1), refusals (B2), listing with paging, rules (F1: `$Default`, SQL and
 * correlation filters, refusal of bad SQL with its position).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Reply } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { entityHelpers, expectError, type Msg } from '../support/queue-helpers.js';

const clock = new ManualClock();
let api: ReturnType<typeof apiClient>;
let counter = 0;
const fresh = (stem = 't') => `${stem}${++counter}`;

beforeAll(async () => {
  api = apiClient(await testDeps(clock, 'topic-mgmt'));
});

const { put, receiveAll } = entityHelpers(() => api);

/** A topic with one subscription whose only rule is `rule` (the $Default rule removed). */
async function topicWithRule(rule: Record<string, unknown>): Promise<{ topic: string; sub: string }> {
  const topic = fresh('tr');
  await put(`/topics/${topic}`);
  await put(`/topics/${topic}/subscriptions/s`);
  expect((await api('DELETE', `/topics/${topic}/subscriptions/s/rules/$Default`)).status).toBe(204);
  await put(`/topics/${topic}/subscriptions/s/rules/r`, rule);
  return { topic, sub: `/topics/${topic}/subscriptions/s` };
}

async function collectPages(path: string, top: number): Promise<{ pages: Msg[][]; names: string[] }> {
  const pages: Msg[][] = [];
  let next: string | null = null;
  do {
    const res: Reply = await api('GET', `${path}?top=${top}${next ? `&next=${encodeURIComponent(next)}` : ''}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.items.length).toBeLessThanOrEqual(top);
    pages.push(res.body.items);
    next = res.body.next;
    expect(pages.length).toBeLessThan(50);
  } while (next);
  return { pages, names: pages.flat().map((i) => i.name as string) };
}

describe('topics: properties and defaults (E2)', () => {
  it('E2: a new topic has the topic properties with their defaults, and no queue-only ones', async () => {
    const name = fresh();
    const created = await put(`/topics/${name}`);
    expect(created).toMatchObject({
      name,
      defaultMessageTimeToLive: null,
      autoDeleteOnIdle: null,
      status: 'Active',
      requiresDuplicateDetection: false,
      duplicateDetectionHistoryTimeWindow: 'PT10M',
      maxSizeInMegabytes: 1024,
    });
    for (const queueOnly of ['lockDuration', 'maxDeliveryCount', 'forwardTo', 'requiresSession', 'deadLetteringOnMessageExpiration']) {
      expect(created).not.toHaveProperty(queueOnly);
    }
    const got = await api('GET', `/topics/${name}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ name, status: 'Active', duplicateDetectionHistoryTimeWindow: 'PT10M', maxSizeInMegabytes: 1024 });
  });

  it('E2: topic properties are taken at creation and updated one at a time (201, then 200)', async () => {
    const name = fresh();
    const props = {
      defaultMessageTimeToLive: 'PT1H',
      autoDeleteOnIdle: 'PT10M',
      status: 'SendDisabled',
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindow: 'PT30S',
      maxSizeInMegabytes: 2048,
    };
    expect(await put(`/topics/${name}`, props)).toMatchObject(props);
    const updated = await put(`/topics/${name}`, { status: 'Active', defaultMessageTimeToLive: null }, 200);
    expect(updated).toMatchObject({ ...props, status: 'Active', defaultMessageTimeToLive: null });
    expect((await api('GET', `/topics/${name}`)).body).toMatchObject({ ...props, status: 'Active', defaultMessageTimeToLive: null });
  });

  it('E2/B2: unknown or queue-only fields and bad values on a topic are 400 naming the field, and change nothing', async () => {
    const name = fresh();
    await put(`/topics/${name}`);
    expectError(await api('PUT', `/topics/${name}`, { bogus: 1 }), 400, 'BadRequest', 'bogus');
    expectError(await api('PUT', `/topics/${name}`, { lockDuration: 'PT1M' }), 400, 'BadRequest', 'lockDuration');
    expectError(await api('PUT', `/topics/${name}`, { forwardTo: 'queues/x' }), 400, 'BadRequest', 'forwardTo');
    expectError(await api('PUT', `/topics/${name}`, { status: 'ReceiveDisabled' }), 400, 'BadRequest', 'status');
    expectError(
      await api('PUT', `/topics/${name}`, { duplicateDetectionHistoryTimeWindow: 'PT10S' }),
      400,
      'BadRequest',
      'duplicateDetectionHistoryTimeWindow',
    );
    expectError(await api('PUT', `/topics/${name}`, { autoDeleteOnIdle: 'PT1M' }), 400, 'BadRequest', 'autoDeleteOnIdle');
    expect((await api('GET', `/topics/${name}`)).body).toMatchObject({
      status: 'Active',
      autoDeleteOnIdle: null,
      duplicateDetectionHistoryTimeWindow: 'PT10M',
    });
  });

  it('D8: a topic shows runtime counts but no dead-letter, transfer dead-letter or deferred count', async () => {
    const name = fresh();
    await put(`/topics/${name}`);
    const { runtime } = (await api('GET', `/topics/${name}`)).body;
    expect(runtime).toMatchObject({ activeMessageCount: 0, scheduledMessageCount: 0, totalMessageCount: 0, sizeInBytes: 0 });
    expect(runtime).not.toHaveProperty('deadLetterMessageCount');
    expect(runtime).not.toHaveProperty('transferDeadLetterMessageCount');
    expect(runtime).toHaveProperty('createdAt');
  });
});

describe('subscriptions: properties, defaults, names (E1, E2)', () => {
  it('E2: a new subscription has the subscription properties with their defaults', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    const created = await put(`/topics/${topic}/subscriptions/sub1`);
    expect(created).toEqual({
      name: 'sub1',
      topicName: topic,
      lockDuration: 'PT1M',
      maxDeliveryCount: 10,
      defaultMessageTimeToLive: null,
      deadLetteringOnMessageExpiration: false,
      deadLetteringOnFilterEvaluationExceptions: false,
      autoDeleteOnIdle: null,
      requiresSession: false,
      forwardTo: null,
      forwardDeadLetteredMessagesTo: null,
      status: 'Active',
      runtime: expect.any(Object),
    });
    const got = (await api('GET', `/topics/${topic}/subscriptions/sub1`)).body;
    expect(got.runtime).toMatchObject({
      activeMessageCount: 0,
      deadLetterMessageCount: 0,
      transferDeadLetterMessageCount: 0,
      scheduledMessageCount: 0,
      deferredMessageCount: 0,
      totalMessageCount: 0,
    });
  });

  it('E2: subscription properties (filter exceptions, forwardTo, forwardDeadLetteredMessagesTo) are stored and updated', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put('/queues/fwd-target');
    const props = {
      lockDuration: 'PT30S',
      maxDeliveryCount: 3,
      defaultMessageTimeToLive: 'PT5M',
      deadLetteringOnMessageExpiration: true,
      deadLetteringOnFilterEvaluationExceptions: true,
      autoDeleteOnIdle: 'PT1H',
      requiresSession: true,
      forwardTo: 'queues/fwd-target',
      forwardDeadLetteredMessagesTo: 'queues/fwd-target',
      status: 'ReceiveDisabled',
    };
    expect(await put(`/topics/${topic}/subscriptions/s`, props)).toMatchObject(props);
    const updated = await put(`/topics/${topic}/subscriptions/s`, { forwardTo: null, deadLetteringOnFilterEvaluationExceptions: false }, 200);
    expect(updated).toMatchObject({ ...props, forwardTo: null, deadLetteringOnFilterEvaluationExceptions: false });
  });

  it('E2/B2: unknown and topic-only fields and bad values on a subscription are 400 naming the field', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    expectError(await api('PUT', `/topics/${topic}/subscriptions/s`, { nope: true }), 400, 'BadRequest', 'nope');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/s`, { requiresDuplicateDetection: true }), 400, 'BadRequest', 'requiresDuplicateDetection');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/s`, { maxSizeInMegabytes: 1024 }), 400, 'BadRequest', 'maxSizeInMegabytes');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/s`, { lockDuration: 'PT6M' }), 400, 'BadRequest', 'lockDuration');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/s`, { maxDeliveryCount: 0 }), 400, 'BadRequest', 'maxDeliveryCount');
    expectError(
      await api('PUT', `/topics/${topic}/subscriptions/s`, { deadLetteringOnFilterEvaluationExceptions: 'yes' }),
      400,
      'BadRequest',
      'deadLetteringOnFilterEvaluationExceptions',
    );
    expectError(await api('PUT', `/topics/${topic}/subscriptions/s`, { forwardTo: 'topics/t/subscriptions/x' }), 400, 'BadRequest', 'forwardTo');
    expect((await api('GET', `/topics/${topic}/subscriptions/s`)).status).toBe(404);
  });

  it('E1: a subscription name of 50 characters is fine, 51 is 400; bad characters are 400', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/${'s'.repeat(50)}`);
    expectError(await api('PUT', `/topics/${topic}/subscriptions/${'s'.repeat(51)}`), 400, 'BadRequest', 'subscriptionName');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/-bad`), 400, 'BadRequest', 'subscriptionName');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/a%20b`), 400, 'BadRequest', 'subscriptionName');
  });

  it('E1: subscription names are case-insensitive and keep the first spelling', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/MixedCase`);
    const again = await put(`/topics/${topic.toUpperCase()}/subscriptions/mixedcase`, { maxDeliveryCount: 2 }, 200);
    expect(again).toMatchObject({ name: 'MixedCase', maxDeliveryCount: 2 });
  });

  it('E1: a subscription under a missing topic is 404 for create, get, list, rules and delete', async () => {
    const topic = fresh('missing');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/s`), 404, 'EntityNotFound');
    expectError(await api('GET', `/topics/${topic}/subscriptions/s`), 404, 'EntityNotFound');
    expectError(await api('GET', `/topics/${topic}/subscriptions`), 404, 'EntityNotFound');
    expectError(await api('GET', `/topics/${topic}/subscriptions/s/rules`), 404, 'EntityNotFound');
    expectError(await api('DELETE', `/topics/${topic}/subscriptions/s`), 404, 'EntityNotFound');
    expect((await api('GET', `/topics/${topic}`)).status).toBe(404);
  });

  it('E3: subscription subqueues exist implicitly and cannot be created or sent to', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`);
    expect((await api('GET', `/topics/${topic}/subscriptions/s/$deadletterqueue/messages`)).body.messages).toEqual([]);
    expect((await api('GET', `/topics/${topic}/subscriptions/s/%24transferdeadletterqueue/messages`)).body.messages).toEqual([]);
    expect((await api('PUT', `/topics/${topic}/subscriptions/s/$deadletterqueue`, {})).status).toBeGreaterThanOrEqual(400);
    expect((await api('POST', `/topics/${topic}/subscriptions/s/messages`, { body: 1 })).status).toBe(400);
  });
});

describe('listing topics and subscriptions with paging', () => {
  it('GET /topics pages with top and next, in name order, and every topic appears once', async () => {
    const names = ['page-a', 'page-b', 'page-c', 'page-d', 'page-e'];
    for (const n of names) await put(`/topics/${n}`);
    const { pages, names: listed } = await collectPages('/topics', 2);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.filter((n) => n.startsWith('page-'))).toEqual(names);
    expect([...listed].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))).toEqual(listed);
    const item = pages.flat().find((i) => i.name === 'page-a');
    expect(item).toMatchObject({ status: 'Active', runtime: expect.any(Object) });
  });

  it("GET /topics/{t}/subscriptions pages with top and next and lists only that topic's subscriptions", async () => {
    const topic = fresh('lst');
    const other = fresh('lst');
    await put(`/topics/${topic}`);
    await put(`/topics/${other}`);
    const subs = ['s1', 's2', 's3', 's4', 's5', 's6', 's7'];
    for (const s of subs) await put(`/topics/${topic}/subscriptions/${s}`);
    await put(`/topics/${other}/subscriptions/elsewhere`);
    const { names } = await collectPages(`/topics/${topic}/subscriptions`, 3);
    expect(names).toEqual(subs);
    const all = await api('GET', `/topics/${topic}/subscriptions`);
    expect(all.body.items.map((i: Msg) => i.name)).toEqual(subs);
    expect(all.body.items[0]).toMatchObject({ topicName: topic, runtime: expect.objectContaining({ activeMessageCount: 0 }) });
    expect(all.body.next).toBeNull();
  });

  it('B2: bad paging parameters are 400', async () => {
    expectError(await api('GET', '/topics?top=0'), 400, 'BadRequest', 'top');
    expectError(await api('GET', '/topics?top=101'), 400, 'BadRequest', 'top');
    expectError(await api('GET', '/topics?top=abc'), 400, 'BadRequest', 'top');
    expectError(await api('GET', '/topics?next=%25%25%25'), 400, 'BadRequest', 'next');
  });
});

describe('rules (F1)', () => {
  it('F1: a new subscription has the $Default rule with a true filter', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`);
    const list = await api('GET', `/topics/${topic}/subscriptions/s/rules`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ items: [{ name: '$Default', filter: { true: {} }, action: null, createdAt: expect.any(String) }], next: null });
    const got = await api('GET', `/topics/${topic}/subscriptions/s/rules/%24Default`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ name: '$Default', filter: { true: {} }, action: null });
  });

  it('F1: rules are created (201), replaced (200), read, listed and deleted (204, then 404)', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`);
    const base = `/topics/${topic}/subscriptions/s/rules`;
    const created = await put(`${base}/red`, { filter: { sql: "color = 'red'" }, action: { sql: "SET seen = 'yes'" } });
    expect(created).toMatchObject({ name: 'red', filter: { sql: "color = 'red'" }, action: { sql: "SET seen = 'yes'" } });
    const replaced = await put(`${base}/red`, { filter: { sql: "color = 'crimson'" } }, 200);
    expect(replaced).toMatchObject({ name: 'red', filter: { sql: "color = 'crimson'" }, action: null });
    expect((await api('GET', `${base}/red`)).body).toMatchObject({ filter: { sql: "color = 'crimson'" }, action: null });
    const defaulted = await put(`${base}/nofilter`, {});
    expect(defaulted.filter).toEqual({ true: {} });
    const list = await api('GET', base);
    expect(list.body.items.map((r: Msg) => r.name).sort()).toEqual(['$Default', 'nofilter', 'red']);
    expect((await api('DELETE', `${base}/red`)).status).toBe(204);
    expectError(await api('GET', `${base}/red`), 404, 'EntityNotFound');
    expectError(await api('DELETE', `${base}/red`), 404, 'EntityNotFound');
    expect((await api('DELETE', `${base}/$Default`)).status).toBe(204);
    expect((await api('GET', base)).body.items.map((r: Msg) => r.name)).toEqual(['nofilter']);
  });

  it('F1/B2: rule bodies with unknown fields, bad filter shapes, bad names or a missing subscription are refused', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`);
    const base = `/topics/${topic}/subscriptions/s/rules`;
    expectError(await api('PUT', `${base}/r`, { filter: { sql: 'a = 1' }, extra: 1 }), 400, 'BadRequest', 'extra');
    expect((await api('PUT', `${base}/r`, { filter: { sql: 'a = 1', true: {} } })).status).toBe(400);
    expect((await api('PUT', `${base}/r`, { filter: { regex: '.*' } })).status).toBe(400);
    expect((await api('PUT', `${base}/r`, { filter: { correlation: {} } })).status).toBe(400);
    expectError(await api('PUT', `${base}/${'r'.repeat(51)}`, { filter: { true: {} } }), 400, 'BadRequest', 'ruleName');
    expectError(await api('PUT', `/topics/${topic}/subscriptions/absent/rules/r`, { filter: { true: {} } }), 404, 'EntityNotFound');
    expect((await api('GET', base)).body.items.map((r: Msg) => r.name)).toEqual(['$Default']);
  });

  it('F1: an invalid SQL filter is refused at creation with line and column', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`);
    const bad = await api('PUT', `/topics/${topic}/subscriptions/s/rules/bad`, { filter: { sql: "color = 'red' AND\n  size >> 3" } });
    expectError(bad, 400, 'BadRequest', 'filter.sql');
    expect(bad.body.error.message).toMatch(/line 2, column \d+/);
    const unknownSys = await api('PUT', `/topics/${topic}/subscriptions/s/rules/bad`, { filter: { sql: 'sys.nosuchthing = 1' } });
    expectError(unknownSys, 400, 'BadRequest', 'filter.sql');
    expect(unknownSys.body.error.message).toMatch(/line 1, column \d+/);
    expectError(await api('GET', `/topics/${topic}/subscriptions/s/rules/bad`), 404, 'EntityNotFound');
  });

  it('F1: an invalid SQL action is refused at creation with line and column', async () => {
    const topic = fresh();
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`);
    const bad = await api('PUT', `/topics/${topic}/subscriptions/s/rules/bad`, { filter: { true: {} }, action: { sql: 'SET x = ' } });
    expectError(bad, 400, 'BadRequest', 'action.sql');
    expect(bad.body.error.message).toMatch(/line 1, column 9/);
    const immutable = await api('PUT', `/topics/${topic}/subscriptions/s/rules/bad`, { filter: { true: {} }, action: { sql: "SET sys.MessageId = 'x'" } });
    expectError(immutable, 400, 'BadRequest', 'action.sql');
    expect(immutable.body.error.message).toMatch(/line 1, column \d+/);
    expectError(await api('GET', `/topics/${topic}/subscriptions/s/rules/bad`), 404, 'EntityNotFound');
  });

  it('F1: a correlation filter matches on correlationId, subject and application properties, with equal types', async () => {
    const { topic, sub } = await topicWithRule({
      filter: { correlation: { correlationId: 'c-1', subject: 'order.created', properties: { region: 'eu', priority: 2 } } },
    });
    const send = (m: Record<string, unknown>) => api('POST', `/topics/${topic}/messages`, { body: 'x', ...m });
    const match = { correlationId: 'c-1', subject: 'order.created', applicationProperties: { region: 'eu', priority: 2, other: true } };
    expect((await send({ ...match, messageId: 'yes' })).body.subscriptions).toEqual(['s']);
    expect((await send({ ...match, correlationId: 'c-2' })).body.subscriptions).toEqual([]);
    expect((await send({ ...match, subject: 'order.deleted' })).body.subscriptions).toEqual([]);
    expect((await send({ ...match, applicationProperties: { region: 'eu', priority: '2' } })).body.subscriptions).toEqual([]);
    expect((await send({ ...match, applicationProperties: { region: 'eu' } })).body.subscriptions).toEqual([]);
    expect((await send({ correlationId: 'c-1', applicationProperties: { region: 'eu', priority: 2 } })).body.subscriptions).toEqual([]);
    const got = await receiveAll(sub);
    expect(got.map((m) => m.messageId)).toEqual(['yes']);
  });

  it('F1: a new rule applies to the next send; a deleted rule no longer does', async () => {
    const { topic, sub } = await topicWithRule({ filter: { sql: "color = 'red'" } });
    expect((await api('POST', `/topics/${topic}/messages`, { body: 1, applicationProperties: { color: 'blue' } })).body.subscriptions).toEqual([]);
    await put(`${sub}/rules/blue`, { filter: { sql: "color = 'blue'" } });
    expect((await api('POST', `/topics/${topic}/messages`, { body: 2, applicationProperties: { color: 'blue' } })).body.subscriptions).toEqual(['s']);
    expect((await api('DELETE', `${sub}/rules/blue`)).status).toBe(204);
    expect((await api('POST', `/topics/${topic}/messages`, { body: 3, applicationProperties: { color: 'blue' } })).body.subscriptions).toEqual([]);
    expect((await receiveAll(sub)).map((m) => m.body)).toEqual([2]);
  });
});
