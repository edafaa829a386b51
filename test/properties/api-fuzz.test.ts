/**
 * B1/B2 as a property: whatever method, path, query and body arrive, the API handler never
 * answers 500, and every error it gives has the B1 shape. Paths come from a grammar of real
 * and garbage segments (entity names that exist, bad names, `$deadletterqueue` spelled both
 * ways, Object.prototype names, broken percent-encodings, huge numbers); bodies are random
 * JSON, message/receive/settlement-shaped objects with random values, or malformed text.
 * Requests that Service Bus's own protocols take (lib/protocols/dispatch.ts) must answer their
 * XML Error body instead.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Reply } from '../support/api.js';
import { protocolOf } from '../../lib/protocols/dispatch.js';
import { parseXml } from '../../lib/protocols/xml.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();
let api: ReturnType<typeof apiClient>;
const realSeqs: string[] = [];
const realTokens: string[] = [];

beforeAll(async () => {
  api = apiClient(await testDeps(clock, 'fuzz'));
  // Something real to hit: a queue with active, locked, deferred and dead-lettered messages; a topic with a subscription.
  await api('PUT', '/queues/fq', { lockDuration: 'PT5S' });
  await api('PUT', '/topics/ft', {});
  await api('PUT', '/topics/ft/subscriptions/fs', {});
  const sent = await api('POST', '/queues/fq/messages/batch', { messages: Array.from({ length: 6 }, (_, i) => ({ body: i })) });
  for (const r of sent.body?.results ?? []) if (r.sequenceNumber) realSeqs.push(r.sequenceNumber);
  const got = await api('POST', '/queues/fq/messages/receive', { maxMessages: 3 });
  for (const m of got.body?.messages ?? []) realTokens.push(m.lockToken);
  const [, deferred, dead] = got.body?.messages ?? [];
  if (deferred) await api('POST', `/queues/fq/messages/${deferred.sequenceNumber}/defer`, { lockToken: deferred.lockToken });
  if (dead) await api('POST', `/queues/fq/messages/${dead.sequenceNumber}/deadletter`, { lockToken: dead.lockToken });
  expect(realSeqs.length).toBe(6);
});

// ---- the grammar ------------------------------------------------------------------------

const hugeNumbers = ['9223372036854775807', '9223372036854775808', '18446744073709551615', '99999999999999999999999999999', '1e308', '-9223372036854775808'];
const seqText = () =>
  fc.oneof(
    fc.constantFrom(...realSeqs),
    fc.constantFrom('0', '1', '-1', 'abc', '1.5', '0x10', '1e3', ' 1', '', 'NaN', 'Infinity', ...hugeNumbers),
    fc.bigInt({ min: 0n, max: 2n ** 70n }).map(String),
  );

const goodNames = ['fq', 'FQ', 'ft', 'fs', 'new-q', 'a', 'q.1', 'x_y'];
const badNames = [
  '-q',
  'q-',
  '.',
  '..',
  'a b',
  'a%20b',
  '%24deadletterqueue',
  '$deadletterqueue',
  'constructor',
  '__proto__',
  'toString',
  'x'.repeat(261),
  'y'.repeat(51),
  '%',
  '%ZZ',
  '%E0%A4%A',
  '%00',
  '%2F',
  'ä',
  '%C3%A4',
  '~',
  '*',
];
const name = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...goodNames) },
    { weight: 2, arbitrary: fc.constantFrom(...badNames) },
    fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/),
  );
const subqueue = () =>
  fc.constantFrom(
    '$deadletterqueue',
    '%24deadletterqueue',
    '$transferdeadletterqueue',
    '%24TransferDeadLetterQueue',
    '$DeadLetterQueue',
    'constructor',
    '__proto__',
    '$other',
  );
const action = () =>
  fc.constantFrom('complete', 'abandon', 'deadletter', 'defer', 'renew-lock', 'toString', 'constructor', '__proto__', 'hasOwnProperty', 'bogus', '');

const entityPath = () =>
  fc.oneof(
    name().map((q) => `queues/${q}`),
    name().map((t) => `topics/${t}`),
    fc.tuple(name(), name()).map(([t, s]) => `topics/${t}/subscriptions/${s}`),
  );

const tail = () =>
  fc.oneof(
    fc.constant(''),
    fc.constantFrom(
      'messages',
      'messages/receive',
      'messages/batch',
      'messages/deferred',
      'messages/complete',
      'messages/abandon',
      'resubmit',
      'rules',
      'subscriptions',
      'authorization-rules/r',
    ),
    fc.tuple(seqText(), action()).map(([s, a]) => `messages/${encodeURIComponent(s)}/${a}`),
    seqText().map((s) => `messages/scheduled/${encodeURIComponent(s)}`),
    fc.tuple(subqueue(), fc.constantFrom('', 'messages', 'messages/receive', 'resubmit', 'messages/complete')).map(([sq, rest]) => `${sq}/${rest}`),
    fc.tuple(subqueue(), seqText(), action()).map(([sq, s, a]) => `${sq}/messages/${encodeURIComponent(s)}/${a}`),
    fc.tuple(name(), fc.constantFrom('', 'rules', 'rules/r1', 'rules/$Default', 'messages/receive')).map(([s, r]) => `subscriptions/${s}/${r}`),
  );

const garbageSegment = () =>
  fc.oneof(
    fc.constantFrom(
      'queues',
      'topics',
      'subscriptions',
      'messages',
      'rules',
      '$deadletterqueue',
      '%24deadletterqueue',
      '%',
      '%%',
      '%2',
      '%E0%A4%A',
      '..',
      '.',
      '%2E%2E',
      '_local',
      'authorization-rules',
      'constructor',
      '__proto__',
      ...hugeNumbers,
    ),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
    fc.string({ maxLength: 8 }).map((s) => s.replace(/[/?#]/g, '')),
  );

const path = () =>
  fc.oneof(
    { weight: 4, arbitrary: fc.tuple(entityPath(), tail()).map(([e, t]) => `/${e}/${t}`.replace(/\/$/, '')) },
    { weight: 1, arbitrary: fc.array(garbageSegment(), { maxLength: 7 }).map((segs) => `/${segs.join('/')}`) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '/',
        '',
        '//',
        '/queues',
        '/topics',
        '/queues/',
        '/topics/ft/subscriptions',
        '/queues//fq',
        '/topics/ft/subscriptions/fs/rules',
      ),
    },
  );

const queryValue = () =>
  fc.oneof(
    fc.constantFrom('0', '1', '10', '100', '101', '-1', 'abc', '', '1.5', 'NaN', '0x10', '1e1', ' 5', '+5', '0b11', ...hugeNumbers),
    fc.string({ maxLength: 10 }),
    fc.base64String({ maxLength: 40 }),
  );
const query = () =>
  fc.option(
    fc
      .dictionary(fc.constantFrom('top', 'next', 'fromSequenceNumber', 'maxMessages', 'maxItems', 'continuationToken', '$top', 'bogus', 'mode'), queryValue(), {
        maxKeys: 3,
      })
      .map((q) => `?${new URLSearchParams(q).toString()}`),
    { nil: '' },
  );

const duration = () =>
  fc.constantFrom(
    'PT0S',
    'PT1S',
    'PT5S',
    'PT1M',
    'PT5M',
    'PT20S',
    'PT21S',
    'P7D',
    'P8D',
    'P1Y',
    'P99999999D',
    'PT9007199254740S',
    '-PT1S',
    'banana',
    '',
    'P',
    'PT',
    'PT0.0001S',
    'PT30Sbanana',
    'xPT30S',
    'PT30S PT1H',
    'P1DT-23H',
    'PT5M-1S',
    'P1DT',
    'PT0,5S',
  );
const instant = () =>
  fc.oneof(
    fc.date({ min: new Date('0001-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((d) => d.toISOString()),
    fc.constantFrom(
      '2026-11-20T12:05:00Z',
      'tomorrow',
      '9999-12-31T23:59:59Z',
      '2026-13-45T25:61:00Z',
      '',
      '2027-02-30T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T12:00:00+24:00',
      '0000-01-01T00:00:00Z',
    ),
  );
const anyScalar = () => fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const properties = () =>
  fc.oneof(fc.dictionary(fc.string({ maxLength: 10 }), fc.oneof(anyScalar(), fc.jsonValue({ maxDepth: 1 })), { maxKeys: 4 }), anyScalar());
const lockToken = () =>
  fc.oneof(
    fc.constantFrom(...realTokens),
    fc.uuid(),
    fc.constantFrom('', 'not-a-token', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', '00000000-0000-0000-0000-000000000000'),
    anyScalar(),
  );
const message = () =>
  fc.record(
    {
      body: fc.jsonValue({ maxDepth: 3 }),
      messageId: fc.oneof(fc.string({ maxLength: 140 }), anyScalar()),
      contentType: anyScalar(),
      correlationId: anyScalar(),
      sessionId: anyScalar(),
      partitionKey: anyScalar(),
      subject: anyScalar(),
      timeToLive: fc.oneof(duration(), anyScalar()),
      scheduledEnqueueTime: fc.oneof(instant(), anyScalar()),
      applicationProperties: properties(),
      bogus: anyScalar(),
    },
    { requiredKeys: [] },
  );
const shapedBody = () =>
  fc.oneof(
    message(),
    fc.record({ messages: fc.oneof(fc.array(message(), { maxLength: 4 }), anyScalar()) }, { requiredKeys: [] }),
    fc.record(
      {
        mode: fc.oneof(fc.constantFrom('peekLock', 'receiveAndDelete', 'peek'), anyScalar()),
        maxMessages: fc.oneof(fc.integer({ min: -2, max: 102 }), anyScalar()),
        maxWaitTime: fc.oneof(fc.constantFrom('PT0S', 'PT1S', 'PT21S', 'P1D', 'x'), anyScalar()),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      {
        lockToken: lockToken(),
        lockTokens: fc.oneof(fc.array(lockToken(), { maxLength: 4 }), anyScalar()),
        propertiesToModify: properties(),
        deadLetterReason: anyScalar(),
        sequenceNumbers: fc.oneof(fc.array(seqText(), { maxLength: 4 }), anyScalar()),
        to: fc.oneof(fc.constantFrom('queues/fq', 'queues/none', 'topics/ft', 'topics/ft/subscriptions/fs', '../x'), anyScalar()),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      {
        lockDuration: fc.oneof(duration(), anyScalar()),
        maxDeliveryCount: fc.oneof(fc.integer({ min: -1, max: 3_000_000_000 }), anyScalar()),
        defaultMessageTimeToLive: fc.oneof(duration(), anyScalar()),
        autoDeleteOnIdle: fc.oneof(duration(), anyScalar()),
        duplicateDetectionHistoryTimeWindow: fc.oneof(duration(), anyScalar()),
        status: fc.oneof(fc.constantFrom('Active', 'Disabled', 'SendDisabled', 'ReceiveDisabled', 'Paused'), anyScalar()),
        forwardTo: fc.oneof(fc.constantFrom('queues/fq', 'fq', 'topics/ft', 'nope', '../x'), anyScalar()),
        requiresSession: anyScalar(),
        filter: fc.oneof(
          fc.record({ sql: fc.oneof(fc.constantFrom('1=1', "a = 'b'", 'a LIKE', 'sys.label IS NULL', '(('), fc.string({ maxLength: 20 })) }),
          fc.constant({ true: {} }),
          anyScalar(),
        ),
        rights: fc.oneof(fc.array(fc.constantFrom('Send', 'Listen', 'Manage', 'Root'), { maxLength: 3 }), anyScalar()),
      },
      { requiredKeys: [] },
    ),
  );

// B2: JSON text that parses but that the broker must not take as sent.
const hostileJson = () =>
  fc.oneof(
    fc.integer({ min: 250, max: 20_000 }).map((depth) => `{"body": ${'['.repeat(depth)}${']'.repeat(depth)}}`),
    fc.integer({ min: 250, max: 5_000 }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
    fc.constantFrom(
      '1e400',
      '{"body": -1e400}',
      '{"maxMessages": 1e400}',
      '{"body": 1, "applicationProperties": {"__proto__": 1, "constructor": "x"}}',
      '{"lockToken": "00000000-0000-0000-0000-000000000000", "propertiesToModify": {"__proto__": {"polluted": true}}}',
      '{"filter": {"correlation": {"properties": {"__proto__": "x"}}}}',
      '{"__proto__": {"lockDuration": "PT5S"}}',
      '{"body": "\\ud800"}',
      '{"body": 1, "subject": "\\udc00"}',
    ),
  );

type Body = { json: unknown } | { raw: string } | undefined;
const body = (): fc.Arbitrary<Body> =>
  fc.oneof(
    fc.constant(undefined),
    { weight: 4, arbitrary: shapedBody().map((json) => ({ json })) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((json) => ({ json })) },
    fc
      .oneof(fc.string({ maxLength: 30 }), fc.constantFrom('{', '{"body": 1,}', 'null', '[]', '"', '{"body": NaN}', '\u0000'), hostileJson())
      .map((raw) => ({ raw })),
  );

const method = () =>
  fc.oneof({ weight: 6, arbitrary: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE') }, fc.constantFrom('PATCH', 'HEAD', 'OPTIONS', 'get', 'TRACE', 'FOO'));

interface Request {
  method: string;
  path: string;
  query: string;
  body: Body;
}
const request = (): fc.Arbitrary<Request> => fc.record({ method: method(), path: path(), query: query(), body: body() });

async function call(r: Request): Promise<Reply> {
  return api(r.method, `${r.path}${r.query}`, r.body && 'json' in r.body ? r.body.json : undefined, r.body && 'raw' in r.body ? r.body.raw : undefined);
}

function checkReply(r: Request, reply: Reply) {
  const what = `${r.method} ${r.path}${r.query} ${JSON.stringify(r.body)?.slice(0, 300)} -> ${reply.status} ${JSON.stringify(reply.body)?.slice(0, 300)}`;
  expect(reply.status, what).toBeLessThan(500);
  expect(reply.status, what).toBeGreaterThanOrEqual(200);
  // Read as the event is built (infra/local/http-events.ts directApiEvent): the query starts at the first `?`.
  const [path = '', rawQuery = ''] = `${r.path}${r.query}`.split('?');
  const query = Object.fromEntries(new URLSearchParams(rawQuery));
  if (reply.status >= 400 && protocolOf({ path, query, headers: {} }) !== 'sluice') {
    // Service Bus's own protocols (lib/protocols/dispatch.ts) answer with their XML Error body.
    const error = parseXml(reply.body as string);
    expect(error.name, what).toBe('Error');
    expect(error.children.find((c) => c.name === 'Code')?.text, what).toBe(String(reply.status));
  } else if (reply.status >= 400) {
    expect(reply.body, what).toEqual({
      error: { code: expect.any(String), message: expect.any(String), retryable: expect.any(Boolean), requestId: expect.any(String) },
    });
    expect(reply.body.error.code.length, what).toBeGreaterThan(0);
    expect(reply.body.error.message.length, what).toBeGreaterThan(0);
  }
}

// Requests that once answered 500 (or are easy to get wrong): always tried first.
const regressions: Request[] = [
  { method: 'POST', path: '/queues/fq/messages/abc/complete', query: '', body: { json: { lockToken: '00000000-0000-0000-0000-000000000000' } } },
  { method: 'DELETE', path: '/queues/fq/messages/scheduled/1.5', query: '', body: undefined },
  { method: 'GET', path: '/queues/fq/messages', query: '?fromSequenceNumber=abc', body: undefined },
  { method: 'POST', path: '/queues/fq/messages/deferred', query: '', body: { json: { sequenceNumbers: ['1e3'] } } },
  { method: 'POST', path: '/queues/fq/messages', query: '', body: { json: { body: 1, timeToLive: 'P99999999D' } } },
  { method: 'GET', path: '/topics/ft/subscriptions', query: `?next=${Buffer.from('abc').toString('base64url')}`, body: undefined },
  { method: 'PUT', path: '/queues/fq', query: '', body: { json: { maxDeliveryCount: 3_000_000_000 } } },
  { method: 'POST', path: '/queues/fq/constructor/messages/receive', query: '', body: { json: {} } },
  // B2: nesting past what recursive code survives answered a retryable 500.
  { method: 'POST', path: '/queues/fq/messages', query: '', body: { raw: `{"body": ${'['.repeat(20_000)}${']'.repeat(20_000)}}` } },
  { method: 'POST', path: '/queues/fq/messages', query: '', body: { raw: '{"body": 1, "applicationProperties": {"__proto__": "x"}}' } },
  {
    method: 'PUT',
    path: '/topics/ft/subscriptions/fs/rules/proto',
    query: '',
    body: { raw: '{"filter": {"correlation": {"properties": {"__proto__": "x"}}}}' },
  },
];

describe('B1/B2: the API never answers 500 and every error has the B1 shape', () => {
  it.each(regressions.map((r) => [`${r.method} ${r.path}${r.query}`, r] as const))('B1/B2: %s answers < 500 in the B1 shape', async (_label, r) => {
    // act
    const reply = await call(r);
    // assess
    checkReply(r, reply);
  });

  it('B1/B2: random methods, paths (real and garbage segments) and bodies never get a 500; errors have the B1 shape', { timeout: 120_000 }, async () => {
    // prepare: the queue, topic and messages made in beforeAll; the clock moves a little with each request
    await fc.assert(
      fc.asyncProperty(request(), async (r) => {
        // act
        const reply = await call(r);
        clock.advance(1000);
        // assess
        checkReply(r, reply);
      }),
      { numRuns: 200, endOnFailure: true },
    );
  });
});
