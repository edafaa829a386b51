/**
 * `npm start -- --tls` says to trust its certificate with NODE_EXTRA_CA_CERTS: an unmodified
 * program using @azure/service-bus's admin client, started with it, reaches the runtime over
 * HTTPS with no option of its own.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { startTestRuntime } from '../support/runtime.js';

let runtime: LocalRuntime;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-tls-trust-'));
  runtime = await startTestRuntime('tls-trust', { tls: true, dataDir });
});
afterAll(async () => {
  await runtime?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('local HTTPS trusted through NODE_EXTRA_CA_CERTS', () => {
  it('an unmodified admin-client program creates and reads a queue', async () => {
    expect(runtime.url).toMatch(/^https:\/\//);
    expect(runtime.certificate?.file).toBe(join(dataDir, 'tls', 'cert.pem'));
    const program = `
      const { ServiceBusAdministrationClient } = require('@azure/service-bus');
      const admin = new ServiceBusAdministrationClient(process.env.CS);
      admin.createQueue('trusted').then(() => admin.getQueue('trusted')).then((q) => console.log(q.name), (e) => { console.error(e.code, e.message); process.exit(1); });
    `;
    const cs = `Endpoint=sb://127.0.0.1:${runtime.port}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey}`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', program], {
      env: { ...process.env, CS: cs, NODE_EXTRA_CA_CERTS: runtime.certificate!.file! },
      cwd: process.cwd(),
    });
    expect(stdout.trim()).toBe('trusted');
  });
});
