/**
 * A1-A3, B3 on the Atom management plane, with raw HTTP: a token reaches only what its rule
 * and its `sr` cover, on every route, checked again on the entity a path resolves to; every
 * refusal is Service Bus's 401 with an XML Error body. Sluice's own API answers as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { rootKeyToken, startTestRuntime } from '../support/runtime.js';
import { signToken } from '../../lib/auth/index.js';

let runtime: LocalRuntime;
let host: string;

const ATOM = 'application/atom+xml;type=entry;charset=utf-8';
const sign = (keyName: string, key: string, resource: string) =>
  signToken({ resourceUri: resource, keyName, key, expiresAt: Math.floor(Date.now() / 1000) + 600 });
const queueXml = (inner = '') =>
  `<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">${inner}</QueueDescription></content></entry>`;
const topicXml = `<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><TopicDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"/></content></entry>`;

async function call(method: string, path: string, token: string | undefined, body?: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { ...(token ? { authorization: token } : {}), ...(body ? { 'content-type': ATOM } : {}), ...headers },
    ...(body ? { body } : {}),
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** An authorization rule made through Sluice's own API; its primary key. */
async function rule(scope: string, name: string, rights: string[]): Promise<string> {
  const res = await fetch(`${runtime.url}${scope}/authorization-rules/${name}`, {
    method: 'PUT',
    headers: { authorization: rootKeyToken(runtime), 'content-type': 'application/json' },
    body: JSON.stringify({ rights }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { primaryKey: string }).primaryKey;
}

beforeAll(async () => {
  runtime = await startTestRuntime('atom-auth');
  host = new URL(runtime.url).host;
  const root = rootKeyToken(runtime);
  for (const q of ['orders', 'other', 'sink']) expect((await call('PUT', `/${q}?api-version=2021-05`, root, queueXml())).status).toBe(201);
});
afterAll(async () => {
  await runtime?.stop();
});

describe('A1-A3 B3 Atom management plane authorization', () => {
  it('A3 no token, a bad token or too few rights: 401 with an XML Error body', async () => {
    const none = await call('GET', '/orders?api-version=2021-05', undefined);
    expect(none.status).toBe(401);
    expect(none.type).toMatch(/^application\/xml/);
    expect(none.text).toMatch(/^<Error><Code>401<\/Code><Detail>.+<\/Detail><\/Error>$/);
    const listenKey = await rule('', 'listener', ['Listen']);
    expect((await call('GET', '/orders?api-version=2021-05', sign('listener', listenKey, `http://${host}/`))).status).toBe(401);
    expect((await call('GET', '/orders?api-version=2021-05', sign('listener', 'd3Jvbmc=', `http://${host}/`))).status).toBe(401);
    // Any right reads the namespace's description.
    expect((await call('GET', '/$namespaceinfo?api-version=2021-05', sign('listener', listenKey, `http://${host}/$namespaceinfo`))).status).toBe(200);
  });

  it("A2 B3 an entity's rule reaches that entity only, never the other kind of the same name", async () => {
    const key = await rule('/queues/orders', 'orders-admin', ['Manage']);
    const token = sign('orders-admin', key, `sb://${host}/orders?api-version=2021-05`);
    expect((await call('GET', '/orders?api-version=2021-05', token)).status).toBe(200);
    expect((await call('GET', '/ORDERS/?api-version=2021-05', token)).status).toBe(200);
    expect((await call('GET', '/other?api-version=2021-05', token)).status).toBe(401);
    expect((await call('GET', '/$Resources/Queues?api-version=2021-05', token)).status).toBe(401);
    expect((await call('GET', '/orders/Subscriptions?api-version=2021-05', token)).status).toBe(401);
    // A token for the whole namespace, signed with this entity's key, is no token at all.
    expect((await call('GET', '/orders?api-version=2021-05', sign('orders-admin', key, `http://${host}/`))).status).toBe(401);
    // The topic `orders` is outside the queue's rule: not created, not read, not deleted.
    expect((await call('PUT', '/orders?api-version=2021-05', token, topicXml)).status).toBe(401);
    expect((await call('PUT', '/orders?api-version=2021-05', rootKeyToken(runtime), topicXml)).status).toBe(409);
  });

  it('A2/B3: forwarding needs Send on the target: from the token or a supplementary token', async () => {
    const key = await rule('/queues/other', 'other-admin', ['Manage']);
    const token = sign('other-admin', key, `https://${host}/other`);
    const body = queueXml(`<ForwardTo>sb://${host}/sink</ForwardTo>`);
    const refused = await call('PUT', '/other?api-version=2021-05', token, body, { 'if-match': '*' });
    expect(refused.status).toBe(401);
    const sinkKey = await rule('/queues/sink', 'sink-send', ['Send']);
    const supplementary = sign('sink-send', sinkKey, `https://${host}/sink`);
    const forged = sign('sink-send', 'bm9wZQ==', `https://${host}/sink`);
    expect((await call('PUT', '/other?api-version=2021-05', token, body, { 'if-match': '*', servicebussupplementaryauthorization: forged })).status).toBe(401);
    const ok = await call('PUT', '/other?api-version=2021-05', token, body, { 'if-match': '*', servicebussupplementaryauthorization: supplementary });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain(`<ForwardTo>sb://${host}/sink</ForwardTo>`);
  });

  it('B2 bad XML, a DTD or a bad value is a 400 that changes nothing', async () => {
    const root = rootKeyToken(runtime);
    const before = await call('GET', '/orders?api-version=2021-05', root);
    for (const body of [
      '<entry',
      '<!DOCTYPE x [<!ENTITY a "b">]><entry/>',
      queueXml('<LockDuration>PT99M</LockDuration>'),
      queueXml('<MaxDeliveryCount>x</MaxDeliveryCount>'),
    ]) {
      const res = await call('PUT', '/orders?api-version=2021-05', root, body, { 'if-match': '*' });
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/^<Error><Code>400<\/Code>/);
    }
    const after = await call('GET', '/orders?api-version=2021-05', root);
    expect(after.text.replace(/<updated>.*?<\/updated>|<AccessedAt>.*?<\/AccessedAt>/g, '')).toBe(
      before.text.replace(/<updated>.*?<\/updated>|<AccessedAt>.*?<\/AccessedAt>/g, ''),
    );
  });

  it("Sluice's own API answers as before; its reserved names are reachable with a marker", async () => {
    const root = rootKeyToken(runtime);
    const own = await fetch(`${runtime.url}/queues/orders`, { headers: { authorization: root } });
    expect(own.status).toBe(200);
    expect(((await own.json()) as { name: string }).name).toBe('orders');
    const unauth = await fetch(`${runtime.url}/queues/orders`);
    expect(unauth.status).toBe(401);
    expect(((await unauth.json()) as { error: { code: string } }).error.code).toBe('Unauthorized');
    // A queue named `queues`: the api-version marker says it is Service Bus's path.
    expect((await call('PUT', '/queues?api-version=2021-05', root, queueXml())).status).toBe(201);
    expect((await call('GET', '/queues?api-version=2021-05', root)).text).toContain('<title type="text">queues</title>');
    const list = await fetch(`${runtime.url}/queues`, { headers: { authorization: root } });
    expect(((await list.json()) as { items: { name: string }[] }).items.map((q) => q.name)).toContain('queues');
  });
});
