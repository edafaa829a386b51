import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalPath,
  generateKey,
  grantAllows,
  hasRight,
  resourceSegments,
  segmentsCover,
  signToken,
  type AuthorizationRule,
  type Right,
} from '../../lib/auth/index.js';
import { type FindRule } from '../../lib/api/authorize.js';
import { protocolOf, RESERVED_ENTITY_NAMES } from '../../lib/protocols/dispatch.js';
import { authorizeServiceBus, serviceBusResourceSegments, sluiceReadings } from '../../lib/protocols/sas.js';
import { MAX_XML_DEPTH, parseXml } from '../../lib/protocols/xml.js';
import { serviceBusErrorAnswer } from '../../lib/protocols/errors.js';
import { httpStatusOf } from '../../lib/api/errors.js';
import { BrokerError } from '../../lib/errors.js';

const NOW = 1_800_000_000;
const HOST = '127.0.0.1:8443';

function rule(keyName: string, scopePath: string, rights: Right[]): AuthorizationRule {
  return { keyName, primaryKey: generateKey(), secondaryKey: generateKey(), rights, scopePath };
}
const store =
  (...rules: AuthorizationRule[]): FindRule =>
  (keyName, scopePath) =>
    rules.find((r) => r.keyName === keyName && canonicalPath(r.scopePath) === scopePath);

/** Signs as the JS admin client does: the whole URL, query included, lower-cased. */
const sign = (r: AuthorizationRule, resourceUri: string, key = r.primaryKey) => signToken({ resourceUri, keyName: r.keyName, key, expiresAt: NOW + 300 });

const root = rule('RootManageSharedAccessKey', '/', ['Manage']);
const sender = rule('sender', '/', ['Send']);
const queueRule = rule('orders-listen', '/queues/orders', ['Listen', 'Send']);
const topicRule = rule('t-manage', '/topics/t', ['Manage']);
const find = store(root, sender, queueRule, topicRule);
const ask = (path: string, header: string | undefined, needed: Right | 'Any' = 'Manage', headers: Record<string, string> = {}) =>
  authorizeServiceBus({ path, host: HOST, headers: { ...(header ? { authorization: header } : {}), ...headers } }, needed, NOW, find);

describe('Service Bus protocols: telling them from Sluice API', () => {
  const req = (path: string, query: Record<string, string> = {}, headers: Record<string, string> = {}) => protocolOf({ path, query, headers });

  it('keeps every Sluice path without a marker for Sluice', () => {
    for (const path of [
      '/',
      '/queues',
      '/queues/orders/messages',
      '/topics/t/subscriptions/s/messages/receive',
      '/authorization-rules/x',
      '/explorer',
      '/_local/clock',
    ]) {
      expect(req(path)).toBe('sluice');
    }
  });

  it('keeps paths that are neither Sluice routes nor Service Bus shapes for Sluice, which answers them in the B1 shape', () => {
    for (const path of ['/nothing', '/no/such/route', '/orders', '/t/Subscriptions/s', '/orders/head', '/queues/a/messages/head'])
      expect(req(path)).toBe('sluice');
  });

  it('sends marked requests and Service Bus path shapes to the Service Bus protocols', () => {
    const v = { 'api-version': '2021-05' };
    expect(req('/$namespaceinfo')).toBe('atom');
    expect(req('/$Resources/Queues', { ...v, $top: '2' })).toBe('atom');
    expect(req('/orders', v)).toBe('atom');
    expect(req('/t/Subscriptions/', v)).toBe('atom');
    expect(req('/t/Subscriptions/s/Rules/r', { 'API-VERSION': '2017-04' })).toBe('atom');
    expect(req('/queues', { 'api-version': '2021-05' })).toBe('atom');
    expect(req('/topics', {}, { 'content-type': 'application/atom+xml;type=entry;charset=utf-8' })).toBe('atom');
    expect(req('/orders/messages')).toBe('rest');
    expect(req('/orders/Messages/Head', { timeout: '5' })).toBe('rest');
    expect(req('/t/Subscriptions/s/messages/head')).toBe('rest');
    expect(req('/orders/%24DeadLetterQueue/messages/head')).toBe('rest');
    expect(req('/t/subscriptions/s/$DeadLetterQueue/messages/12/lock')).toBe('rest');
    expect(req('/queues/messages', {}, { brokerproperties: '{}' })).toBe('rest');
    expect(req('/explorer/messages', {}, { 'content-type': 'application/vnd.microsoft.servicebus.json' })).toBe('rest');
  });

  it('names the reserved entity names', () => {
    expect(RESERVED_ENTITY_NAMES).toEqual(['authorization-rules', 'explorer', 'queues', 'topics']);
  });
});

