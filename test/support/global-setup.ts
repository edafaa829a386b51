import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local.js';

/** One DynamoDB Local for the whole run; each test file makes its own table. */
export default async function setup(project: TestProject) {
  const ddb = await startDynamoDbLocal();
  project.provide('dynamoEndpoint', ddb.endpoint);
  return async () => {
    await ddb.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
