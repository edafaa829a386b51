/**
 * B2 over HTTP: one table of malformed requests sent as raw bytes
 * to the real local runtime, as a client on the wire would. Each must answer 400 naming the
 * field, not retryable, and leave the queue and the clock as they were.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import type { Json } from '../support/api.js';
import { connectionStringToken, startTestRuntime } from '../support/runtime.js';

let runtime: LocalRuntime;
let token: string;

beforeAll(async () => {
  runtime = await startTestRuntime('badhttp');
  token = connectionStringToken(runtime);
  expect((await call('PUT', '/queues/hq', '{}')).status).toBe(201);
});

afterAll(async () => {
  await runtime?.stop();
});

async function call(method: string, path: string, body?: string | Buffer, contentType = 'application/json'): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { 'content-type': contentType, authorization: token },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

interface Case {
  item: string;
  method: string;
  path: string;
  body?: string | Buffer;
  contentType?: string;
  field: string;
}

const send = (item: string, body: string | Buffer, field: string, contentType?: string): Case => ({
  item,
  method: 'POST',
  path: '/queues/hq/messages',
  body,
  field,
  ...(contentType ? { contentType } : {}),
});
const put = (item: string, body: string, field: string): Case => ({ item, method: 'PUT', path: '/queues/hq', body, field });

const cases: Case[] = [
  send('nesting', `{"body": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`, 'body'),
  put('nesting', `{"lockDuration": ${'{"a":'.repeat(3_000)}1${'}'.repeat(3_000)}}`, 'body'),
  ...['PT30Sbanana', 'xPT30S', 'PT30S PT1H', 'P1DT-23H', 'PT5M-1S'].flatMap((d) => [
    send('duration', `{"body": 1, "timeToLive": "${d}"}`, 'timeToLive'),
    { item: 'duration', method: 'POST', path: '/queues/hq/messages/receive', body: `{"maxWaitTime": "${d}"}`, field: 'maxWaitTime' },
    put('duration', `{"lockDuration": "${d}"}`, 'lockDuration'),
    put('duration', `{"defaultMessageTimeToLive": "${d}"}`, 'defaultMessageTimeToLive'),
    put('duration', `{"autoDeleteOnIdle": "${d}"}`, 'autoDeleteOnIdle'),
    put('duration', `{"duplicateDetectionHistoryTimeWindow": "${d}"}`, 'duplicateDetectionHistoryTimeWindow'),
    { item: 'duration', method: 'POST', path: '/_local/clock', body: `{"advance": "${d}"}`, field: 'advance' },
  ]),
  send('utf-8', bytes('{"body": "caf', [0xe9], '"}'), 'body'), // Latin-1, not UTF-8
  send('utf-8', bytes('{"body": "', [0xff, 0xfe], '"}'), 'body', 'application/octet-stream'),
  send('utf-8', bytes('{"body": "', [0xed, 0xa0, 0x80], '"}'), 'body', 'text/plain'),
  send('utf-8', '{"body": "\\udfff"}', 'body'),
  { item: 'utf-8', method: 'POST', path: '/_local/clock', body: bytes('{"advance": "PT1M', [0xc3], '"}'), field: 'body' },
  send('instant', '{"body": 1, "scheduledEnqueueTime": "2027-02-30T00:00:00Z"}', 'scheduledEnqueueTime'),
  send('instant', '{"body": 1, "scheduledEnqueueTime": "2027-04-31T12:00:00+02:00"}', 'scheduledEnqueueTime'),
  send('instant', '{"body": 1, "scheduledEnqueueTime": "2027-01-01T24:00:00Z"}', 'scheduledEnqueueTime'),
  send('number', '1e400', 'body'),
  send('number', '{"body": -1e400}', 'body'),
  send('number', '{"body": 1, "applicationProperties": {"n": 2e308}}', 'applicationProperties.n'),
  put('number', '{"maxSizeInMegabytes": 1e400}', 'maxSizeInMegabytes'),
  send('number', '{"body": {"id": 18446744073709551615}}', 'body.id'),
  { item: 'number', method: 'GET', path: '/queues/hq/messages?maxMessages=0x10', field: 'maxMessages' },
  { item: 'number', method: 'GET', path: '/queues/hq/messages?maxMessages=1e1', field: 'maxMessages' },
  { item: 'number', method: 'GET', path: '/queues/hq/messages?maxMessages=', field: 'maxMessages' },
  { item: 'number', method: 'GET', path: '/queues?top=0x10', field: 'top' },
  put('number', '{"forwardTo": "queues/hq"}', 'forwardTo'),
  put('number', '{"forwardDeadLetteredMessagesTo": "hq"}', 'forwardDeadLetteredMessagesTo'),
];

describe('B2 over HTTP: malformed input is a 400 naming the field and changes nothing', () => {
  it.each(cases.map((c) => [`${c.item} ${c.method} ${c.path.slice(0, 60)} ${String(c.body ?? '').slice(0, 60)} -> ${c.field}`, c] as const))(
    'B2 %s',
    async (_name, c) => {
      const clockBefore = runtime.clock.offset;
      const queueBefore = (await call('GET', '/queues/hq')).body;
      const reply = await call(c.method, c.path, c.body, c.contentType);
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body.error).toMatchObject({ code: 'BadRequest', retryable: false });
      expect(reply.body.error.message.startsWith(`${c.field}: `), reply.body.error.message).toBe(true);
      expect((await call('GET', '/queues/hq')).body).toEqual(queueBefore);
      expect((await call('GET', '/queues/hq/messages')).body.messages).toEqual([]);
      expect(runtime.clock.offset).toBe(clockBefore);
    },
  );

  it('B2: valid UTF-8 sent as any content type arrives as sent', async () => {
    for (const contentType of ['application/json', 'application/octet-stream', 'text/plain; charset=utf-8']) {
      expect((await call('POST', '/queues/hq/messages', Buffer.from('{"body": "grüße ✓ 😀"}'), contentType)).status).toBe(201);
      const got = await call('POST', '/queues/hq/messages/receive', '{"mode": "receiveAndDelete"}');
      expect(got.body.messages[0].body, contentType).toBe('grüße ✓ 😀');
    }
  });
});
