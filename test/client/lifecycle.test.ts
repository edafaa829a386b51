/**
 * sluice/client bundles for the browser (no Node imports), and no client object, timer
 * or socket keeps a Node process alive once the program's work is done, close() or not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { connectionStringFor, startRuntime } from './support.js';

describe('sluice/client in a browser bundle', () => {
  it('bundles with platform browser: fetch and Web Crypto only, no node: imports', async () => {
    const out = await build({
      entryPoints: [resolve('lib/client/index.ts')],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent',
    });
    const text = out.outputFiles[0]!.text;
    expect(text).not.toMatch(/from\s*["']node:|require\(["'](node:)?(crypto|http|https|net|fs|buffer)["']\)/);
    expect(text).toContain('crypto.subtle');
  });
});

describe('sluice/client as an installed package', () => {
  it("an app that links Sluice (as `npm install <path>` does) imports 'sluice/client' through package.json exports", async () => {
    await new Promise<void>((done, fail) =>
      spawn('npm', ['run', 'build:client'], { stdio: 'ignore' }).on('exit', (c) => (c === 0 ? done() : fail(new Error(`build:client exited ${c}`)))),
    );
    const app = mkdtempSync(join(tmpdir(), 'sluice-app-'));
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', type: 'module' }));
    mkdirSync(join(app, 'node_modules'));
    symlinkSync(resolve('.'), join(app, 'node_modules', 'sluice'), 'dir');
    writeFileSync(
      join(app, 'main.js'),
      `import { ServiceBusClient, ServiceBusAdministrationClient, AzureNamedKeyCredential, isServiceBusError, delay } from 'sluice/client';
console.log([ServiceBusClient, ServiceBusAdministrationClient, AzureNamedKeyCredential, isServiceBusError, delay].map((x) => typeof x).join(','));`,
    );
    const out = await new Promise<string>((done) => {
      let text = '';
      const child = spawn(process.execPath, ['main.js'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (d: Buffer) => (text += d));
      child.stderr.on('data', (d: Buffer) => (text += d));
      child.on('exit', () => done(text));
    });
    expect(out.trim()).toBe('function,function,function,function,function');
  }, 60_000);
});

describe('a finished program exits', () => {
  let runtime: LocalRuntime;
  beforeAll(async () => {
    runtime = await startRuntime('lifecycle');
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it('without close(): send, receive, renew, peek, admin, subscribe-close — the process ends on its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-client-'));
    const program = join(dir, 'program.mts');
    writeFileSync(
      program,
      `import { ServiceBusClient, ServiceBusAdministrationClient } from ${JSON.stringify(resolve('lib/client/index.ts'))};
const cs = process.env.CS!;
const admin = new ServiceBusAdministrationClient(cs);
await admin.createQueue('exit', { lockDuration: 'PT5S' });
const client = new ServiceBusClient(cs);
await client.createSender('exit').sendMessages([{ body: 1 }, { body: 2 }]);
const receiver = client.createReceiver('exit');
const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
await receiver.renewMessageLock(m!);
await receiver.peekMessages(5);
let handled = 0;
const sub = receiver.subscribe({ processMessage: async () => { handled++; }, processError: async () => {} });
while (handled < 1) await new Promise((r) => setTimeout(r, 50));
await sub.close();
console.log('done', handled);
`,
    );
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', program], {
      env: { ...process.env, CS: connectionStringFor(runtime) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const code = await new Promise<number | null>((done) => {
      const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
      child.on('exit', (c) => {
        clearTimeout(killer);
        done(c);
      });
    });
    expect(output).toContain('done 1');
    expect(code).toBe(0);
    // The first message's lock (renewed once, 5 s) ends long before the 45 s kill.
    expect(Date.now() - started).toBeLessThan(45_000);
  }, 60_000);
});