describe('A1-A3 B3 Service Bus SAS as these clients sign it', () => {
  it('reads sr with a query, a bare host, and any scheme', () => {
    expect(serviceBusResourceSegments('https://127.0.0.1:8443/$resources/queues?api-version=2021-05&%24skip=2', HOST)).toEqual(['$resources', 'queues']);
    expect(serviceBusResourceSegments('127.0.0.1:8443', HOST)).toEqual([]);
    expect(serviceBusResourceSegments('127.0.0.1', HOST)).toEqual([]);
    expect(serviceBusResourceSegments('sb://ns/t/subscriptions/s', HOST)).toEqual(['t', 'subscriptions', 's']);
    expect(serviceBusResourceSegments('http://ns/orders', HOST)).toEqual(['orders']);
    // A relative path that is not the host stays a path.
    expect(serviceBusResourceSegments('orders', HOST)).toEqual(['orders']);
    expect(sluiceReadings(['orders'])).toEqual([
      ['queues', 'orders'],
      ['topics', 'orders'],
    ]);
    expect(sluiceReadings(['t', 'subscriptions', 's'])).toEqual([['topics', 't', 'subscriptions', 's']]);
    expect(sluiceReadings(['$resources', 'queues'])).toEqual([['$resources', 'queues']]);
  });

  it('A1 accepts the JS admin client token (full URL and query) and a host-only one', async () => {
    const full = sign(root, `https://${HOST}/$Resources/Queues?api-version=2021-05&$skip=2`);
    expect(await ask('/$Resources/Queues', full)).toMatchObject({ ok: true, keyName: 'RootManageSharedAccessKey' });
    const hostOnly = sign(root, HOST);
    const decision = await ask('/orders', hostOnly);
    expect(decision).toMatchObject({ ok: true, grant: { scope: [], rights: ['Manage'] } });
  });

  it('A2 B3 a token for one entity reaches that entity only, as queue or topic, within its rule', async () => {
    const orders = sign(root, `sb://${HOST}/orders`);
    const d = await ask('/orders/messages/head', orders, 'Listen');
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(grantAllows(d.grant, 'queues/orders', 'Listen')).toBe(true);
    expect(grantAllows(d.grant, 'topics/orders', 'Listen')).toBe(true);
    expect(grantAllows(d.grant, 'queues/other', 'Listen')).toBe(false);
    expect(await ask('/other/messages/head', orders, 'Listen')).toEqual({ ok: false, status: 401 });
    expect(await ask('/ordersx', orders)).toEqual({ ok: false, status: 401 });

    // A queue's rule never opens the topic of the same name.
    const q = sign(queueRule, `https://${HOST}/orders`);
    const dq = await ask('/orders/messages', q, 'Send');
    expect(dq.ok).toBe(true);
    if (!dq.ok) return;
    expect(grantAllows(dq.grant, 'queues/orders', 'Send')).toBe(true);
    expect(grantAllows(dq.grant, 'topics/orders', 'Send')).toBe(false);
    // ... and cannot sign wider than its entity.
    expect(await ask('/orders', sign(queueRule, `https://${HOST}/`), 'Listen')).toEqual({ ok: false, status: 401 });

    const sub = sign(topicRule, `https://${HOST}/t/subscriptions/s`);
    const ds = await ask('/t/Subscriptions/s/Rules/r', sub);
    expect(ds.ok).toBe(true);
    if (!ds.ok) return;
    expect(grantAllows(ds.grant, 'topics/t/subscriptions/s', 'Manage')).toBe(true);
    expect(grantAllows(ds.grant, 'topics/t', 'Manage')).toBe(false);
    expect(await ask('/t/Subscriptions/s2', sub)).toEqual({ ok: false, status: 401 });
  });

  it('A3 missing rights are 401, not 403; bad tokens are 401', async () => {
    expect(await ask('/orders', sign(sender, `https://${HOST}/orders`), 'Manage')).toEqual({ ok: false, status: 401 });
    expect(await ask('/orders/messages', sign(sender, `https://${HOST}/orders`), 'Send')).toMatchObject({ ok: true });
    expect(await ask('/$namespaceinfo', sign(sender, `https://${HOST}/$namespaceinfo`), 'Any')).toMatchObject({ ok: true });
    expect(await ask('/orders', undefined)).toEqual({ ok: false, status: 401 });
    expect(await ask('/orders', sign(root, `https://${HOST}/orders`, generateKey()))).toEqual({ ok: false, status: 401 });
    const expired = signToken({ resourceUri: `https://${HOST}/`, keyName: root.keyName, key: root.primaryKey, expiresAt: NOW });
    expect(await ask('/orders', expired)).toEqual({ ok: false, status: 401 });
    // ServiceBusAuthorization is read when Authorization is absent.
    expect(await ask('/orders', undefined, 'Manage', { servicebusauthorization: sign(root, `https://${HOST}/`) })).toMatchObject({ ok: true });
  });

  it('A2 supplementary tokens join the grant only when genuine', async () => {
    const main = sign(queueRule, `https://${HOST}/orders`);
    const plain = await ask('/orders', main, 'Send');
    expect(plain.ok && grantAllows(plain.grant, 'queues/sink', 'Send')).toBe(false);
    const withSupp = await ask('/orders', main, 'Send', { servicebussupplementaryauthorization: sign(sender, HOST) });
    expect(withSupp.ok && grantAllows(withSupp.grant, 'queues/sink', 'Send')).toBe(true);
    const forged = await ask('/orders', main, 'Send', { servicebussupplementaryauthorization: sign(sender, HOST, generateKey()) });
    expect(forged.ok && grantAllows(forged.grant, 'queues/sink', 'Send')).toBe(false);
  });
});

