/**
 * Golden XML for the admin clients that cannot run here (.NET, Python, Go), from what their
 * parsers read (docs/service-bus-protocols.md): names from `<title>` (.NET, Python) and from
 * the `<id>` path with `Subscriptions`/`Rules` capitalised (JS); lower-case request paths
 * (.NET's `$Resources/queues`, `…/rules`) and `enrich`; .NET's `$top=100` pages filled to the
 * brim; Python's exactly-two links with `$skip`, `$top` and `api-version` in `next`;
 * `CountDetails` under one prefix; typed values as `i:type="d6p1:…"`; .NET's request bodies
 * with every element, its own prefixes, `int`/`long` values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { rootKeyToken, startTestRuntime } from '../support/runtime.js';
import { parseXml, type XmlElement } from '../../lib/protocols/xml.js';

let runtime: LocalRuntime;
let host: string;
const SB = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';

async function call(method: string, path: string, body?: string) {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { authorization: rootKeyToken(runtime), ...(body ? { 'content-type': 'application/atom+xml' } : {}) },
    ...(body ? { body } : {}),
  });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

const children = (el: XmlElement, name: string) => el.children.filter((c) => c.name === name);
const textOf = (el: XmlElement | undefined, name: string) => el?.children.find((c) => c.name === name)?.text;

/** What .NET's ServiceBusAdministrationClient sends for CreateQueueAsync: every property, its own prefixes, no <updated>. */
const dotnetQueue = (name: string) =>
  `<entry xmlns="http://www.w3.org/2005/Atom"><title xmlns="http://www.w3.org/2005/Atom">${name}</title><content type="application/xml"><QueueDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="${SB}"><LockDuration>PT1M</LockDuration><MaxSizeInMegabytes>1024</MaxSizeInMegabytes><RequiresDuplicateDetection>false</RequiresDuplicateDetection><RequiresSession>false</RequiresSession><DefaultMessageTimeToLive>P10675199DT2H48M5.4775807S</DefaultMessageTimeToLive><DeadLetteringOnMessageExpiration>false</DeadLetteringOnMessageExpiration><DuplicateDetectionHistoryTimeWindow>PT10M</DuplicateDetectionHistoryTimeWindow><MaxDeliveryCount>10</MaxDeliveryCount><EnableBatchedOperations>true</EnableBatchedOperations><IsAnonymousAccessible>false</IsAnonymousAccessible><AuthorizationRules /><Status>Active</Status><SupportOrdering>true</SupportOrdering><AutoDeleteOnIdle>P10675199DT2H48M5.4775807S</AutoDeleteOnIdle><EnablePartitioning>false</EnablePartitioning><EnableExpress>false</EnableExpress><SomethingNewer>kept by .NET, ignored here</SomethingNewer></QueueDescription></content></entry>`;

beforeAll(async () => {
  runtime = await startTestRuntime('atom-golden');
  host = new URL(runtime.url).host;
  for (const name of ['a1', 'a2', 'a3']) expect((await call('PUT', `/${name}?api-version=2021-05`, dotnetQueue(name))).status).toBe(201);
});
afterAll(async () => {
  await runtime?.stop();
});

