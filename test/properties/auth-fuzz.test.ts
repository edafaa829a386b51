/**
 * A1-A4 and B3 as a property, at the API handler: a client holding only a Send+Listen rule
 * on queue `a` throws random requests (real routes and garbage paths, traversals, encodings,
 * random methods, headers and JSON bodies) with random and near-valid tokens (its own, for
 * other scopes, expired, tampered, signed with the wrong key). Every answer is a success or a
 * B1-shaped 4xx, never a 5xx; a token that is not genuine always gets 401; a success only ever
 * comes for a genuine token on a path under its `sr` and under `/queues/a`; and afterwards,
 * read by the root client, queue `b` (active, dead-letter and transfer subqueues, properties,
 * rules), topic `t` and its subscription are unchanged and no entity or rule was added.
 *
 * A second credential, rule `manager` with Manage on queue `m` (which holds a dead letter),
 * reaches the operations that name another entity in the body (B3): forwarding
 * targets and resubmit destinations. Whatever it sends, `b`, `t` and `s` stay unchanged and
 * `m` forwards nowhere outside itself.
 *
 * The same holds for requests Sluice hands to Service Bus's own protocols (a marker such as
 * `api-version`, or a root that is not Sluice's: lib/protocols/dispatch.ts); their refusals are
 * Service Bus's XML `Error` bodies, and a success needs the token's `sr`, read as those clients
 * sign it, to cover the path, and its rule to cover an entity the path can name.
 */
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler, type ApiHandler } from '../../functions/api/handler.js';
import { computeSignature, generateKey, joinSegments, resourceCovers, resourceSegments, segmentsCover, signToken } from '../../lib/auth/index.js';
import { pathSegments, protocolOfEvent } from '../../lib/protocols/dispatch.js';
import { serviceBusResourceSegments, sluiceReadings } from '../../lib/protocols/sas.js';
import { parseXml } from '../../lib/protocols/xml.js';
import { apiClient, TEST_ROOT_KEY } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();
const start = clock.current;
let admin: ReturnType<typeof apiClient>;
let handler: ApiHandler;

/** The fuzzer's only credential: rule `fuzzer` on /queues/a with Send and Listen. */
const keys = { primary: '', secondary: '' };
/** The second credential: rule `manager` on /queues/m with Manage (it may read its own rules, so its keys are no secret). */
const managerKeys = { primary: '', secondary: '' };
/** Secrets the fuzzer must never see in an answer. */
const secrets: string[] = [];
/** Real sequence numbers and lock tokens of a and b, so settlements aim at real messages. */
const seqs: string[] = [];
const lockTokens: string[] = [];

const nowSeconds = () => Math.floor(Date.now() / 1000);

