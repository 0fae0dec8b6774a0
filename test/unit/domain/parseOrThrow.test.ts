import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import {
  type BackfillOptions,
  drainFailureQueue,
  parseFailureMessage,
} from '../../../lib/archive/backfill.js';
import { parseOrThrow } from '../../../lib/domain/parseOrThrow.js';
import { BUILT_IN_PURPOSES, PurposeRegistry } from '../../../lib/domain/purposes.js';
import { PACKAGE_ROOT } from '../../../lib/packageRoot.js';
import { rateSettingsSchema } from '../../../lib/rate/settings.js';
import { sourceFiles } from '../../support/sourceFiles.js';

// Classic zod (before the move to zod/mini, commit 8fcfbe3) threw an Error named `ZodError` from
// `schema.parse`; zod/mini's own parse throws the core class, named `$ZodError`. Callers record the name.
describe('a schema that throws names its error ZodError, as classic zod did', () => {
  it('a malformed failure message is reported on the backfill drain as `<id>: ZodError`', async () => {
    // Prepare: one message on the failure queue whose body is not Lambda's on-failure record
    const sent: string[] = [];
    let received = false;
    const sqs = {
      send: async (command: { constructor: { name: string } }) => {
        sent.push(command.constructor.name);
        if (command.constructor.name !== 'ReceiveMessageCommand') return {};
        if (received) return { Messages: [] };
        received = true;
        return { Messages: [{ MessageId: 'm-1', ReceiptHandle: 'r-1', Body: '{"DDBStreamBatchInfo":{}}' }] };
      },
    } as unknown as SQSClient;

    // Act
    const result = await drainFailureQueue({
      ...({} as BackfillOptions),
      sqs,
      queueUrl: 'http://127.0.0.1/q',
    });

    // Assess: kept on the queue (no delete), and the report names the error as before
    expect(result).toMatchObject({ batches: 0, failed: 1, errors: ['m-1: ZodError'] });
    expect(sent).not.toContain('DeleteMessageCommand');
  });

  it('keeps the issues and the JSON message, and is an Error', () => {
    let thrown: unknown;
    try {
      parseFailureMessage('{}');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect((thrown as Error).name).toBe('ZodError');
    const issues = (thrown as { issues: { path: PropertyKey[]; message: string }[] }).issues;
    expect(issues[0]).toMatchObject({
      path: ['shardId'],
      message: 'Invalid input: expected string, received undefined',
    });
    expect(JSON.parse((thrown as Error).message)).toHaveLength(issues.length);
  });

  it('an invalid purpose policy given to the registry throws a ZodError', () => {
    const bad = { ...BUILT_IN_PURPOSES[0]!, maxAttempts: 0 };
    expect(() => new PurposeRegistry([bad])).toThrow(expect.objectContaining({ name: 'ZodError' }));
  });

  it('returns the parsed output (defaults applied) when the value is valid', () => {
    expect(parseOrThrow(rateSettingsSchema(), {})).toEqual(rateSettingsSchema().parse({}));
  });

  it("no product module calls a schema's own parse (it would throw `$ZodError`)", () => {
    const files = sourceFiles('lib', 'cli', 'infra', 'functions').map((file) => join(PACKAGE_ROOT, file));
    // JSON, Date and Mustache have a parse of their own; a zod schema's goes through parseOrThrow.
    const direct = files
      .filter((file) => !file.endsWith('parseOrThrow.ts'))
      .flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/\b(\w+)\.parse\(/g)]
          .map((m) => m[1]!)
          .filter((receiver) => !['JSON', 'Date', 'Mustache'].includes(receiver))
          .map((receiver) => `${relative(PACKAGE_ROOT, file)}: ${receiver}.parse`),
      );
    expect(direct).toEqual([]);
  });
});
