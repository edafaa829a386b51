import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { signToken } from '../../lib/auth/index.js';
import { createBroker } from '../../lib/broker/index.js';
import { NAMESPACE_GRANT } from '../../lib/broker/authorization.js';
import { localClient } from '../support/table.js';
import { workerEndpoint } from '../support/emulator.js';

const silent = { info: () => {}, error: () => {} };

describe('local runtime (DynamoDB Local of the test run)', () => {
  let runtime: LocalRuntime;
  const apiCalls: { event: APIGatewayProxyEventV2; context: Context }[] = [];
  const streamBatches: DynamoDBRecord[][] = [];
  /** Per test: how the stream handler answers a batch. */
  let streamBehavior: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> = async () => ({ batchItemFailures: [] });
  let sweeps = 0;

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      dynamoEndpoint: workerEndpoint(),
      tableName: `local-rt-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 0,
      logger: silent,
      handlers: {
        api: async (event, context) => {
          apiCalls.push({ event, context });
          if (event.rawPath === '/boom') throw new Error('boom');
          if (event.rawPath === '/huge') return { statusCode: 200, body: 'y'.repeat(6 * 1024 * 1024 + 1) };
          if ((event.body?.length ?? 0) > 1000) return { statusCode: 200, body: JSON.stringify({ bodyLength: event.body!.length }) };
          if (event.rawPath === '/binary') {
            return {
              statusCode: 200,
              headers: { 'content-type': 'application/octet-stream' },
              body: Buffer.from([0, 255]).toString('base64'),
              isBase64Encoded: true,
            };
          }
          return {
            statusCode: 200,
            headers: { 'content-type': 'application/json' },
            cookies: ['a=1', 'b=2'],
            body: JSON.stringify({ path: event.rawPath, body: event.body ?? null, now: new Date(runtime.clock.now()).toISOString() }),
          };
        },
        stream: async (event) => {
          streamBatches.push(event.Records);
          return streamBehavior(event);
        },
        sweeper: async () => ({ swept: ++sweeps }),
      },
    });
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
  /** /_local takes the root key like every other route. */
  const rootToken = () => signToken({ resourceUri: `${runtime.url}/`, keyName: 'RootManageSharedAccessKey', key: runtime.rootKey, expiresAt: inAnHour() });
  const post = (path: string, body?: unknown, authorization: string | null = rootToken()) =>
    fetch(`${runtime.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization === null ? {} : { authorization }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('A2: /_local needs a token of a namespace Manage rule: none, a forged one, or a lesser rule moves no clock and runs no job', async () => {
    // prepare: a namespace Listen rule and a Manage rule on one queue, both genuine
    const broker = createBroker(runtime.deps);
    const listener = (await broker.auth.put('/', 'local-listener', { rights: ['Listen'] })).rule;
    const { entity: q } = await broker.putEntity({ kind: 'queue', name: 'q' }, {}, NAMESPACE_GRANT);
    const queueManager = (await broker.auth.put('/queues/q', 'local-manager', { rights: ['Manage'] }, q.eid)).rule;
    const offset = runtime.clock.offset;
    const swept = sweeps;
    const tokens: [string | null, number][] = [
      [null, 401],
      ['SharedAccessSignature sr=x&sig=y&se=1&skn=z', 401],
      [signToken({ resourceUri: `${runtime.url}/`, keyName: 'RootManageSharedAccessKey', key: 'not-the-root-key', expiresAt: inAnHour() }), 401],
      [signToken({ resourceUri: `${runtime.url}/`, keyName: 'local-listener', key: listener.primaryKey, expiresAt: inAnHour() }), 403],
      [signToken({ resourceUri: `${runtime.url}/queues/q`, keyName: 'local-manager', key: queueManager.primaryKey, expiresAt: inAnHour() }), 403],
    ];
    // act + assess
    for (const [authorization, status] of tokens) {
      for (const [path, body] of [
        ['/_local/clock', { advance: 'PT1H' }],
        ['/_local/jobs/sweeper', undefined],
        ['/_local/jobs/reaper', undefined],
      ] as const) {
        const response = await post(path, body, authorization);
        expect(response.status, `${path} with ${authorization}`).toBe(status);
        const answer = (await response.json()) as { error: { code: string } };
        expect(answer.error.code).toBe(status === 401 ? 'Unauthorized' : 'Forbidden');
      }
      const read = await fetch(`${runtime.url}/_local/clock`, { headers: authorization === null ? {} : { authorization } });
      expect(read.status).toBe(status);
    }
    expect(runtime.clock.offset).toBe(offset);
    expect(sweeps).toBe(swept);
    // the root key opens it
    expect((await fetch(`${runtime.url}/_local/clock`, { headers: { authorization: rootToken() } })).status).toBe(200);
  });

  it('reads the clock and moves it forward', async () => {
    // act
    const before = await (await fetch(`${runtime.url}/_local/clock`, { headers: { authorization: rootToken() } })).json();
    const moved = await post('/_local/clock', { advance: 'PT6M' });
    // assess
    expect(moved.status).toBe(200);
    const after = (await moved.json()) as { now: string };
    const delta = Date.parse(after.now) - Date.parse((before as { now: string }).now);
    expect(delta).toBeGreaterThanOrEqual(6 * 60_000);
    expect(delta).toBeLessThan(6 * 60_000 + 5_000);
    expect(runtime.clock.offset).toBeGreaterThanOrEqual(6 * 60_000);
    // every handler sees the same clock
    const answer = (await (await post('/anything', {})).json()) as { now: string };
    expect(Date.parse(answer.now)).toBeGreaterThanOrEqual(Date.parse(after.now));
  });

  it.each([['-PT1M'], ['PT-1M'], ['soon'], [''], [5]])('refuses advance %j with 400 naming the field', async (advance) => {
    const offset = runtime.clock.offset;
    const response = await post('/_local/clock', { advance });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string; retryable: boolean; requestId: string } };
    expect(body.error).toMatchObject({ code: 'BadRequest', retryable: false });
    expect(body.error.message).toContain('advance');
    expect(body.error.requestId).toBeTruthy();
    expect(runtime.clock.offset).toBe(offset);
  });

  it('refuses a clock body that is not JSON', async () => {
    const response = await post('/_local/clock', '{nope');
    expect(response.status).toBe(400);
  });

  it('answers 404 in the error shape for an unknown job', async () => {
    const response = await post('/_local/jobs/unknown');
    expect(response.status).toBe(404);
    const body = (await response.json()) as { error: { code: string } };
    expect(body.error.code).toBe('EntityNotFound');
  });

  it('runs the sweeper once per call and answers its report', async () => {
    const first = await post('/_local/jobs/sweeper');
    expect(first.status).toBe(200);
    const report = (await first.json()) as { swept: number };
    expect((await (await post('/_local/jobs/sweeper')).json()) as { swept: number }).toEqual({ swept: report.swept + 1 });
    // the reaper is the one its factory builds, whatever it reports
    const reaper = await post('/_local/jobs/reaper');
    expect(reaper.status).toBe(200);
    const reaped = await reaper.json();
    expect(reaped).toBeTypeOf('object');
    expect(reaped).not.toHaveProperty('error');
  });

  it('hands records written to the table to the stream handler', async () => {
    // prepare
    await post('/_local/jobs/streams'); // whatever earlier tests wrote
    streamBatches.length = 0;
    const client = localClient();
    const pk = `msg/${randomUUID()}`;
    for (let i = 0; i < 3; i++) {
      await client.send(
        new PutItemCommand({
          TableName: runtime.deps.tableName,
          Item: { pk: { S: pk }, sk: { S: `m${i}` }, n: { N: String(i) }, b: { B: new Uint8Array([i]) } },
        }),
      );
    }
    // act
    const response = await post('/_local/jobs/streams');
    // assess
    expect(response.status).toBe(200);
    const report = (await response.json()) as { records: number; failedBatches: number; caughtUp: boolean };
    expect(report).toMatchObject({ records: 3, failedBatches: 0, caughtUp: true });
    const records = streamBatches.flat();
    expect(records.map((r) => r.dynamodb?.Keys?.sk?.S)).toEqual(['m0', 'm1', 'm2']);
    expect(records[0]).toMatchObject({
      eventName: 'INSERT',
      eventSource: 'aws:dynamodb',
      dynamodb: { Keys: { pk: { S: pk }, sk: { S: 'm0' } }, NewImage: { n: { N: '0' }, b: { B: 'AA==' } }, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    });
    expect(typeof records[0]!.dynamodb!.ApproximateCreationDateTime).toBe('number');
    expect(records[0]!.eventSourceARN).toContain(runtime.deps.tableName);
    // caught up: nothing more to hand over
    expect(((await (await post('/_local/jobs/streams')).json()) as { records: number }).records).toBe(0);
  });

  it('retries from the first failed record, as with ReportBatchItemFailures', async () => {
    // prepare
    await runtime.runJob('streams');
    streamBatches.length = 0;
    const client = localClient();
    const pk = `msg/${randomUUID()}`;
    for (let i = 0; i < 4; i++) {
      await client.send(new PutItemCommand({ TableName: runtime.deps.tableName, Item: { pk: { S: pk }, sk: { S: `m${i}` } } }));
    }
    let calls = 0;
    streamBehavior = async (event) => {
      calls++;
      if (calls === 1) {
        // the third record fails
        return { batchItemFailures: [{ itemIdentifier: event.Records[2]!.dynamodb!.SequenceNumber! }] };
      }
      if (calls === 2) throw new Error('transient');
      return { batchItemFailures: [] };
    };
    // act
    const first = await runtime.runJob('streams');
    const second = await runtime.runJob('streams');
    const third = await runtime.runJob('streams');
    streamBehavior = async () => ({ batchItemFailures: [] });
    // assess
    expect(first).toMatchObject({ records: 2, failedBatches: 1, caughtUp: false });
    expect(second).toMatchObject({ records: 0, failedBatches: 1 });
    expect(third).toMatchObject({ records: 2, failedBatches: 0, caughtUp: true });
    const delivered = streamBatches.map((batch) => batch.map((r) => r.dynamodb?.Keys?.sk?.S));
    expect(delivered).toEqual([
      ['m0', 'm1', 'm2', 'm3'],
      ['m2', 'm3'],
      ['m2', 'm3'],
    ]);
  });

  it('serializes concurrent drains so a shard is never handled twice at once', async () => {
    await runtime.runJob('streams');
    const client = localClient();
    const pk = `msg/${randomUUID()}`;
    let running = 0;
    let overlap = false;
    streamBehavior = async () => {
      running++;
      if (running > 1) overlap = true;
      await new Promise((r) => setTimeout(r, 50));
      running--;
      return { batchItemFailures: [] };
    };
    await client.send(new PutItemCommand({ TableName: runtime.deps.tableName, Item: { pk: { S: pk }, sk: { S: 'x' } } }));
    const reports = await Promise.all([post('/_local/jobs/streams'), post('/_local/jobs/streams'), runtime.runJob('streams')]);
    streamBehavior = async () => ({ batchItemFailures: [] });
    expect(overlap).toBe(false);
    const counts = await Promise.all(
      reports.map(async (r) => (r instanceof Response ? ((await r.json()) as { records: number }).records : (r as { records: number }).records)),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('turns requests into payload 2.0 events and writes the answer', async () => {
    // act
    const response = await fetch(`${runtime.url}/queues/q1/%24deadletterqueue/messages?fromSequenceNumber=0&x=1&x=2`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: 'k=v', 'x-multi': 'a' },
      body: '{"hello":"wörld"}',
    });
    // assess
    expect(response.status).toBe(200);
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(response.headers.get('apigw-requestid')).toBeTruthy();
    expect(await response.json()).toMatchObject({ path: '/queues/q1/%24deadletterqueue/messages', body: '{"hello":"wörld"}' });
    const { event, context } = apiCalls.at(-1)!;
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: '$default',
      rawQueryString: 'fromSequenceNumber=0&x=1&x=2',
      queryStringParameters: { fromSequenceNumber: '0', x: '1,2' },
      cookies: ['k=v'],
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST', path: '/queues/q1/%24deadletterqueue/messages', sourceIp: '127.0.0.1' }, stage: '$default' },
    });
    expect(event.headers['x-multi']).toBe('a');
    expect(event.headers.cookie).toBeUndefined();
    expect(response.headers.get('apigw-requestid')).toBe(event.requestContext.requestId);
    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
  });

  it('decodes base64 answers', async () => {
    const response = await fetch(`${runtime.url}/binary`);
    expect(Buffer.from(await response.arrayBuffer())).toEqual(Buffer.from([0, 255]));
  });

  it('answers 500 in the error shape when the handler throws', async () => {
    const response = await fetch(`${runtime.url}/boom`);
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: { code: string; requestId: string } };
    expect(body.error.code).toBe('InternalError');
    expect(body.error.requestId).toBe(response.headers.get('apigw-requestid'));
  });

  it("R10: refuses a request whose event is past Lambda's 6 MB with API Gateway's 413, without calling the handler", async () => {
    const calls = apiCalls.length;
    // The body alone is within 6 MB; the event around it (headers, request context) is not.
    const response = await post('/queues/q1/messages', 'x'.repeat(6 * 1024 * 1024 - 100));
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ message: 'Request Entity Too Large' });
    // Escaping counts: 3.1 MB of quotes is 6.2 MB in the event.
    expect((await post('/queues/q1/messages', '"'.repeat(3.1 * 1024 * 1024))).status).toBe(413);
    // A body that is not text arrives base64-encoded, a third larger: 4.6 MB is 6.1 MB in the event.
    const binary = await fetch(`${runtime.url}/queues/q1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', authorization: rootToken() },
      body: Buffer.alloc(4.6 * 1024 * 1024, 1),
    });
    expect(binary.status).toBe(413);
    expect(apiCalls.length).toBe(calls);
    // 5.9 MB of text still goes through.
    const ok = await post('/queues/q1/messages', 'x'.repeat(5.9 * 1024 * 1024));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ bodyLength: Math.floor(5.9 * 1024 * 1024) });
    expect(apiCalls.length).toBe(calls + 1);
  });

  it("answers 502 when the handler's result is past Lambda's 6 MB response limit", async () => {
    const response = await fetch(`${runtime.url}/huge`);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('InternalError');
  });

  it('refuses an oversized chunked body too', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${runtime.url}/queues/q1/messages`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      const chunk = Buffer.alloc(1024 * 1024, 120);
      for (let i = 0; i < 7; i++) req.write(chunk);
      req.end();
    });
    expect(status).toBe(413);
  });
});
