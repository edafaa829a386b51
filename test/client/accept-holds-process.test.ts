/**
 * N2 as a program sees it: `await client.acceptNextSession(q)` on a queue with no session
 * ready keeps a Node process running until a session comes, as the SDK's pending call does
 * (and as a pending `subscribe` does here). The hint it waits on travels on an unref'd socket,
 * so nothing else would hold the process: without this, the program ends in the middle of
 * the await, printing nothing (Microsoft's sessionRoundRobin sample stops that way).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, ServiceBusClient } from '../../lib/client/index.js';
import { rootKeyToken } from '../support/runtime.js';
import { connectionStringFor, startRuntime } from './support.js';

let runtime: LocalRuntime;
let admin: ServiceBusAdministrationClient;
let client: ServiceBusClient;

beforeAll(async () => {
  runtime = await startRuntime('accept-holds');
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
  client = new ServiceBusClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await client?.close();
  await runtime?.stop();
});

/** The program: one await of acceptNextSession, then print what it got. Nothing else keeps it running. */
const program = (clientModule: string) => `
import { ServiceBusClient } from ${JSON.stringify(clientModule)};
const client = new ServiceBusClient(process.env.CS);
console.log('waiting');
const receiver = await client.acceptNextSession(process.env.QUEUE);
const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 0 });
console.log('accepted', receiver.sessionId, message?.body);
await client.close();
`;

describe('N2: a pending acceptNextSession holds the process', () => {
  it('N2: a program awaiting acceptNextSession on an empty session queue runs until a session is sent, then prints and exits', async () => {
    // prepare
    const queue = 'holds';
    await admin.createQueue(queue, { requiresSession: true });
    const file = join(mkdtempSync(join(tmpdir(), 'sluice-accept-')), 'accept.mts');
    writeFileSync(file, program(resolve('lib/client/index.ts')));
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      env: { ...process.env, CS: connectionStringFor(runtime), QUEUE: queue },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    let exitCode: number | null | undefined;
    void exited.then((code) => (exitCode = code));
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);

    try {
      // act: the program finds no session and waits; a while later a session is sent
      while (!output.includes('waiting') && exitCode === undefined) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 4_000));
      const aliveWhileWaiting = exitCode === undefined;
      await client.createSender(queue).sendMessages({ body: 'hello', sessionId: 'late' });
      // The stream poller posts the hint (the local runtime's timers are off in tests).
      const job = await fetch(`${runtime.url}/_local/jobs/streams`, { method: 'POST', headers: { authorization: rootKeyToken(runtime) } });
      expect(job.status).toBe(200);
      const code = await exited;

      // assess
      expect(aliveWhileWaiting, output).toBe(true);
      expect(code, output).toBe(0);
      expect(output).toContain('accepted late hello');
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
  }, 120_000);
});
