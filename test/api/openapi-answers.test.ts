/**
 * Real answers against docs/openapi.json: a walk through the API over HTTP against the
 * local runtime, each answer checked against what the document says its route answers with
 * that status: a success against the route's response schema, a failure against the error
 * body (B1) and the route's documented error statuses. Objects are read closed, so a field
 * the schema does not name fails too. The walk reaches every response schema a route names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { buildDocument } from '../../infra/openapi/document.js';
import { validate, type ValidateOptions } from '../../infra/openapi/check.js';
import type { JsonSchema } from '../../infra/openapi/schemas.js';
import { routesAt, routeTable } from '../../lib/api/routes.js';
import { responsesOf } from '../../lib/api/route-answers.js';
import type { ResponseSchemaName } from '../../lib/api/responses.js';
import type { Json } from '../support/api.js';
import { connectionStringToken, startTestRuntime } from '../support/runtime.js';

const doc = buildDocument();
const closed: ValidateOptions = { closed: true };
const operations = doc.paths as Record<string, Record<string, { responses: Record<string, JsonSchema> }>>;

let runtime: LocalRuntime;
let token: string;
/** Every answer's problems, and the schemas the answers were checked against. */
const problems: string[] = [];
const seen = new Set<string>();

beforeAll(async () => {
  runtime = await startTestRuntime('answers');
  token = connectionStringToken(runtime);
});

afterAll(async () => {
  await runtime?.stop();
});

/** The documented schema of a route's answer with `status`, or why there is none. */
function documentedAnswer(method: string, path: string, status: number): { schema?: string; problem?: string } {
  const segments = path
    .split('?')[0]!
    .split('/')
    .filter(Boolean)
    .map((s) => decodeURIComponent(s).toLowerCase());
  const m = method.toLowerCase();
  const at = routesAt(segments);
  // A method the path does not take is answered as documented on the path's other methods.
  const route = (at.find((x) => x.route.method === m) ?? (status >= 400 ? at[0] : undefined))?.route;
  if (!route) return { problem: 'no route' };
  const m2 = route.method;
  if (route.undocumented !== undefined) return { problem: 'an undocumented route' };
  const answer = operations[route.path]?.[m2]?.responses[String(status)];
  if (!answer) return { problem: `${status} is not documented for ${route.operationId}` };
  const target = answer.$ref ? (doc.components as Record<string, Record<string, JsonSchema>>).responses![String(answer.$ref).split('/').pop()!]! : answer;
  const schemaRef = (target.content as Record<string, { schema: JsonSchema }> | undefined)?.['application/json']?.schema.$ref;
  return { schema: schemaRef === undefined ? undefined : String(schemaRef).split('/').pop() };
}

/** Calls the runtime and holds the answer to the document. */
async function call(method: string, path: string, body?: unknown, auth = true): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: token } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const answer = { status: res.status, body: text ? (JSON.parse(text) as Json) : undefined };
  const where = `${method} ${path} ${res.status}`;
  const { schema, problem } = documentedAnswer(method, path, res.status);
  if (problem) problems.push(`${where}: ${problem}`);
  else if (schema === undefined) {
    if (text !== '') problems.push(`${where}: a body where the document says none`);
  } else {
    seen.add(schema);
    for (const p of validate({ $ref: `#/components/schemas/${schema}` }, answer.body, doc, '$', closed)) problems.push(`${where} (${schema}): ${p}`);
  }
  return answer;
}

const soon = (ms: number) => new Date(Date.now() + ms).toISOString();

