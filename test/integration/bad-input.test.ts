/**
 * B2: malformed input is a 400 that names the field and changes
 * nothing. Each case is sent to the real API handler on DynamoDB Local; after it, the
 * entity it aimed at still holds exactly what it held before.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { apiClient, rootToken, TEST_ROOT_KEY, type Reply } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { createApiHandler } from '../../functions/api/handler.js';
import type { Deps } from '../../lib/deps.js';
import { parseInstant } from '../../lib/validation.js';
import { ruleKey } from '../../lib/store/keys.js';
import { PutCommand } from '@aws-sdk/lib-dynamodb';

const clock = new ManualClock();
let deps: Deps;
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  deps = await testDeps(clock, 'badinput');
  api = apiClient(deps);
  expect((await api('PUT', '/queues/bq', {})).status).toBe(201);
  expect((await api('PUT', '/topics/bt', {})).status).toBe(201);
  expect((await api('PUT', '/topics/bt/subscriptions/bs', {})).status).toBe(201);
});

/** The queue's properties and messages, to show a refused request changed nothing. */
async function stateOf(path = '/queues/bq') {
  const entity = await api('GET', path);
  const messages = await api('GET', `${path}/messages?maxMessages=100`);
  return { properties: { ...entity.body, runtime: undefined, updatedAt: undefined, accessedAt: undefined }, messages: messages.body };
}

function expectBadRequest(reply: Reply, field: string, what = '') {
  expect(reply.status, `${what} -> ${JSON.stringify(reply.body)}`).toBe(400);
  expect(reply.body.error.code, what).toBe('BadRequest');
  expect(reply.body.error.retryable, what).toBe(false);
  expect(reply.body.error.message, what).toMatch(new RegExp(`^${field.replace(/[.$[\]]/g, '\\$&')}: `));
}

/** Sends an event with a base64 body, as API Gateway does for bytes it does not treat as text. */
async function sendBase64(path: string, bytes: Buffer): Promise<Reply> {
  const handler = createApiHandler(deps, { rootKey: TEST_ROOT_KEY });
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', authorization: rootToken() },
    requestContext: { requestId: randomUUID(), http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' } },
    body: bytes.toString('base64'),
    isBase64Encoded: true,
  } as unknown as APIGatewayProxyEventV2;
  const res = await handler(event, {} as Context);
  return { status: res.statusCode ?? 200, body: res.body ? JSON.parse(res.body) : undefined, headers: {} };
}

