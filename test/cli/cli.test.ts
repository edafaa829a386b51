/**
 * CLI: `sluice` driven as a process (bin/sluice.js, as `npx sluice` runs it) against the
 * local runtime over HTTP. The runtime keeps its data folder in a temporary directory, so
 * the CLI finds the connection string there as it does next to `npm start`.
 *
 * Every run spawns bin/sluice.js on the bundle `npm run build:cli` makes (dist/cli/sluice.js,
 * rebuilt once in beforeAll from the current sources), exactly what `npx sluice` runs. Independent
 * commands run side by side, and a test's setup that is not what it is about (creating its
 * entities) goes over HTTP, since the first test already drives create for each kind of entity
 * through the CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime.js';
import { parseAuthorizationHeader, verifySignature } from '../../lib/auth/index.js';
import { AzureNamedKeyCredential } from '../../lib/client/credentials.js';
import { HttpTransport } from '../../lib/client/transport.js';
import { FaultProxy } from '../client/support.js';
import type { Json } from '../support/api.js';
import { workerEndpoint } from '../support/emulator.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'bin/sluice.js');

let runtime: LocalRuntime;
let broker: HttpTransport;
let dataDir: string;
let emptyDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
  emptyDir = mkdtempSync(join(tmpdir(), 'sluice-cli-empty-'));
  execFileSync(process.execPath, ['tools/build-cli.mjs'], { cwd: root });
  runtime = await startLocalRuntime({
    dynamoEndpoint: workerEndpoint(),
    tableName: `cli-${randomUUID().slice(0, 8)}`,
    dataDir,
    port: 0,
    timers: false,
    streamPollMs: 0, // counts are not asserted here; the poller's logs would only be noise
    logger: { info: () => {}, error: () => {} },
  });
  broker = new HttpTransport(runtime.url, new AzureNamedKeyCredential('RootManageSharedAccessKey', runtime.rootKey));
});

/** Setup over HTTP with the root key (no spawn): PUT or POST `body` at `path`. */
async function direct(method: 'PUT' | 'POST', path: string, body: unknown = {}): Promise<void> {
  const res = await broker.request({ method, path: `/${path}`, body, audience: path.split('/messages')[0]!, idempotent: method === 'PUT' });
  expect(res.status).toBeLessThan(300);
}

