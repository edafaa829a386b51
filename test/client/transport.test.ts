/**
 * Transport: connection strings, SAS tokens made with Web Crypto, B1 errors as
 * ServiceBusError, and retries proven against the local runtime behind a fault proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { parseAuthorizationHeader, signToken } from '../../lib/auth/sas.js';
import { baseUrlOf, parseServiceBusConnectionString, requestEndpoint } from '../../lib/client/connection-string.js';
import { AzureNamedKeyCredential, AzureSASCredential } from '../../lib/client/credentials.js';
import { createSasToken, SasTokenProvider } from '../../lib/client/sas.js';
import { HttpTransport } from '../../lib/client/transport.js';
import { backoffMs, resolveRetryOptions, RetryMode } from '../../lib/client/retry.js';
import { isServiceBusError, ServiceBusError } from '../../lib/client/errors.js';
import { ServiceBusClient } from '../../lib/client/client.js';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { FaultProxy, startRuntime } from './support.js';

describe('connection strings', () => {
  it('reads the SDK keys and maps endpoints to HTTP base URLs', () => {
    const cs = parseServiceBusConnectionString('Endpoint=sb://ns.example.com/;SharedAccessKeyName=Root;SharedAccessKey=a+b/c==;EntityPath=q');
    expect(cs).toEqual({
      endpoint: 'sb://ns.example.com/',
      fullyQualifiedNamespace: 'ns.example.com',
      sharedAccessKeyName: 'Root',
      sharedAccessKey: 'a+b/c==',
      entityPath: 'q',
    });
    expect(baseUrlOf('sb://ns.example.com/')).toBe('https://ns.example.com');
    expect(baseUrlOf('ns.example.com')).toBe('https://ns.example.com');
    expect(baseUrlOf('http://127.0.0.1:4284/')).toBe('http://127.0.0.1:4284');
    expect(baseUrlOf('https://api.example.com/prod/')).toBe('https://api.example.com/prod');
    expect(() => parseServiceBusConnectionString('SharedAccessKeyName=a;SharedAccessKey=b')).toThrow(/Endpoint/);
    expect(() => parseServiceBusConnectionString('Endpoint=sb://x/;SharedAccessKeyName=a')).toThrow(/SharedAccessKey/);
  });
});

describe('connection strings in emulator mode', () => {
  it('UseDevelopmentEmulator=true means plain HTTP to the endpoint host and port, as the newer Azure SDKs do', () => {
    const keys = 'SharedAccessKeyName=Root;SharedAccessKey=k';
    const cs = parseServiceBusConnectionString(`Endpoint=sb://127.0.0.1:4280/;${keys};UseDevelopmentEmulator=true`);
    expect(cs.useDevelopmentEmulator).toBe(true);
    expect(baseUrlOf(requestEndpoint(cs))).toBe('http://127.0.0.1:4280');
    expect(baseUrlOf(requestEndpoint(parseServiceBusConnectionString(`Endpoint=https://localhost:4281;${keys};usedevelopmentemulator=TRUE`)))).toBe(
      'http://localhost:4281',
    );
    const off = parseServiceBusConnectionString(`Endpoint=sb://ns.example.com/;${keys};UseDevelopmentEmulator=false`);
    expect(off.useDevelopmentEmulator).toBeUndefined();
    expect(baseUrlOf(requestEndpoint(off))).toBe('https://ns.example.com');
  });
});

describe('SAS tokens with Web Crypto', () => {
  it('sign exactly as the broker verifies (same token as lib/auth signToken)', async () => {
    const made = await createSasToken('http://127.0.0.1:4284/Queues/A', 'Root', 'k3y+/=', 2_000_000_000);
    expect(made).toBe(signToken({ resourceUri: 'http://127.0.0.1:4284/Queues/A', keyName: 'Root', key: 'k3y+/=', expiresAt: 2_000_000_000 }));
    expect(parseAuthorizationHeader(made).resource).toBe('http://127.0.0.1:4284/queues/a');
  });

  it('one token per audience, cached, renewed before expiry, re-signed after a key update', async () => {
    let now = 1_000_000_000_000;
    const credential = new AzureNamedKeyCredential('Root', 'key');
    const provider = new SasTokenProvider(credential, { now: () => now });
    const a1 = await provider.getToken('https://h/queues/a');
    expect(await provider.getToken('https://h/queues/a')).toBe(a1);
    expect(await provider.getToken('https://h/queues/b')).not.toBe(a1);
    now += 54 * 60_000; // 6 minutes left: still used
    expect(await provider.getToken('https://h/queues/a')).toBe(a1);
    now += 2 * 60_000; // 4 minutes left: renewed
    const a2 = await provider.getToken('https://h/queues/a');
    expect(a2).not.toBe(a1);
    expect(parseAuthorizationHeader(a2).expiry).toBe(Math.floor(now / 1000) + 3600);
    credential.update('Other', 'key2');
    expect(parseAuthorizationHeader(await provider.getToken('https://h/queues/a')).keyName).toBe('Other');
    expect(await new SasTokenProvider(new AzureSASCredential('SharedAccessSignature x')).getToken('any')).toBe('SharedAccessSignature x');
  });
});

describe('retry policy', () => {
  it('exponential backoff with jitter, capped; fixed mode stays flat', () => {
    const o = resolveRetryOptions({ retryDelayInMs: 100, maxRetryDelayInMs: 500 });
    expect(o).toMatchObject({ maxRetries: 3, timeoutInMs: 60_000, mode: RetryMode.Exponential });
    expect(backoffMs(o, 1, () => 0)).toBe(80);
    expect(backoffMs(o, 1, () => 1)).toBe(120);
    expect(backoffMs(o, 3, () => 0.5)).toBe(400);
    expect(backoffMs(o, 10, () => 0.5)).toBe(500);
    expect(backoffMs(resolveRetryOptions({ retryDelayInMs: 100, mode: RetryMode.Fixed }), 5, () => 0.5)).toBe(100);
  });
});

describe('transport against the local runtime', () => {
  let runtime: LocalRuntime;
  let proxy: FaultProxy;
  let key: AzureNamedKeyCredential;
  const transport = (options: { timeoutInMs?: number; maxRetries?: number } = {}) =>
    new HttpTransport(proxy.url + '/', key, { retryOptions: { retryDelayInMs: 1, maxRetryDelayInMs: 5, ...options } });
  const countOf = async (queue: string) => {
    const direct = new HttpTransport(runtime.url, key);
    const peek = await direct.request<{ messages: unknown[] }>({
      method: 'GET',
      path: `/queues/${queue}/messages`,
      query: { maxMessages: 100 },
      audience: `queues/${queue}`,
      idempotent: true,
    });
    return peek.body.messages.length;
  };

  beforeAll(async () => {
    runtime = await startRuntime('transport');
    proxy = await new FaultProxy(runtime.url).start();
    key = new AzureNamedKeyCredential('RootManageSharedAccessKey', runtime.rootKey);
    await new HttpTransport(runtime.url, key).request({ method: 'PUT', path: '/queues/t', body: {}, audience: 'queues/t', idempotent: true });
  });
  afterAll(async () => {
    await proxy?.stop();
    await runtime?.stop();
  });

  it('B1 error bodies become ServiceBusError with the SDK code', async () => {
    const error = await transport()
      .request({ method: 'GET', path: '/queues/absent', audience: 'queues/absent', idempotent: true })
      .catch((e: unknown) => e);
    expect(isServiceBusError(error)).toBe(true);
    expect(error).toBeInstanceOf(ServiceBusError);
    expect(error).toMatchObject({ code: 'MessagingEntityNotFound', retryable: false, info: { status: 404, brokerCode: 'EntityNotFound' } });
    const unauthorized = await new HttpTransport(runtime.url, new AzureNamedKeyCredential('RootManageSharedAccessKey', 'wrong'))
      .request({ method: 'GET', path: '/queues/t', audience: 'queues/t', idempotent: true })
      .catch((e: unknown) => e);
    expect(unauthorized).toMatchObject({ code: 'UnauthorizedAccess', retryable: false });
  });

  it('retries 503 and 429 (never applied), also for a send, without duplicating', async () => {
    proxy.faults.push('503', '429');
    await transport().request({ method: 'POST', path: '/queues/t/messages', body: { body: 'x' }, audience: 'queues/t', idempotent: false });
    expect(proxy.seen.slice(-3).map((s) => s.split(' ').at(-1))).toEqual(['503', '429', 'pass']);
    expect(await countOf('t')).toBe(1);
  });

  it('gives up after maxRetries with the last error', async () => {
    proxy.faults.push('503', '503', '503');
    const error = await transport({ maxRetries: 2 })
      .request({ method: 'GET', path: '/queues/t', audience: 'queues/t', idempotent: true })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ServiceBusy', retryable: true });
    proxy.faults.length = 0;
  });

  it('retries a reset connection and a timeout for an idempotent request', async () => {
    // The timeout leaves the attempt that passes room to answer on a loaded machine.
    proxy.faults.push('reset', { delayMs: 4000 });
    const res = await transport({ timeoutInMs: 2000 }).request<{ name?: string }>({ method: 'GET', path: '/queues/t', audience: 'queues/t', idempotent: true });
    expect(res.status).toBe(200);
    expect(proxy.seen.slice(-3).map((s) => s.split(' ').at(-1))).toEqual(['reset', '4000', 'pass']);
  });

  it('never retries a send that may have been applied (reset after forwarding, timeout)', async () => {
    const before = await countOf('t');
    proxy.faults.push('reset-after-forward');
    const reset = await transport()
      .request({ method: 'POST', path: '/queues/t/messages', body: { body: 'once' }, audience: 'queues/t', idempotent: false })
      .catch((e: unknown) => e);
    expect(reset).toMatchObject({ code: 'ServiceCommunicationProblem', retryable: true, info: { mayHaveBeenApplied: true } });
    proxy.faults.push({ delayMs: 1500 });
    const late = await transport({ timeoutInMs: 500 })
      .request({ method: 'POST', path: '/queues/t/messages', body: { body: 'once' }, audience: 'queues/t', idempotent: false })
      .catch((e: unknown) => e);
    expect(late).toMatchObject({ code: 'ServiceTimeout', retryable: true });
    await new Promise((r) => setTimeout(r, 1600));
    expect(await countOf('t')).toBe(before + 2);
  });

  it('a refused connection says so, as the SDK does (code, host:port), retryable', async () => {
    // A port that was free a moment ago: nothing listens there.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const client = new ServiceBusClient(`Endpoint=http://127.0.0.1:${port}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey}`, {
      retryOptions: { maxRetries: 1, retryDelayInMs: 1 },
    });
    const error = await client
      .createSender('queues/t')
      .sendMessages({ body: 'x' })
      .catch((e: unknown) => e);
    expect(isServiceBusError(error)).toBe(true);
    expect(error).toMatchObject({
      name: 'ServiceBusError',
      code: 'ServiceCommunicationProblem',
      retryable: true,
      message: `ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:${port}`,
      syscall: 'connect',
      address: '127.0.0.1',
      port,
    });
    await client.close();
  });

  it('honours an AbortSignal, also during a backoff', async () => {
    const aborted = new AbortController();
    aborted.abort();
    await expect(
      transport().request({ method: 'GET', path: '/queues/t', audience: 'queues/t', idempotent: true, abortSignal: aborted.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    proxy.faults.push('503');
    const later = new AbortController();
    const slow = new HttpTransport(proxy.url, key, { retryOptions: { retryDelayInMs: 10_000 } });
    const pending = slow.request({ method: 'GET', path: '/queues/t', audience: 'queues/t', idempotent: true, abortSignal: later.signal });
    setTimeout(() => later.abort(), 200);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});
