/**
 * R10 and B1 at Lambda's limits, through the tests' in-process API client, which applies them
 * as AWS does (test/support/api.ts): an event or a result past 6 MB is refused by Lambda, and
 * the broker keeps its own request limit below that, so it answers `MessageSizeExceeded`
 * itself for any body AWS would still pass to it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { connectionStringToken, startTestRuntime } from '../support/runtime.js';
import { directApiEvent } from '../../infra/local/http-events.js';
import { LAMBDA_PAYLOAD_BYTES, MAX_REQUEST_BYTES, payloadBytes } from '../../lib/lambda-limits.js';
import { apiOnTable, rootToken } from '../support/api.js';
import { ManualClock } from '../support/table.js';

const api = apiOnTable(new ManualClock(), 'lambda-limits');
const MB = 1024 * 1024;

describe("R10: every answer in the tests goes through Lambda's limits", () => {
  it("R10: a request whose event is past Lambda's 6 MB gets API Gateway's 413, not an answer of the broker's", async () => {
    const res = await api('POST', '/queues/none/messages', undefined, JSON.stringify({ body: 'x'.repeat(6 * MB) }));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ message: 'Request Entity Too Large' });
  });

  it("R10: a body past the api's request limit (about 5 MB) is refused by the broker itself with MessageSizeExceeded", async () => {
    expect((await api('PUT', '/queues/limits', {})).status).toBe(201);
    const res = await api('POST', '/queues/limits/messages', undefined, JSON.stringify({ body: 'x'.repeat(MAX_REQUEST_BYTES) }));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'MessageSizeExceeded', retryable: false });
    expect(res.body.error.message).toContain(`the request is larger than ${MAX_REQUEST_BYTES} bytes`);
  });

  it('R10: every body the broker takes fits in an event Lambda accepts, with room for headers', async () => {
    const event = directApiEvent('POST', '/queues/limits/messages/batch', {
      headers: { authorization: rootToken(), 'x-long-header': 'h'.repeat(8 * 1024) },
      body: 'x'.repeat(MAX_REQUEST_BYTES),
      userAgent: 'test',
    });
    expect(payloadBytes(event)).toBeLessThan(LAMBDA_PAYLOAD_BYTES);
  });
});

describe('R10: a body that is not text counts as Lambda carries it, base64-encoded', () => {
  let runtime: LocalRuntime;
  beforeAll(async () => {
    runtime = await startTestRuntime('lambda-limits', { inMemory: true });
  }, 60_000);
  afterAll(async () => {
    await runtime?.stop();
  });

  it('R10: 4 MB of bytes (5.3 MB as base64, an event Lambda accepts) is refused by the broker itself with MessageSizeExceeded', async () => {
    const res = await fetch(`${runtime.url}/queues/anything/messages`, {
      method: 'POST',
      headers: { authorization: connectionStringToken(runtime), 'content-type': 'application/octet-stream' },
      body: Buffer.alloc(4 * MB, 0x31),
    });
    expect(res.status).toBe(413);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('MessageSizeExceeded');
    expect(body.error.message).toContain('base64');
  });
});
