/** ServiceBusAdministrationClient against the local runtime over HTTP. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, UNLIMITED_DURATION } from '../../lib/client/admin.js';
import { AzureNamedKeyCredential } from '../../lib/client/credentials.js';
import type { EntitiesResponse, QueueProperties } from '../../lib/client/admin-types.js';
import { connectionStringFor, startRuntime } from './support.js';

let runtime: LocalRuntime;
let admin: ServiceBusAdministrationClient;

beforeAll(async () => {
  runtime = await startRuntime('admin');
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await runtime?.stop();
});

describe('ServiceBusAdministrationClient', () => {
  it('queues: create/get/update/exists/delete with the SDK property names and formats', async () => {
    const created = await admin.createQueue('orders', { lockDuration: 'PT30S', maxDeliveryCount: 5, userMetadata: 'ignored' });
    expect(created).toMatchObject({
      name: 'orders',
      lockDuration: 'PT30S',
      maxDeliveryCount: 5,
      defaultMessageTimeToLive: UNLIMITED_DURATION,
      autoDeleteOnIdle: UNLIMITED_DURATION,
      requiresSession: false,
      status: 'Active',
      enableBatchedOperations: true,
    });
    expect(created._response.status).toBe(201);
    await expect(admin.createQueue('orders')).rejects.toMatchObject({ name: 'RestError', code: 'MessageEntityAlreadyExistsError', statusCode: 409 });
    const got = await admin.getQueue('orders');
    got.lockDuration = 'PT1M';
    got.defaultMessageTimeToLive = 'PT10M';
    const updated = await admin.updateQueue(got);
    expect(updated).toMatchObject({ lockDuration: 'PT1M', defaultMessageTimeToLive: 'PT10M', maxDeliveryCount: 5 });
    expect(await admin.queueExists('orders')).toBe(true);
    expect(await admin.queueExists('nope')).toBe(false);
    await expect(admin.getQueue('nope')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });
    const runtimeProps = await admin.getQueueRuntimeProperties('orders');
    expect(runtimeProps).toMatchObject({ name: 'orders', activeMessageCount: 0, deadLetterMessageCount: 0, transferMessageCount: 0 });
    expect(runtimeProps.createdAt).toBeInstanceOf(Date);
    await admin.deleteQueue('orders');
    expect(await admin.queueExists('orders')).toBe(false);
    await expect(admin.deleteQueue('orders')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('list* pages with byPage({maxPageSize, continuationToken}) and iterates all', async () => {
    for (const n of ['p1', 'p2', 'p3', 'p4', 'p5']) await admin.createQueue(n);
    const names: string[] = [];
    for await (const q of admin.listQueues()) names.push(q.name);
    expect(names).toEqual(expect.arrayContaining(['p1', 'p2', 'p3', 'p4', 'p5']));
    const pages = admin.listQueues().byPage({ maxPageSize: 2 });
    const first = (await pages.next()).value as EntitiesResponse<QueueProperties>;
    expect(first).toHaveLength(2);
    expect(first.continuationToken).toBeTruthy();
    const rest: string[] = [];
    for await (const page of admin.listQueues().byPage({ maxPageSize: 2, continuationToken: first.continuationToken })) rest.push(...page.map((q) => q.name));
    expect([...first.map((q) => q.name), ...rest].sort()).toEqual(names.sort());
    const counts: number[] = [];
    for await (const r of admin.listQueuesRuntimeProperties()) counts.push(r.activeMessageCount);
    expect(counts).toHaveLength(names.length);
  });

  it('topics, subscriptions, rules (SQL with parameters, correlation, action), runtime properties', async () => {
    const topic = await admin.createTopic('events', { defaultMessageTimeToLive: 'PT1H' });
    expect(topic).toMatchObject({ name: 'events', defaultMessageTimeToLive: 'PT1H', supportOrdering: true });
    topic.defaultMessageTimeToLive = 'PT2H';
    expect((await admin.updateTopic(topic)).defaultMessageTimeToLive).toBe('PT2H');
    const sub = await admin.createSubscription('events', 'all', { maxDeliveryCount: 3 });
    expect(sub).toMatchObject({ topicName: 'events', subscriptionName: 'all', maxDeliveryCount: 3, lockDuration: 'PT1M' });
    sub.maxDeliveryCount = 4;
    expect((await admin.updateSubscription(sub)).maxDeliveryCount).toBe(4);
    await admin.createSubscription('events', 'red', {
      defaultRuleOptions: { name: 'onlyRed', filter: { sqlExpression: 'color = @c', sqlParameters: { '@c': 'red' } } },
    });
    // As Service Bus answers it: the expression as written, with its parameters.
    expect((await admin.getRule('events', 'red', 'onlyRed')).filter).toEqual({ sqlExpression: 'color = @c', sqlParameters: { '@c': 'red' } });
    expect(await admin.ruleExists('events', 'red', '$Default')).toBe(false);
    await admin.createRule('events', 'red', 'corr', { subject: 'order', applicationProperties: { n: 1 } }, { sqlExpression: "SET tagged = 'yes'" });
    const corr = await admin.getRule('events', 'red', 'corr');
    expect(corr).toMatchObject({
      name: 'corr',
      filter: { subject: 'order', applicationProperties: { n: 1 } },
      action: { sqlExpression: "SET tagged = 'yes'" },
    });
    corr.filter = { sqlExpression: '1=1' };
    expect((await admin.updateRule('events', 'red', corr)).filter).toEqual({ sqlExpression: '1=1' });
    const rules: string[] = [];
    for await (const page of admin.listRules('events', 'red').byPage({ maxPageSize: 1 })) {
      expect(page.length).toBeLessThanOrEqual(1);
      rules.push(...page.map((r) => r.name));
    }
    expect(rules.sort()).toEqual(['corr', 'onlyRed']);
    await admin.deleteRule('events', 'red', 'corr');
    expect(await admin.ruleExists('events', 'red', 'corr')).toBe(false);
    const subs: string[] = [];
    for await (const s of admin.listSubscriptions('events')) subs.push(s.subscriptionName);
    expect(subs.sort()).toEqual(['all', 'red']);
    const topicRuntime = await admin.getTopicRuntimeProperties('events');
    expect(topicRuntime).toMatchObject({ name: 'events', subscriptionCount: 2, scheduledMessageCount: 0 });
    expect(await admin.getSubscriptionRuntimeProperties('events', 'all')).toMatchObject({
      topicName: 'events',
      subscriptionName: 'all',
      activeMessageCount: 0,
    });
    for await (const s of admin.listSubscriptionsRuntimeProperties('events')) expect(s.topicName).toBe('events');
    for await (const t of admin.listTopicsRuntimeProperties()) expect(t.name).toBe('events');
    expect(await admin.subscriptionExists('events', 'all')).toBe(true);
    await admin.deleteSubscription('events', 'all');
    expect(await admin.subscriptionExists('events', 'all')).toBe(false);
    await admin.deleteTopic('events');
    expect(await admin.topicExists('events')).toBe(false);
  });

  it('getNamespaceProperties, and the (namespace, credential) constructor', async () => {
    const byKey = new ServiceBusAdministrationClient(runtime.url + '/', new AzureNamedKeyCredential('RootManageSharedAccessKey', runtime.rootKey));
    const ns = await byKey.getNamespaceProperties();
    expect(ns).toMatchObject({ messagingSku: 'Standard', name: '127' });
    const wrong = new ServiceBusAdministrationClient(runtime.url, new AzureNamedKeyCredential('RootManageSharedAccessKey', 'nope'));
    await expect(wrong.getNamespaceProperties()).rejects.toMatchObject({ code: 'UnauthorizedRequestError', statusCode: 401 });
  });
});
