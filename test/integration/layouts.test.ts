/**
 * The deployment's layout switch (`Deps.newEntityLayout`): new queues and subscriptions without
 * sessions take the positioned layout and keep it; other entities, and every entity of a deployment without the
 * switch, keep today's. The layout is not a property a client sees or sets (E2).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { entityKey } from '../../lib/store/keys.js';
import type { EntityKind } from '../../lib/entities/properties.js';
import { DEFAULT_NEW_ENTITY_LAYOUT } from '../../lib/deps.js';

const clock = new ManualClock();
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
let plainApi: ReturnType<typeof apiClient>;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'layouts')), newEntityLayout: 'positions' };
  api = apiClient(deps);
  plainApi = apiClient({ ...deps, newEntityLayout: 'index' });
});

async function layoutOf(kind: EntityKind, name: string, topic?: string) {
  const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey(kind, name, topic), ConsistentRead: true }));
  return got.Item?.layout as string | undefined;
}

describe('E2: the layout switch', () => {
  it('gives a new queue without sessions the positioned layout, and nothing a client sees', async () => {
    const put = await api('PUT', '/queues/positioned1', {});
    expect(put.status).toBe(201);
    expect(await layoutOf('queue', 'positioned1')).toBe('positions');
    expect(JSON.stringify(put.body)).not.toContain('layout');
    const got = await api('GET', '/queues/positioned1');
    expect(JSON.stringify(got.body)).not.toContain('layout');
  });

  it('keeps the layout through an update', async () => {
    await api('PUT', '/queues/positioned2', {});
    const updated = await api('PUT', '/queues/positioned2', { maxDeliveryCount: 3 });
    expect(updated.status).toBe(200);
    expect(await layoutOf('queue', 'positioned2')).toBe('positions');
  });

  it("gives a new subscription without sessions the positioned layout; leaves session entities and topics on today's", async () => {
    await api('PUT', '/queues/sessioned', { requiresSession: true });
    await api('PUT', '/topics/t1', {});
    await api('PUT', '/topics/t1/subscriptions/s1', {});
    await api('PUT', '/topics/t1/subscriptions/s2', { requiresSession: true });
    expect(await layoutOf('queue', 'sessioned')).toBeUndefined();
    expect(await layoutOf('topic', 't1')).toBeUndefined();
    expect(await layoutOf('subscription', 's1', 't1')).toBe('positions');
    expect(await layoutOf('subscription', 's2', 't1')).toBeUndefined();
  });

  it("gives nothing with the switch at index, today's layout", async () => {
    await plainApi('PUT', '/queues/plain1', {});
    expect(await layoutOf('queue', 'plain1')).toBeUndefined();
  });

  it('gives the default layout without the switch', async () => {
    const defaultApi = apiClient({ ...deps, newEntityLayout: undefined });
    await defaultApi('PUT', '/queues/default1', {});
    const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', 'default1'), ConsistentRead: true }));
    expect(got.Item?.layout).toBe(DEFAULT_NEW_ENTITY_LAYOUT === 'index' ? undefined : 'positions');
    expect(got.Item?.ticketed).toBe(DEFAULT_NEW_ENTITY_LAYOUT === 'tickets' ? true : undefined);
  });

  it('R1: each entity keeps its own layout when the switch changes: both run side by side in one table', async () => {
    await api('PUT', '/queues/made-positioned', {});
    await plainApi('PUT', '/queues/made-plain', {});
    // Sent under one setting of the switch, received and completed under the other.
    for (const [sender, receiver, q] of [
      [api, plainApi, 'made-positioned'],
      [plainApi, api, 'made-plain'],
    ] as const) {
      const sent = await sender('POST', `/queues/${q}/messages/batch`, { messages: [{ body: 'one' }, { body: 'two' }] });
      expect(sent.status).toBe(201);
      const got = await receiver('POST', `/queues/${q}/messages/receive`, { maxMessages: 10, maxWaitTime: 'PT0S' });
      const messages = (got.body as { messages: { body: string; lockToken: string }[] }).messages;
      expect(messages.map((m) => m.body)).toEqual(['one', 'two']);
      const done = await sender('POST', `/queues/${q}/messages/complete`, { lockTokens: messages.map((m) => m.lockToken) });
      expect(done.status).toBe(200);
      const after = await receiver('POST', `/queues/${q}/messages/receive`, { maxMessages: 10, maxWaitTime: 'PT0S' });
      expect((after.body as { messages: unknown[] }).messages).toEqual([]);
    }
    expect(await layoutOf('queue', 'made-positioned')).toBe('positions');
    expect(await layoutOf('queue', 'made-plain')).toBeUndefined();
  });

  it('refuses a client that tries to set it (400 naming the field)', async () => {
    const put = await api('PUT', '/queues/positioned3', { layout: 'positions' });
    expect(put.status).toBe(400);
    expect(JSON.stringify(put.body)).toContain('layout');
  });
});
