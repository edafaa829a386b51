/**
 * S1 and S7 on the client: a send is repeated only when the repeat cannot store a second
 * copy. API Gateway answers 503 without the broker's error body when an integration runs
 * past its timeout, also after the function stored the message; that answer says nothing
 * about whether the send was applied. The client repeats a send after it only when duplicate
 * detection drops the repeat (every message names its messageId, the entity detects
 * duplicates); otherwise it throws the SDK's ServiceBusy, marked as possibly applied. The
 * broker's own Throttled answer (nothing stored) is still retried.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { AzureNamedKeyCredential, ServiceBusAdministrationClient, ServiceBusClient } from '../../lib/client/index.js';
import { HttpTransport } from '../../lib/client/transport.js';
import { isServiceBusError } from '../../lib/client/errors.js';
import { connectionStringFor, FaultProxy, startRuntime } from './support.js';

let runtime: LocalRuntime;
let proxy: FaultProxy;
let admin: ServiceBusAdministrationClient;
let client: ServiceBusClient;
let queues = 0;

beforeAll(async () => {
  runtime = await startRuntime('send-retry');
  proxy = await new FaultProxy(runtime.url).start();
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
  client = new ServiceBusClient(connectionStringFor(runtime, proxy.url), { retryOptions: { retryDelayInMs: 1, maxRetryDelayInMs: 5 } });
});
afterAll(async () => {
  await client?.close();
  await proxy?.stop();
  await runtime?.stop();
});

const fresh = async (requiresDuplicateDetection: boolean) => {
  const name = `sr${++queues}`;
  await admin.createQueue(name, { requiresDuplicateDetection });
  return name;
};

/** The bodies stored in `queue`, read past the proxy. */
async function stored(queue: string): Promise<unknown[]> {
  const direct = new HttpTransport(runtime.url, new AzureNamedKeyCredential('RootManageSharedAccessKey', runtime.rootKey));
  const peek = await direct.request<{ messages: { body: unknown }[] }>({
    method: 'GET',
    path: `/queues/${queue}/messages`,
    query: { maxMessages: 100 },
    audience: `queues/${queue}`,
    idempotent: true,
  });
  return peek.body.messages.map((m) => m.body);
}

/** What the proxy did to the requests since `from`: `POST 503`, `GET pass`, ... */
const seenSince = (from: number) => proxy.seen.slice(from).map((s) => `${s.split(' ')[0]} ${s.split(' ').at(-1)}`);

describe('S1: a send is repeated only when it cannot be stored twice', () => {
  it.each([
    ['without a messageId', false, {}],
    ['with a messageId, into a queue without duplicate detection', false, { messageId: 'm-1' }],
  ])('S1: a send %s answered 503 by the gateway after it was stored is not repeated; the SDK error says it may have been applied', async (_, dedupe, extra) => {
    // prepare
    const queue = await fresh(dedupe);
    const from = proxy.seen.length;
    proxy.faults.push('gateway-503-after-forward');

    // act
    const error = await client
      .createSender(queue)
      .sendMessages({ body: 'once', ...extra })
      .catch((e: unknown) => e);

    // assess
    expect(isServiceBusError(error), String(error)).toBe(true);
    expect(error).toMatchObject({ name: 'ServiceBusError', code: 'ServiceBusy', retryable: true, info: { status: 503, mayHaveBeenApplied: true } });
    expect(seenSince(from).filter((s) => s.startsWith('POST'))).toEqual(['POST gateway-503-after-forward']);
    expect(await stored(queue)).toEqual(['once']);
  });

  it('S7: a send with a messageId into a duplicate-detection queue is repeated after the gateway 503, and stored once', async () => {
    // prepare
    const queue = await fresh(true);
    const from = proxy.seen.length;
    proxy.faults.push('gateway-503-after-forward');

    // act
    await client.createSender(queue).sendMessages({ body: 'once', messageId: 'order-1' });

    // assess
    expect(seenSince(from)).toEqual(['POST gateway-503-after-forward', 'GET pass', 'POST pass']);
    expect(await stored(queue)).toEqual(['once']);
  });

  it('S7: a batch is repeated only when every message names its messageId', async () => {
    // prepare
    const queue = await fresh(true);
    const sender = client.createSender(queue);
    proxy.faults.push('gateway-503-after-forward');
    await sender.sendMessages([
      { body: 'a', messageId: 'a' },
      { body: 'b', messageId: 'b' },
    ]);
    proxy.faults.push('gateway-503-after-forward');

    // act
    const error = await sender.sendMessages([{ body: 'c', messageId: 'c' }, { body: 'd' }]).catch((e: unknown) => e);

    // assess
    expect(error).toMatchObject({ code: 'ServiceBusy', info: { mayHaveBeenApplied: true } });
    expect(await stored(queue)).toEqual(['a', 'b', 'c', 'd']);
  });

  it("S7: with a key that only sends, the entity's duplicate detection cannot be read, so the failure is reported", async () => {
    // prepare
    const queue = await fresh(true);
    const rule = await new HttpTransport(runtime.url, new AzureNamedKeyCredential('RootManageSharedAccessKey', runtime.rootKey)).request<{
      primaryKey: string;
    }>({
      method: 'PUT',
      path: `/queues/${queue}/authorization-rules/sender`,
      body: { rights: ['Send'] },
      audience: `queues/${queue}`,
      idempotent: true,
    });
    const sendOnly = new ServiceBusClient(`Endpoint=${proxy.url}/;SharedAccessKeyName=sender;SharedAccessKey=${rule.body.primaryKey}`, {
      retryOptions: { retryDelayInMs: 1, maxRetryDelayInMs: 5 },
    });
    proxy.faults.push('gateway-503-after-forward');

    // act
    const error = await sendOnly
      .createSender(`queues/${queue}`)
      .sendMessages({ body: 'once', messageId: 'x' })
      .catch((e: unknown) => e);
    await sendOnly.close();

    // assess
    expect(error).toMatchObject({ code: 'ServiceBusy', info: { mayHaveBeenApplied: true } });
    expect(await stored(queue)).toEqual(['once']);
  });

  it("S1: the broker's own Throttled answer (nothing stored) is still retried, with or without a messageId", async () => {
    // prepare
    const queue = await fresh(false);
    const from = proxy.seen.length;
    proxy.faults.push('503', '429');

    // act
    await client.createSender(queue).sendMessages({ body: 'x' });

    // assess
    expect(seenSince(from)).toEqual(['POST 503', 'POST 429', 'POST pass']);
    expect(await stored(queue)).toEqual(['x']);
  });
});
