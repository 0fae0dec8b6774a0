import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { COMMAND_LOG_ENV } from '../../lib/aws/commandLog.js';
import { startDynamoDbLocal } from '../../lib/local/DynamoDbLocal.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/** Where a run's AWS command log lives: one folder per vitest process (test/infra/iamCommands.test.ts). */
export const COMMAND_LOG_ROOT = join(tmpdir(), 'sendproof-aws-commands');
export const commandLogDirOf = (vitestPid: number): string => join(COMMAND_LOG_ROOT, String(vitestPid));

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Turns the AWS command recorder on for the whole run (lib/aws/commandLog.ts): every test file and every
 * process it starts inherits the folder, and the IAM check (a later project group) reads it. A folder
 * already given (the IAM check's own recording run) is kept; folders of finished runs are removed.
 */
const startCommandLog = (): void => {
  if (process.env[COMMAND_LOG_ENV]) return;
  mkdirSync(COMMAND_LOG_ROOT, { recursive: true });
  for (const entry of readdirSync(COMMAND_LOG_ROOT))
    if (/^\d+$/.test(entry) && !alive(Number(entry)))
      rmSync(join(COMMAND_LOG_ROOT, entry), { recursive: true, force: true });
  const dir = commandLogDirOf(process.pid);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  process.env[COMMAND_LOG_ENV] = dir;
};

/** Starts one AWS DynamoDB Local for the whole run and stops it by PID afterwards. */
export default async function setup(project: TestProject) {
  startCommandLog();
  const db = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', db.endpoint);
  return async () => {
    await db.stop();
  };
}