describe('A2 B3 Service Bus SAS: no token reaches past its rule (property)', () => {
  const scopes = ['/', '/queues/a', '/topics/a', '/topics/t', '/topics/t/subscriptions/s', '/queues/t'];
  const segment = fc.constantFrom('a', 't', 's', 'x', 'subscriptions', '$resources', 'queues', 'messages', '$deadletterqueue');
  const azurePath = fc.array(segment, { maxLength: 5 }).map((segs) => `/${segs.join('/')}`);
  const rights = fc.subarray(['Manage', 'Send', 'Listen'] as Right[], { minLength: 1 });
  const right = fc.constantFrom<Right>('Manage', 'Send', 'Listen');

  it('A2 B3: whatever the sr, the path and the entity resolved, a grant stays within its rule', async () => {
    let reached = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...scopes),
        rights,
        azurePath,
        fc.constantFrom('https://h', 'sb://h', 'http://h:1'),
        fc.constantFrom('', '?api-version=2021-05&$skip=2'),
        azurePath,
        fc.constantFrom(...scopes.filter((x) => x !== '/'), 'topics/t/subscriptions/s/$deadletterqueue', 'queues/x', 'topics/x'),
        right,
        async (scope, granted, srPath, origin, query, requestPath, target, needed) => {
          const r = rule('k', scope, granted);
          const header = sign(r, `${origin}${srPath}${query}`);
          const d = await authorizeServiceBus({ path: requestPath, host: 'h', headers: { authorization: header } }, needed, NOW, store(r));
          if (!d.ok) return;
          expect(hasRight(granted, needed)).toBe(true);
          if (grantAllows(d.grant, target, needed)) {
            reached++;
            expect(segmentsCover(resourceSegments(scope)!, resourceSegments(target)!)).toBe(true);
            expect(hasRight(granted, needed)).toBe(true);
          }
        },
      ),
      { numRuns: 500 },
    );
    expect(reached).toBeGreaterThan(0);
  });
});

