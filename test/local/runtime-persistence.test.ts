import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../infra/local/runtime.js';
import { shortLivedJavaOptions } from '../../infra/local/dynamodb-local.js';
import { signToken } from '../../lib/auth/index.js';

/** /_local takes the root key. */
const rootHeaders = (runtime: LocalRuntime) => ({
  authorization: signToken({
    resourceUri: `${runtime.url}/`,
    keyName: 'RootManageSharedAccessKey',
    key: runtime.rootKey,
    expiresAt: Math.floor(Date.now() / 1000) + 3600,
  }),
});

const silent = { info: () => {}, error: () => {} };

/**
 * A runtime with its own DynamoDB Local, whose JVM starts with the options the run's emulators
 * get (global-setup.ts): it lives seconds, so the JIT's top tier only costs start-up time (each
 * of this file's three starts about 2 s less on two cores). The JVM reads them from the
 * environment the runtime spawns it with; nothing else in this worker runs meanwhile.
 */
async function startRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const before = process.env.JAVA_TOOL_OPTIONS;
  process.env.JAVA_TOOL_OPTIONS = [before, ...shortLivedJavaOptions].filter(Boolean).join(' ');
  try {
    return await startLocalRuntime(options);
  } finally {
    if (before === undefined) delete process.env.JAVA_TOOL_OPTIONS;
    else process.env.JAVA_TOOL_OPTIONS = before;
  }
}

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Java processes whose command line names this directory (only ours can). */
function javaProcessesFor(dir: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', `DynamoDBLocal.*${dir}`], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

describe('local runtime with its own DynamoDB Local', () => {
  const dirs: string[] = [];
  const runtimes: LocalRuntime[] = [];

  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.stop();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps data, the clock and the stream position across stop and start, and leaves no Java process', async () => {
    // prepare
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-local-'));
    dirs.push(dataDir);
    let streamed = 0;
    const options = {
      dataDir,
      port: 0,
      timers: false,
      streamPollMs: 0,
      logger: silent,
      handlers: {
        stream: async (event: { Records: unknown[] }) => {
          streamed += event.Records.length;
          return { batchItemFailures: [] };
        },
      },
    };

    // act: first run
    const first = await startRuntime(options);
    runtimes.push(first);
    expect(first.dynamoPid).toBeGreaterThan(0);
    expect(alive(first.dynamoPid)).toBe(true);
    await first.deps.db.send(new PutCommand({ TableName: first.deps.tableName, Item: { pk: 'msg/keep', sk: '1', v: 'kept' } }));
    const moved = await fetch(`${first.url}/_local/clock`, { method: 'POST', headers: rootHeaders(first), body: JSON.stringify({ advance: 'PT1H' }) });
    expect(moved.status).toBe(200);
    // one record, our item: the root authorization rule written at start (A1) is in the keys
    // table, which no stream carries
    expect(await first.runJob('streams')).toMatchObject({ records: 1 });
    await first.stop();
    runtimes.pop();

    // assess: nothing left running
    expect(alive(first.dynamoPid)).toBe(false);
    expect(javaProcessesFor(dataDir)).toEqual([]);
    expect(JSON.parse(readFileSync(join(dataDir, 'clock.json'), 'utf8'))).toMatchObject({ offsetMs: 3600_000 });
    expect(existsSync(join(dataDir, 'stream-checkpoint.json'))).toBe(true);

    // act: second run on the same data
    const second = await startRuntime(options);
    runtimes.push(second);

    // assess: the item, the broker's time and the stream position survived
    const got = await second.deps.db.send(new GetCommand({ TableName: second.deps.tableName, Key: { pk: 'msg/keep', sk: '1' } }));
    expect(got.Item).toMatchObject({ v: 'kept' });
    expect(second.clock.offset).toBeGreaterThanOrEqual(3600_000);
    expect(await second.runJob('streams')).toMatchObject({ records: 0 });
    expect(streamed).toBe(1); // nothing replayed after the restart

    await second.stop();
    runtimes.pop();
    expect(alive(second.dynamoPid)).toBe(false);
    expect(javaProcessesFor(dataDir)).toEqual([]);
  }, 180_000);

  it('keeps nothing on disk in memory; runs the stream poller and the job timers in the background', async () => {
    // prepare
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-local-mem-'));
    dirs.push(dataDir);
    const streamed: string[] = [];
    let sweeps = 0;
    let reaps = 0;
    const runtime = await startRuntime({
      dataDir,
      inMemory: true,
      port: 0,
      jobIntervalMs: 100,
      streamPollMs: 50,
      logger: silent,
      handlers: {
        stream: async (event) => {
          for (const r of event.Records) streamed.push(r.dynamodb?.Keys?.pk?.S ?? '?');
          return { batchItemFailures: [] };
        },
        sweeper: async () => ({ swept: ++sweeps }),
        reaper: async () => ({ reaped: ++reaps }),
      },
    });
    runtimes.push(runtime);
    expect(runtime.dataDir).toBeNull();

    // act
    await runtime.deps.db.send(new PutCommand({ TableName: runtime.deps.tableName, Item: { pk: 'msg/bg', sk: '1' } }));
    await fetch(`${runtime.url}/_local/clock`, { method: 'POST', headers: rootHeaders(runtime), body: JSON.stringify({ advance: 'PT1M' }) });
    for (let i = 0; i < 200 && (!streamed.includes('msg/bg') || sweeps < 2 || reaps < 2); i++) await new Promise((r) => setTimeout(r, 50));

    // assess
    // our item alone: the root authorization rule written at start (A1) is in the keys table, which has no stream
    expect(streamed).toEqual(['msg/bg']);
    expect(sweeps).toBeGreaterThanOrEqual(2);
    expect(reaps).toBeGreaterThanOrEqual(2);
    await runtime.stop();
    runtimes.pop();
    const after = sweeps;
    await new Promise((r) => setTimeout(r, 300));
    expect(sweeps).toBe(after);
    expect(alive(runtime.dynamoPid)).toBe(false);
    expect(existsSync(join(dataDir, 'clock.json'))).toBe(false);
    expect(existsSync(join(dataDir, 'stream-checkpoint.json'))).toBe(false);
    expect(existsSync(join(dataDir, 'shared-local-instance.db'))).toBe(false);
  }, 120_000);
});
