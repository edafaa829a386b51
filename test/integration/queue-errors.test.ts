/**
 * Errors and bad input over the API handler (B1, B2): every error has the B1 shape and a
 * fitting status; bad input of any kind is a 400-class answer that names the field and
 * changes nothing (checked by comparing a snapshot of the queue before and after).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { apiOnTable, type Json, type Reply } from '../support/api.js';
import { ManualClock } from '../support/table.js';
import { MAX_REQUEST_BYTES } from '../../lib/lambda-limits.js';

const clock = new ManualClock();
let counter = 0;

const api = apiOnTable(clock, 'qerrors');

type Msg = Record<string, Json>;

function expectB1(reply: Reply) {
  expect(reply.body, `status ${reply.status}`).toEqual({
    error: { code: expect.any(String), message: expect.any(String), retryable: expect.any(Boolean), requestId: expect.any(String) },
  });
  expect(reply.body.error.message.length).toBeGreaterThan(0);
  expect(reply.body.error.requestId.length).toBeGreaterThan(0);
  expect(String(reply.headers['content-type'])).toContain('application/json');
}

function expectError(reply: Reply, status: number, code: string, field?: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expectB1(reply);
  expect(reply.body.error.code).toBe(code);
  if (field !== undefined) expect(reply.body.error.message).toContain(field);
}

/**
 * A queue with one message under lock (`locked`), one deferred (`deferred`) and one active
 * (`active`), one dead-lettered, and one scheduled: every state bad input might disturb.
 */
interface Fixture {
  q: string;
  locked: Msg;
  deferred: Msg;
  activeSeq: string;
  scheduledSeq: string;
}

