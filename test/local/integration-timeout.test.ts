/**
 * API Gateway's integration timeout, kept by the local runtime as on AWS: a request whose
 * function runs past it gets API Gateway's own 503, not the function's answer, and the function
 * runs on. R2's longest wait (PT20S) and the api's 29 s timeout stay inside the real 30 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { INTEGRATION_TIMEOUT_MS } from '../../lib/lambda-limits.js';
import { POLL_WORK_BUDGET_MS } from '../../lib/broker/receive.js';
import { connectionStringToken, startTestRuntime } from '../support/runtime.js';

describe("R2: API Gateway's integration timeout in the local runtime", () => {
  let runtime: LocalRuntime;
  let token: string;
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${runtime.url}/${path}`, {
      method,
      headers: { authorization: token, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    runtime = await startTestRuntime('gwtimeout', { integrationTimeoutMs: 3_000 });
    token = connectionStringToken(runtime);
  });
  afterAll(() => runtime?.stop());

  it('R2: a receive that waits past the integration timeout is answered 503 in API Gateway words', async () => {
    // prepare: a cold first request may itself outlast the shortened timeout; the create runs on regardless
    let created = await call('PUT', 'queues/q', {});
    for (let i = 0; created.status === 503 && i < 5; i++) created = await call('PUT', 'queues/q', {});
    expect([200, 201]).toContain(created.status);

    // act: an empty queue, a wait longer than this runtime's 3 s timeout
    const res = await call('POST', 'queues/q/messages/receive', { maxWaitTime: 'PT6S' });

    // assess: API Gateway's body, not Sluice's error shape, so clients cannot take it for "not applied"
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ message: 'Service Unavailable' });
  });

  it('R2: a request within the timeout is answered by the function', async () => {
    const res = await call('POST', 'queues/q/messages/receive', { maxWaitTime: 'PT0S' });
    expect(res.status).toBe(200);
  });

  it("R2: the longest receive wait fits API Gateway's 30 s", () => {
    // R2's longest maxWaitTime (PT20S), plus one poll's work budget
    expect(20_000 + POLL_WORK_BUDGET_MS).toBeLessThan(INTEGRATION_TIMEOUT_MS);
  });
});
