import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local.js';

/**
 * One DynamoDB Local per test worker (workerEndpoint() picks the worker's); each test file
 * makes its own table on it. The emulator applies one write at a time and slows down as a run
 * piles tables and load on it: with both workers on one, files late in the run took up to ten
 * times as long as alone (a T4 receive behind 300 expired messages 29 s instead of 3 s).
 */
export default async function setup(project: TestProject) {
  const workers = Math.max(1, Number(project.config.maxWorkers) || 1);
  const emulators = await Promise.all(Array.from({ length: workers }, () => startDynamoDbLocal()));
  project.provide(
    'dynamoEndpoints',
    emulators.map((e) => e.endpoint),
  );
  return async () => {
    await Promise.all(emulators.map((e) => e.stop()));
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoints: string[];
  }
}