describe('B2: JSON nested deeper than the limit', () => {
  const nested = (depth: number) => `{"body": ${'['.repeat(depth)}${']'.repeat(depth)}}`;

  it('B2: a body nested thousands of levels deep is a 400 naming body, not a retryable 500', async () => {
    const before = await stateOf();
    for (const depth of [300, 5_000, 100_000]) {
      expectBadRequest(await api('POST', '/queues/bq/messages', undefined, nested(depth)), 'body', `depth ${depth}`);
      expectBadRequest(await api('POST', '/queues/bq/messages/batch', undefined, `{"messages": [${nested(depth)}]}`), 'body', `batch depth ${depth}`);
      expectBadRequest(await api('PUT', '/queues/bq', undefined, `{"lockDuration": ${'['.repeat(depth)}${']'.repeat(depth)}}`), 'body', `PUT depth ${depth}`);
    }
    // Brackets inside strings are text, not nesting.
    expect((await api('POST', '/queues/bq/messages', { body: '['.repeat(10_000) })).status).toBe(201);
    expect((await api('POST', '/queues/bq/messages/receive', { mode: 'receiveAndDelete' })).body.messages[0].body).toBe('['.repeat(10_000));
    expect(await stateOf()).toEqual(before);
  });

  it('B2: a body as deep as a legitimate one is accepted', async () => {
    const sent = await api('POST', '/queues/bq/messages', undefined, nested(200));
    expect(sent.status).toBe(201);
    const got = await api('POST', '/queues/bq/messages/receive', { mode: 'receiveAndDelete' });
    expect(JSON.stringify(got.body.messages[0].body)).toBe(`${'['.repeat(200)}${']'.repeat(200)}`);
  });

  it('B2: a SQL filter nested deeply is refused as a bad filter, not a 500', async () => {
    const deep = `${'('.repeat(2_000)}1=1${')'.repeat(2_000)}`;
    const reply = await api('PUT', '/topics/bt/subscriptions/bs/rules/deep', { filter: { sql: deep } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    const action = await api('PUT', '/topics/bt/subscriptions/bs/rules/deep', {
      filter: { true: {} },
      action: { sql: `SET a = ${'('.repeat(2_000)}1${')'.repeat(2_000)}` },
    });
    expect(action.status, JSON.stringify(action.body)).toBe(400);
    expect((await api('GET', '/topics/bt/subscriptions/bs/rules/deep')).status).toBe(404);
  });
});

describe('B2: durations are read whole', () => {
  const junk = ['PT30Sbanana', 'xPT30S', 'PT30S PT1H', 'P1DT-23H', 'PT5M-1S', ' PT30S', 'PT30S\n', 'P-1D', 'PT1H-30M', 'P1DT1H,PT1S', 'PT30S#'];

  it('B2: send timeToLive with junk around it is a 400 naming timeToLive', async () => {
    const before = await stateOf();
    for (const text of junk) expectBadRequest(await api('POST', '/queues/bq/messages', { body: 1, timeToLive: text }), 'timeToLive', text);
    expect(await stateOf()).toEqual(before);
  });

  it('B2: receive maxWaitTime with junk around it is a 400 naming maxWaitTime', async () => {
    for (const text of junk) expectBadRequest(await api('POST', '/queues/bq/messages/receive', { maxWaitTime: text }), 'maxWaitTime', text);
  });

  it('B2: every entity duration with junk around it is a 400 naming the field', async () => {
    const before = await stateOf();
    const valid = { lockDuration: 'PT30S', defaultMessageTimeToLive: 'PT1H', autoDeleteOnIdle: 'PT1H', duplicateDetectionHistoryTimeWindow: 'PT1M' };
    for (const [field, good] of Object.entries(valid)) {
      for (const text of [...junk, `${good}x`, `x${good}`]) expectBadRequest(await api('PUT', '/queues/bq', { [field]: text }), field, `${field} ${text}`);
    }
    for (const text of junk) {
      expectBadRequest(await api('PUT', '/topics/bt/subscriptions/bs', { lockDuration: text }), 'lockDuration', text);
      expectBadRequest(await api('PUT', '/topics/bt', { defaultMessageTimeToLive: text }), 'defaultMessageTimeToLive', text);
    }
    expect(await stateOf()).toEqual(before);
  });

  it('B2: well-formed durations still work', async () => {
    const put = await api('PUT', '/queues/bq-durations', {
      lockDuration: 'PT30S',
      defaultMessageTimeToLive: 'P1DT2H',
      autoDeleteOnIdle: 'PT0.5H',
      duplicateDetectionHistoryTimeWindow: 'PT1M30.5S',
    });
    expect(put.status, JSON.stringify(put.body)).toBe(201);
    expect(put.body).toMatchObject({
      lockDuration: 'PT30S',
      defaultMessageTimeToLive: 'P1DT2H',
      autoDeleteOnIdle: 'PT30M',
      duplicateDetectionHistoryTimeWindow: 'PT1M30.5S',
    });
    expect((await api('POST', '/queues/bq-durations/messages', { body: 1, timeToLive: 'P1W' })).status).toBe(201);
  });
});

describe('B2: bytes that are not UTF-8', () => {
  const invalid = [
    Buffer.concat([Buffer.from('{"body": "a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    Buffer.concat([Buffer.from('{"body": "'), Buffer.from([0xc3]), Buffer.from('"}')]), // truncated sequence
    Buffer.concat([Buffer.from('{"body": "'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), // encoded surrogate
    Buffer.concat([Buffer.from('{"body": "'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]), // overlong
  ];

  it('B2: a base64 body (as API Gateway passes it) that is not UTF-8 is a 400 naming body', async () => {
    const before = await stateOf();
    for (const bytes of invalid) expectBadRequest(await sendBase64('/queues/bq/messages', bytes), 'body', bytes.toString('hex'));
    expect(await stateOf()).toEqual(before);
  });

  it('B2: a lone surrogate spelled as a JSON escape (which UTF-8 cannot carry) is a 400 naming the field', async () => {
    const before = await stateOf();
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '{"body": "\\ud800"}'), 'body');
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '{"body": 1, "subject": "a\\udc00b"}'), 'subject');
    expectBadRequest(
      await api('POST', '/queues/bq/messages', undefined, '{"body": 1, "applicationProperties": {"\\ud83d": 1}}'),
      'applicationProperties.\ud83d',
    );
    expect(await stateOf()).toEqual(before);
    // A pair, escaped, is one character.
    expect((await api('POST', '/queues/bq/messages', undefined, '{"body": "\\ud83d\\ude00"}')).status).toBe(201);
    expect((await api('POST', '/queues/bq/messages/receive', { mode: 'receiveAndDelete' })).body.messages[0].body).toBe('\u{1F600}');
  });

  it('B2: a base64 body that is valid UTF-8 is read as before', async () => {
    const sent = await sendBase64('/queues/bq/messages', Buffer.from('{"body": "grüße ✓"}'));
    expect(sent.status).toBe(201);
    const got = await api('POST', '/queues/bq/messages/receive', { mode: 'receiveAndDelete' });
    expect(got.body.messages[0].body).toBe('grüße ✓');
  });
});

describe('B2: instants are validated strictly', () => {
  const impossible = [
    '2027-02-30T00:00:00Z',
    '2027-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-01-00T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T12:60:00Z',
    '2026-01-01T12:00:60Z',
    '2026-01-01T12:00:00+24:00',
    '2026-01-01T12:00:00+01:60',
    '2026-01-01T12:00:00',
    '2026-01-01 12:00:00Z',
    '2026-01-01T12:00:00Zjunk',
  ];

  it('B2: scheduledEnqueueTime that does not exist is a 400 naming scheduledEnqueueTime', async () => {
    const before = await stateOf();
    for (const text of impossible) {
      expectBadRequest(await api('POST', '/queues/bq/messages', { body: 1, scheduledEnqueueTime: text }), 'scheduledEnqueueTime', text);
      expectBadRequest(
        await api('POST', '/queues/bq/messages/batch', { messages: [{ body: 1, scheduledEnqueueTime: text }] }),
        'messages[0].scheduledEnqueueTime',
        text,
      );
    }
    expect(await stateOf()).toEqual(before);
  });

  it('B2: the validator agrees with Date for every real instant, years 0-99 and offsets included', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }),
        fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
        (d, offset) => {
          expect(parseInstant(d.toISOString())).toBe(d.getTime());
          const local = new Date(d.getTime() + offset * 60_000).toISOString().slice(0, 23);
          const sign = offset < 0 ? '-' : '+';
          const zone = `${sign}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
          if (!local.startsWith('-') && !local.startsWith('+')) expect(parseInstant(`${local}${zone}`)).toBe(d.getTime());
        },
      ),
    );
  });

  it('B2: real instants, leap days and offsets included, are accepted as given', async () => {
    for (const [text, iso] of [
      ['2028-02-29T00:00:00Z', '2028-02-29T00:00:00.000Z'],
      ['2027-03-01T01:30:00+01:30', '2027-03-01T00:00:00.000Z'],
      ['2027-03-01T00:00:00.5Z', '2027-03-01T00:00:00.500Z'],
      ['2027-03-01T00:00Z', '2027-03-01T00:00:00.000Z'],
    ] as const) {
      const sent = await api('POST', '/queues/bq/messages', { body: text, scheduledEnqueueTime: text });
      expect(sent.status, `${text} ${JSON.stringify(sent.body)}`).toBe(201);
      const peeked = await api('GET', `/queues/bq/messages?fromSequenceNumber=${sent.body.sequenceNumber}&maxMessages=1`);
      expect(peeked.body.messages[0].scheduledEnqueueTime, text).toBe(iso);
      expect((await api('DELETE', `/queues/bq/messages/scheduled/${sent.body.sequenceNumber}`)).status).toBe(204);
    }
  });
});

describe('B2: a property named __proto__ is a property like any other', () => {
  it('B2: applicationProperties keep __proto__ through send and receive', async () => {
    const sent = await api('POST', '/queues/bq/messages', undefined, '{"body": 1, "applicationProperties": {"__proto__": "kept", "constructor": 2}}');
    expect(sent.status).toBe(201);
    const got = await api('POST', '/queues/bq/messages/receive', {});
    const m = got.body.messages[0];
    expect(Object.hasOwn(m.applicationProperties, '__proto__')).toBe(true);
    expect(m.applicationProperties.__proto__).toBe('kept');
    expect(m.applicationProperties.constructor).toBe(2);
    // propertiesToModify sets it too.
    const abandoned = await api(
      'POST',
      `/queues/bq/messages/${m.sequenceNumber}/abandon`,
      undefined,
      `{"lockToken": "${m.lockToken}", "propertiesToModify": {"__proto__": "changed", "other": 1}}`,
    );
    expect(abandoned.status).toBe(204);
    const again = (await api('POST', '/queues/bq/messages/receive', { mode: 'receiveAndDelete' })).body.messages[0];
    expect(JSON.stringify(again.applicationProperties)).toBe('{"__proto__":"changed","constructor":2,"other":1}');
  });

  it('B2: SQL and correlation filters see __proto__ as a property and never Object.prototype', async () => {
    await api('PUT', '/topics/pt', {});
    const subs = {
      sqlProto: { sql: "[__proto__] = 'x'" },
      sqlProtoExists: { sql: 'EXISTS([__proto__])' },
      sqlToString: { sql: 'EXISTS(toString) OR EXISTS(constructor) OR EXISTS(hasOwnProperty)' },
      sqlToStringNull: { sql: 'toString IS NOT NULL' },
      corrProto: { correlation: { properties: { __proto__: 'x' } } },
    };
    for (const [name, filter] of Object.entries(subs)) {
      expect((await api('PUT', `/topics/pt/subscriptions/${name}`, {})).status).toBe(201);
      await api('DELETE', `/topics/pt/subscriptions/${name}/rules/$Default`);
      const body = JSON.stringify({ filter }).replace('"properties":{}', '"properties":{"__proto__":"x"}');
      const put = await api('PUT', `/topics/pt/subscriptions/${name}/rules/r`, undefined, body);
      expect(put.status, `${name} ${JSON.stringify(put.body)}`).toBe(201);
    }
    const rule = await api('GET', '/topics/pt/subscriptions/corrProto/rules/r');
    expect(rule.body.filter.correlation.properties).toEqual(JSON.parse('{"__proto__": "x"}'));
    expect((await api('POST', '/topics/pt/messages', undefined, '{"body": "with", "applicationProperties": {"__proto__": "x"}}')).status).toBe(201);
    expect((await api('POST', '/topics/pt/messages', { body: 'without' })).status).toBe(201);
    const received: Record<string, unknown[]> = {};
    for (const name of Object.keys(subs)) {
      const got = await api('POST', `/topics/pt/subscriptions/${name}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 10 });
      received[name] = got.body.messages.map((m: { body: unknown }) => m.body);
    }
    expect(received).toEqual({ sqlProto: ['with'], sqlProtoExists: ['with'], sqlToString: [], sqlToStringNull: [], corrProto: ['with'] });
  });
});

