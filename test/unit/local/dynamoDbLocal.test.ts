import { describe, expect, it } from 'vitest';
import { JavaMissingError, startDynamoDbLocal } from '../../../lib/local/DynamoDbLocal.js';

describe('starting DynamoDB Local', () => {
  it('says how to install Java when java is not on PATH', async () => {
    // Prepare: a PATH with no java on it (this test runs in its own worker process)
    const saved = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      // Act / Assess
      const error = await startDynamoDbLocal().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JavaMissingError);
      expect(String((error as Error).message)).toMatch(/apt-get install -y openjdk-17-jre-headless/);
    } finally {
      process.env.PATH = saved;
    }
  });
});
