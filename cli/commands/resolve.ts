import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { sqsClient } from '../../lib/aws/clients.js';
import { systemClock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import {
  DecisionRefusedError,
  OperatorDecisions,
  type Outcome,
} from '../../lib/reconcile/OperatorDecisions.js';
import { SqsIntentPublisher } from '../../lib/reconcile/SqsIntentPublisher.js';
import { output, withTargetOptions } from '../localState.js';
import { type LedgerTargetOptions, ledgerTarget } from './reconcile.js';

interface ResolveOptions extends LedgerTargetOptions {
  outcome: Outcome;
  reason: string;
  operator: string;
  intent?: string;
  decisionId?: string;
  json?: boolean;
}

const readIntent = (path: string): unknown => {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch (error) {
    throw new Error(`intent file ${path} is not readable JSON: ${(error as Error).message}`);
  }
};

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('resolve <dedupeKey>')
      .description(
        'record an operator decision on an unknown or quarantined row (accepted, rejected, or resend)',
      )
      .addOption(
        new Option('--outcome <outcome>', 'the decision')
          .choices(['accepted', 'rejected', 'resend'])
          .makeOptionMandatory(),
      )
      .requiredOption('--reason <text>', 'why (kept in the row history: no addresses or phone numbers)')
      .requiredOption('--operator <id>', 'who decides (recorded as operator:<id>)')
      .option('--intent <file.json>', 'resend: the new intent (the ledger never kept addresses or secrets)')
      .option('--decision-id <id>', 'resend: republish an earlier decision whose publish failed')
      .option('--endpoint-dynamodb <url>', 'DynamoDB endpoint (local servers)')
      .option('--json', 'machine-readable output'),
  ).action(async (dedupeKey: string, options: ResolveOptions) => {
    const { target, ledger } = ledgerTarget(options);
    const decisions = new OperatorDecisions({
      ledger,
      purposes: new PurposeRegistry(),
      clock: systemClock,
      ...(target.queueUrl
        ? {
            publisher: new SqsIntentPublisher(
              sqsClient({
                region: target.region,
                ...(target.endpointSqs ? { endpoint: target.endpointSqs } : {}),
              }),
              target.queueUrl,
            ),
          }
        : {}),
    });
    try {
      const result = await decisions.decide({
        dedupeKey,
        outcome: options.outcome,
        reason: options.reason,
        operator: options.operator,
        ...(options.intent ? { intent: readIntent(options.intent) } : {}),
        ...(options.decisionId ? { decisionId: options.decisionId } : {}),
      });
      output(options.json, result, () =>
        [
          `${result.dedupeKey} → ${result.state} (decision ${result.decisionId}${result.alreadyRecorded ? ', already recorded' : ''})`,
          ...(result.newDedupeKey
            ? [`  new intent ${result.newDedupeKey} published as ${result.publishedMessageId}`]
            : []),
          ...(result.fallbackAdvanced ? ['  fallback flow advanced to its next channel'] : []),
        ].join('\n'),
      );
    } catch (error) {
      if (!(error instanceof DecisionRefusedError)) throw error;
      if (options.json) output(true, { error: error.code, message: error.message }, () => '');
      else process.stderr.write(`sendproof: decision refused (${error.code}): ${error.message}\n`);
      process.exitCode = 2;
    }
  });
};
