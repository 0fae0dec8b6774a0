import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SendproofFunction } from '../../infra/constructs/SendproofFunction.js';
import type { SendproofStack } from '../../infra/SendproofStack.js';
import { COMMAND_LOG_ENV, type CommandRecord } from '../../lib/aws/commandLog.js';
import { FUNCTION_SETTINGS, type FunctionName } from '../../lib/config.js';
import { fromPackageRoot } from '../../lib/packageRoot.js';
import { commandLogDirOf } from '../support/globalSetup.js';
import {
  actionsFor,
  allowingStatements,
  type DeployedFunction,
  denyingStatements,
  expectedResource,
  type PolicyStatement,
  type RenderContext,
  render,
} from './iamPolicy.js';
import { SES_AND_SMS, synthStack } from './synth.js';

/*
 * DynamoDB Local and fauxqs ignore IAM. The integration suite runs every function's code with the AWS
 * command recorder on (lib/aws/commandLog.ts; test/support/globalSetup.ts turns it on for the run), and
 * this file — its own vitest project, run after the others (vitest.config.ts) — holds every recorded
 * command to the role CDK synthesizes for that function: the IAM action the Service Authorization
 * Reference names for the operation (test/infra/iamPolicy.ts), on the resource the command named,
 * resolved through the setting that named it locally and the function's synthesized environment.
 *
 * Run alone (`npx vitest run test/infra/iamCommands.test.ts`), or with files that leave a function
 * unexercised, it first runs RECORDING_FILES itself with the recorder on.
 */
const FUNCTIONS = Object.keys(FUNCTION_SETTINGS) as FunctionName[];

/** Integration files that run each function's code through its wiring (so with a recording caller). */
const RECORDING_FILES: Record<FunctionName, string[]> = {
  dispatch: ['test/integration/functions/entries.test.ts'],
  reconcile: ['test/integration/functions/entries.test.ts'],
  evidence: ['test/integration/functions/entries.test.ts'],
  webhook: ['test/integration/functions/entries.test.ts'],
  archive: ['test/integration/archive/endToEnd.test.ts'],
  archiveMaintenance: ['test/integration/archive/backfill.test.ts'],
  console: ['test/integration/functions/entries.test.ts'],
  // reportLag: the outcomes function's delivery-report counters, written only where a channel fails over.
  outcomes: ['test/integration/functions/entries.test.ts', 'test/integration/dispatch/reportLag.test.ts'],
  sloAudit: ['test/integration/functions/entries.test.ts'],
};

const RECORDING_TIMEOUT = 600_000;
const CTX: RenderContext = { region: 'eu-west-1', account: '111122223333' };
const ATTACHMENTS_BUCKET = 'acme-attachments';
const PROVIDER_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:sendproof-providers-AbCdEf';

const readRecords = (dir: string): CommandRecord[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.jsonl'))
        .flatMap((f) =>
          readFileSync(join(dir, f), 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as CommandRecord),
        )
    : [];

/** Runs integration files in a child vitest with the recorder writing to a fresh folder. */
const recordingRun = (files: string[]): { dir: string; output: string; status: number | null } => {
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-aws-commands-'));
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'TEST'),
  );
  const run = spawnSync(
    process.execPath,
    [fromPackageRoot('node_modules/vitest/vitest.mjs'), 'run', '--project', 'servers', ...files],
    {
      cwd: fromPackageRoot('.'),
      env: { ...env, [COMMAND_LOG_ENV]: dir },
      encoding: 'utf8',
      timeout: RECORDING_TIMEOUT,
    },
  );
  return { dir, output: `${run.stdout ?? ''}${run.stderr ?? ''}`, status: run.status };
};

const functionOf = (stack: SendproofStack, name: FunctionName): SendproofFunction => {
  const { ledger } = stack;
  const functions: Record<FunctionName, SendproofFunction | undefined> = {
    dispatch: ledger.dispatcher.function,
    reconcile: ledger.reconciler.function,
    evidence: ledger.evidence.function,
    webhook: ledger.evidence.webhook,
    archive: ledger.archive.function,
    archiveMaintenance: ledger.archive.maintenance,
    console: ledger.console?.function,
    outcomes: ledger.outcomeEvents.function,
    sloAudit: ledger.serviceLevels.audit,
  };
  const fn = functions[name];
  if (!fn) throw new Error(`no synthesized function for ${name}`);
  return fn;
};