async function ok<T = unknown>(reply: Promise<{ status: number; body: T }>, status?: number): Promise<T> {
  const r = await reply;
  if (r.status >= 300 || (status !== undefined && r.status !== status)) throw new Error(`setup: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  const deps = await testDeps(clock, 'authfuzz');
  admin = apiClient(deps);
  handler = createApiHandler(deps, { rootKey: TEST_ROOT_KEY });

  await ok(admin('PUT', '/queues/a', {}), 201);
  await ok(admin('PUT', '/queues/b', { lockDuration: 'PT5M', maxDeliveryCount: 3 }), 201);
  await ok(admin('PUT', '/topics/t', {}), 201);
  await ok(admin('PUT', '/topics/t/subscriptions/s', {}), 201);

  // Queue b: active messages, one dead-lettered, one deferred, one scheduled, one held under
  // a lock whose token the fuzzer is given (it must still not be able to settle it).
  const sent = await ok<{ results: Array<{ sequenceNumber: string }> }>(
    admin('POST', '/queues/b/messages/batch', {
      messages: Array.from({ length: 6 }, (_, i) => ({ body: { b: i }, messageId: `b-${i}`, applicationProperties: { n: i } })),
    }),
  );
  for (const r of sent.results) seqs.push(r.sequenceNumber);
  await ok(admin('POST', '/queues/b/messages', { body: 'later', scheduledEnqueueTime: new Date(start + 86_400_000).toISOString() }), 201);
  const locked = await ok<{ messages: Array<{ sequenceNumber: string; lockToken: string }> }>(admin('POST', '/queues/b/messages/receive', { maxMessages: 3 }));
  const [dead, deferred, held] = locked.messages;
  await ok(admin('POST', `/queues/b/messages/${dead!.sequenceNumber}/deadletter`, { lockToken: dead!.lockToken, deadLetterReason: 'setup' }));
  await ok(admin('POST', `/queues/b/messages/${deferred!.sequenceNumber}/defer`, { lockToken: deferred!.lockToken }));
  lockTokens.push(held!.lockToken);

  // Queue a: the fuzzer's own, with a message it may legitimately lock and settle.
  await ok(admin('POST', '/queues/a/messages/batch', { messages: [{ body: 'a0' }, { body: 'a1' }, { body: 'a2' }] }));
  const aLocked = await ok<{ messages: Array<{ sequenceNumber: string; lockToken: string }> }>(admin('POST', '/queues/a/messages/receive', {}));
  seqs.push(aLocked.messages[0]!.sequenceNumber);
  lockTokens.push(aLocked.messages[0]!.lockToken);

  // Queue m: the manager's, with a dead letter it may resubmit (but only into m).
  await ok(admin('PUT', '/queues/m', {}), 201);
  await ok(admin('POST', '/queues/m/messages', { body: 'm0' }), 201);
  const mLocked = await ok<{ messages: Array<{ sequenceNumber: string; lockToken: string }> }>(admin('POST', '/queues/m/messages/receive', {}));
  await ok(admin('POST', `/queues/m/messages/${mLocked.messages[0]!.sequenceNumber}/deadletter`, { lockToken: mLocked.messages[0]!.lockToken }));
  const manager = await ok<{ primaryKey: string; secondaryKey: string }>(admin('PUT', '/queues/m/authorization-rules/manager', { rights: ['Manage'] }), 201);
  managerKeys.primary = manager.primaryKey;
  managerKeys.secondary = manager.secondaryKey;

  // Topic t: a message waiting in subscription s.
  await ok(admin('POST', '/topics/t/messages', { body: 't0' }), 201);

  const rule = await ok<{ primaryKey: string; secondaryKey: string }>(
    admin('PUT', '/queues/a/authorization-rules/fuzzer', { rights: ['Send', 'Listen'] }),
    201,
  );
  keys.primary = rule.primaryKey;
  keys.secondary = rule.secondaryKey;
  // Decoys with the same key name on b and on the namespace, with keys the fuzzer never has:
  // a token for b or for `/` signed with a's key must find these and fail, not a's rule.
  const decoyB = await ok<{ primaryKey: string; secondaryKey: string }>(admin('PUT', '/queues/b/authorization-rules/fuzzer', { rights: ['Manage'] }), 201);
  const decoyNs = await ok<{ primaryKey: string; secondaryKey: string }>(admin('PUT', '/authorization-rules/fuzzer', { rights: ['Listen'] }), 201);
  secrets.push(TEST_ROOT_KEY, keys.primary, keys.secondary, decoyB.primaryKey, decoyB.secondaryKey, decoyNs.primaryKey, decoyNs.secondaryKey);
});

afterAll(() => {
  clock.current = start;
});

// ---- what must not change ---------------------------------------------------------------

/** Management views: entity descriptions, listings by name, authorization rules. */
async function described() {
  const names = (body: { items?: Array<{ name?: string }> } | Array<{ name?: string }>) =>
    (Array.isArray(body) ? body : (body.items ?? [])).map((e) => e.name).sort();
  return {
    b: await ok(admin('GET', '/queues/b')),
    t: await ok(admin('GET', '/topics/t')),
    s: await ok(admin('GET', '/topics/t/subscriptions/s')),
    sRules: await ok(admin('GET', '/topics/t/subscriptions/s/rules')),
    queues: names(await ok(admin('GET', '/queues?top=100'))),
    topics: names(await ok(admin('GET', '/topics?top=100'))),
    subscriptions: names(await ok(admin('GET', '/topics/t/subscriptions?top=100'))),
    rulesNamespace: await ok(admin('GET', '/authorization-rules')),
    rulesA: await ok(admin('GET', '/queues/a/authorization-rules')),
    rulesB: await ok(admin('GET', '/queues/b/authorization-rules')),
  };
}

/** Every message of b (all subqueues) and of s, by peek. Peeking counts as access (I2). */
async function peeked() {
  const peek = (path: string) => ok(admin('GET', `${path}?maxMessages=100`));
  return {
    b: await peek('/queues/b/messages'),
    bDead: await peek('/queues/b/$deadletterqueue/messages'),
    bTransfer: await peek('/queues/b/$transferdeadletterqueue/messages'),
    s: await peek('/topics/t/subscriptions/s/messages'),
    sDead: await peek('/topics/t/subscriptions/s/$deadletterqueue/messages'),
  };
}

// ---- the grammar ------------------------------------------------------------------------

const huge = ['9223372036854775807', '9223372036854775808', '18446744073709551616', '99999999999999999999999999', '1e308', '-1', '0', '01', 'NaN', '0x10'];
const number = () => fc.oneof(fc.constantFrom(...seqs), fc.constantFrom(...huge), fc.bigInt({ min: 0n, max: 2n ** 66n }).map(String));
const queue = () =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('a', 'A', '%61', 'b', 'B', '%62', '%42', 'm', 'M') },
    fc.constantFrom(
      'ab',
      'a.',
      'c',
      'new',
      'a%2Fb',
      'a%2F..%2Fb',
      '..',
      '.',
      '%2E%2E',
      '%2e',
      'a%00',
      'a%252Fb',
      'a\\..\\b',
      'a%5C..%5Cb',
      '%',
      '%zz',
      'a;b',
      'a b',
      'a%20',
    ),
    fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,8}$/),
  );
const subqueue = () =>
  fc.constantFrom('$deadletterqueue', '%24deadletterqueue', '$DeadLetterQueue', '%24DEADLETTERQUEUE', '$transferdeadletterqueue', '$other');
const action = () => fc.constantFrom('complete', 'abandon', 'deadletter', 'defer', 'renew-lock', 'Complete', 'toString', '__proto__', '');
const ruleName = () => fc.constantFrom('fuzzer', 'RootManageSharedAccessKey', 'rootmanagesharedaccesskey', 'x', '$Default', '..');

/** Real routes of the API, for queues a and b and topic t. */
const route = () =>
  fc.oneof(
    fc
      .tuple(
        queue(),
        fc.constantFrom(
          '',
          '/messages',
          '/messages/batch',
          '/messages/receive',
          '/messages/deferred',
          '/messages/complete',
          '/messages/abandon',
          '/authorization-rules',
        ),
      )
      .map(([q, rest]) => `/queues/${q}${rest}`),
    fc.tuple(queue(), number(), action()).map(([q, n, a]) => `/queues/${q}/messages/${n}/${a}`),
    fc.tuple(queue(), number()).map(([q, n]) => `/queues/${q}/messages/scheduled/${n}`),
    // The session routes.
    fc
      .tuple(
        queue(),
        fc.constantFrom('', '/accept', '/s1/receive', '/s1/renew-lock', '/s1/release', '/s1/state', '/s1/deferred', '/%2e%2e/receive', '/a%2Fb/state'),
      )
      .map(([q, rest]) => `/queues/${q}/sessions${rest}`),
    fc
      .tuple(fc.constantFrom('t', 'a'), fc.constantFrom('s', 'S'), fc.constantFrom('', '/accept', '/s1/receive', '/s1/state'))
      .map(([t, sub, rest]) => `/topics/${t}/subscriptions/${sub}/sessions${rest}`),
    fc
      .tuple(queue(), subqueue(), fc.constantFrom('', '/messages', '/messages/receive', '/resubmit', '/messages/complete'))
      .map(([q, sq, rest]) => `/queues/${q}/${sq}${rest}`),
    fc.tuple(queue(), subqueue(), number(), action()).map(([q, sq, n, a]) => `/queues/${q}/${sq}/messages/${n}/${a}`),
    fc.tuple(queue(), ruleName(), fc.constantFrom('', '/regenerate')).map(([q, r, rest]) => `/queues/${q}/authorization-rules/${r}${rest}`),
    fc.tuple(ruleName(), fc.constantFrom('', '/regenerate')).map(([r, rest]) => `/authorization-rules/${r}${rest}`),
    fc
      .tuple(fc.constantFrom('t', 'T', 'a', 'b'), fc.constantFrom('s', 'S', 'a'), number(), action())
      .map(([t, s, n, a]) => `/topics/${t}/subscriptions/${s}/messages/${n}/${a}`),
    fc
      .tuple(
        fc.constantFrom('t', 'a'),
        fc.constantFrom(
          '',
          '/messages',
          '/subscriptions',
          '/subscriptions/s',
          '/subscriptions/s/messages/receive',
          '/subscriptions/s/rules/$Default',
          '/subscriptions/s/$deadletterqueue/messages',
        ),
      )
      .map(([t, rest]) => `/topics/${t}${rest}`),
    fc.constantFrom('/', '', '/queues', '/topics', '/authorization-rules', '/_local/clock', '/queues/', '/queues/a/'),
  );

/** Ways out of `/queues/a` that a sloppy router or scope check might let through. */
const traversal = () =>
  fc.constantFrom(
    '/queues/a/../b/messages',
    '/queues/a/../b/messages/receive',
    '/queues/a/%2e%2e/b/messages/receive',
    '/queues/a/%2E%2E/%2E%2E/queues/b/messages',
    '/queues/a%2F..%2Fb/messages',
    '/queues/a/..%2Fb/messages',
    '/queues/a%2Fmessages',
    '/queues/./a/messages',
    '/queues/a/./messages',
    '/queues/a/$deadletterqueue/../../b/messages/receive',
    '/queues/a/messages/../../b/messages',
    '/queues//b/messages',
    '//queues/b/messages',
    '/queues/a//messages',
    '/queues/a/messages//receive',
    '/queues/a%00/messages',
    '/queues/a%252F..%252Fb/messages',
    '/Queues/A/Messages/Receive',
    '/queues/a/messages?x=/queues/b',
    '/queues/a#/queues/b',
    '/queues/a\\..\\b/messages',
    '/queues/a%5C..%5Cb/messages',
    '/queues/a/messages/%2e%2e/%2e%2e/%2e%2e/queues/b/messages/receive',
    '/queues/ab/messages',
    '/queues/a/b/messages',
    '/queues/a/queues/b/messages',
  );

/** Paths: real routes (some doubled, trailing or upper-cased), traversals, garbage. */
const path = () =>
  fc.oneof(
    { weight: 5, arbitrary: route() },
    {
      weight: 2,
      arbitrary: fc.tuple(route(), fc.constantFrom('double', 'trailing', 'upper', 'dollar', 'leading')).map(([p, how]) => {
        if (how === 'double') return p.replace(/\/(?=[^/]*$)/, '//');
        if (how === 'trailing') return `${p}/`;
        if (how === 'upper') return p.toUpperCase();
        if (how === 'dollar') return p.replace(/\$/g, '%24');
        return `/${p}`;
      }),
    },
    { weight: 2, arbitrary: traversal() },
    // Service Bus's own layout (lib/protocols): entities at the root.
    fc.constantFrom(
      '/a',
      '/A/',
      '/b',
      '/a/messages',
      '/a/Messages/Head',
      '/a/$DeadLetterQueue/messages/head',
      '/b/messages',
      '/$Resources/Queues',
      '/$namespaceinfo',
      '/t/Subscriptions/s',
      '/t/Subscriptions/s/Rules/$Default',
      '/queues/a/messages/head',
    ),
    fc.webPath(),
    fc.string({ maxLength: 30 }).map((s) => `/${s}`),
    fc
      .array(fc.oneof(fc.constantFrom('queues', 'a', 'b', 'messages', '..', '%2F', '$deadletterqueue', 'receive'), fc.string({ maxLength: 6 })), {
        maxLength: 6,
      })
      .map((s) => `/${s.join('/')}`),
  );

const method = () =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE') },
    fc.constantFrom('PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'post', 'get', '', 'P0ST'),
    fc.string({ maxLength: 6 }),
  );

// Tokens. `genuine`: signed with the fuzzer's key for an `sr` its rule covers, not expired.
// Anything else must be refused with 401 whatever the path (A3).
interface Token {
  header: string | undefined;
  genuine: boolean;
  /** The resource the token names, for genuine tokens. */
  sr?: string;
  /** The scope of the genuine token's rule: `/queues/a` (fuzzer) or `/queues/m` (manager). */
  scope?: string;
}

const inScope = [
  'http://localhost/queues/a',
  'https://sluice.example.com/Queues/A',
  'sb://ns.servicebus.windows.net/queues/a/',
  '/queues/a',
  'queues/a',
  'http://localhost/queues/%61',
  'http://localhost/queues/a/messages',
  'http://localhost/queues/a/$deadletterqueue',
  'http://localhost/queues/a/%24deadletterqueue/messages',
  // As Service Bus's HTTP clients sign: Azure's layout, the whole URL with its query.
  'http://localhost/a',
  'sb://ns.servicebus.windows.net/A/',
  'https://localhost/a/messages/head?api-version=2021-05&timeout=5',
];
const outOfScope = [
  'http://localhost/',
  'http://localhost',
  'http://localhost/queues',
  'http://localhost/queues/b',
  'http://localhost/queues/B',
  'http://localhost/queues/ab',
  'http://localhost/queues/a/../b',
  'http://localhost/queues/a/%2e%2e/b',
  'http://localhost/queues/a%2Fb',
  'http://localhost/queues/a%2F..%2Fb',
  'http://localhost/queues//a',
  'http://localhost/queues/a?x=1',
  'http://localhost/queues/a#b',
  'http://localhost/topics/t',
  'http://localhost/topics/t/subscriptions/s',
  'http://localhost/authorization-rules',
];
const expiresSoon = () => nowSeconds() + 3600;
const keyOf = (which: 'primary' | 'secondary') => keys[which];
const which = () => fc.constantFrom<'primary' | 'secondary'>('primary', 'secondary');

/** Signs the `sr` text exactly as given (not lower-cased or re-encoded), as some SDKs do. */
function rawToken(srText: string, se: string, skn: string, key: string): string {
  const sig = encodeURIComponent(computeSignature(key, `${srText}\n${se}`));
  return `SharedAccessSignature sr=${srText}&sig=${sig}&se=${se}&skn=${skn}`;
}

const genuineToken = (): fc.Arbitrary<Token> =>
  fc.oneof(
    // Every spelling of a's scope (and narrower), either key, key name in any case.
    {
      weight: 6,
      arbitrary: fc.tuple(fc.constantFrom(...inScope), which(), fc.constantFrom('fuzzer', 'FUZZER', 'Fuzzer')).map(([sr, k, skn]) => ({
        header: signToken({ resourceUri: sr, keyName: skn, key: keyOf(k), expiresAt: expiresSoon() }),
        genuine: true,
        sr,
        scope: '/queues/a',
      })),
    },
    // The manager: Manage on queue m, so the body's targets are reached (B3).
    {
      weight: 4,
      arbitrary: fc.tuple(fc.constantFrom('http://localhost/queues/m', '/queues/M', 'sb://ns/queues/m/'), which()).map(([sr, k]) => ({
        header: signToken({ resourceUri: sr, keyName: 'manager', key: managerKeys[k], expiresAt: expiresSoon() }),
        genuine: true,
        sr,
        scope: '/queues/m',
      })),
    },
    // Signed over the `sr` text as sent, not lower-cased first.
    fc.tuple(fc.constantFrom('http://localhost/queues/a', 'http://localhost/Queues/A/', '/queues/a'), which()).map(([sr, k]) => {
      const encoded = encodeURIComponent(sr);
      const se = String(expiresSoon());
      return { header: rawToken(encoded, se, 'fuzzer', keyOf(k)), genuine: true, sr, scope: '/queues/a' };
    }),
  );

const token = (): fc.Arbitrary<Token> =>
  fc.oneof(
    { weight: 7, arbitrary: genuineToken() },
    // The fuzzer's own key, signing for a scope its rule does not cover (B3).
    {
      weight: 3,
      arbitrary: fc.tuple(fc.constantFrom(...outOfScope), which(), fc.constantFrom('fuzzer', 'RootManageSharedAccessKey', 'Fuzzer')).map(([sr, k, skn]) => ({
        header: signToken({ resourceUri: sr, keyName: skn, key: keyOf(k), expiresAt: expiresSoon() }),
        genuine: false,
      })),
    },
    // Expired: one second ago, long ago, the epoch.
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom(...inScope), which(), fc.constantFrom(1, 60, 86_400, nowSeconds())).map(([sr, k, ago]) => ({
        header: signToken({ resourceUri: sr, keyName: 'fuzzer', key: keyOf(k), expiresAt: nowSeconds() - ago }),
        genuine: false,
      })),
    },
    // Tampered: a genuine token with sr, se or sig changed after signing.
    {
      weight: 3,
      arbitrary: fc
        .tuple(which(), fc.constantFrom('sr', 'se', 'sig', 'skn'), fc.constantFrom(...outOfScope, 'http://localhost/queues/a/x'))
        .map(([k, part, other]) => {
          const good = signToken({ resourceUri: 'http://localhost/queues/a', keyName: 'fuzzer', key: keyOf(k), expiresAt: expiresSoon() });
          let header = good;
          if (part === 'sr') header = good.replace(/sr=[^&]*/, `sr=${encodeURIComponent(other.toLowerCase())}`);
          if (part === 'se') header = good.replace(/se=\d+/, `se=${expiresSoon() + 86_400}`);
          if (part === 'sig') {
            header = good.replace(/sig=([^&]*)/, (_, sig: string) => {
              const decoded = decodeURIComponent(sig);
              const flipped = (decoded[0] === 'A' ? 'B' : 'A') + decoded.slice(1);
              return `sig=${encodeURIComponent(flipped)}`;
            });
          }
          if (part === 'skn') header = good.replace(/skn=.*/, 'skn=RootManageSharedAccessKey');
          return { header, genuine: false };
        }),
    },
    // Right form, wrong key: a random key, or the key text mangled.
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...inScope), fc.constantFrom('random', 'suffix', 'decoded')).map(([sr, how]) => {
        const key = how === 'random' ? generateKey() : how === 'suffix' ? `${keys.primary}x` : Buffer.from(keys.primary, 'base64').toString('latin1');
        return { header: signToken({ resourceUri: sr, keyName: 'fuzzer', key, expiresAt: expiresSoon() }), genuine: false };
      }),
    },
    // Malformed: nothing, other schemes, fields missing or doubled, random text.
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constant(undefined),
          fc.constantFrom('', 'Bearer x', 'SharedAccessSignature', 'SharedAccessSignature ', 'Basic YTpi', 'SharedAccessSignature sr=&sig=&se=&skn='),
          fc.string({ maxLength: 60 }),
          fc.string({ maxLength: 60 }).map((s) => `SharedAccessSignature ${s}`),
          fc.tuple(which(), fc.constantFrom('dup', 'drop', 'extra')).map(([k, how]) => {
            const good = signToken({ resourceUri: 'http://localhost/queues/a', keyName: 'fuzzer', key: keyOf(k), expiresAt: expiresSoon() });
            if (how === 'dup') return `${good}&sr=${encodeURIComponent('http://localhost/queues/b')}`;
            if (how === 'drop') return good.replace(/&se=\d+/, '');
            return `${good}&x=1`;
          }),
        )
        .map((header) => ({ header, genuine: false })),
    },
  );

const json = () => fc.jsonValue({ maxDepth: 2 });
const scalar = () => fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(null));
const entityRef = () =>
  fc.constantFrom(
    'b',
    'B',
    'queues/b',
    '/queues/b',
    'queues/B',
    'a/../b',
    'queues/a/../b',
    'queues/m/../b',
    'm/../b',
    't',
    'topics/t',
    'topics/t/subscriptions/s',
    'http://localhost/queues/b',
    'queues/nope',
    'm',
    'queues/m',
  );
const lockToken = () => fc.oneof(fc.constantFrom(...lockTokens), fc.uuid(), scalar());

const shaped = () =>
  fc.oneof(
    // sends, with routing-looking fields pointing at b
    fc.record(
      {
        body: json(),
        messageId: fc.oneof(fc.constantFrom('b-0', 'b-1'), scalar()),
        to: entityRef(),
        replyTo: entityRef(),
        sessionId: scalar(),
        timeToLive: fc.constantFrom('PT1M', 'P1D', 'x'),
        applicationProperties: fc.dictionary(fc.string({ maxLength: 6 }), scalar(), { maxKeys: 3 }),
      },
      { requiredKeys: ['body'] },
    ),
    fc.record({ messages: fc.array(fc.record({ body: json(), to: entityRef() }), { maxLength: 3 }) }),
    // receives and settlements, with b's real lock token and sequence numbers
    fc.record(
      {
        mode: fc.constantFrom('peekLock', 'receiveAndDelete', 'x'),
        maxMessages: fc.oneof(fc.integer({ min: -1, max: 101 }), scalar()),
        maxWaitTime: fc.constantFrom('PT0S', 'PT1S', 'PT20S', 'PT21S', 'x'),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      {
        lockToken: lockToken(),
        lockTokens: fc.array(lockToken(), { maxLength: 3 }),
        sequenceNumbers: fc.array(number(), { maxLength: 3 }),
        deadLetterReason: scalar(),
        propertiesToModify: fc.dictionary(fc.string({ maxLength: 6 }), scalar(), { maxKeys: 2 }),
        to: entityRef(),
        maxMessages: fc.integer({ min: 1, max: 10 }),
      },
      { requiredKeys: [] },
    ),
    // management, which this rule may not do: forwarding into b, rights, regeneration
    fc.record(
      {
        forwardTo: entityRef(),
        forwardDeadLetteredMessagesTo: entityRef(),
        status: fc.constantFrom('Active', 'Disabled'),
        lockDuration: fc.constantFrom('PT1M', 'PT5S'),
        rights: fc.constantFrom(['Manage'], ['Send', 'Listen', 'Manage']),
        key: fc.constantFrom('primary', 'secondary'),
      },
      { requiredKeys: [] },
    ),
  );

type Body = { json: unknown } | { raw: string } | undefined;
const body = (): fc.Arbitrary<Body> =>
  fc.oneof(
    fc.constant(undefined),
    { weight: 4, arbitrary: shaped().map((j) => ({ json: j })) },
    { weight: 2, arbitrary: json().map((j) => ({ json: j })) },
    fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('{', '{"body":1,}', 'null', '[', '\u0000', '9'.repeat(400))).map((raw) => ({ raw })),
  );

const headerValue = () => fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('http://localhost/queues/b', '/queues/b', 'application/json', 'text/plain'));
const otherHeaders = () =>
  fc.dictionary(
    fc.constantFrom(
      'content-type',
      'host',
      'x-forwarded-for',
      'x-forwarded-host',
      'x-original-url',
      'x-rewrite-url',
      'x-http-method-override',
      'cookie',
      'x-ms-sas',
      'sr',
      'servicebusauthorization',
    ),
    headerValue(),
    { maxKeys: 3 },
  );
// API Gateway (payload 2.0) lower-cases header names; the handler also reads `Authorization`.
const authHeaderName = () => fc.constantFrom('authorization', 'authorization', 'authorization', 'Authorization', 'AUTHORIZATION', 'x-authorization');

const query = () =>
  fc.option(
    fc.dictionary(
      fc.constantFrom('top', 'next', 'fromSequenceNumber', 'maxMessages', 'entity', 'path', 'sr'),
      fc.oneof(number(), fc.constantFrom('b', '/queues/b', '..%2Fb'), fc.string({ maxLength: 8 })),
      {
        maxKeys: 2,
      },
    ),
    { nil: undefined },
  );

interface Request {
  method: string;
  path: string;
  query: Record<string, string> | undefined;
  token: Token;
  authHeader: string;
  headers: Record<string, string>;
  body: Body;
  base64: boolean;
}

/** Requests a Send+Listen client of queue a may make, so the run also reaches the broker. */
const legitimate = () =>
  fc.oneof(
    fc.record({
      method: fc.constant('POST'),
      path: fc.constantFrom('/queues/a/messages', '/queues/A/messages', '/queues/%61/messages'),
      body: fc.record({ body: json() }).map((j): Body => ({ json: j })),
    }),
    fc.record({
      method: fc.constant('POST'),
      path: fc.constant('/queues/a/messages/batch'),
      body: fc.array(fc.record({ body: json() }), { minLength: 1, maxLength: 3 }).map((messages): Body => ({ json: { messages } })),
    }),
    fc.record({
      method: fc.constant('POST'),
      path: fc.constantFrom('/queues/a/messages/receive', '/queues/a/$deadletterqueue/messages/receive', '/queues/a/%24DeadLetterQueue/messages/receive'),
      body: fc
        .record({ maxMessages: fc.integer({ min: 1, max: 5 }), mode: fc.constantFrom('peekLock', 'receiveAndDelete') }, { requiredKeys: [] })
        .map((j): Body => ({ json: j })),
    }),
    fc.record({
      method: fc.constant('GET'),
      path: fc.constantFrom('/queues/a/messages', '/queues/a/$deadletterqueue/messages', '/queues/a/$transferdeadletterqueue/messages'),
      body: fc.constant<Body>(undefined),
    }),
    fc.record({
      method: fc.constant('POST'),
      path: fc.tuple(number(), action()).map(([n, a]) => `/queues/a/messages/${n}/${a}`),
      body: lockToken().map((t): Body => ({ json: { lockToken: t } })),
    }),
  );

const request = (): fc.Arbitrary<Request> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        method: method(),
        path: path(),
        query: query(),
        token: token(),
        authHeader: authHeaderName(),
        headers: otherHeaders(),
        body: body(),
        base64: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc
        .record({
          method: fc.constant(''),
          path: fc.constant(''),
          query: fc.constant(undefined),
          token: fc.oneof({ weight: 3, arbitrary: genuineToken() }, token()),
          authHeader: fc.constant('authorization'),
          headers: otherHeaders(),
          body: fc.constant<Body>(undefined),
          base64: fc.boolean(),
          legit: legitimate(),
        })
        .map(({ legit, ...r }): Request => ({ ...r, ...legit })),
    },
  );

async function send(r: Request) {
  const headers: Record<string, string> = { ...r.headers };
  if (r.token.header !== undefined) headers[r.authHeader] = r.token.header;
  const text = r.body === undefined ? undefined : 'raw' in r.body ? r.body.raw : JSON.stringify(r.body.json);
  const requestId = randomUUID();
  const rawQueryString = r.query ? new URLSearchParams(r.query).toString() : '';
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath: r.path,
    rawQueryString,
    headers,
    queryStringParameters: r.query && Object.keys(r.query).length > 0 ? r.query : undefined,
    requestContext: { requestId, http: { method: r.method, path: r.path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'fuzz' } },
    body: text === undefined ? undefined : r.base64 ? Buffer.from(text).toString('base64') : text,
    isBase64Encoded: text !== undefined && r.base64,
  } as unknown as APIGatewayProxyEventV2;
  const res = await handler(event, {} as Context);
  const raw = res.body ?? '';
  const serviceBus = protocolOfEvent(event) !== 'sluice';
  // Which header the handler reads: the lower-case one, else `Authorization` (Sluice's API) or `ServiceBusAuthorization` (Service Bus's protocols).
  const effective = serviceBus ? (headers.authorization ?? headers.servicebusauthorization) : (headers.authorization ?? headers.Authorization);
  return { status: res.statusCode ?? 200, raw, requestId, serviceBus, sentToken: effective === r.token.header && r.token.header !== undefined };
}

function check(r: Request, reply: Awaited<ReturnType<typeof send>>) {
  const what = `${r.method} ${JSON.stringify(r.path)} q=${JSON.stringify(r.query)} auth[${r.authHeader}]=${r.token.genuine ? `genuine(${r.token.sr})` : JSON.stringify(r.token.header)?.slice(0, 120)} body=${JSON.stringify(r.body)?.slice(0, 160)} -> ${reply.status} ${reply.raw.slice(0, 300)}`;
  // Never a 5xx (B1), never anything but a success or a client error.
  expect(reply.status, what).toBeGreaterThanOrEqual(200);
  expect(reply.status, what).toBeLessThan(500);
  expect(reply.status >= 300 && reply.status < 400, what).toBe(false);
  // No key of any rule in any answer (A4): the fuzzer cannot read rules.
  for (const secret of secrets) expect(reply.raw.includes(secret), what).toBe(false);

  if (reply.status >= 400 && reply.serviceBus) {
    // Service Bus's error body: <Error><Code>{status}</Code><Detail>… TrackingId:{request id}</Detail></Error>.
    const error = parseXml(reply.raw);
    expect(error.name, what).toBe('Error');
    expect(error.children.find((c) => c.name === 'Code')?.text, what).toBe(String(reply.status));
    expect(error.children.find((c) => c.name === 'Detail')?.text, what).toContain(`TrackingId:${reply.requestId}`);
  } else if (reply.status >= 400) {
    const parsed = JSON.parse(reply.raw) as unknown;
    expect(parsed, what).toEqual({
      error: { code: expect.any(String), message: expect.any(String), retryable: expect.any(Boolean), requestId: reply.requestId },
    });
  }
  const genuine = r.token.genuine && reply.sentToken;
  // A3: anything but a genuine token is a 401, whatever the path, method or body.
  if (!genuine) {
    expect(reply.status, what).toBe(401);
    if (!reply.serviceBus) expect(JSON.parse(reply.raw).error.code, what).toBe('Unauthorized');
  }
  // B3: a success only for a genuine token, on a path its `sr` and its rule's scope reach.
  if (reply.status < 300) {
    expect(genuine, what).toBe(true);
    if (reply.serviceBus) {
      const sr = serviceBusResourceSegments(r.token.sr!, 'localhost');
      const target = pathSegments(r.path).map((x) => x.toLowerCase());
      expect(sr !== undefined && segmentsCover(sr, target), what).toBe(true);
      const scope = resourceSegments(r.token.scope!)!;
      expect(
        sluiceReadings(target).some((reading) => resourceCovers(joinSegments(scope), joinSegments(reading))),
        what,
      ).toBe(true);
    } else {
      expect(resourceCovers(r.token.sr!, r.path), what).toBe(true);
      expect(resourceCovers(r.token.scope!, r.path), what).toBe(true);
    }
  }
}

// Requests worth trying every run, before the random ones.
const examples = (): Request[] => {
  const genuine = (): Token => ({
    header: signToken({ resourceUri: 'http://localhost/queues/a', keyName: 'fuzzer', key: keys.primary, expiresAt: expiresSoon() }),
    genuine: true,
    sr: 'http://localhost/queues/a',
    scope: '/queues/a',
  });
  const manager = (): Token => ({
    header: signToken({ resourceUri: 'http://localhost/queues/m', keyName: 'manager', key: managerKeys.primary, expiresAt: expiresSoon() }),
    genuine: true,
    sr: 'http://localhost/queues/m',
    scope: '/queues/m',
  });
  const base = { query: undefined, authHeader: 'authorization', headers: {}, base64: false };
  return [
    { ...base, method: 'POST', path: '/queues/a/messages', token: genuine(), body: { json: { body: 'hello', to: 'queues/b' } } },
    { ...base, method: 'POST', path: '/queues/b/messages', token: genuine(), body: { json: { body: 'x' } } },
    { ...base, method: 'POST', path: '/queues/a/../b/messages/receive', token: genuine(), body: { json: { mode: 'receiveAndDelete', maxMessages: 100 } } },
    { ...base, method: 'POST', path: `/queues/a/messages/${seqs[0]}/complete`, token: genuine(), body: { json: { lockToken: lockTokens[0] } } },
    { ...base, method: 'POST', path: `/queues/b/messages/${seqs[0]}/complete`, token: genuine(), body: { json: { lockToken: lockTokens[0] } } },
    { ...base, method: 'POST', path: '/queues/a/messages/complete', token: genuine(), body: { json: { lockTokens } } },
    { ...base, method: 'POST', path: '/queues/a/$deadletterqueue/resubmit', token: genuine(), body: { json: { to: 'queues/b' } } },
    { ...base, method: 'PUT', path: '/queues/a', token: genuine(), body: { json: { forwardTo: 'b' } } },
    // B3: Manage on m, naming b (or t, or nothing that exists) in the body
    ...[
      { forwardTo: 'queues/b' },
      { forwardTo: 'b' },
      { forwardDeadLetteredMessagesTo: 'queues/b' },
      { forwardTo: 'topics/t' },
      { forwardDeadLetteredMessagesTo: 'queues/nope' },
    ].map((json): Request => ({ ...base, method: 'PUT', path: '/queues/m', token: manager(), body: { json } })),
    { ...base, method: 'POST', path: '/queues/m/messages', token: manager(), body: { json: { body: 'to m only' } } },
    { ...base, method: 'POST', path: '/queues/m/$deadletterqueue/resubmit', token: manager(), body: { json: { to: 'queues/b' } } },
    { ...base, method: 'POST', path: '/queues/m/$deadletterqueue/resubmit', token: manager(), body: { json: { to: 'topics/t/subscriptions/s' } } },
    { ...base, method: 'PUT', path: '/queues/a/authorization-rules/fuzzer', token: genuine(), body: { json: { rights: ['Manage'] } } },
    { ...base, method: 'GET', path: '/queues/a/authorization-rules', token: genuine(), body: undefined },
    { ...base, method: 'DELETE', path: '/queues/b/messages', token: genuine(), body: undefined },
    { ...base, method: 'PUT', path: '/queues/c', token: genuine(), body: { json: {} } },
    {
      ...base,
      method: 'POST',
      path: '/queues/b/messages/receive',
      token: {
        header: signToken({ resourceUri: 'http://localhost/queues/b', keyName: 'fuzzer', key: keys.primary, expiresAt: expiresSoon() }),
        genuine: false,
      },
      body: { json: {} },
    },
  ];
};

describe('SAS enforcement under fuzzing (A1-A4, B3)', () => {
  it('B3/A3: a Send+Listen token on /queues/a never gets a 5xx, never leaves /queues/a, and changes nothing outside it', async () => {
    // prepare: the views read before the run (peek first: it counts as access, I2)
    const peekedBefore = await peeked();
    const describedBefore = await described();
    let successes = 0;
    let refused401 = 0;

    // act + assess per request
    for (const r of examples()) {
      clock.current = start;
      const reply = await send(r);
      check(r, reply);
    }
    await fc.assert(
      fc.asyncProperty(request(), async (r) => {
        // Each request at the same broker time, so b's lock (PT5M) stays live all run long:
        // a settlement that reached b would succeed, and so be seen.
        clock.current = start;
        const reply = await send(r);
        check(r, reply);
        if (reply.status < 300) successes++;
        if (reply.status === 401) refused401++;
      }),
      { numRuns: 300 },
    );

    // assess: b, its subqueues, t, s and every rule exactly as before; no new entity or rule
    clock.current = start;
    const describedAfter = await described();
    expect({ ...describedAfter, queues: [] }).toEqual({ ...describedBefore, queues: [] });
    expect([
      ['a', 'b', 'm'],
      ['a', 'b'],
    ]).toContainEqual(describedAfter.queues); // the manager may delete m
    const m = await admin('GET', '/queues/m');
    if (m.status === 200) {
      // B3: whatever the manager set, m forwards nowhere but into itself
      for (const target of [m.body.forwardTo, m.body.forwardDeadLetteredMessagesTo]) expect([null, 'm', 'M', 'queues/m', 'queues/M']).toContain(target);
    }
    expect(describedAfter.topics).toEqual(['t']);
    expect(describedAfter.subscriptions).toEqual(['s']);
    expect(await peeked()).toEqual(peekedBefore);
    expect((peekedBefore.b as { messages: unknown[] }).messages.length).toBeGreaterThanOrEqual(5);
    expect((peekedBefore.bDead as { messages: unknown[] }).messages).toHaveLength(1);
    // The run did exercise both sides: some requests got through, many were refused.
    expect(successes).toBeGreaterThan(0);
    expect(refused401).toBeGreaterThan(0);
  }, 120_000);
});