async function fixture(): Promise<Fixture> {
  const q = `e${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { lockDuration: 'PT1M', maxDeliveryCount: 5 })).status).toBe(201);
  const sent = await api('POST', `/queues/${q}/messages/batch`, {
    messages: [{ body: 'locked' }, { body: 'deferred' }, { body: 'dead' }, { body: 'active', applicationProperties: { k: 'v' } }],
  });
  expect(sent.status).toBe(201);
  const scheduled = await api('POST', `/queues/${q}/messages`, { body: 'scheduled', scheduledEnqueueTime: new Date(clock.now() + 3_600_000).toISOString() });
  const got = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: 3 });
  const [locked, deferred, dead] = got.body.messages as Msg[];
  expect(locked!.body).toBe('locked');
  expect((await api('POST', `/queues/${q}/messages/${deferred!.sequenceNumber}/defer`, { lockToken: deferred!.lockToken })).status).toBe(204);
  expect((await api('POST', `/queues/${q}/messages/${dead!.sequenceNumber}/deadletter`, { lockToken: dead!.lockToken })).status).toBe(204);
  return { q, locked: locked!, deferred: deferred!, activeSeq: sent.body.results[3].sequenceNumber, scheduledSeq: scheduled.body.sequenceNumber };
}

/** Everything a client can see of the queue without changing it. */
async function snapshot(q: string) {
  const props = await api('GET', `/queues/${q}`);
  const messages = await api('GET', `/queues/${q}/messages?maxMessages=100`);
  const dlq = await api('GET', `/queues/${q}/$deadletterqueue/messages?maxMessages=100`);
  const queues = await api('GET', '/queues?top=100');
  const { runtime: _runtime, ...properties } = props.body as Record<string, unknown>;
  return { status: props.status, properties, messages: messages.body, dlq: dlq.body, queueNames: queues.body.items.map((i: { name: string }) => i.name) };
}

/** After the bad requests: same snapshot, the locked message is still locked and still ours. */
async function expectUnchanged(f: Fixture, before: Awaited<ReturnType<typeof snapshot>>) {
  expect(await snapshot(f.q)).toEqual(before);
  const receivable = await api('POST', `/queues/${f.q}/messages/receive`, { maxMessages: 10 });
  expect(receivable.body.messages.map((m: Msg) => m.sequenceNumber)).toEqual([f.activeSeq]);
  expect((await api('POST', `/queues/${f.q}/messages/${f.locked.sequenceNumber}/complete`, { lockToken: f.locked.lockToken })).status).toBe(204);
}

let f: Fixture;
let before: Awaited<ReturnType<typeof snapshot>>;

describe('B1: the error shape', () => {
  it('B1: 400, 404, 410, 413 and EntityDisabled errors all have {error: {code, message, retryable, requestId}} and a fitting status', async () => {
    // prepare
    const f1 = await fixture();
    const disabled = `e${++counter}`;
    await api('PUT', `/queues/${disabled}`, { status: 'Disabled' });
    // act
    const badRequest = await api('PUT', `/queues/${f1.q}`, { lockDuration: 'PT1H' });
    const notFound = await api('GET', '/queues/does-not-exist');
    const noRoute = await api('GET', '/no/such/route');
    const lockLost = await api('POST', `/queues/${f1.q}/messages/${f1.locked.sequenceNumber}/complete`, { lockToken: '00000000-0000-0000-0000-000000000000' });
    const tooBig = await api('POST', `/queues/${f1.q}/messages`, { body: 'x'.repeat(300 * 1024) });
    const off = await api('POST', `/queues/${disabled}/messages`, { body: 1 });
    // assess
    expectError(badRequest, 400, 'BadRequest', 'lockDuration');
    expect(badRequest.body.error.retryable).toBe(false);
    expectError(notFound, 404, 'EntityNotFound');
    expect(noRoute.status).toBe(404);
    expectB1(noRoute);
    expectError(lockLost, 410, 'MessageLockLost');
    expect(lockLost.body.error.retryable).toBe(false);
    expectError(tooBig, 413, 'MessageSizeExceeded');
    expect(off.status).toBeGreaterThanOrEqual(400);
    expect(off.status).toBeLessThan(500);
    expectB1(off);
    expect(off.body.error.code).toBe('EntityDisabled');
    // each request has its own id
    const ids = [badRequest, notFound, noRoute, lockLost, tooBig, off].map((r) => r.body.error.requestId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('B2: bad input names the field and changes nothing', () => {
  beforeEach(async () => {
    f = await fixture();
    before = await snapshot(f.q);
  });

  it('B2: malformed JSON is refused with 400 naming body on every endpoint that takes a body', async () => {
    // prepare
    const { q, locked } = f;
    const paths: [string, string][] = [
      ['PUT', `/queues/${q}`],
      ['PUT', `/queues/new-${q}`],
      ['POST', `/queues/${q}/messages`],
      ['POST', `/queues/${q}/messages/batch`],
      ['POST', `/queues/${q}/messages/receive`],
      ['POST', `/queues/${q}/messages/deferred`],
      ['POST', `/queues/${q}/messages/complete`],
      ['POST', `/queues/${q}/messages/abandon`],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/complete`],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/abandon`],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/deadletter`],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/defer`],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/renew-lock`],
    ];
    // act
    const replies: Reply[] = [];
    for (const [method, path] of paths) {
      for (const raw of ['{not json', '{"body": 1,}', `{"lockToken": "${locked.lockToken}"`, "{'single': 1}", 'undefined'])
        replies.push(await api(method, path, undefined, raw));
    }
    // assess
    for (const r of replies) expectError(r, 400, 'BadRequest', 'body');
    await expectUnchanged(f, before);
  });

  it('B2: unknown fields in management bodies are refused with 400 naming the field (new and existing queue)', async () => {
    // act
    const existing = await api('PUT', `/queues/${f.q}`, { maxDeliveryCount: 2, colour: 'blue' });
    const created = await api('PUT', `/queues/new-${f.q}`, { lockDuration: 'PT30S', partitions: 4 });
    const topicOnly = await api('PUT', `/queues/${f.q}`, { deadLetteringOnFilterEvaluationExceptions: true });
    const nested = await api('PUT', `/queues/${f.q}`, { runtime: { activeMessageCount: 0 } });
    // assess
    expectError(existing, 400, 'BadRequest', 'colour');
    expectError(created, 400, 'BadRequest', 'partitions');
    expectError(topicOnly, 400, 'BadRequest', 'deadLetteringOnFilterEvaluationExceptions');
    expectError(nested, 400, 'BadRequest', 'runtime');
    expectError(await api('GET', `/queues/new-${f.q}`), 404, 'EntityNotFound');
    await expectUnchanged(f, before);
  });

  it('B2: unknown fields in message, batch, receive and settlement bodies are refused with 400 naming the field', async () => {
    // prepare
    const { q, locked } = f;
    // act
    const message = await api('POST', `/queues/${q}/messages`, { body: 1, label: 'old name for subject' });
    const batchItem = await api('POST', `/queues/${q}/messages/batch`, { messages: [{ body: 1 }, { body: 2, priority: 'high' }] });
    const receive = await api('POST', `/queues/${q}/messages/receive`, { mode: 'peekLock', prefetch: 10 });
    const complete = await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/complete`, { lockToken: locked.lockToken, force: true });
    const abandon = await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/abandon`, { lockToken: locked.lockToken, properties: { a: 1 } });
    const renew = await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/renew-lock`, { lockToken: locked.lockToken, duration: 'PT5M' });
    const deferred = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [f.deferred.sequenceNumber], lock: false });
    const batchComplete = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: [locked.lockToken], all: true });
    // assess
    expectError(message, 400, 'BadRequest', 'label');
    expectError(batchItem, 400, 'BadRequest', 'priority');
    expect(batchItem.body.error.message).toContain('messages[1]');
    expectError(receive, 400, 'BadRequest', 'prefetch');
    expectError(complete, 400, 'BadRequest', 'force');
    expectError(abandon, 400, 'BadRequest', 'properties');
    expectError(renew, 400, 'BadRequest', 'duration');
    expectError(deferred, 400, 'BadRequest', 'lock');
    expectError(batchComplete, 400, 'BadRequest', 'all');
    await expectUnchanged(f, before);
  });

  it('B2: wrong types are refused with 400 naming the field', async () => {
    // prepare
    const { q, locked } = f;
    const cases: [string, string, unknown, string][] = [
      ['PUT', `/queues/${q}`, { requiresSession: 'true' }, 'requiresSession'],
      ['PUT', `/queues/${q}`, { maxSizeInMegabytes: '1024' }, 'maxSizeInMegabytes'],
      ['PUT', `/queues/${q}`, { maxDeliveryCount: null }, 'maxDeliveryCount'],
      ['PUT', `/queues/${q}`, { forwardTo: 42 }, 'forwardTo'],
      ['PUT', `/queues/${q}`, [], 'body'],
      ['PUT', `/queues/${q}`, 'Active', 'body'],
      ['POST', `/queues/${q}/messages`, { body: 1, messageId: 5 }, 'messageId'],
      ['POST', `/queues/${q}/messages`, { body: 1, messageId: '' }, 'messageId'],
      ['POST', `/queues/${q}/messages`, { body: 1, timeToLive: 600 }, 'timeToLive'],
      ['POST', `/queues/${q}/messages`, { body: 1, timeToLive: 'PT0S' }, 'timeToLive'],
      ['POST', `/queues/${q}/messages`, { body: 1, contentType: ['a'] }, 'contentType'],
      ['POST', `/queues/${q}/messages`, { body: 1, applicationProperties: { a: { nested: 1 } } }, 'applicationProperties'],
      ['POST', `/queues/${q}/messages`, { body: 1, applicationProperties: [1, 2] }, 'applicationProperties'],
      ['POST', `/queues/${q}/messages`, { body: 1, applicationProperties: { '': 1 } }, 'applicationProperties'],
      ['POST', `/queues/${q}/messages`, { contentType: 'text/plain' }, 'body'],
      ['POST', `/queues/${q}/messages`, [{ body: 1 }], 'body'],
      ['POST', `/queues/${q}/messages`, 'just text', 'body'],
      ['POST', `/queues/${q}/messages`, null, 'body'],
      ['POST', `/queues/${q}/messages/batch`, { messages: [{ body: 1 }, 'x'] }, 'messages[1]'],
      ['POST', `/queues/${q}/messages/receive`, { mode: 'peek' }, 'mode'],
      ['POST', `/queues/${q}/messages/receive`, { mode: 1 }, 'mode'],
      ['POST', `/queues/${q}/messages/receive`, { maxMessages: '5' }, 'maxMessages'],
      ['POST', `/queues/${q}/messages/receive`, { maxWaitTime: true }, 'maxWaitTime'],
      ['POST', `/queues/${q}/messages/receive`, [], 'body'],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/complete`, { lockToken: 5 }, 'lockToken'],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/abandon`, { lockToken: locked.lockToken, propertiesToModify: { a: [1] } }, 'propertiesToModify'],
      ['POST', `/queues/${q}/messages/${locked.sequenceNumber}/deadletter`, { lockToken: locked.lockToken, deadLetterReason: 7 }, 'deadLetterReason'],
      ['POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [Number(f.deferred.sequenceNumber)] }, 'sequenceNumbers'],
      ['POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: f.deferred.sequenceNumber }, 'sequenceNumbers'],
      ['POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [] }, 'sequenceNumbers'],
    ];
    // act
    const replies: Reply[] = [];
    for (const [method, path, body] of cases) replies.push(await api(method, path, body));
    // assess
    for (const [i, r] of replies.entries()) {
      const [method, path, body, field] = cases[i]!;
      expect(r.status, `${method} ${path} ${JSON.stringify(body)} -> ${JSON.stringify(r.body)}`).toBe(400);
      expectError(r, 400, 'BadRequest', field);
    }
    await expectUnchanged(f, before);
  });

  it('B2: bad names in any path are refused with 400 naming the name', async () => {
    // prepare
    const bad = ['-q', 'q_', 'a%20b', '%E2%9C%93', 'x'.repeat(261), 'a.', '%24deadletterqueue'];
    // act
    const replies: Reply[] = [];
    for (const name of bad) {
      replies.push(await api('PUT', `/queues/${name}`, {}));
      replies.push(await api('GET', `/queues/${name}`));
      replies.push(await api('DELETE', `/queues/${name}`));
      replies.push(await api('POST', `/queues/${name}/messages`, { body: 1 }));
      replies.push(await api('POST', `/queues/${name}/messages/receive`, {}));
      replies.push(await api('GET', `/queues/${name}/$deadletterqueue/messages`));
      replies.push(await api('POST', `/queues/${name}/messages/${f.locked.sequenceNumber}/complete`, { lockToken: f.locked.lockToken }));
    }
    // assess
    for (const r of replies) expectError(r, 400, 'BadRequest', 'queueName');
    await expectUnchanged(f, before);
  });

  it('B2: a path that is not valid percent-encoding, or holds dot segments, an encoded "/" or control characters, is refused (400, or 403 from the authorizer) and changes nothing', async () => {
    // act: the authorizer refuses paths it cannot read before the router sees them, so 403 is allowed here
    const replies = [
      await api('GET', '/queues/%E0%A4%A'),
      await api('POST', `/queues/${f.q}/messages/%ZZ/complete`, { lockToken: f.locked.lockToken }),
      await api('GET', '/queues/q%'),
      await api('PUT', '/queues/%2E%2E', {}),
      await api('PUT', '/queues/a%2Fb', {}),
      await api('PUT', '/queues/a%00b', {}),
      await api('POST', `/queues/${f.q}/%2E%2E/messages`, { body: 1 }),
      await api('DELETE', `/queues/${f.q}/messages/%2E`),
    ];
    // assess
    for (const r of replies) {
      expect([400, 403], JSON.stringify(r.body)).toContain(r.status);
      expectB1(r);
    }
    await expectUnchanged(f, before);
  });

  it('B2: malformed sequence numbers (decimal text of a 64-bit integer or nothing) are refused with 400 naming the field, on every settlement, cancel, deferred receive and peek', async () => {
    // prepare
    const { q, locked } = f;
    const bad = ['abc', '-1', '1.5', '0x10', '1e3', ' 1', 'NaN', '12345678901234567890', '9223372036854775808', '99999999999999999999999999'];
    const wrong: string[] = [];
    // act
    for (const b of bad) {
      const calls: [string, Promise<Reply>, string][] = [
        ...['complete', 'abandon', 'deadletter', 'defer', 'renew-lock'].map((a): [string, Promise<Reply>, string] => [
          `POST ${a}`,
          api('POST', `/queues/${q}/messages/${encodeURIComponent(b)}/${a}`, { lockToken: locked.lockToken }),
          'sequenceNumber',
        ]),
        ['DELETE scheduled', api('DELETE', `/queues/${q}/messages/scheduled/${encodeURIComponent(b)}`), 'sequenceNumber'],
        ['POST deferred', api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [f.deferred.sequenceNumber, b] }), 'sequenceNumbers'],
        ['GET peek', api('GET', `/queues/${q}/messages?fromSequenceNumber=${encodeURIComponent(b)}`), 'fromSequenceNumber'],
      ];
      for (const [label, pending, field] of calls) {
        const r = await pending;
        if (r.status !== 400 || r.body?.error?.code !== 'BadRequest' || !String(r.body?.error?.message).includes(field)) {
          wrong.push(`${JSON.stringify(b)} ${label}: ${r.status} ${r.body?.error?.code ?? ''} ${r.body?.error?.message ?? ''}`);
        }
      }
    }
    // assess
    expect(wrong, wrong.join('\n')).toEqual([]);
    await expectUnchanged(f, before);
  });

  it('B2: the largest 64-bit sequence number is well-formed: unknown message, not bad input', async () => {
    // act
    const cancel = await api('DELETE', `/queues/${f.q}/messages/scheduled/9223372036854775807`);
    const deferred = await api('POST', `/queues/${f.q}/messages/deferred`, { sequenceNumbers: ['9223372036854775807'] });
    const peeked = await api('GET', `/queues/${f.q}/messages?fromSequenceNumber=9223372036854775807`);
    // assess
    expectError(cancel, 404, 'MessageNotFound');
    expectError(deferred, 404, 'MessageNotFound');
    expect(peeked.status).toBe(200);
    expect(peeked.body.messages).toEqual([]);
    await expectUnchanged(f, before);
  });

  it('B2: malformed lock tokens are refused with 400 naming lockToken on every settlement, and with an error result naming lockTokens in batch settlement (R9)', async () => {
    // prepare
    const { q, locked } = f;
    const bad: unknown[] = [
      'not-a-token',
      '',
      '00000000-0000-0000-0000-00000000000',
      '00000000-0000-0000-0000-0000000000000',
      'g0000000-0000-0000-0000-000000000000',
      '{00000000-0000-0000-0000-000000000000}',
      123,
      null,
      undefined,
      ['x'],
      { token: 1 },
    ];
    const wrong: string[] = [];
    // act
    for (const b of bad) {
      const body = b === undefined ? {} : { lockToken: b };
      for (const action of ['complete', 'abandon', 'deadletter', 'defer', 'renew-lock']) {
        const r = await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/${action}`, body);
        if (r.status !== 400 || r.body?.error?.code !== 'BadRequest' || !String(r.body?.error?.message).includes('lockToken'))
          wrong.push(`${JSON.stringify(b)} ${action}: ${r.status} ${JSON.stringify(r.body)}`);
      }
      const batch = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: [b ?? null] });
      const result = batch.body?.results?.[0];
      if (batch.status !== 200 || result?.error?.code !== 'BadRequest' || !String(result?.error?.message).includes('lockTokens'))
        wrong.push(`${JSON.stringify(b)} batch: ${batch.status} ${JSON.stringify(batch.body)}`);
    }
    const noBody = await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/complete`);
    // assess
    expect(wrong, wrong.join('\n')).toEqual([]);
    expectError(noBody, 400, 'BadRequest');
    await expectUnchanged(f, before);
  });

  it('B2: out-of-range values are refused with 400 naming the field', async () => {
    // prepare
    const { q, locked } = f;
    // act
    const replies = [
      await api('PUT', `/queues/${q}`, { maxSizeInMegabytes: 0 }),
      await api('POST', `/queues/${q}/messages`, { body: 1, messageId: 'x'.repeat(129) }),
      await api('POST', `/queues/${q}/messages`, { body: 1, timeToLive: 'P1Y' }),
      await api('POST', `/queues/${q}/messages`, { body: 1, timeToLive: '-PT1M' }),
      await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/deadletter`, { lockToken: locked.lockToken, deadLetterReason: 'r'.repeat(5000) }),
    ];
    // assess
    const fields = ['maxSizeInMegabytes', 'messageId', 'timeToLive', 'timeToLive', 'deadLetterReason'];
    for (const [i, r] of replies.entries()) expectError(r, 400, 'BadRequest', fields[i]);
    await expectUnchanged(f, before);
  });

  it('B2: a request body over the API limit is refused with 413 and stores nothing', async () => {
    // act: past the broker's limit but inside Lambda's event (the broker answers), and past Lambda's event (API Gateway answers)
    const large = await api('POST', `/queues/${f.q}/messages`, undefined, JSON.stringify({ body: 'x'.repeat(MAX_REQUEST_BYTES + 1024) }));
    const huge = await api('POST', `/queues/${f.q}/messages`, undefined, JSON.stringify({ body: 'x'.repeat(7 * 1024 * 1024) }));
    // assess
    expect(large.status).toBe(413);
    expectB1(large);
    expect(huge.status).toBe(413);
    await expectUnchanged(f, before);
  });

  it('B2: unknown routes and methods answer 4xx in the B1 shape and change nothing', async () => {
    // prepare
    const { q, locked } = f;
    // act
    const replies = [
      await api('GET', '/'),
      await api('GET', '/nothing'),
      await api('POST', `/queues/${q}/messages/bogus`, {}),
      await api('POST', `/queues/${q}/whatever`, {}),
      await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/bogus`, { lockToken: locked.lockToken }),
      await api('PATCH', `/queues/${q}`, { maxDeliveryCount: 1 }),
      await api('POST', `/queues/${q}`, { maxDeliveryCount: 1 }),
      await api('PUT', `/queues/${q}/messages`, { body: 1 }),
      await api('DELETE', '/queues'),
      await api('POST', `/queues/${q}/messages/${locked.sequenceNumber}/complete/extra`, { lockToken: locked.lockToken }),
    ];
    // assess
    for (const r of replies) {
      expect(r.status, JSON.stringify(r.body)).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expectB1(r);
    }
    await expectUnchanged(f, before);
  });

  it('B2: settlement actions named like Object.prototype members (toString, constructor, __proto__, ...) are unknown routes (404), not settlements', async () => {
    // prepare
    const wrong: string[] = [];
    // act
    for (const action of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf']) {
      const r = await api('POST', `/queues/${f.q}/messages/${f.locked.sequenceNumber}/${action}`, { lockToken: f.locked.lockToken });
      if (r.status !== 404 || !r.body?.error) wrong.push(`${action}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    // assess
    expect(wrong, wrong.join('\n')).toEqual([]);
    await expectUnchanged(f, before);
  });

  it('B2/E3: path segments named like Object.prototype members (constructor, __proto__, ...) are not subqueues: peek, receive and purge on them are unknown routes (404)', async () => {
    // prepare
    const wrong: string[] = [];
    // act
    for (const segment of ['constructor', '__proto__', 'Constructor', 'toString', 'hasOwnProperty']) {
      const replies: [string, Reply][] = [
        ['peek', await api('GET', `/queues/${f.q}/${segment}/messages`)],
        ['receive', await api('POST', `/queues/${f.q}/${segment}/messages/receive`, { mode: 'receiveAndDelete' })],
        ['purge', await api('DELETE', `/queues/${f.q}/${segment}/messages`)],
      ];
      for (const [label, r] of replies) if (r.status !== 404 || !r.body?.error) wrong.push(`${segment} ${label}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    // assess
    expect(wrong, wrong.join('\n')).toEqual([]);
    await expectUnchanged(f, before);
  });

  it('B2/S1: a timeToLive beyond the calendar (P99999999D) is refused with 400 or accepted and deliverable; never a 500, and the queue stays usable', async () => {
    // prepare
    const { q } = f;
    // act
    const sent = await api('POST', `/queues/${q}/messages`, { body: 'forever', messageId: 'forever', timeToLive: 'P99999999D' });
    const peeked = await api('GET', `/queues/${q}/messages?maxMessages=100`);
    const received = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: 10, mode: 'receiveAndDelete' });
    // assess
    expect(sent.status, JSON.stringify(sent.body)).not.toBe(500);
    expect(peeked.status).toBe(200);
    expect(received.status, JSON.stringify(received.body)).toBe(200);
    const ids = received.body.messages.map((m: Msg) => m.messageId);
    if (sent.status === 201) {
      expect(ids).toContain('forever');
    } else {
      expectError(sent, 400, 'BadRequest', 'timeToLive');
      expect(ids).not.toContain('forever');
    }
  });

  it('S4/B2: in a batch, a message whose expiry is beyond the calendar is never stored while its result reports an error', async () => {
    // prepare
    const { q } = f;
    // act
    const sent = await api('POST', `/queues/${q}/messages/batch`, {
      messages: [
        { body: 'ok', messageId: 'ok' },
        { body: 'forever', messageId: 'forever', timeToLive: 'P99999999D' },
      ],
    });
    const peeked = await api('GET', `/queues/${q}/messages?maxMessages=100`);
    // assess
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(500);
    expect(peeked.status, JSON.stringify(peeked.body)).toBe(200);
    const stored = new Set(peeked.body.messages.map((m: Msg) => m.messageId));
    if (sent.status === 400) {
      expect(stored.has('ok')).toBe(false);
      expect(stored.has('forever')).toBe(false);
    } else {
      const results = sent.body.results as { messageId?: string; error?: unknown }[];
      for (const [i, id] of ['ok', 'forever'].entries()) expect(stored.has(id), `${id}: ${JSON.stringify(results[i])}`).toBe(!results[i]!.error);
    }
  });

  it('B2/S1: a queue whose defaultMessageTimeToLive is beyond the calendar still takes and delivers messages (or refuses the property)', async () => {
    // prepare
    const q = `e${++counter}`;
    const created = await api('PUT', `/queues/${q}`, { defaultMessageTimeToLive: 'P99999999D' });
    expect(created.status).toBeLessThan(500);
    if (created.status !== 201) {
      expectError(created, 400, 'BadRequest', 'defaultMessageTimeToLive');
      return;
    }
    // act
    const sent = await api('POST', `/queues/${q}/messages`, { body: 1 });
    const received = await api('POST', `/queues/${q}/messages/receive`, { mode: 'receiveAndDelete' });
    // assess
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(received.status, JSON.stringify(received.body)).toBe(200);
    expect(received.body.messages).toHaveLength(1);
  });
});
