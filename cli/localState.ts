import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { type LocalState, stateFilePath } from '../lib/local/LocalStack.js';

/**
 * Where the CLI finds the ledger, the queue and the archive: explicit options first (for AWS: `--table`,
 * `--queue-url`, `--region`), then `.local/state.json`, written by `sendproof local start`.
 */
export interface Target {
  region: string;
  ledgerTable: string;
  suppressionTable?: string;
  queueUrl?: string;
  dlqUrl?: string;
  endpointDynamoDb?: string;
  endpointSqs?: string;
  archiveDir?: string;
  simulator?: string;
  local?: LocalState;
}

export interface TargetOptions {
  table?: string;
  queueUrl?: string;
  dlqUrl?: string;
  region?: string;
  state?: string;
}

export const withTargetOptions = (command: Command): Command =>
  command
    .option('--table <name>', 'ledger table (default: the local stack from .local/state.json)')
    .option('--queue-url <url>', 'intake queue URL')
    .option('--dlq-url <url>', 'dead-letter queue URL')
    .option('--region <region>', 'AWS region', process.env.AWS_REGION)
    .option('--state <file>', 'local stack state file', stateFilePath());

export const readLocalState = (file = stateFilePath()): LocalState | undefined =>
  existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as LocalState) : undefined;

export const resolveTarget = (options: TargetOptions): Target => {
  const local = options.table ? undefined : readLocalState(options.state);
  const ledgerTable = options.table ?? local?.ledgerTable;
  if (!ledgerTable)
    throw new Error(
      'no ledger table: pass --table (AWS) or start the local stack with `sendproof local start`',
    );
  return {
    region: options.region ?? local?.region ?? 'us-east-1',
    ledgerTable,
    ...(local?.suppressionTable ? { suppressionTable: local.suppressionTable } : {}),
    ...((options.queueUrl ?? local?.queueUrl) ? { queueUrl: options.queueUrl ?? local?.queueUrl } : {}),
    ...((options.dlqUrl ?? local?.dlqUrl) ? { dlqUrl: options.dlqUrl ?? local?.dlqUrl } : {}),
    ...(local
      ? {
          endpointDynamoDb: local.dynamodb,
          endpointSqs: local.sqs,
          archiveDir: local.archiveDir,
          simulator: local.simulator,
          local,
        }
      : {}),
  };
};

/** Prints a result as JSON (`--json`) or as text. */
export const output = (json: boolean | undefined, value: unknown, text: () => string): void => {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
};