const deployedFunction = (
  stack: SendproofStack,
  template: Template,
  name: FunctionName,
): DeployedFunction => {
  const fn = functionOf(stack, name);
  const resources = template.toJSON().Resources as Record<
    string,
    { Type: string; Properties: Record<string, unknown> }
  >;
  const roleId = stack.getLogicalId(fn.role.node.defaultChild as never);
  const fnId = stack.getLogicalId(fn.fn.node.defaultChild as never);
  const statements = Object.values(resources)
    .filter(
      (r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`),
    )
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: PolicyStatement[] }).Statement);
  const mappings = Object.values(resources).filter(
    (r) =>
      r.Type === 'AWS::Lambda::EventSourceMapping' &&
      JSON.stringify(r.Properties.FunctionName).includes(`"${fnId}"`),
  );
  const eventSourceArns = mappings.flatMap((m) => {
    const onFailure = (
      m.Properties.DestinationConfig as { OnFailure?: { Destination?: unknown } } | undefined
    )?.OnFailure?.Destination;
    return [render(m.Properties.EventSourceArn, CTX), ...(onFailure ? [render(onFailure, CTX)] : [])];
  });
  const env = ((
    resources[fnId]?.Properties.Environment as { Variables?: Record<string, unknown> } | undefined
  )?.Variables ?? {}) as Record<string, unknown>;
  return { name, statements, env, eventSourceArns };
};

const describeRecord = (r: CommandRecord) =>
  `${r.function}${r.via ? ` (${r.via})` : ''}${r.source ? ` (${r.source})` : ''}: ${r.command}`;

interface Check {
  failures: string[];
  /** `function: action on resource` pairs some recorded command used. */
  used: Set<string>;
}

/** Holds every record to its function's role; one message per missing grant. */
const check = (
  records: readonly CommandRecord[],
  deployed: ReadonlyMap<FunctionName, DeployedFunction>,
): Check => {
  const failures = new Set<string>();
  const used = new Set<string>();
  const attachmentsBucketArn = `arn:aws:s3:::${ATTACHMENTS_BUCKET}`;
  for (const record of records) {
    const fn = deployed.get(record.function as FunctionName);
    if (!fn) {
      failures.add(`${describeRecord(record)}: no deployed function is called "${record.function}"`);
      continue;
    }
    const actions = actionsFor(record);
    if (!actions) {
      failures.add(
        `${describeRecord(record)} (${record.service}): no IAM action known for this operation; add it to test/infra/iamPolicy.ts with its Service Authorization Reference source`,
      );
      continue;
    }
    const resources = record.resources.length ? record.resources : [{ kind: 'any' as const, name: '*' }];
    for (const resource of resources) {
      const expected = expectedResource(record, resource, fn, { ...CTX, attachmentsBucketArn });
      if (expected.problem) {
        failures.add(
          `${describeRecord(record)} → ${actions.join(' + ')} on ${expected.label}: ${expected.problem}`,
        );
        continue;
      }
      for (const action of actions) {
        const denied = denyingStatements(fn.statements, action, expected, CTX);
        const allowed = allowingStatements(fn.statements, action, expected, CTX);
        for (const s of allowed)
          for (const r of [s.Resource].flat())
            used.add(`${fn.name}\t${s.Sid ?? '(no sid)'}\t${action}\t${render(r, CTX)}`);
        if (denied.length || allowed.length === 0)
          failures.add(
            `${describeRecord(record)} → ${action} on ${expected.label} [${expected.arns.join(' | ')}${
              expected.conditionValues ? `, ${JSON.stringify(expected.conditionValues)}` : ''
            }]: ${denied.length ? 'denied' : `not allowed by the ${fn.name} role`}`,
          );
      }
    }
  }
  return { failures: [...failures].sort(), used };
};

/** Granted (action, resource) pairs no recorded command used: a report, not a failure. */
const unusedGrants = (deployed: ReadonlyMap<FunctionName, DeployedFunction>, used: Set<string>): string[] => {
  const usedPairs = new Set([...used].map((u) => u.split('\t')).map(([f, , a, r]) => `${f}\t${a}\t${r}`));
  const lines: string[] = [];
  for (const fn of deployed.values())
    for (const s of fn.statements) {
      if (s.Effect !== 'Allow') continue;
      for (const action of [s.Action ?? []].flat().map(String)) {
        // Lambda itself writes the logs and the traces; no SDK call of the function's code does.
        if (/^(logs|xray):/.test(action)) continue;
        for (const r of [s.Resource].flat()) {
          const resource = render(r, CTX);
          const wildcard = action.includes('*');
          const hit = [...usedPairs].some((u) => {
            const [f, a, res] = u.split('\t');
            return (
              f === fn.name &&
              res === resource &&
              (wildcard ? new RegExp(`^${action.replace(/\*/g, '.*')}$`, 'i').test(a!) : a === action)
            );
          });
          if (!hit) lines.push(`${fn.name}\t${s.Sid ?? '(no sid)'}\t${action}\t${resource}`);
        }
      }
    }
  return lines.sort();
};

describe('every AWS command the integration suite recorded is allowed by its function’s synthesized role', () => {
  let records: CommandRecord[] = [];
  let deployed: Map<FunctionName, DeployedFunction>;
  let result: Check;
  let reportFile: string;

  beforeAll(() => {
    // Prepare: the suite's recording (this run's folder, if the integration projects ran before this one).
    const suiteDir = commandLogDirOf(process.ppid);
    records = readRecords(suiteDir);
    const missing = FUNCTIONS.filter((f) => !records.some((r) => r.function === f));
    reportFile = join(suiteDir, 'iam-report.txt');
    if (missing.length > 0) {
      const files = [...new Set(missing.flatMap((f) => RECORDING_FILES[f]))];
      const run = recordingRun(files);
      if (run.status !== 0)
        throw new Error(`the recording run of ${files.join(', ')} failed:\n${run.output.slice(-4000)}`);
      records.push(...readRecords(run.dir));
      reportFile = join(run.dir, 'iam-report.txt');
    }
    // With email failover (ses, then sendgrid): the suite runs the outcomes function's delivery-report
    // counters (test/integration/dispatch/reportLag.test.ts), which a stack without failover never grants.
    const { stack, template } = synthStack((scope) => ({
      ...SES_AND_SMS,
      email: { ...SES_AND_SMS.email, failover: ['sendgrid'] },
      providerSecret: secretsmanager.Secret.fromSecretCompleteArn(scope, 'Provider', PROVIDER_SECRET_ARN),
      attachments: { bucket: s3.Bucket.fromBucketName(scope, 'Attachments', ATTACHMENTS_BUCKET) },
    }));
    deployed = new Map(FUNCTIONS.map((f) => [f, deployedFunction(stack, template, f)]));
    result = check(records, deployed);
  }, RECORDING_TIMEOUT + 120_000);

  it('has recordings of every Sendproof function (the suite ran each one’s code)', () => {
    // Assess
    const seen = new Set(records.map((r) => r.function));
    expect(FUNCTIONS.filter((f) => !seen.has(f))).toEqual([]);
  });

  it('holds each recorded command to the IAM action it needs on the resource it named, in the function’s role', () => {
    // Act: the report of the other direction (granted, never used) is written next to the recordings.
    const unused = unusedGrants(deployed, result.used);
    writeFileSync(
      reportFile,
      [
        `${records.length} distinct recorded command shapes`,
        '',
        'granted but no recorded command used (a report, not a failure):',
        ...unused,
        '',
        'failures:',
        ...result.failures,
        '',
      ].join('\n'),
    );
    console.info(
      `IAM check: ${records.length} recorded shapes; unused grants (report only):\n${unused.join('\n')}\n(${reportFile})`,
    );
    // Assess: every line names the function, the command, the IAM action and the resource.
    expect(result.failures).toEqual([]);
  });

  it('gives no synthesized function the recorder switch', () => {
    // Assess: recording is a test-run switch; a deployed function never records.
    for (const fn of deployed.values()) expect(Object.keys(fn.env)).not.toContain(COMMAND_LOG_ENV);
  });
});
