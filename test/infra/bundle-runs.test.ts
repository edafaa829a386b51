/**
 * The api function's bundle, built with infra/bundling.ts's options as the deploy builds it
 * (stand-ins included: environment credentials, no event-stream codec, the Map-backed endpoint
 * cache, Node's SHA-256 for signing), serves requests in a plain `node` process against
 * DynamoDB Local: the JSON API from a queue's creation to a completed message, and Service
 * Bus's Atom protocol, whose XML reader is bundled too. app.test.ts shows each bundle loads;
 * this shows the api one works.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../bench/bundles.js';
import { directApiEvent } from '../../infra/local/http-events.js';
import { signToken } from '../../lib/auth/index.js';
import { NEW_ENTITY_LAYOUT_ENV } from '../../lib/deps.js';
import { createTestTable } from '../support/table.js';
import { workerEndpoint } from '../support/emulator.js';

const run = promisify(execFile);
const ROOT_KEY = 'bundle-root-key-0123456789abcdef0123456789abcdef';
const SB = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';

const dir = mkdtempSync(join(tmpdir(), 'sluice-bundle-runs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let file: string;
let tableName: string;
beforeAll(async () => {
  file = (await buildBundle('api', dir)).file;
  tableName = (await createTestTable('bundle-runs')).tableName;
}, 120_000);

interface Step {
  method: string;
  path: string;
  body?: string;
  contentType?: string;
}

/** Runs the steps through the bundle's `handler`, one fresh process; each step may name `{{seq}}`/`{{lock}}` from the last receive. */
async function throughBundle(steps: Step[]): Promise<{ statusCode: number; body: string }[]> {
  const token = signToken({
    resourceUri: 'http://localhost/',
    keyName: 'RootManageSharedAccessKey',
    key: ROOT_KEY,
    expiresAt: Math.floor(Date.now() / 1000) + 3600,
  });
  const events = steps.map((s) =>
    directApiEvent(s.method, s.path, {
      headers: { authorization: token, ...(s.contentType ? { 'content-type': s.contentType } : {}) },
      body: s.body,
      userAgent: 'bundle-runs',
    }),
  );
  const probe = `
    const { handler } = await import(process.argv[1]);
    const out = [];
    let last = {};
    for (const event of JSON.parse(process.argv[2])) {
      const fill = (t) => t && t.replaceAll('{{seq}}', String(last.sequenceNumber)).replaceAll('{{lock}}', String(last.lockToken));
      event.rawPath = fill(event.rawPath);
      event.requestContext.http.path = event.rawPath;
      event.body = fill(event.body);
      const r = await handler(event, {});
      out.push({ statusCode: r.statusCode, body: r.body });
      try { const m = JSON.parse(r.body).messages?.[0]; if (m) last = m; } catch {}
    }
    console.log(JSON.stringify(out));`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    TABLE_NAME: tableName,
    DYNAMODB_ENDPOINT: workerEndpoint(),
    AWS_REGION: 'local',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    SLUICE_ROOT_KEY: ROOT_KEY,
    // The deployment's layout switch, as the stack sets it on the function: the suite's default
    // when SLUICE_TEST_NEW_ENTITY_LAYOUT names one (vitest.config.ts), else absent.
    ...(process.env[NEW_ENTITY_LAYOUT_ENV] ? { [NEW_ENTITY_LAYOUT_ENV]: process.env[NEW_ENTITY_LAYOUT_ENV] } : {}),
  };
  const { stdout } = await run(
    process.execPath,
    ['--enable-source-maps', '--input-type=module', '-e', probe, pathToFileURL(file).href, JSON.stringify(events)],
    {
      env,
      cwd: dir,
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { statusCode: number; body: string }[];
}

describe('the api bundle as deployed', () => {
  it('serves the JSON API: create a queue, send, receive with a lock, complete', async () => {
    const json = (path: string, method: string, body?: unknown): Step => ({ method, path, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const answers = await throughBundle([
      json('/queues/orders', 'PUT', {}),
      json('/queues/orders/messages', 'POST', { body: { id: 1 } }),
      json('/queues/orders/messages/receive', 'POST', { mode: 'peekLock' }),
      json('/queues/orders/messages/{{seq}}/complete', 'POST', { lockToken: '{{lock}}' }),
      json('/queues/orders/messages/receive', 'POST', { mode: 'peekLock' }),
      json('/queues/nope', 'GET'),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([201, 201, 200, 204, 200, 404]);
    expect(JSON.parse(answers[2]!.body).messages[0].body).toEqual({ id: 1 });
    expect(JSON.parse(answers[4]!.body).messages).toEqual([]);
    expect(JSON.parse(answers[5]!.body).error.code).toBe('EntityNotFound');
  }, 90_000);

  it("answers a bad body with a 400 naming the field in zod's English words, which the bundle must carry (B2)", async () => {
    const json = (path: string, method: string, body: unknown): Step => ({ method, path, body: JSON.stringify(body) });
    const answers = await throughBundle([
      json('/queues/words', 'PUT', { maxDeliveryCount: 1.5 }),
      json('/queues/words', 'PUT', {}),
      json('/queues/words/messages/receive', 'POST', { maxMessages: 'x' }),
      json('/queues/words/messages/receive', 'POST', { mode: 'x' }),
      json('/queues/words/messages/1/complete', 'POST', {}),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([400, 201, 400, 400, 400]);
    expect([0, 2, 3, 4].map((i) => JSON.parse(answers[i]!.body).error.message)).toEqual([
      'maxDeliveryCount: Invalid input: expected int, received number',
      'maxMessages: Invalid input: expected number, received string',
      'mode: Invalid option: expected one of "peekLock"|"receiveAndDelete"',
      'lockToken: is required',
    ]);
  }, 90_000);

  it("serves Service Bus's Atom protocol: creates a queue from an Atom entry and reads it back as XML; bad XML is a 400", async () => {
    const entry = `<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><QueueDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="${SB}"><LockDuration>PT45S</LockDuration><MaxDeliveryCount>7</MaxDeliveryCount></QueueDescription></content></entry>`;
    const atom = 'application/atom+xml';
    const answers = await throughBundle([
      { method: 'PUT', path: '/atomq?api-version=2021-05', body: entry, contentType: atom },
      { method: 'GET', path: '/atomq?api-version=2021-05' },
      { method: 'PUT', path: '/badq?api-version=2021-05', body: '<entry><content></entry>', contentType: atom },
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([201, 200, 400]);
    expect(answers[1]!.body).toContain('<LockDuration>PT45S</LockDuration>');
    expect(answers[1]!.body).toContain('<MaxDeliveryCount>7</MaxDeliveryCount>');
  }, 90_000);
});
