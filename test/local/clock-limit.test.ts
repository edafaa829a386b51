/**
 * S2: the local clock refuses to move past what sequence numbers can hold, with a
 * 400 that names the field, and keeps working after.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { rootKeyToken, startTestRuntime } from '../support/runtime.js';

describe('local clock limit', () => {
  let runtime: LocalRuntime;

  beforeAll(async () => {
    runtime = await startTestRuntime('local-clock');
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  const advance = (by: string) =>
    fetch(`${runtime.url}/_local/clock`, {
      method: 'POST',
      // /_local takes the root key like any management route.
      headers: {
        'content-type': 'application/json',
        authorization: rootKeyToken(runtime),
      },
      body: JSON.stringify({ advance: by }),
    });

  it('S2: an advance beyond the sequence layout (P100000000D) is 400 naming advance; the clock does not move', async () => {
    const before = runtime.clock.now();

    const res = await advance('P100000000D');

    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('BadRequest');
    expect(body.error.message).toContain('advance');
    expect(runtime.clock.now() - before).toBeLessThan(60_000);
  });

  it('S2: an advance of 300 years is accepted (the broker itself is tested there in test/integration/sequence-far-future)', async () => {
    const res = await advance('P109500D');
    expect(res.status).toBe(200);
    expect(new Date(runtime.clock.now()).getUTCFullYear()).toBeGreaterThanOrEqual(2300);
  });
});