describe('real answers are what docs/openapi.json says', () => {
  it('entities, rules and authorization rules', async () => {
    expect((await call('PUT', '/queues/orders', { defaultMessageTimeToLive: 'PT10M', maxDeliveryCount: 2 })).status).toBe(201);
    expect((await call('PUT', '/queues/orders', { lockDuration: 'PT30S' })).status).toBe(200);
    await call('PUT', '/queues/retry');
    await call('GET', '/queues/orders');
    await call('GET', '/queues?top=1');
    await call('PUT', '/topics/events', { defaultMessageTimeToLive: 'P1D' });
    await call('GET', '/topics/events');
    await call('GET', '/topics');
    await call('PUT', '/topics/events/subscriptions/audit', { autoDeleteOnIdle: 'PT1H' });
    await call('PUT', '/topics/events/subscriptions/red');
    await call('GET', '/topics/events/subscriptions/audit');
    await call('GET', '/topics/events/subscriptions');

    const rules = '/topics/events/subscriptions/red/rules';
    expect((await call('PUT', `${rules}/red-only`, { filter: { sql: "color = 'red'" }, action: { sql: "SET seen = 'yes'" } })).status).toBe(201);
    await call('PUT', `${rules}/by-subject`, { filter: { correlation: { subject: 'order' } } });
    await call('DELETE', `${rules}/$Default`);
    await call('GET', `${rules}/red-only`);
    await call('GET', rules);
    await call('DELETE', `${rules}/by-subject`);

    await call('GET', '/authorization-rules');
    expect((await call('PUT', '/queues/orders/authorization-rules/sender', { rights: ['Send'] })).status).toBe(201);
    await call('PUT', '/queues/orders/authorization-rules/sender', { rights: ['Send', 'Listen'] });
    await call('POST', '/queues/orders/authorization-rules/sender/regenerate', { key: 'secondary' });
    await call('GET', '/queues/orders/authorization-rules/sender');
    await call('GET', '/queues/orders/authorization-rules');
    await call('DELETE', '/queues/orders/authorization-rules/sender');
  });

  it('sending, receiving, settling and dead letters', async () => {
    const full = {
      body: { order: 1 },
      messageId: 'm-1',
      contentType: 'application/json',
      correlationId: 'c-1',
      replyTo: 'q2',
      subject: 'order',
      to: 'x',
      applicationProperties: { color: 'red', n: 3, ok: true, none: null },
    };
    expect((await call('POST', '/queues/orders/messages', full)).status).toBe(201);
    await call('POST', '/queues/orders/messages/batch', { messages: [{ body: 2 }, { body: 'three', timeToLive: 'PT1M' }, { body: null }] });
    const scheduled = await call('POST', '/queues/orders/messages', { body: 'later', scheduledEnqueueTime: soon(3_600_000) });
    const peeked = await call('GET', '/queues/orders/messages?maxMessages=10');
    expect(peeked.body.messages.map((m: Json) => m.state)).toContain('Scheduled');
    expect((await call('DELETE', `/queues/orders/messages/scheduled/${scheduled.body.sequenceNumber}`)).status).toBe(204);
    await call('POST', '/topics/events/messages', { body: 'hello', applicationProperties: { color: 'red' } });
    expect((await call('POST', '/topics/events/messages', { body: 'later', scheduledEnqueueTime: soon(3_600_000) })).body.sequenceNumber).toBeDefined();
    await call('POST', '/topics/events/messages/batch', { messages: [{ body: 1 }] });

    const got = await call('POST', '/queues/orders/messages/receive', { maxMessages: 4, maxWaitTime: 'PT1S' });
    expect(got.body.messages).toHaveLength(4);
    const [a, b, c, d] = got.body.messages as Json[];
    const lock = (m: Json) => ({ lockToken: m.lockToken });
    expect((await call('POST', `/queues/orders/messages/${a.sequenceNumber}/renew-lock`, lock(a))).status).toBe(200);
    expect((await call('POST', `/queues/orders/messages/${a.sequenceNumber}/abandon`, { ...lock(a), propertiesToModify: { tries: 1 } })).status).toBe(204);
    expect((await call('POST', `/queues/orders/messages/${b.sequenceNumber}/defer`, lock(b))).status).toBe(204);
    const dead = { ...lock(c), deadLetterReason: 'Bad', deadLetterErrorDescription: 'no id' };
    expect((await call('POST', `/queues/orders/messages/${c.sequenceNumber}/deadletter`, dead)).status).toBe(204);
    const batch = await call('POST', '/queues/orders/messages/complete', { lockTokens: [d.lockToken, c.lockToken, 'not-a-token'] });
    expect(batch.body.results.map((r: Json) => ('ok' in r ? 'ok' : r.error.code))).toEqual(['ok', 'MessageLockLost', 'BadRequest']);
    expect((await call('POST', '/queues/orders/messages/deferred', { sequenceNumbers: [b.sequenceNumber] })).body.messages).toHaveLength(1);
    const again = await call('POST', '/queues/orders/messages/receive', { mode: 'receiveAndDelete', maxWaitTime: 'PT1S' });
    expect(again.body.messages.length).toBeGreaterThan(0);
    await call('GET', '/queues/orders/messages/notifications');

    const dlq = '/queues/orders/$deadletterqueue';
    expect((await call('GET', `${dlq}/messages`)).body.messages[0]).toMatchObject({ deadLetterReason: 'Bad', deadLetterSource: 'queues/orders' });
    expect((await call('POST', `${dlq}/resubmit`, { to: 'queues/retry' })).body.resubmitted).toBe(1);
    await call('POST', '/queues/orders/messages', { body: 'old' });
    await call('POST', '/queues/orders/messages/delete', { maxMessageCount: 10 });
    await call('POST', '/queues/retry/messages', { body: 'x' });
    await call('DELETE', '/queues/retry/messages');
    await call('POST', '/topics/events/subscriptions/audit/messages/receive', { mode: 'receiveAndDelete', maxWaitTime: 'PT1S' });
  });

  it('sessions', async () => {
    await call('PUT', '/queues/sessions', { requiresSession: true });
    await call('POST', '/queues/sessions/messages', { body: 1, sessionId: 'order-7' });
    await call('POST', '/queues/sessions/messages', { body: 2, sessionId: 'order-7' });
    const accepted = await call('POST', '/queues/sessions/sessions/accept', { maxWaitTime: 'PT1S' });
    const sessionLockToken = accepted.body.sessionLockToken as string;
    await call('GET', '/queues/sessions/sessions?top=10');
    const got = await call('POST', '/queues/sessions/sessions/order-7/receive', { sessionLockToken, maxMessages: 2, maxWaitTime: 'PT1S' });
    expect(got.body.messages).toHaveLength(2);
    const [first, second] = got.body.messages as Json[];
    await call('POST', `/queues/sessions/messages/${second.sequenceNumber}/defer`, { lockToken: second.lockToken });
    await call('POST', '/queues/sessions/sessions/order-7/deferred', { sessionLockToken, sequenceNumbers: [second.sequenceNumber] });
    await call('POST', `/queues/sessions/messages/${first.sequenceNumber}/complete`, { lockToken: first.lockToken });
    await call('PUT', '/queues/sessions/sessions/order-7/state', { sessionLockToken, state: 'eyJzdGVwIjoicGFpZCJ9' });
    await call('GET', `/queues/sessions/sessions/order-7/state?sessionLockToken=${sessionLockToken}`);
    await call('POST', '/queues/sessions/sessions/order-7/renew-lock', { sessionLockToken });
    await call('POST', '/queues/sessions/sessions/order-7/release', { sessionLockToken });
  });

  it('the local runtime, failures, and deletion', async () => {
    await call('GET', '/_local/clock');
    await call('POST', '/_local/clock', { advance: 'PT1M' });
    await call('POST', '/_local/jobs/sweeper');
    await call('DELETE', '/_local/clock');

    expect((await call('GET', '/queues/missing')).status).toBe(404);
    expect((await call('GET', '/queues/orders', undefined, false)).status).toBe(401);
    expect((await call('PUT', '/queues/orders', { lockDuration: 'soon' })).status).toBe(400);
    expect((await call('POST', '/queues/orders/messages/1/complete', { lockToken: '00000000-0000-0001-8c1f-4be29d07a3e6' })).status).toBe(410);
    expect((await call('POST', '/queues/sessions/sessions/accept', { sessionId: 'order-7' })).status).toBe(200);
    expect((await call('POST', '/queues/sessions/sessions/accept', { sessionId: 'order-7' })).status).toBe(409);

    await call('DELETE', '/topics/events/subscriptions/audit');
    await call('DELETE', '/topics/events');
    await call('DELETE', '/queues/orders');
  });

  it('every answer conformed, and the walk reached every response schema a route names', () => {
    expect(problems).toEqual([]);
    const named = new Set(routeTable.filter((r) => r.undocumented === undefined).flatMap((r) => responsesOf(r).flatMap((x) => (x.schema ? [x.schema] : []))));
    const unreached: ResponseSchemaName[] = [...named].filter((s) => !seen.has(s));
    expect(unreached).toEqual([]);
    expect(seen.has('Error')).toBe(true);
  });
});