describe('B2 Service Bus XML reading and errors', () => {
  it('reads elements by local name whatever the prefix, entities decoded', () => {
    const doc = parseXml(
      '<?xml version="1.0" encoding="UTF-8"?><entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><a:RuleDescription xmlns:a="urn:x"><Filter p4:type="SqlFilter" xmlns:p4="http://www.w3.org/2001/XMLSchema-instance"><SqlExpression>size &gt; @n AND s = &apos;x&apos;</SqlExpression></Filter></a:RuleDescription></content></entry>',
    );
    expect(doc.name).toBe('entry');
    const rule = doc.children[0]!.children[0]!;
    expect(rule.name).toBe('RuleDescription');
    expect(rule.children[0]!.attributes).toEqual({ type: 'SqlFilter' });
    expect(rule.children[0]!.children[0]!.text).toBe("size > @n AND s = 'x'");
  });

  it('refuses DTDs, entity declarations, malformed, too deep and too large documents with 400', () => {
    const bad = [
      '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>',
      '<x><y></x>',
      `${'<a>'.repeat(100)}${'</a>'.repeat(100)}`,
      `<x>${'a'.repeat(300 * 1024)}</x>`,
      '<x/><y/>',
    ];
    for (const text of bad) {
      expect(() => parseXml(text)).toThrow(BrokerError);
      try {
        parseXml(text);
      } catch (error) {
        expect(httpStatusOf((error as BrokerError).code)).toBe(400);
      }
    }
  });

  it('B2: character references decode, line breaks are read as XML 1.0 reads them', () => {
    // .NET's XmlWriter writes a carriage return in text as `&#xD;`; a rule's SQL keeps it.
    const doc = parseXml('<x a="1&#x9;2&#10;3">A&#x42;&#67;&#x1F600;\r\nb&#xD;&#xA;c<![CDATA[&lt;]]></x>');
    expect(doc.text).toBe('ABC\u{1F600}\nb\r\nc&lt;');
    expect(doc.attributes).toEqual({ a: '1\t2\n3' });
  });

  it('B2: 32 levels inside the root are read, 33 are refused, and a stack-deep document is a 400, not a crash', () => {
    const nested = (levels: number) => `${'<a>'.repeat(levels + 1)}${'</a>'.repeat(levels + 1)}`;
    let deepest = parseXml(nested(MAX_XML_DEPTH));
    for (let i = 0; i < MAX_XML_DEPTH; i++) deepest = deepest.children[0]!;
    expect(deepest.children).toEqual([]);
    // 30,000 well-formed levels fit in 256 KB, far deeper than a parser's call stack goes.
    for (const text of [nested(MAX_XML_DEPTH + 1), nested(30_000)]) {
      expect(() => parseXml(text)).toThrow(`nests elements more than ${MAX_XML_DEPTH} deep`);
    }
  });

  it('B2: anything not well-formed XML 1.0 is a 400 saying where, without echoing the body', () => {
    const bad = [
      '<x>&nbsp;</x>', // no DTD, so no entity but the five predefined ones
      '<x a="<"/>',
      '<x>\u0001</x>',
      '<x>a ]]> b</x>',
      '<x/>trailing',
      '<?xml version="2.0"?><x/>',
      '<x></X>',
      '<x>&#0;</x>',
    ];
    for (const text of bad) {
      let caught: unknown;
      try {
        parseXml(text);
      } catch (error) {
        caught = error;
      }
      expect(caught, text).toBeInstanceOf(BrokerError);
      expect(httpStatusOf((caught as BrokerError).code)).toBe(400);
      expect((caught as BrokerError).message).toMatch(/^body: is not well-formed XML \(.*\(line 1, column \d+\)\)$/);
    }
  });

  it('answers errors as Service Bus does: XML body, 401 for rights, SubCode for conflicts', () => {
    const log = () => undefined;
    const forbidden = serviceBusErrorAnswer(new BrokerError('Forbidden', 'no'), 'r1', log);
    expect(forbidden.status).toBe(401);
    expect(forbidden.body).toBe('<Error><Code>401</Code><Detail>no TrackingId:r1</Detail></Error>');
    expect(serviceBusErrorAnswer(new BrokerError('EntityNotFound', "entity 'x' & y"), 'r', log).body).toContain('&apos;x&apos; &amp; y');
    expect(serviceBusErrorAnswer(new BrokerError('Conflict', 'busy'), 'r', log)).toMatchObject({ status: 409, body: expect.stringContaining('SubCode=40901') });
    expect(serviceBusErrorAnswer(new BrokerError('Throttled', 'slow'), 'r', log)).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    expect(serviceBusErrorAnswer(new Error('boom'), 'r', log)).toMatchObject({ status: 500 });
  });

  it('B1: the store refusing for load or a conflict is a 503 with Retry-After, as Sluice answers it', () => {
    const log = () => undefined;
    const named = (name: string, extra: object = {}) => Object.assign(new Error(name), { name, ...extra });
    const busy = [
      named('ProvisionedThroughputExceededException'),
      named('ThrottlingException'),
      named('TransactionConflictException'),
      named('TransactionCanceledException', { CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }] }),
      named('TransactionCanceledException', { CancellationReasons: [{ Code: 'ThrottlingError' }] }),
    ];
    for (const e of busy) expect(serviceBusErrorAnswer(e, 'r', log), e.name).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    const failedCondition = named('TransactionCanceledException', { CancellationReasons: [{ Code: 'ConditionalCheckFailed' }] });
    expect(serviceBusErrorAnswer(failedCondition, 'r', log)).toMatchObject({ status: 500 });
  });
});