afterAll(async () => {
  await runtime?.stop();
  for (const dir of [dataDir, emptyDir]) if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface StartOptions {
  env?: Record<string, string>;
  cwd?: string;
}

function start(args: string[], options: StartOptions = {}): ChildProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  if (!options.env?.SLUICE_CONNECTION_STRING) delete env.SLUICE_CONNECTION_STRING;
  return spawn(process.execPath, [bin, ...args], { cwd: options.cwd ?? dataDir, env, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Runs `sluice ARGS` with the data folder as the working directory (so `.sluice/` is not needed: --data). */
function sluice(args: string[], options: StartOptions & { input?: string; data?: string } = {}): Promise<Run> {
  const child = start(['--data', options.data ?? dataDir, ...args], options);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  if (options.input !== undefined) child.stdin!.end(options.input);
  else child.stdin!.end();
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Runs and expects success; returns stdout parsed as JSON. */
async function json<T = Json>(args: string[], options: Parameters<typeof sluice>[1] = {}): Promise<T> {
  const run = await sluice([...args, '--json'], options);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as T;
}

// Generous: on a loaded machine a spawn can take seconds; nothing here asserts speed.
describe('sluice CLI as a process', { timeout: 300_000 }, () => {
  it('queue, topic, subscription and rule: create, show, list, update, delete', async () => {
    await Promise.all([
      (async () => {
        const created = await json(['queue', 'create', 'cli-q', '--lock-duration', 'PT30S', '--max-delivery-count', '2', '--requires-session']);
        expect(created).toMatchObject({ name: 'cli-q', lockDuration: 'PT30S', maxDeliveryCount: 2, requiresSession: true });
        // create does not replace (as the SDK's createQueue): exit 5, nothing changed
        const again = await sluice(['queue', 'create', 'cli-q', '--max-delivery-count', '9']);
        expect(again.code).toBe(5);
        expect(again.stderr).toMatch(/^error: MessageEntityAlreadyExistsError: .*'queues\/cli-q' already exists; change it with update\n$/);
        const updated = await json(['queue', 'update', 'cli-q', '--max-delivery-count', '5', '--default-message-time-to-live', 'PT1H']);
        expect(updated).toMatchObject({ lockDuration: 'PT30S', maxDeliveryCount: 5, defaultMessageTimeToLive: 'PT1H', runtime: { activeMessageCount: 0 } });
        const [list, shown] = await Promise.all([sluice(['queue', 'list']), sluice(['queue', 'show', 'cli-q'])]);
        expect(list.stdout).toMatch(/^NAME +STATUS +ACTIVE +DEAD-LETTER/);
        expect(list.stdout).toMatch(/\ncli-q +Active +0 +0 +0 +PT30S +5\n/);
        expect(shown.stdout).toMatch(/maxDeliveryCount +5\n/);
        expect(shown.stdout).toMatch(/runtime:\n(?: +\w+ +.*\n)* +activeMessageCount +0\n/);
        expect((await sluice(['queue', 'delete', 'cli-q'])).code).toBe(0);
        const gone = await sluice(['queue', 'show', 'cli-q']);
        expect(gone.code).toBe(3);
      })(),
      (async () => {
        await json(['topic', 'create', 'cli-t', '--default-message-time-to-live', 'PT10M']);
        await json(['subscription', 'create', 'cli-t', 'audit', '--max-delivery-count', '3']);
        const rule = await json(['rule', 'create', 'cli-t', 'audit', 'red', '--sql', "color = 'red'", '--action', "SET seen = 'yes'"]);
        // the SDK's RuleProperties shapes
        expect(rule).toMatchObject({ name: 'red', filter: { sqlExpression: "color = 'red'" }, action: { sqlExpression: "SET seen = 'yes'" } });
        const updated = await json(['rule', 'update', 'cli-t', 'audit', 'red', '--correlation-id', 'c1', '--property', 'region=eu']);
        expect(updated.filter).toEqual({ correlationId: 'c1', applicationProperties: { region: 'eu' } });
        expect(updated.action).toEqual({ sqlExpression: "SET seen = 'yes'" });
        const [rules, subs, topics, sub] = await Promise.all([
          json(['rule', 'list', 'cli-t', 'audit']),
          json(['subscription', 'list', 'cli-t']),
          json(['topic', 'list']),
          json(['subscription', 'update', 'cli-t', 'audit', '--status', 'ReceiveDisabled']),
        ]);
        expect(rules.map((r: { name: string }) => r.name).sort()).toEqual(['$Default', 'red']);
        expect(subs.map((s: { subscriptionName: string }) => s.subscriptionName)).toEqual(['audit']);
        expect(topics.map((t: { name: string }) => t.name)).toContain('cli-t');
        expect(sub).toMatchObject({ topicName: 'cli-t', subscriptionName: 'audit', maxDeliveryCount: 3, status: 'ReceiveDisabled' });
        expect((await sluice(['rule', 'delete', 'cli-t', 'audit', '$Default'])).code).toBe(0);
        expect((await json(['rule', 'show', 'cli-t', 'audit', 'red'])).name).toBe('red');
        expect((await sluice(['subscription', 'delete', 'cli-t', 'audit'])).code).toBe(0);
        expect((await sluice(['topic', 'delete', 'cli-t'])).code).toBe(0);
        expect((await sluice(['topic', 'show', 'cli-t'])).code).toBe(3);
      })(),
    ]);
  });

  it('send from an argument, a file and stdin with properties; peek by state; receive with each settlement', async () => {
    await direct('PUT', 'queues/cli-m', { maxDeliveryCount: 5 });
    const file = join(dataDir, 'body.txt');
    writeFileSync(file, 'from a file');
    const fromArg = await json(['send', 'cli-m', '{"id":1}', '-p', 'color=red', '-p', 'n=3', '-p', 'ok=true', '--message-id', 'm-1']);
    expect(fromArg).toMatchObject({ messageId: 'm-1', sequenceNumber: expect.stringMatching(/^\d+$/) });
    await json(['send', 'queues/cli-m', '--file', file, '--subject', 's-file']);
    await json(['send', 'cli-m', '--property', 'via=stdin'], { input: '[1,2,3]' });
    await json(['send', 'cli-m', 'later', '--schedule', 'PT1H']);

    const all = await json(['peek', 'cli-m']);
    expect(all.map((m: { body: unknown }) => m.body)).toEqual([{ id: 1 }, 'from a file', [1, 2, 3], 'later']);
    expect(all[0].applicationProperties).toEqual({ color: 'red', n: 3, ok: true });
    expect(all[1]).toMatchObject({ subject: 's-file' });
    expect(all[2].applicationProperties).toEqual({ via: 'stdin' });
    expect(all.map((m: { state: string }) => m.state)).toEqual(['active', 'active', 'active', 'scheduled']);
    const [scheduled, table] = await Promise.all([json(['peek', 'cli-m', '--state', 'Scheduled']), sluice(['peek', 'cli-m', '--max', '1'])]);
    expect(scheduled.map((m: { body: unknown }) => m.body)).toEqual(['later']);
    expect(table.stdout).toMatch(/^SEQUENCE +STATE +DELIVERIES +ENQUEUED +MESSAGE-ID +PROPERTIES +BODY\n\d+ +active +0 .* m-1 .*\{"id":1\}\n$/);

    // R4/R5: abandon puts it back with its delivery count raised; dead-letter moves it; complete removes it
    const abandoned = await json(['receive', 'cli-m', '--abandon']);
    expect(abandoned).toMatchObject([{ messageId: 'm-1', deliveryCount: 1 }]);
    const deadLettered = await json(['receive', 'cli-m', '--dead-letter', 'bad order', '--description', 'no stock']);
    expect(deadLettered).toMatchObject([{ messageId: 'm-1', deliveryCount: 2 }]);
    const completed = await json(['receive', 'cli-m', '--max', '5', '--wait', '1']);
    expect(completed.map((m: { body: unknown }) => m.body)).toEqual(['from a file', [1, 2, 3]]);
    // (the receive of nothing and the refused one change nothing, so they run beside the peeks)
    const [left, dead, none, both] = await Promise.all([
      json(['peek', 'cli-m']),
      json(['peek', 'cli-m', '--dead-letter']),
      json(['receive', 'cli-m']),
      sluice(['receive', 'cli-m', '--complete', '--abandon']),
    ]);
    expect(left.map((m: { state: string }) => m.state)).toEqual(['scheduled']);
    expect(dead).toMatchObject([{ messageId: 'm-1', deadLetterReason: 'bad order', deadLetterErrorDescription: 'no stock' }]);
    // a receive of nothing is not an error
    expect(none).toEqual([]);
    expect(both.code).toBe(2);
  });

  it('D7: dlq resubmit and purge, past one page of messages', async () => {
    await direct('PUT', 'queues/cli-d');
    const sent = await json(['send', 'cli-d', 'x', '--count', '105']);
    expect(sent).toHaveLength(105);
    const received = await json(['receive', 'cli-d', '--max', '105', '--dead-letter', 'test']);
    expect(received).toHaveLength(105);
    expect(await json(['dlq', 'resubmit', 'cli-d', '--max', '30'])).toEqual({ resubmitted: 30 });
    const [active, dead] = await Promise.all([json(['peek', 'cli-d', '--max', '1000']), json(['peek', 'cli-d/$deadletterqueue', '--max', '1000'])]);
    expect(active).toHaveLength(30);
    expect(dead).toHaveLength(75);
    expect(active[0]).not.toHaveProperty('deadLetterReason');
    const purge = await sluice(['dlq', 'purge', 'cli-d']);
    expect(purge).toMatchObject({ code: 0, stdout: 'purged 75 messages from cli-d/$deadletterqueue\n', stderr: '' });
    expect(await json(['peek', 'cli-d', '--dead-letter'])).toEqual([]);
  });

  it('tail prints a message sent after it started, then stops on SIGINT with exit 0', async () => {
    await direct('PUT', 'queues/cli-tail');
    await direct('POST', 'queues/cli-tail/messages', { body: 'old' });
    const child = start(['--data', dataDir, 'tail', 'cli-tail', '--json']);
    let stdout = '';
    let stderr = '';
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    const seen = (pattern: RegExp, stream: () => string) =>
      new Promise<void>((resolve) => {
        const check = () => (pattern.test(stream()) ? resolve() : setTimeout(check, 50));
        check();
      });
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await seen(/following cli-tail/, () => stderr);
    await json(['send', 'cli-tail', '{"n":"new"}']);
    await seen(/\n/, () => stdout);
    child.kill('SIGINT');
    expect(await closed).toBe(0);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { body: unknown });
    expect(lines.map((m) => m.body)).toEqual([{ n: 'new' }]);
  });

  it('exit codes: not found 3, unauthorized 4, bad input 2, unreachable 6; errors in one line', async () => {
    const badKey = runtime.connectionString.replace(/SharedAccessKey=[^;]+/, 'SharedAccessKey=d3Jvbmc=');
    const runs = await Promise.all([
      sluice(['queue', 'show', 'no-such-queue']),
      sluice(['send', 'no-such-entity', 'x']),
      sluice(['--connection-string', badKey, 'queue', 'list']),
      sluice(['queue', 'list'], { data: emptyDir }),
      sluice(['queue', 'create', 'x', '--lock-duration', 'PT10M']),
      sluice(['queue', 'create', 'bad name']),
      sluice(['peek', 'q', '--max', 'lots']),
      sluice(['frobnicate']),
      sluice(['--connection-string', 'Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=a;SharedAccessKey=b', 'queue', 'list']),
      // the option wins over the environment, and the environment over the data folder
      sluice(['queue', 'list', '--json'], { env: { SLUICE_CONNECTION_STRING: badKey } }),
      sluice(['--connection-string', runtime.connectionString, 'queue', 'list', '--json'], { env: { SLUICE_CONNECTION_STRING: badKey } }),
    ]);
    const [notFound, sendNotFound, unauthorized, noConnection, badValue, badName, badNumber, unknown, unreachable, envWins, optionWins] = runs;
    expect(notFound).toMatchObject({ code: 3, stdout: '' });
    expect(notFound!.stderr).toMatch(/^error: EntityNotFound: .*queue list.*\n$/);
    expect(sendNotFound).toMatchObject({
      code: 3,
      stderr: 'error: no queue or topic named no-such-entity; check the name (sluice queue list, sluice topic list)\n',
    });
    expect(unauthorized).toMatchObject({ code: 4 });
    expect(unauthorized!.stderr).toMatch(/^error: Unauthorized: .*; check the connection string and its key\n$/);
    expect(noConnection).toMatchObject({ code: 4 });
    expect(noConnection!.stderr).toMatch(/^error: no connection string: .*SLUICE_CONNECTION_STRING.*npm start\)\n$/);
    expect(badValue).toMatchObject({ code: 2, stderr: 'error: --lock-duration: must be at most PT5M; see sluice queue create --help\n' });
    expect(badName).toMatchObject({ code: 2 });
    expect(badNumber).toMatchObject({ code: 2 });
    expect(badNumber!.stderr).toMatch(/--max.*whole number/);
    expect(unknown).toMatchObject({ code: 2 });
    expect(unreachable).toMatchObject({ code: 6 });
    expect(unreachable!.stderr).toMatch(/^error: Could not reach http:\/\/127\.0\.0\.1:1.*; is the broker running \(npm start\)\?.*\n$/);
    expect(envWins).toMatchObject({ code: 4 });
    expect(optionWins.code).toBe(0);
    expect(Array.isArray(JSON.parse(optionWins.stdout))).toBe(true);
    for (const run of runs) expect(run.stderr).not.toContain(runtime.rootKey);
    expect(badName!.stderr.trim().split('\n')).toHaveLength(1);
  });

  it("the process stays up through a retry's back-off (the client's delay holds it; no keep-alive of the CLI's own)", async () => {
    const proxy = await new FaultProxy(runtime.url).start();
    try {
      proxy.faults.push('503', '503'); // the CLI retries twice, 0.5 s and then about 1 s later
      const run = await sluice(['--connection-string', runtime.connectionString.replace(runtime.url, proxy.url), 'queue', 'list', '--json']);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(Array.isArray(JSON.parse(run.stdout))).toBe(true);
      expect(proxy.seen.map((s) => s.split(' ').at(-1)).slice(0, 3)).toEqual(['503', '503', 'pass']);
    } finally {
      await proxy.stop();
    }
  });

  it('Azure-style EntityPath with keys scoped to one entity (queue: send and peek; subscription: peek)', async () => {
    await Promise.all([
      direct('PUT', 'queues/cli-scoped'),
      direct('PUT', 'topics/cli-scoped-t').then(() => direct('PUT', 'topics/cli-scoped-t/subscriptions/mine')),
    ]);
    const keyOf = async (path: string, rights: string[]) =>
      (
        await broker.request<{ primaryKey: string }>({
          method: 'PUT',
          path: `/${path}/authorization-rules/app`,
          body: { rights },
          audience: path,
          idempotent: true,
        })
      ).body.primaryKey;
    const queueKey = await keyOf('queues/cli-scoped', ['Send', 'Listen']);
    const subKey = await keyOf('topics/cli-scoped-t/subscriptions/mine', ['Listen']);
    const cs = (key: string, entityPath: string) => [
      '--connection-string',
      `Endpoint=${runtime.url}/;SharedAccessKeyName=app;SharedAccessKey=${key};EntityPath=${entityPath}`,
    ];
    await json([...cs(queueKey, 'cli-scoped'), 'send', 'queues/cli-scoped', 'hello']);
    await json(['send', 'cli-scoped-t', 'news']);
    const [fromQueue, fromSub] = await Promise.all([
      json([...cs(queueKey, 'cli-scoped'), 'peek', 'cli-scoped']),
      json([...cs(subKey, 'cli-scoped-t/Subscriptions/mine'), 'peek', 'cli-scoped-t/mine']),
    ]);
    expect(fromQueue.map((m: { body: unknown }) => m.body)).toEqual(['hello']);
    expect(fromSub.map((m: { body: unknown }) => m.body)).toEqual(['news']);
  });

  it('A1 token: signed with the key found in the data folder', async () => {
    // as `npm run token` runs it (node bin/sluice.js token)
    const [run, plain] = await Promise.all([sluice(['token', '--resource', '/queues/a', '--ttl', '60']), sluice(['token'])]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const token = parseAuthorizationHeader(run.stdout.trim());
    expect(token).toMatchObject({ resource: '/queues/a', keyName: 'RootManageSharedAccessKey' });
    expect(verifySignature(token, runtime.rootKey, Math.floor(Date.now() / 1000))).toBe(true);
    // and the token works against the broker, as the README's curl walk-through uses it
    const res = await fetch(`${runtime.url}/queues`, { headers: { authorization: plain.stdout.trim() } });
    expect(res.status).toBe(200);
  });
});
