/**
 * ServiceBusClient, senders and receivers against the local runtime over HTTP: every
 * sender and receiver method, typed bodies and properties, settlement rules, and the
 * deleteMessages route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Long from 'long';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, ServiceBusClient, AzureNamedKeyCredential, type ServiceBusReceivedMessage } from '../../lib/client/index.js';
import { signToken } from '../../lib/auth/index.js';
import { HttpTransport } from '../../lib/client/transport.js';
import { indexLayout } from '../support/default-layout.js';
import { connectionStringFor, localClock, startRuntime } from './support.js';

let runtime: LocalRuntime;
let client: ServiceBusClient;
let admin: ServiceBusAdministrationClient;

beforeAll(async () => {
  runtime = await startRuntime('messaging');
  client = new ServiceBusClient(connectionStringFor(runtime));
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await client?.close();
  await runtime?.stop();
});

const fresh = async (name: string, options: Parameters<ServiceBusAdministrationClient['createQueue']>[1] = {}) => {
  await admin.createQueue(name, options);
  return name;
};

describe('sender and receiver', () => {
  it('typed bodies and application properties round-trip (JSON, string, bytes, Date)', async () => {
    const q = await fresh('typed');
    const sender = client.createSender(q);
    const when = new Date('2026-11-20T12:00:00.123Z');
    await sender.sendMessages([
      { body: { a: [1, 'x', null], nested: { ok: true } }, applicationProperties: { n: 3, s: 'red', b: false, nil: null, when } },
      { body: 'plain text', contentType: 'text/plain' },
      { body: Buffer.from([0, 1, 2, 255]) },
      { body: new Uint8Array([9, 8]) },
      { body: 42 },
      { body: when },
    ]);
    const receiver = client.createReceiver(q, { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 2000 });
    expect(got).toHaveLength(6);
    expect(got[0]!.body).toEqual({ a: [1, 'x', null], nested: { ok: true } });
    expect(got[0]!.applicationProperties).toEqual({ n: 3, s: 'red', b: false, nil: null, when });
    expect(got[0]!.applicationProperties!.when).toBeInstanceOf(Date);
    expect(got[1]!).toMatchObject({ body: 'plain text', contentType: 'text/plain' });
    expect(Buffer.isBuffer(got[2]!.body)).toBe(true);
    expect([...got[2]!.body]).toEqual([0, 1, 2, 255]);
    expect([...got[3]!.body]).toEqual([9, 8]);
    expect(got[4]!.body).toBe(42);
    expect(got[5]!.body).toEqual(when);
    expect(got[0]!.sequenceNumber).toBeInstanceOf(Long);
    expect(got[1]!.sequenceNumber!.greaterThan(got[0]!.sequenceNumber!)).toBe(true);
  });

  it('received messages carry the system properties; resending one sends only user fields', async () => {
    const q = await fresh('props', { defaultMessageTimeToLive: 'PT1H' });
    const sender = client.createSender(q);
    await sender.sendMessages({
      body: 'x',
      messageId: 'm-1',
      correlationId: 'c-1',
      subject: 'order',
      to: 'them',
      replyTo: 'back',
      replyToSessionId: 'rs',
      partitionKey: 'pk',
      timeToLive: 60_000,
      applicationProperties: { k: 'v' },
    });
    const receiver = client.createReceiver(q);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m).toMatchObject({
      messageId: 'm-1',
      correlationId: 'c-1',
      subject: 'order',
      to: 'them',
      replyTo: 'back',
      replyToSessionId: 'rs',
      partitionKey: 'pk',
      timeToLive: 60_000,
      deliveryCount: 1,
      state: 'active',
    });
    expect(m!.lockToken).toMatch(/./);
    expect(m!.enqueuedTimeUtc).toBeInstanceOf(Date);
    expect(m!.expiresAtUtc!.getTime() - m!.enqueuedTimeUtc!.getTime()).toBe(60_000);
    expect(m!.lockedUntilUtc).toBeInstanceOf(Date);
    // Passed back to sendMessages: a new message with the same user fields.
    await sender.sendMessages(m!);
    await receiver.completeMessage(m!);
    const [again] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(again).toMatchObject({ body: 'x', messageId: 'm-1', subject: 'order', deliveryCount: 1, applicationProperties: { k: 'v' } });
    expect(again!.sequenceNumber!.greaterThan(m!.sequenceNumber!)).toBe(true);
    await receiver.completeMessage(again!);
  });

  it('settlement: complete, abandon with properties, dead-letter with reason, defer and receiveDeferredMessages, renew; twice or peeked fails as in the SDK', async () => {
    // Today's layout, in a runtime of its own (the layout is the runtime's): the test reads
    // sequence numbers above 2^53, which a positioned queue's counter positions stay below.
    const todays = await startRuntime('messaging-todays', indexLayout);
    const client = new ServiceBusClient(connectionStringFor(todays));
    try {
      await new ServiceBusAdministrationClient(connectionStringFor(todays)).createQueue('settle', { maxDeliveryCount: 10 });
      const q = 'settle';
      const sender = client.createSender(q);
      await sender.sendMessages([{ body: 1 }, { body: 2 }, { body: 3 }, { body: 4 }]);
      const receiver = client.createReceiver(q);
      const got = await receiver.receiveMessages(4, { maxWaitTimeInMs: 2000 });
      expect(got.map((m) => m.body)).toEqual([1, 2, 3, 4]);
      const [one, two, three, four] = got as [ServiceBusReceivedMessage, ServiceBusReceivedMessage, ServiceBusReceivedMessage, ServiceBusReceivedMessage];
      await receiver.completeMessage(one);
      await expect(receiver.completeMessage(one)).rejects.toThrow('The message has either been deleted or already settled');
      const before = two.lockedUntilUtc!.getTime();
      const renewed = await receiver.renewMessageLock(two);
      expect(renewed.getTime()).toBeGreaterThanOrEqual(before);
      expect(two.lockedUntilUtc).toEqual(renewed);
      await receiver.abandonMessage(two, { retried: true, at: new Date(0) });
      await receiver.deadLetterMessage(three, { deadLetterReason: 'bad', deadLetterErrorDescription: 'really bad' });
      await receiver.deferMessage(four);

      const [back] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      expect(back).toMatchObject({ body: 2, deliveryCount: 2, applicationProperties: { retried: true, at: new Date(0) } });
      await receiver.completeMessage(back!);

      const [deferred] = await receiver.receiveDeferredMessages(four.sequenceNumber!);
      expect(deferred).toMatchObject({ body: 4 });
      await receiver.completeMessage(deferred!);

      const dlq = client.createReceiver(q, { subQueueType: 'deadLetter' });
      expect(dlq.entityPath).toBe('settle/$DeadLetterQueue');
      const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      expect(dead).toMatchObject({ body: 3, deadLetterReason: 'bad', deadLetterErrorDescription: 'really bad' });
      // Sluice sequence numbers exceed 2^53. enqueuedSequenceNumber is a number as the
      // SDK types it (the nearest double, equal to the original's sequenceNumber.toNumber()); the
      // exact value is a Long in the raw message's annotations.
      expect(three.sequenceNumber!.greaterThan(Long.fromNumber(Number.MAX_SAFE_INTEGER))).toBe(true);
      expect(typeof dead!.enqueuedSequenceNumber).toBe('number');
      expect(dead!.enqueuedSequenceNumber).toBe(three.sequenceNumber!.toNumber());
      const exact = dead!._rawAmqpMessage.messageAnnotations!['x-opt-enqueue-sequence-number'] as Long;
      expect(Long.isLong(exact)).toBe(true);
      expect(exact.toString()).toBe(three.sequenceNumber!.toString());
      expect((dead!._rawAmqpMessage.messageAnnotations!['x-opt-sequence-number'] as Long).toString()).toBe(dead!.sequenceNumber!.toString());
      await dlq.completeMessage(dead!);

      await sender.sendMessages({ body: 'peeked' });
      const [peeked] = await receiver.peekMessages(1);
      await expect(receiver.completeMessage(peeked!)).rejects.toThrow(/not supported for peeked messages/);
      const rad = client.createReceiver(q, { receiveMode: 'receiveAndDelete' });
      const [deleted] = await rad.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      await expect(rad.completeMessage(deleted!)).rejects.toThrow(/receiveAndDelete/);
      // A received message whose lock another receiver already settled: the broker says the lock is gone.
      await sender.sendMessages({ body: 'shared' });
      const [shared] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      const other = client.createReceiver(q);
      await other.completeMessage(shared!);
      await expect(receiver.completeMessage(shared!)).rejects.toThrow(/already settled/);
      await receiver.close();
      expect(receiver.isClosed).toBe(true);
      // The SDK throws a plain Error here, not a ServiceBusError (checked against @azure/service-bus 7.9.5).
      await expect(receiver.receiveMessages(1)).rejects.toMatchObject({
        name: 'Error',
        message: expect.stringMatching(/^The receiver for "settle" has been closed and can no longer be used\./),
      });
    } finally {
      await client.close();
      await todays.stop();
    }
  });

  it('lock lost: settling after the lock expired fails with MessageLockLost', async () => {
    const q = await fresh('lost', { lockDuration: 'PT5S' });
    await client.createSender(q).sendMessages({ body: 'x' });
    const receiver = client.createReceiver(q);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    await localClock(runtime, 'PT10S');
    await expect(receiver.completeMessage(m!)).rejects.toMatchObject({ name: 'ServiceBusError', code: 'MessageLockLost', retryable: false });
  });

  it('peekMessages pages past the broker limit and continues from the last peeked', async () => {
    const q = await fresh('peek');
    const sender = client.createSender(q);
    const batch = await sender.createMessageBatch();
    for (let i = 0; i < 130; i++) expect(batch.tryAddMessage({ body: i })).toBe(true);
    expect(batch.count).toBe(130);
    await sender.sendMessages(batch);
    const receiver = client.createReceiver(q);
    const all = await receiver.peekMessages(1000);
    expect(all.map((m) => m.body)).toEqual(Array.from({ length: 130 }, (_, i) => i));
    const p = client.createReceiver(q);
    const first = await p.peekMessages(5);
    const next = await p.peekMessages(5);
    expect(next.map((m) => m.body)).toEqual([5, 6, 7, 8, 9]);
    const from = await p.peekMessages(2, { fromSequenceNumber: first[0]!.sequenceNumber });
    expect(from.map((m) => m.body)).toEqual([0, 1]);
  });

  it('createMessageBatch keeps the size limit; sendMessages refuses an oversized array', async () => {
    const sender = client.createSender(await fresh('sizes'));
    const batch = await sender.createMessageBatch({ maxSizeInBytes: 1000 });
    expect(batch.maxSizeInBytes).toBe(1000);
    expect(batch.tryAddMessage({ body: 'a'.repeat(600) })).toBe(true);
    expect(batch.tryAddMessage({ body: 'b'.repeat(600) })).toBe(false);
    expect(batch.sizeInBytes).toBeGreaterThan(600);
    await expect(sender.createMessageBatch({ maxSizeInBytes: 10_000_000 })).rejects.toThrow(/greater than maximum/);
    await expect(sender.sendMessages([{ body: 'x'.repeat(200_000) }, { body: 'y'.repeat(200_000) }])).rejects.toMatchObject({ code: 'MessageSizeExceeded' });
    await expect(sender.sendMessages({ body: 'x'.repeat(300_000) })).rejects.toMatchObject({ code: 'MessageSizeExceeded' });
  });

  it('scheduleMessages and cancelScheduledMessages', async () => {
    const q = await fresh('sched');
    const sender = client.createSender(q);
    const at = new Date(Date.now() + 3_600_000);
    const seqs = await sender.scheduleMessages([{ body: 'later' }, { body: 'cancelled' }], at);
    expect(seqs).toHaveLength(2);
    expect(seqs[0]).toBeInstanceOf(Long);
    await sender.cancelScheduledMessages(seqs[1]!);
    const peeked = await client.createReceiver(q).peekMessages(10);
    expect(peeked).toHaveLength(1);
    expect(peeked[0]).toMatchObject({ body: 'later', state: 'scheduled' });
    expect(peeked[0]!.scheduledEnqueueTimeUtc).toEqual(at);
    await sender.close();
    expect(sender.isClosed).toBe(true);
    await expect(sender.sendMessages({ body: 1 })).rejects.toThrow(/closed/);
  });

  it('after ServiceBusClient.close(), nothing is handed out and what was throws, as in the SDK', async () => {
    const q = await fresh('closing');
    const own = new ServiceBusClient(connectionStringFor(runtime));
    const sender = own.createSender(q);
    const receiver = own.createReceiver(q);
    await sender.sendMessages({ body: 'before' });
    const [got] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    await own.close();
    // The SDK throws a plain Error (no code) with this text for all of these.
    const closed = 'The underlying AMQP connection is closed.';
    for (const use of [() => own.createSender(q), () => own.createReceiver(q), () => own.createReceiver('t', 's'), () => own.createRuleManager('t', 's')]) {
      let thrown: unknown;
      try {
        use();
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(Error);
      expect(thrown).not.toHaveProperty('code');
      expect((thrown as Error).message).toBe(closed);
    }
    await expect(own.acceptSession(q, 's')).rejects.toThrow(closed);
    await expect(own.acceptNextSession(q)).rejects.toThrow(closed);
    await expect(sender.sendMessages({ body: 'after' })).rejects.toThrow(closed);
    await expect(receiver.completeMessage(got!)).rejects.toThrow(closed);
    await expect(receiver.receiveMessages(1)).rejects.toThrow(closed);
    expect(sender.isClosed && receiver.isClosed).toBe(true);
    // A sender closed on its own (client still open) has the SDK's own message.
    const lone = client.createSender(q);
    await lone.close();
    await expect(lone.sendMessages({ body: 1 })).rejects.toThrow(
      `The sender for "${q}" has been closed and can no longer be used. Please create a new sender using the "createSender" method on the ServiceBusClient.`,
    );
    const loneReceiver = client.createReceiver(q);
    await loneReceiver.close();
    await expect(loneReceiver.peekMessages(1)).rejects.toThrow(
      `The receiver for "${q}" has been closed and can no longer be used. Please create a new receiver`,
    );
  });

  it('topics: a sender finds the topic, a subscription receiver gets the copy', async () => {
    await admin.createTopic('news');
    await admin.createSubscription('news', 'all');
    await client.createSender('news').sendMessages({ body: { headline: 'x' }, applicationProperties: { when: new Date(5) } });
    const receiver = client.createReceiver('news', 'all');
    expect(receiver.entityPath).toBe('news/Subscriptions/all');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m).toMatchObject({ body: { headline: 'x' }, applicationProperties: { when: new Date(5) } });
    await receiver.completeMessage(m!);
    await expect(client.createSender('absent').sendMessages({ body: 1 })).rejects.toMatchObject({ code: 'MessagingEntityNotFound' });
  });

  it('getMessageIterator yields messages as they come', async () => {
    const q = await fresh('iter');
    await client.createSender(q).sendMessages([{ body: 'a' }, { body: 'b' }]);
    const receiver = client.createReceiver(q, { receiveMode: 'receiveAndDelete' });
    const bodies: unknown[] = [];
    for await (const m of receiver.getMessageIterator()) {
      bodies.push(m.body);
      if (bodies.length === 2) break;
    }
    expect(bodies).toEqual(['a', 'b']);
  });

  it('deleteMessages (before a time, up to a count) and purgeMessages, with a Listen key', async () => {
    const q = await fresh('del');
    const sender = client.createSender(q);
    await sender.sendMessages(Array.from({ length: 5 }, (_, i) => ({ body: i })));
    const cutoff = await localClock(runtime);
    await localClock(runtime, 'PT1S');
    await sender.sendMessages([{ body: 'new1' }, { body: 'new2' }]);
    // A Listen-only key may delete (it may receive-and-delete too); a Send-only key may not.
    const rights = async (name: string, r: string[]) => {
      const res = await fetch(`${runtime.url}/queues/${q}/authorization-rules/${name}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: await rootToken() },
        body: JSON.stringify({ rights: r }),
      });
      return ((await res.json()) as { primaryKey: string }).primaryKey;
    };
    const listen = new ServiceBusClient(runtime.url, new AzureNamedKeyCredential('listen', await rights('listen', ['Listen'])));
    const send = new ServiceBusClient(runtime.url, new AzureNamedKeyCredential('send', await rights('send', ['Send'])));
    await expect(send.createReceiver(q).deleteMessages({ maxMessageCount: 1 })).rejects.toMatchObject({ code: 'UnauthorizedAccess' });
    const receiver = listen.createReceiver(q);
    expect(await receiver.deleteMessages({ maxMessageCount: 2, beforeEnqueueTime: new Date(cutoff.getTime() + 1) })).toBe(2);
    expect(await receiver.deleteMessages({ maxMessageCount: 100, beforeEnqueueTime: new Date(cutoff.getTime() + 1) })).toBe(3);
    expect((await receiver.peekMessages(10)).map((m) => m.body)).toEqual(['new1', 'new2']);
    expect(await receiver.purgeMessages()).toBe(2);
    expect(await receiver.peekMessages(10)).toEqual([]);
    await listen.close();
    await send.close();
  });
});

async function rootToken(): Promise<string> {
  const { createSasToken } = await import('../../lib/client/sas.js');
  return createSasToken(`${runtime.url}/`, 'RootManageSharedAccessKey', runtime.rootKey, Math.floor(Date.now() / 1000) + 600);
}

describe('SDK-style EntityPath with keys scoped to one entity', () => {
  const mismatch = 'The queue or topic name provided does not match the EntityPath in the connection string passed to the ServiceBusClient constructor.';
  /** A rule on one entity (`PUT {M}/authorization-rules/{name}`), made with the root key; its primary key. */
  const entityKey = async (entityPath: string, name: string, rights: string[]) => {
    const root = new HttpTransport(runtime.url, new AzureNamedKeyCredential('RootManageSharedAccessKey', runtime.rootKey));
    const res = await root.request<{ primaryKey: string }>({
      method: 'PUT',
      path: `/${entityPath}/authorization-rules/${name}`,
      body: { rights },
      audience: entityPath,
      idempotent: true,
    });
    return res.body.primaryKey;
  };
  const scoped = (name: string, key: string, entityPath: string) =>
    `Endpoint=${runtime.url}/;SharedAccessKeyName=${name};SharedAccessKey=${key};EntityPath=${entityPath}`;

  it('EntityPath=<queue>: send, receive and subscribe with the queue key; another name throws as the SDK does', async () => {
    const q = await fresh('scoped-q');
    const key = await entityKey(`queues/${q}`, 'app', ['Send', 'Listen']);
    const scopedClient = new ServiceBusClient(scoped('app', key, q));
    try {
      await scopedClient.createSender(q).sendMessages([{ body: 'one' }, { body: 'two' }]);
      const receiver = scopedClient.createReceiver(q);
      const [one] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      expect(one!.body).toBe('one');
      await receiver.completeMessage(one!);
      let received!: (m: ServiceBusReceivedMessage) => void;
      let failed!: (e: Error) => void;
      const next = new Promise<ServiceBusReceivedMessage>((resolve, reject) => ((received = resolve), (failed = reject)));
      const sub = receiver.subscribe({ processMessage: async (m) => received(m), processError: async ({ error }) => failed(error) });
      const two = await next;
      await sub.close();
      expect(two.body).toBe('two');
      expect(() => scopedClient.createSender('other')).toThrow(mismatch);
      expect(() => scopedClient.createReceiver(q.toUpperCase())).toThrow(mismatch);
    } finally {
      await scopedClient.close();
    }
    // The broker's check is unchanged: the same key signing Azure's audience (the bare name) is refused.
    const azureStyle = signToken({ resourceUri: `${runtime.url}/${q}`, keyName: 'app', key, expiresAt: Math.floor(Date.now() / 1000) + 600 });
    const refused = await fetch(`${runtime.url}/queues/${q}/messages?maxMessages=1`, { headers: { authorization: azureStyle } });
    expect(refused.status).toBe(401);
  });

  it('EntityPath=<topic>/Subscriptions/<sub>: createReceiver("t/Subscriptions/s") receives with the subscription key; EntityPath=<topic> sends with the topic key', async () => {
    await admin.createTopic('scoped-t');
    await admin.createSubscription('scoped-t', 'mine');
    const sendKey = await entityKey('topics/scoped-t', 'publisher', ['Send']);
    const listenKey = await entityKey('topics/scoped-t/subscriptions/mine', 'reader', ['Listen']);
    const publisher = new ServiceBusClient(scoped('publisher', sendKey, 'scoped-t'));
    const reader = new ServiceBusClient(scoped('reader', listenKey, 'scoped-t/Subscriptions/mine'));
    const sluiceSpelling = new ServiceBusClient(scoped('reader', listenKey, 'topics/scoped-t/subscriptions/mine'));
    try {
      await publisher.createSender('scoped-t').sendMessages({ body: 'news' });
      const receiver = reader.createReceiver('scoped-t/Subscriptions/mine');
      expect(receiver.entityPath).toBe('scoped-t/Subscriptions/mine');
      const [got] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      expect(got!.body).toBe('news');
      await receiver.completeMessage(got!);
      // As in the SDK, the (topic, subscription) overload is checked against the topic name alone.
      expect(() => reader.createReceiver('scoped-t', 'mine')).toThrow(mismatch);
      // Sluice's own spelling of EntityPath (the HTTP path, as the explorer writes it) names the same entity.
      expect(await sluiceSpelling.createReceiver('scoped-t/Subscriptions/mine').peekMessages(1)).toEqual([]);
      expect(await sluiceSpelling.createReceiver('scoped-t', 'mine').peekMessages(1)).toEqual([]);
    } finally {
      await Promise.all([publisher.close(), reader.close(), sluiceSpelling.close()]);
    }
  });
});