describe('B2: rule actions and stored rules', () => {
  it('B2: a rule action sets a property named __proto__ like any other', async () => {
    await api('PUT', '/topics/pa', {});
    await api('PUT', '/topics/pa/subscriptions/s', {});
    expect(
      (
        await api('PUT', '/topics/pa/subscriptions/s/rules/$Default', {
          filter: { true: {} },
          action: { sql: "SET [__proto__] = 'set'; SET [constructor] = 1" },
        })
      ).status,
    ).toBe(200);
    expect((await api('POST', '/topics/pa/messages', { body: 1 })).status).toBe(201);
    const m = (await api('POST', '/topics/pa/subscriptions/s/messages/receive', { mode: 'receiveAndDelete' })).body.messages[0];
    expect(Object.hasOwn(m.applicationProperties, '__proto__')).toBe(true);
    expect([m.applicationProperties.__proto__, m.applicationProperties.constructor]).toEqual(['set', 1]);
  });

  it('B2: a rule stored before filters were kept as JSON text (a map) still filters and reads', async () => {
    await api('PUT', '/topics/pold', {});
    await api('PUT', '/topics/pold/subscriptions/s', {});
    await api('DELETE', '/topics/pold/subscriptions/s/rules/$Default');
    await deps.db.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: {
          ...ruleKey('pold', 's', 'old'),
          kind: 'rule',
          name: 'old',
          topic: 'pold',
          subscription: 's',
          filter: { correlation: { properties: { color: 'red' } } },
          createdAt: clock.now(),
        },
      }),
    );
    expect((await api('GET', '/topics/pold/subscriptions/s/rules/old')).body.filter).toEqual({ correlation: { properties: { color: 'red' } } });
    await api('POST', '/topics/pold/messages', { body: 'red', applicationProperties: { color: 'red' } });
    await api('POST', '/topics/pold/messages', { body: 'blue', applicationProperties: { color: 'blue' } });
    const got = await api('POST', '/topics/pold/subscriptions/s/messages/receive', { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(got.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['red']);
  });
});

