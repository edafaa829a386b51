/**
 * The Atom management plane over plain HTTP with the 7.10 pre-release of `@azure/service-bus`
 * (installed as `@azure/service-bus-next`, pinned), whose `UseDevelopmentEmulator=true` turns
 * TLS off; and the same connection string serving `sluice/client`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient } from '@azure/service-bus-next';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { startTestRuntime } from '../support/runtime.js';
import { ServiceBusClient } from '../../lib/client/index.js';

let runtime: LocalRuntime;
let connectionString: string;
let admin: ServiceBusAdministrationClient;

beforeAll(async () => {
  runtime = await startTestRuntime('atom-emulator');
  connectionString = `Endpoint=sb://127.0.0.1:${runtime.port}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey};UseDevelopmentEmulator=true`;
  admin = new ServiceBusAdministrationClient(connectionString);
});
afterAll(async () => {
  await runtime?.stop();
});

async function all<T>(iter: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iter) out.push(x);
  return out;
}

describe('Atom management plane with @azure/service-bus 7.10.0-beta.2 in emulator mode (plain HTTP)', () => {
  it('E1 F1 F2: one connection string for the official admin client and sluice/client', async () => {
    await admin.createQueue('work', { maxDeliveryCount: 4 });
    await admin.createTopic('news');
    await admin.createSubscription('news', 'all', { forwardTo: 'work' });
    await admin.createRule('news', 'all', 'typed', { sqlExpression: 'n = @n', sqlParameters: { '@n': 3 } });
    expect(await admin.getRule('news', 'all', 'typed')).toMatchObject({ filter: { sqlExpression: 'n = @n', sqlParameters: { '@n': 3 } } });
    expect((await admin.getSubscription('news', 'all')).forwardTo).toMatch(/\/work$/);
    expect((await all(admin.listQueues())).map((q) => q.name)).toEqual(['work']);
    const pages: number[] = [];
    await admin.createQueue('work2');
    for await (const page of admin.listQueues().byPage({ maxPageSize: 1 })) pages.push(page.length);
    expect(pages).toEqual([1, 1]);

    const client = new ServiceBusClient(connectionString);
    try {
      await client.createSender('work').sendMessages({ body: { hello: 'world' } });
    } finally {
      await client.close();
    }
    await runtime.runJob('streams');
    expect(await admin.getQueueRuntimeProperties('work')).toMatchObject({ activeMessageCount: 1, totalMessageCount: 1 });
    await admin.deleteTopic('news');
    await expect(admin.getSubscription('news', 'all')).rejects.toMatchObject({ statusCode: 404 });
  });
});
