/**
 * The local runtime's own routes (`/_local/...`) are matched in the route table like the
 * API's: the method a path takes, 405 with `Allow` for another, HEAD read as GET, and 404 for
 * a path or job that is not there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { signToken } from '../../lib/auth/index.js';
import { workerEndpoint } from '../support/emulator.js';

const silent = { info: () => {}, error: () => {} };
const ok = async () => ({ statusCode: 200, body: '{}' });

describe('/_local routes from the route table', () => {
  let runtime: LocalRuntime;
  beforeAll(async () => {
    runtime = await startLocalRuntime({
      dynamoEndpoint: workerEndpoint(),
      tableName: `local-routes-${randomUUID().slice(0, 8)}`,
      port: 0,
      timers: false,
      streamPollMs: 0,
      logger: silent,
      handlers: { api: ok },
    });
  }, 120_000);
  afterAll(async () => runtime?.stop());

  const call = (method: string, path: string) =>
    fetch(`${runtime.url}${path}`, {
      method,
      headers: {
        authorization: signToken({
          resourceUri: `${runtime.url}/`,
          keyName: 'RootManageSharedAccessKey',
          key: runtime.rootKey,
          expiresAt: Math.floor(Date.now() / 1000) + 3600,
        }),
      },
    });

  it('answers each path with the methods its table entries name', async () => {
    expect((await call('GET', '/_local/clock')).status).toBe(200);
    expect((await call('HEAD', '/_local/clock')).status).toBe(200);
    const put = await call('PUT', '/_local/clock');
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, POST']);
    const get = await call('GET', '/_local/jobs/sweeper');
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
  });

  it('answers 404 for a path no entry names and for an unknown job, whatever the method', async () => {
    for (const [method, path] of [
      ['GET', '/_local'],
      ['GET', '/_local/clock/'],
      ['GET', '/_local/nothing'],
      ['POST', '/_local/jobs'],
      ['GET', '/_local/jobs/nope'],
      ['POST', '/_local/jobs/nope'],
    ]) {
      expect((await call(method!, path!)).status, `${method} ${path}`).toBe(404);
    }
  });
});
