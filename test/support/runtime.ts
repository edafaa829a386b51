/**
 * The local runtime for tests that call it over HTTP as a client would: a table of its own on
 * the run's DynamoDB Local, a free port, and jobs and the stream poller run only when a test
 * asks (`runJob`), so nothing moves behind a test's back.
 */
import { randomUUID } from 'node:crypto';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../infra/local/runtime.js';
import { parseConnectionString, signToken } from '../../lib/auth/index.js';
import { workerEndpoint } from './emulator.js';

export const silentLogger = { info: () => {}, error: () => {} };

export function startTestRuntime(tablePrefix: string, options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  return startLocalRuntime({
    dynamoEndpoint: workerEndpoint(),
    tableName: `${tablePrefix}-${randomUUID().slice(0, 8)}`,
    port: 0,
    timers: false,
    streamPollMs: 0,
    logger: silentLogger,
    ...options,
  });
}

/** A1: the token a Service Bus client makes from the printed connection string, valid for an hour. */
export function connectionStringToken(runtime: LocalRuntime): string {
  const cs = parseConnectionString(runtime.connectionString);
  return signToken({ resourceUri: cs.endpoint, keyName: cs.sharedAccessKeyName, key: cs.sharedAccessKey, expiresAt: Math.floor(Date.now() / 1000) + 3600 });
}

/** A token signed with the runtime's root key for `resource` (its root by default), as `/_local` routes need. */
export function rootKeyToken(runtime: LocalRuntime, resource = `${runtime.url}/`): string {
  return signToken({ resourceUri: resource, keyName: 'RootManageSharedAccessKey', key: runtime.rootKey, expiresAt: Math.floor(Date.now() / 1000) + 3600 });
}