describe('B2: JSON numbers beyond double range', () => {
  it('B2: a JSON number beyond double range is a 400 naming the field', async () => {
    const before = await stateOf();
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '1e400'), 'body');
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '{"body": 1e400}'), 'body');
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '{"body": {"a": [1, -1e400]}}'), 'body.a[1]');
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '{"body": 1, "applicationProperties": {"n": 1e999}}'), 'applicationProperties.n');
    expectBadRequest(await api('POST', '/queues/bq/messages/batch', undefined, '{"messages": [{"body": 1}, {"body": 1e400}]}'), 'messages[1].body');
    expectBadRequest(await api('PUT', '/queues/bq', undefined, '{"maxDeliveryCount": 1e400}'), 'maxDeliveryCount');
    expectBadRequest(await api('POST', '/queues/bq/messages/receive', undefined, '{"maxMessages": -1e400}'), 'maxMessages');
    expect(await stateOf()).toEqual(before);
    // Large but finite numbers are still numbers.
    expect((await api('POST', '/queues/bq/messages', undefined, '{"body": 1e308}')).status).toBe(201);
    expect((await api('POST', '/queues/bq/messages/receive', { mode: 'receiveAndDelete' })).body.messages[0].body).toBe(1e308);
  });
});

describe('B2: integers a double cannot hold', () => {
  it('B2: an integer literal that a double would round is a 400 naming the field, not a silently different number', async () => {
    const before = await stateOf();
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '{"body": {"id": 12345678901234567891}}'), 'body.id');
    expectBadRequest(
      await api('POST', '/queues/bq/messages', undefined, '{"body": 1, "applicationProperties": {"big": 9223372036854775807}}'),
      'applicationProperties.big',
    );
    expectBadRequest(await api('POST', '/queues/bq/messages', undefined, '{"body": [-9007199254740993]}'), 'body[0]');
    expect(await stateOf()).toEqual(before);
    // Exactly representable ones, and digits inside strings, pass.
    const sent = await api('POST', '/queues/bq/messages', undefined, '{"body": [9007199254740992, 1e300, "12345678901234567891"]}');
    expect(sent.status).toBe(201);
    expect((await api('POST', '/queues/bq/messages/receive', { mode: 'receiveAndDelete' })).body.messages[0].body).toEqual([
      9007199254740992,
      1e300,
      '12345678901234567891',
    ]);
  });
});

