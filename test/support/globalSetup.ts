import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../lib/local/DynamoDbLocal.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/** Starts one AWS DynamoDB Local for the whole run and stops it by PID afterwards. */
export default async function setup(project: TestProject) {
  const db = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', db.endpoint);
  return async () => {
    await db.stop();
  };
}