describe('Atom golden XML for the .NET, Python and Go admin clients', () => {
  it('.NET: lower-case $Resources/queues with enrich and $top=100 fills the page; titles carry the names', async () => {
    const res = await call('GET', '/$Resources/queues?enrich=false&$skip=0&$top=100&api-version=2021-05');
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/atom\+xml;type=feed/);
    const feed = parseXml(res.text);
    expect(feed.name).toBe('feed');
    const entries = children(feed, 'entry');
    expect(entries.map((e) => textOf(e, 'title'))).toEqual(['a1', 'a2', 'a3']);
    // No next link on the last page: Python follows link[1] only when there are exactly two.
    expect(children(feed, 'link').map((l) => l.attributes.rel)).toEqual(['self']);
  });

  it('Python and JS: a page with more after it has exactly two links, self then next, holding $skip, $top and api-version', async () => {
    const feed = parseXml((await call('GET', '/$Resources/Queues?$skip=1&$top=1&api-version=2021-05')).text);
    const links = children(feed, 'link');
    expect(links.map((l) => l.attributes.rel)).toEqual(['self', 'next']);
    const next = new URL(links[1]!.attributes.href!);
    expect(next.host).toBe(host);
    expect(next.pathname).toBe('/$Resources/Queues');
    expect([next.searchParams.get('$skip'), next.searchParams.get('$top'), next.searchParams.get('api-version')]).toEqual(['2', '1', '2021-05']);
    expect(children(feed, 'entry').map((e) => textOf(e, 'title'))).toEqual(['a2']);
    // .NET skips past the end: an empty feed, still titled.
    const empty = parseXml((await call('GET', '/$Resources/queues?$skip=100&$top=100&api-version=2021-05')).text);
    expect(children(empty, 'entry')).toEqual([]);
    expect(textOf(empty, 'title')).toBe('Queues');
  });

  it('R1-R5: an entry in default namespaces, id and title, CountDetails under one prefix, TimeSpan.MaxValue', async () => {
    const res = await call('GET', '/a1?enrich=false&api-version=2021-05');
    expect(res.text).toMatch(
      /^<entry xmlns="http:\/\/www\.w3\.org\/2005\/Atom"><id>http:\/\/[^<]+\/a1\?api-version=2021-05<\/id><title type="text">a1<\/title>/,
    );
    expect(res.text).toContain(`<QueueDescription xmlns="${SB}" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">`);
    expect(res.text).toContain(
      '<CountDetails xmlns:d2p1="http://schemas.microsoft.com/netservices/2011/06/servicebus"><d2p1:ActiveMessageCount>0</d2p1:ActiveMessageCount><d2p1:DeadLetterMessageCount>0</d2p1:DeadLetterMessageCount><d2p1:ScheduledMessageCount>0</d2p1:ScheduledMessageCount><d2p1:TransferMessageCount>0</d2p1:TransferMessageCount><d2p1:TransferDeadLetterMessageCount>0</d2p1:TransferDeadLetterMessageCount></CountDetails>',
    );
    expect(res.text).toContain('<DefaultMessageTimeToLive>P10675199DT2H48M5.4775807S</DefaultMessageTimeToLive>');
    const q = parseXml(res.text).children.find((c) => c.name === 'content')!.children[0]!;
    for (const required of [
      'LockDuration',
      'MaxSizeInMegabytes',
      'MaxDeliveryCount',
      'EnablePartitioning',
      'RequiresSession',
      'EnableBatchedOperations',
      'EnableExpress',
      'CreatedAt',
      'UpdatedAt',
      'AccessedAt',
      'EntityAvailabilityStatus',
      'Status',
      'MessageCount',
      'SizeInBytes',
    ]) {
      expect(textOf(q, required), required).toBeDefined();
    }
    expect(res.text).not.toContain('SomethingNewer');
  });

  it('R2 R6: subscription and rule ids with Subscriptions and Rules capitalised; .NET int/long values; lower-case /rules', async () => {
    expect(
      (
        await call(
          'PUT',
          '/t?api-version=2021-05',
          `<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><TopicDescription xmlns="${SB}"/></content></entry>`,
        )
      ).status,
    ).toBe(201);
    expect(
      (
        await call(
          'PUT',
          '/t/Subscriptions/s?api-version=2021-05',
          `<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><SubscriptionDescription xmlns="${SB}"/></content></entry>`,
        )
      ).status,
    ).toBe(201);
    const rule = `<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><RuleDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="${SB}"><Filter i:type="SqlFilter"><SqlExpression>a = @a AND b = @b</SqlExpression><Parameters><KeyValueOfstringanyType><Key>@a</Key><Value xmlns:d6p1="http://www.w3.org/2001/XMLSchema" i:type="d6p1:int">7</Value></KeyValueOfstringanyType><KeyValueOfstringanyType><Key>@b</Key><Value xmlns:l28="http://www.w3.org/2001/XMLSchema" i:type="l28:long">9000000000</Value></KeyValueOfstringanyType></Parameters></Filter><Action i:type="EmptyRuleAction"/><Name>r</Name></RuleDescription></content></entry>`;
    expect((await call('PUT', '/t/subscriptions/s/rules/r?api-version=2021-05', rule)).status).toBe(201);
    const got = await call('GET', '/t/subscriptions/s/rules/r?enrich=false&api-version=2021-05');
    expect(got.text).toContain(`<id>http://${host}/t/Subscriptions/s/Rules/r?api-version=2021-05</id><title type="text">r</title>`);
    expect(got.text).toContain('<Value i:type="d6p1:int" xmlns:d6p1="http://www.w3.org/2001/XMLSchema">7</Value>');
    // Never `long`: the JS client refuses it. A value past 32 bits is a double.
    expect(got.text).toContain('<Value i:type="d6p1:double" xmlns:d6p1="http://www.w3.org/2001/XMLSchema">9000000000</Value>');
    const rules = parseXml((await call('GET', '/t/Subscriptions/s/rules?$skip=0&$top=100&api-version=2021-05')).text);
    expect(children(rules, 'entry').map((e) => textOf(e, 'title'))).toEqual(['$Default', 'r']);
    expect(textOf(children(rules, 'entry')[0]!.children.find((c) => c.name === 'content')!.children[0]!, 'Name')).toBe('$Default');
    const subs = parseXml((await call('GET', '/t/Subscriptions?$skip=0&$top=100&api-version=2021-05')).text);
    expect(children(subs, 'entry').map((e) => textOf(e, 'id'))).toEqual([`http://${host}/t/Subscriptions/s?api-version=2021-05`]);
    // A duration value (.NET can send one) has no Sluice type: 400 naming it, nothing stored.
    const duration = rule.replace('i:type="l28:long">9000000000', 'i:type="l28:duration">PT1M').replace('<Name>r</Name>', '<Name>r2</Name>');
    const refused = await call('PUT', '/t/subscriptions/s/rules/r2?api-version=2021-05', duration);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Filter.Parameters.@b');
    expect((await call('GET', '/t/subscriptions/s/rules/r2?api-version=2021-05')).status).toBe(404);
  });

  it('R10: a missing entity is 404 with an Error body (JS, .NET and Go read it as not found)', async () => {
    const res = await call('GET', '/missing?enrich=false&api-version=2021-05');
    expect(res.status).toBe(404);
    const error = parseXml(res.text);
    expect(error.name).toBe('Error');
    expect(textOf(error, 'Code')).toBe('404');
    expect(textOf(error, 'Detail')).toMatch(/^The messaging entity 'missing' could not be found TrackingId:/);
  });
});
