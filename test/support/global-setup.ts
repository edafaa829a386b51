import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import { shortLivedJavaOptions, startDynamoDbLocal as startEmulator, type DynamoDbLocal } from '../../infra/local/dynamodb-local.js';

const startDynamoDbLocal = () => startEmulator({ javaOptions: shortLivedJavaOptions });

/** When the first spare emulators start: half the term a worker's emulator serves (emulator.ts `SERVICE_MS`). */
const FIRST_SPARES_AFTER_MS = 20_000;

/**
 * DynamoDB Local for the test workers, one at a time per worker (workerEndpoint() picks the
 * worker's), all started and stopped here so that no Java process outlives the run.
 *
 * The emulator keeps every stream record it ever wrote, of dropped tables too, and looks
 * through them on each write, so it slows for good as a run writes: after four heavy files, a
 * T4 receive behind 300 expired messages took 26 s instead of 5 s, and dropping every table
 * did not help. So a test's table has a stream only when the test reads it (table.ts
 * `TestTableOptions`), and a worker asks for a fresh emulator now and then (fresh-emulator.ts):
 * this process hands it a spare started ahead, stops the one it had, and starts the next spare.
 * The local runtime's tables keep their streams (its poller reads them).
 */
export default async function setup(project: TestProject) {
  const workers = Math.max(1, Number(project.config.maxWorkers) || 1);
  const current = await Promise.all(Array.from({ length: workers }, () => startDynamoDbLocal()));
  const spares: (Promise<DynamoDbLocal> | undefined)[] = current.map(() => undefined);
  const retired: Promise<void>[] = [];
  // A spare that fails to start fails the file that asks for it, not the whole run as an unhandled rejection.
  const startSpare = () => {
    const spare = startDynamoDbLocal();
    spare.catch(() => undefined);
    return spare;
  };

  const fresh = async (worker: number): Promise<string> => {
    const old = current[worker]!;
    const spare = spares[worker] ?? startDynamoDbLocal();
    spares[worker] = undefined;
    let next: DynamoDbLocal;
    try {
      next = await spare;
    } catch {
      // A spare that did not start (on a loaded machine, within its 30 s) must not be handed
      // out again: once it was, every later file of the worker failed. The worker keeps the
      // emulator it has, slower but sound, and asks again after its next term.
      spares[worker] = startSpare();
      return old.endpoint;
    }
    current[worker] = next;
    spares[worker] = startSpare();
    // The worker asks between its files: nothing of the old emulator's is in use any more.
    retired.push(old.stop());
    return next.endpoint;
  };

  const control = createServer((request, response) => {
    const worker = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('worker'));
    if (request.method !== 'POST' || !Number.isInteger(worker) || worker < 0 || worker >= workers) {
      response.writeHead(400).end();
      return;
    }
    fresh(worker).then(
      (endpoint) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ endpoint })),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  // The first spares start once the workers are well into their first emulator's term
  // (emulator.ts SERVICE_MS, 40 s): a short run (the Node 24 run's handler tests) ends before
  // it would swap, and starting a JVM it never uses cost it a core for seconds.
  const firstSpares = setTimeout(() => current.forEach((_, worker) => (spares[worker] ??= startSpare())), FIRST_SPARES_AFTER_MS);

  project.provide(
    'dynamoEndpoints',
    current.map((e) => e.endpoint),
  );
  project.provide('emulatorControl', `http://127.0.0.1:${(control.address() as AddressInfo).port}`);
  return async () => {
    clearTimeout(firstSpares);
    await new Promise<void>((resolve) => control.close(() => resolve()));
    const spareEmulators = await Promise.allSettled(spares);
    await Promise.all([...current.map((e) => e.stop()), ...spareEmulators.map((s) => (s.status === 'fulfilled' ? s.value?.stop() : undefined)), ...retired]);
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoints: string[];
    emulatorControl: string;
  }
}
