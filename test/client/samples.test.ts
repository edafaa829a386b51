/**
 * The promise: programs written for @azure/service-bus (samples/, type-checked against the
 * real SDK) run against the local runtime with only the import specifier changed.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient } from '../../lib/client/index.js';
import { connectionStringFor, startRuntime } from './support.js';
import { startTestRuntime } from '../support/runtime.js';

let runtime: LocalRuntime;
let admin: ServiceBusAdministrationClient;
const dir = mkdtempSync(join(tmpdir(), 'sluice-samples-'));

beforeAll(async () => {
  runtime = await startRuntime('samples');
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await runtime?.stop();
});

let copies = 0;

/**
 * The sample's source with `"@azure/service-bus"` swapped for Sluice's client: the only change.
 * Samples run a few at a time (each block is `describe.concurrent`): most of a sample's time is
 * its own waiting, for a scheduled time or a lock. Each run has a copy of its own.
 */
async function runSample(name: string, env: Record<string, string>, on: LocalRuntime = runtime): Promise<{ code: number | null; output: string }> {
  const source = readFileSync(resolve('samples', `${name}.ts`), 'utf8');
  const swapped = source.replace(/from "@azure\/service-bus"/g, `from ${JSON.stringify(resolve('lib/client/index.ts'))}`);
  if (swapped.includes('@azure/service-bus')) throw new Error(`${name}: the import was not swapped`);
  const file = join(dir, `${name}-${copies++}.mts`);
  writeFileSync(file, swapped);
  return new Promise((done) => {
    let output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      env: { ...process.env, SERVICEBUS_CONNECTION_STRING: connectionStringFor(on), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('exit', (code) => {
      clearTimeout(killer);
      done({ code, output });
    });
  });
}

const queueSamples: [string, Parameters<ServiceBusAdministrationClient['createQueue']>[1]][] = [
  ['sendMessages', {}],
  ['receiveMessagesLoop', {}],
  ['receiveMessagesStreaming', {}],
  ['browseMessages', {}],
  ['scheduledMessages', {}],
  ['deferral', {}],
  ['deadLetterQueue', {}],
  ['exceedMaxDeliveryCount', { maxDeliveryCount: 3 }],
  // Programs for sessions (named and next sessions, session state, round-robin with subscribe).
  ['session', { requiresSession: true }],
  ['sessionState', { requiresSession: true }],
  ['sessionRoundRobin', { requiresSession: true }],
];

describe.concurrent('SDK samples run unchanged but for the import', () => {
  for (const [name, options] of queueSamples) {
    it(
      name,
      async ({ expect }) => {
        const queue = `sample-${name.toLowerCase()}`;
        await admin.createQueue(queue, options);
        const { code, output } = await runSample(name, { QUEUE_NAME: queue });
        expect(output, output).not.toMatch(/Error occurred/);
        expect(code, output).toBe(0);
      },
      120_000,
    );
  }

  it('administrationClient', async ({ expect }) => {
    const { code, output } = await runSample('administrationClient', { QUEUE_NAME: 'sample-admin' });
    expect(code, output).toBe(0);
    expect(output).toContain('(Updated)max delivery count =  12');
  }, 120_000);

  it('topicFilters', async ({ expect }) => {
    const { code, output } = await runSample('topicFilters', { TOPIC_NAME: 'sample-orders' });
    expect(code, output).toBe(0);
    expect(output).toContain('RedOrders got red order; HighPriority got urgent');
  }, 120_000);
});

/**
 * The same programs on queues and subscriptions of the positioned layout (the deployment's
 * switch, lib/deps.ts `newEntityLayout`): sent into positions (a topic's fan-out too), received
 * by claim cursor and lease (`positions`) or by ticket (`tickets`), each settlement dispatched
 * on its token. Sessions stay on today's layout, so their samples are above only.
 */
describe.each([
  ['positions', 'claim cursor'],
  ['tickets', 'ticket'],
] as const)('SDK samples on positioned queues (%s: taken by %s)', { concurrent: true }, (layout, _takenBy) => {
  let positioned: LocalRuntime;
  let positionedAdmin: ServiceBusAdministrationClient;
  beforeAll(async () => {
    positioned = await startTestRuntime(`client-samples-${layout}`, { inMemory: true, newEntityLayout: layout });
    positionedAdmin = new ServiceBusAdministrationClient(connectionStringFor(positioned));
  });
  afterAll(async () => {
    await positioned?.stop();
  });

  for (const [name, options] of queueSamples.filter(([, o]) => !o?.requiresSession)) {
    it(
      name,
      async ({ expect }) => {
        const queue = `sample-${name.toLowerCase()}`;
        await positionedAdmin.createQueue(queue, options);
        const { code, output } = await runSample(name, { QUEUE_NAME: queue }, positioned);
        expect(output, output).not.toMatch(/Error occurred/);
        expect(code, output).toBe(0);
      },
      120_000,
    );
  }

  it('topicFilters', async ({ expect }) => {
    const { code, output } = await runSample('topicFilters', { TOPIC_NAME: 'sample-orders' }, positioned);
    expect(output, output).not.toMatch(/Error occurred/);
    expect(code, output).toBe(0);
    expect(output).toContain('RedOrders got red order; HighPriority got urgent');
  }, 120_000);
});
