import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { type Config, configSchema, ENV, loadConfig } from '../lib/config.js';
import { parseOrThrow } from '../lib/domain/parseOrThrow.js';
import type { OperatorQueries } from '../lib/ledger/operatorQueries.js';
import type { Ledger } from '../lib/ledger/port.js';
import { type LocalState, stateFilePath } from '../lib/local/LocalStack.js';
import { documentClientFor, ledgerFor as ledgerFromConfig, operatorQueriesFor } from '../lib/wiring.js';

/**
 * Where the CLI finds the ledger, the queue and the archive: explicit options first (for AWS: `--table`,
 * `--queue-url`, `--region`), then `.local/state.json`, written by `sendproof local start`.
 */
export interface Target {
  region: string;
  /** Absent when neither --table nor a local stack names one; commands that read the ledger require it. */
  ledgerTable?: string;
  queueUrl?: string;
  dlqUrl?: string;
  endpointDynamoDb?: string;
  endpointSqs?: string;
  archiveDir?: string;
  local?: LocalState;
}

export interface TargetOptions {
  endpointDynamodb?: string;
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
    .option('--endpoint-dynamodb <url>', 'DynamoDB endpoint (local servers; default: the local stack)')
    .option('--state <file>', 'local stack state file', stateFilePath());

export const readLocalState = (file = stateFilePath()): LocalState | undefined =>
  existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as LocalState) : undefined;

export const resolveTarget = (options: TargetOptions): Target => {
  // Explicit AWS options win; the local stack's state fills in only when none were given.
  const local = options.table || options.queueUrl ? undefined : readLocalState(options.state);
  const ledgerTable = options.table ?? local?.ledgerTable;
  const endpointDynamoDb = options.endpointDynamodb ?? local?.dynamodb;
  const queueUrl = options.queueUrl ?? local?.queueUrl;
  const dlqUrl = options.dlqUrl ?? local?.dlqUrl;
  return {
    region: options.region ?? local?.region ?? 'us-east-1',
    ...(ledgerTable ? { ledgerTable } : {}),
    ...(endpointDynamoDb ? { endpointDynamoDb } : {}),
    ...(queueUrl ? { queueUrl } : {}),
    ...(dlqUrl ? { dlqUrl } : {}),
    ...(local ? { endpointSqs: local.sqs, archiveDir: local.archiveDir, local } : {}),
  };
};

/** Prints a result as JSON (`--json`) or as text. */
export const output = (json: boolean | undefined, value: unknown, text: () => string): void => {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
};

/**
 * The configuration the target runs with: the local stack's transports, or — against AWS — the
 * deployment's SENDPROOF_* settings (purposes, transports, provider secret) from this shell's environment.
 */
export const targetConfig = (target: Target): Config =>
  target.local
    ? parseOrThrow(configSchema(), {
        ...(target.ledgerTable ? { ledgerTable: target.ledgerTable } : {}),
        region: target.region,
        emailTransport: target.local.emailTransport,
        smsTransport: target.local.smsTransport,
        restBaseUrl: target.local.simulator,
        endpointSes: target.local.ses,
        ...(target.endpointDynamoDb ? { endpointDynamoDb: target.endpointDynamoDb } : {}),
      })
    : loadConfig({
        ...process.env,
        ...(target.ledgerTable ? { [ENV.ledgerTable]: target.ledgerTable } : {}),
        [ENV.region]: target.region,
        ...(target.endpointDynamoDb ? { [ENV.endpointDynamoDb]: target.endpointDynamoDb } : {}),
      });

export const requireTable = (target: Target): string => {
  if (!target.ledgerTable)
    throw new Error(
      'no ledger table: pass --table (AWS) or start the local stack with `sendproof local start`',
    );
  return target.ledgerTable;
};

/** The target, its ledger and the operator queries (ports only), built the one way lib/wiring.ts builds them. */
export const ledgerFor = (
  options: TargetOptions,
): { target: Target; ledger: Ledger; queries: OperatorQueries; config: Config } => {
  const target = resolveTarget(options);
  requireTable(target);
  const config = targetConfig(target);
  const doc = documentClientFor(config);
  return {
    target,
    config,
    ledger: ledgerFromConfig(config, doc),
    queries: operatorQueriesFor(config, doc),
  };
};

/**
 * Reads a JSON file. A parse error names the file only: Node's message quotes the text around the
 * error, and these files hold addresses and secrets.
 */
export const readJsonFile = (path: string | 0, what: string): unknown => {
  const text = readFileSync(path, 'utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`${what} ${path === 0 ? '(stdin)' : path} is not valid JSON`);
  }
};