describe('B2: query numbers', () => {
  it('B2: query numbers are decimal digits only', async () => {
    for (const text of ['0x10', '1e1', ' 5', '5 ', '+5', '-0', '5.0', '', '0b11', '0o7', 'Infinity', '１０']) {
      expectBadRequest(await api('GET', `/queues/bq/messages?maxMessages=${encodeURIComponent(text)}`), 'maxMessages', text);
      expectBadRequest(await api('GET', `/queues?top=${encodeURIComponent(text)}`), 'top', text);
    }
    expect((await api('GET', '/queues/bq/messages?maxMessages=16')).status).toBe(200);
    expect((await api('GET', '/queues/bq/messages?maxMessages=016')).status).toBe(200);
  });
});

describe('B2: forwarding to itself', () => {
  it('B2: forwardTo or forwardDeadLetteredMessagesTo naming the entity itself is a 400 naming the field', async () => {
    const before = await stateOf();
    for (const field of ['forwardTo', 'forwardDeadLetteredMessagesTo']) {
      for (const self of ['queues/bq', 'bq', 'queues/BQ', '/queues/bq']) {
        expectBadRequest(await api('PUT', '/queues/bq', { [field]: self }), field, `${field} ${self}`);
      }
      // Creating a queue that forwards to itself is refused too, and creates nothing.
      expectBadRequest(await api('PUT', '/queues/selfish', { [field]: 'queues/selfish' }), field);
      expect((await api('GET', '/queues/selfish')).status).toBe(404);
    }
    expect(await stateOf()).toEqual(before);
    await api('PUT', '/queues/elsewhere', {});
    expect((await api('PUT', '/queues/bq-fwd', { forwardTo: 'queues/elsewhere', forwardDeadLetteredMessagesTo: 'queues/elsewhere' })).status).toBe(201);
  });
});
