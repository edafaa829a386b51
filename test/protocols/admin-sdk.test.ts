/**
 * The Atom management plane with the real, unmodified `@azure/service-bus` 7.9.5
 * ServiceBusAdministrationClient, over HTTPS (it speaks nothing else) against
 * `npm start -- --tls`'s runtime, trusting its certificate through the client's `agent`.
 * Every method of the client is called at least once.
 */
import { Agent } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient, type SqlRuleFilter, type CorrelationRuleFilter } from '@azure/service-bus';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { startTestRuntime } from '../support/runtime.js';
import { all } from '../support/iterate.js';
import { createBroker } from '../support/broker.js';

let runtime: LocalRuntime;
let admin: ServiceBusAdministrationClient;
let connectionString: string;

beforeAll(async () => {
  runtime = await startTestRuntime('atom-sdk', { tls: true });
  connectionString = `Endpoint=sb://127.0.0.1:${runtime.port}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey}`;
  admin = new ServiceBusAdministrationClient(connectionString, { agent: new Agent({ ca: runtime.certificate!.pem }) });
}, 120_000);
afterAll(async () => {
  await runtime?.stop();
});

describe('Atom management plane with @azure/service-bus 7.9.5 over HTTPS', () => {
  it('E1 E2 queues: create, get, runtime, update, exists, list, delete; 404 and 409 codes', async () => {
    const created = await admin.createQueue('orders', { lockDuration: 'PT30S', maxDeliveryCount: 5, userMetadata: 'hi' });
    expect(created).toMatchObject({ name: 'orders', lockDuration: 'PT30S', maxDeliveryCount: 5, requiresSession: false, status: 'Active' });
    expect(created.defaultMessageTimeToLive).toBe('P10675199DT2H48M5.4775807S');
    expect(created._response.status).toBe(201);
    await expect(admin.createQueue('orders')).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError', statusCode: 409 });
    await expect(admin.createQueue('ORDERS')).rejects.toMatchObject({ statusCode: 409 });

    const got = await admin.getQueue('orders');
    expect(got).toMatchObject({ name: 'orders', lockDuration: 'PT30S', maxDeliveryCount: 5, enablePartitioning: false });
    got.lockDuration = 'PT1M';
    got.defaultMessageTimeToLive = 'PT10M';
    const updated = await admin.updateQueue(got);
    expect(updated).toMatchObject({ lockDuration: 'PT1M', defaultMessageTimeToLive: 'PT10M', maxDeliveryCount: 5 });
    expect(await admin.queueExists('orders')).toBe(true);
    expect(await admin.queueExists('nope')).toBe(false);
    await expect(admin.getQueue('nope')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });
    await expect(admin.updateQueue({ ...got, name: 'nope' })).rejects.toMatchObject({ statusCode: 404 });

    const runtimeProps = await admin.getQueueRuntimeProperties('orders');
    expect(runtimeProps).toMatchObject({ name: 'orders', totalMessageCount: 0, activeMessageCount: 0, deadLetterMessageCount: 0, scheduledMessageCount: 0 });
    expect(runtimeProps.createdAt).toBeInstanceOf(Date);

    await admin.deleteQueue('orders');
    await expect(admin.deleteQueue('orders')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });
    expect(await admin.queueExists('orders')).toBe(false);
  });

  it('E6 runtime counts (CountDetails) follow messages sent', async () => {
    await admin.createQueue('counted');
    // Sent through the broker itself: Node's fetch would not trust the runtime's certificate.
    const broker = createBroker(runtime.deps);
    await broker.send({ kind: 'queue', name: 'counted' }, { body: 'a' });
    await broker.send({ kind: 'queue', name: 'counted' }, { body: 'b' });
    await runtime.runJob('streams');
    const props = await admin.getQueueRuntimeProperties('counted');
    expect(props).toMatchObject({ activeMessageCount: 2, totalMessageCount: 2 });
    const listed = await all(admin.listQueuesRuntimeProperties());
    expect(listed.find((q) => q.name === 'counted')).toMatchObject({ activeMessageCount: 2 });
  });

  it('pages queues and topics with small pages, by iteration and byPage', async () => {
    for (const n of ['p1', 'p2', 'p3', 'p4', 'p5']) await admin.createQueue(n);
    const names = (await all(admin.listQueues())).map((q) => q.name);
    expect(names).toEqual(expect.arrayContaining(['p1', 'p2', 'p3', 'p4', 'p5']));
    const pages: string[][] = [];
    for await (const page of admin.listQueues().byPage({ maxPageSize: 2 })) pages.push(page.map((q) => q.name));
    expect(pages.flat()).toEqual(names);
    expect(pages.slice(0, -1).every((p) => p.length === 2)).toBe(true);
    const rtPages: number[] = [];
    for await (const page of admin.listQueuesRuntimeProperties().byPage({ maxPageSize: 3 })) rtPages.push(page.length);
    expect(rtPages.reduce((a, b) => a + b, 0)).toBe(names.length);

    for (const n of ['tp1', 'tp2', 'tp3']) await admin.createTopic(n);
    const topicPages: string[][] = [];
    for await (const page of admin.listTopics().byPage({ maxPageSize: 2 })) topicPages.push(page.map((t) => t.name));
    expect(topicPages.flat()).toEqual(['tp1', 'tp2', 'tp3']);
    expect((await all(admin.listTopicsRuntimeProperties())).map((t) => t.name)).toEqual(['tp1', 'tp2', 'tp3']);
    for (const n of ['tp1', 'tp2', 'tp3']) await admin.deleteTopic(n);
  });

  it('E1 topics: create, get, runtime, update, exists, delete; a queue name is taken for topics (409)', async () => {
    const created = await admin.createTopic('events', { defaultMessageTimeToLive: 'PT1H', maxSizeInMegabytes: 2048 });
    expect(created).toMatchObject({ name: 'events', defaultMessageTimeToLive: 'PT1H', maxSizeInMegabytes: 2048, status: 'Active' });
    await expect(admin.createTopic('events')).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError', statusCode: 409 });
    await admin.createQueue('shared');
    await expect(admin.createTopic('shared')).rejects.toMatchObject({ statusCode: 409 });
    const got = await admin.getTopic('events');
    got.defaultMessageTimeToLive = 'PT2H';
    expect(await admin.updateTopic(got)).toMatchObject({ defaultMessageTimeToLive: 'PT2H', maxSizeInMegabytes: 2048 });
    expect(await admin.topicExists('events')).toBe(true);
    // Names are one space in Service Bus: GET /shared answers the queue, whichever kind was asked for.
    expect((await admin.getQueue('shared')).name).toBe('shared');
    await admin.createSubscription('events', 's1');
    expect(await admin.getTopicRuntimeProperties('events')).toMatchObject({ name: 'events', subscriptionCount: 1, scheduledMessageCount: 0 });
    await admin.deleteTopic('events');
    expect(await admin.topicExists('events')).toBe(false);
    await expect(admin.getTopic('events')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('F1 F2 subscriptions: forwarding, default rule, update, list, runtime, exists, delete', async () => {
    await admin.createTopic('t');
    await admin.createQueue('sink');
    const sub = await admin.createSubscription('t', 's', {
      lockDuration: 'PT45S',
      forwardDeadLetteredMessagesTo: 'sink',
      defaultRuleOptions: { name: 'only-red', filter: { sqlExpression: 'color = @c', sqlParameters: { '@c': 'red' } } },
    });
    expect(sub).toMatchObject({ topicName: 't', subscriptionName: 's', lockDuration: 'PT45S' });
    expect(sub.forwardDeadLetteredMessagesTo).toMatch(/\/sink$/);
    await expect(admin.createSubscription('t', 's')).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError', statusCode: 409 });
    await expect(admin.createSubscription('no-topic', 's')).rejects.toMatchObject({ statusCode: 404 });

    const rules = await all(admin.listRules('t', 's'));
    expect(rules.map((r) => r.name)).toEqual(['only-red']);
    expect(rules[0]!.filter).toEqual({ sqlExpression: 'color = @c', sqlParameters: { '@c': 'red' } });

    const got = await admin.getSubscription('t', 's');
    got.forwardTo = 'sink';
    got.maxDeliveryCount = 3;
    const updated = await admin.updateSubscription(got);
    expect(updated.forwardTo).toMatch(/\/sink$/);
    expect(updated.maxDeliveryCount).toBe(3);
    expect(await admin.subscriptionExists('t', 's')).toBe(true);
    expect(await admin.subscriptionExists('t', 'nope')).toBe(false);
    await admin.createSubscription('t', 's2');
    expect((await all(admin.listSubscriptions('t'))).map((x) => x.subscriptionName)).toEqual(['s', 's2']);
    const pages: number[] = [];
    for await (const page of admin.listSubscriptions('t').byPage({ maxPageSize: 1 })) pages.push(page.length);
    expect(pages).toEqual([1, 1]);
    expect((await all(admin.listSubscriptionsRuntimeProperties('t'))).map((x) => x.totalMessageCount)).toEqual([0, 0]);
    expect(await admin.getSubscriptionRuntimeProperties('t', 's')).toMatchObject({ subscriptionName: 's', activeMessageCount: 0, totalMessageCount: 0 });
    expect((await all(admin.listRules('t', 's2'))).map((r) => r.name)).toEqual(['$Default']);
    await admin.deleteSubscription('t', 's2');
    await expect(admin.getSubscription('t', 's2')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('F1 rules: SQL with typed parameters, correlation with typed properties, SQL actions; update, exists, delete', async () => {
    await admin.createTopic('rt');
    await admin.createSubscription('rt', 'rs');
    const sql = await admin.createRule(
      'rt',
      'rs',
      'big',
      { sqlExpression: 'size > @n AND vip = @v', sqlParameters: { '@n': 10, '@v': true } },
      { sqlExpression: "SET seen = 'yes'" },
    );
    expect(sql.filter).toEqual({ sqlExpression: 'size > @n AND vip = @v', sqlParameters: { '@n': 10, '@v': true } });
    expect(sql.action).toMatchObject({ sqlExpression: "SET seen = 'yes'" });
    await expect(admin.createRule('rt', 'rs', 'big', { sqlExpression: '1=1' })).rejects.toMatchObject({
      code: 'MessageEntityAlreadyExistsError',
      statusCode: 409,
    });
    const correlation: CorrelationRuleFilter = {
      correlationId: 'c1',
      subject: 'hello',
      applicationProperties: { region: 'eu', tier: 2, half: 0.5, on: false },
    };
    const corr = await admin.createRule('rt', 'rs', 'corr', correlation);
    expect(corr.filter).toMatchObject(correlation);
    expect(await admin.getRule('rt', 'rs', 'corr')).toMatchObject({ name: 'corr', filter: correlation });
    expect(await admin.ruleExists('rt', 'rs', 'corr')).toBe(true);
    expect(await admin.ruleExists('rt', 'rs', 'nope')).toBe(false);
    await expect(admin.getRule('rt', 'rs', 'nope')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });

    const got = await admin.getRule('rt', 'rs', 'big');
    (got.filter as SqlRuleFilter).sqlExpression = 'size > @n';
    (got.filter as SqlRuleFilter).sqlParameters = { '@n': 20 };
    const updated = await admin.updateRule('rt', 'rs', got);
    expect(updated.filter).toEqual({ sqlExpression: 'size > @n', sqlParameters: { '@n': 20 } });
    await expect(admin.updateRule('rt', 'rs', { ...got, name: 'nope' })).rejects.toMatchObject({ statusCode: 404 });

    const names = (await all(admin.listRules('rt', 'rs'))).map((r) => r.name);
    expect(names.sort()).toEqual(['$Default', 'big', 'corr']);
    const pages: number[] = [];
    for await (const page of admin.listRules('rt', 'rs').byPage({ maxPageSize: 2 })) pages.push(page.length);
    expect(pages).toEqual([2, 1]);
    await admin.deleteRule('rt', 'rs', 'corr');
    await expect(admin.deleteRule('rt', 'rs', 'corr')).rejects.toMatchObject({ statusCode: 404 });
    await expect(admin.createRule('rt', 'rs', 'bad', { sqlExpression: 'size >' })).rejects.toMatchObject({ statusCode: 400 });
  });

  it('A2 A4 entity authorization rules: created with the queue, keys generated, replaced on update, and they open that queue only', async () => {
    const q = await admin.createQueue('guarded', { authorizationRules: [{ keyName: 'reader', accessRights: ['Listen'], claimType: 'SharedAccessKey' }] });
    expect(q.authorizationRules).toEqual([
      { keyName: 'reader', accessRights: ['Listen'], claimType: 'SharedAccessKey', primaryKey: expect.any(String), secondaryKey: expect.any(String) },
    ]);
    const key = q.authorizationRules![0]!.primaryKey!;
    expect(Buffer.from(key, 'base64')).toHaveLength(32);
    // The rule's key opens its queue, over the management plane too, and nothing else.
    const scoped = new ServiceBusAdministrationClient(`Endpoint=sb://127.0.0.1:${runtime.port}/;SharedAccessKeyName=reader;SharedAccessKey=${key}`, {
      agent: new Agent({ ca: runtime.certificate!.pem }),
      retryOptions: { maxRetries: 0 },
    });
    await expect(scoped.getQueue('guarded')).rejects.toMatchObject({ statusCode: 401 }); // Listen is not Manage
    const got = await admin.getQueue('guarded');
    got.authorizationRules = [{ keyName: 'admin', accessRights: ['Manage', 'Send', 'Listen'], claimType: 'SharedAccessKey' }];
    const updated = await admin.updateQueue(got);
    expect(updated.authorizationRules?.map((r) => r.keyName)).toEqual(['admin']);
    const adminKey = updated.authorizationRules![0]!.primaryKey!;
    const owner = new ServiceBusAdministrationClient(`Endpoint=sb://127.0.0.1:${runtime.port}/;SharedAccessKeyName=admin;SharedAccessKey=${adminKey}`, {
      agent: new Agent({ ca: runtime.certificate!.pem }),
      retryOptions: { maxRetries: 0 },
    });
    expect((await owner.getQueue('guarded')).name).toBe('guarded');
    await expect(owner.getQueue('counted')).rejects.toMatchObject({ statusCode: 401 });
  });

  it('namespace properties', async () => {
    const ns = await admin.getNamespaceProperties();
    expect(ns).toMatchObject({ name: '127.0.0.1', messagingSku: 'Standard', messagingUnits: undefined });
    expect(ns.createdAt).toBeInstanceOf(Date);
  });

  it('A3: a wrong key is UnauthorizedRequestError (401)', async () => {
    const bad = new ServiceBusAdministrationClient(
      connectionString.replace(/SharedAccessKey=[^;]*/, `SharedAccessKey=${Buffer.alloc(32, 1).toString('base64')}`),
      {
        agent: new Agent({ ca: runtime.certificate!.pem }),
        retryOptions: { maxRetries: 0 },
      },
    );
    await expect(bad.getQueue('x')).rejects.toMatchObject({ code: 'UnauthorizedRequestError', statusCode: 401 });
  });
});
