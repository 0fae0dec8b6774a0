import { type Command, Option } from 'commander';
import { sqsClient } from '../../lib/aws/clients.js';
import { SqsIntentPublisher } from '../../lib/aws/SqsIntentPublisher.js';
import { systemClock } from '../../lib/domain/clock.js';
import {
  DecisionRefusedError,
  OperatorDecisions,
  type Outcome,
} from '../../lib/reconcile/OperatorDecisions.js';
import { purposesFor } from '../../lib/wiring.js';
import { ledgerFor, output, readJsonFile, type TargetOptions, withTargetOptions } from '../localState.js';

interface ResolveOptions extends TargetOptions {
  outcome: Outcome;
  reason: string;
  operator: string;
  intent?: string;
  decisionId?: string;
  json?: boolean;
}

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
      .option('--json', 'machine-readable output'),
  ).action(async (dedupeKey: string, options: ResolveOptions) => {
    const { target, ledger, config } = ledgerFor(options);
    const decisions = new OperatorDecisions({
      ledger,
      // The deployment's purposes: a resend is keyed and validated under the policy that is in force.
      purposes: purposesFor(config),
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
        ...(options.intent ? { intent: readJsonFile(options.intent, 'intent file') } : {}),
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
