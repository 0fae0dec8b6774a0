/**
 * npm run soak -- [--intents 10000] [--fault-rate 0.05] [--duplicate-rate 0.02] [--seed 42]
 *                 [--extra-workers 1] [--last-receive-rate 0.01] [--long-retry-rate 0.005]
 *                 [--long-retry-after 45] [--template-gone-rate 0.002] [--early-bounce-rate 0.002]
 *                 [--storm-rate 0.002] [--storm-copies 8] [--timeout 1800] [--json report.json]
 *
 * The fault-load run on loopback servers only (see soakRun.ts). Prints progress, then the figures;
 * exits 1 on any violation (a lost intent, a second acceptance, a stranded row, an archive gap, a secret
 * found).
 */
import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { runSoak, type SoakReport } from './soakRun.js';

const number = (min: number, max: number) => (raw: string) => {
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max)
    throw new InvalidArgumentError(`must be a number between ${min} and ${max}`);
  return value;
};

const program = new Command('soak')
  .description(
    'Fault-load run: publish intents through the local stack under injected faults and check the ledger, the provider log and the archive',
  )
  .option('--intents <n>', 'intents to publish', number(1, 100_000), 10_000)
  .option('--fault-rate <r>', 'share of intents whose first request meets a fault', number(0, 1), 0.05)
  .option('--duplicate-rate <r>', 'share of intents published twice', number(0, 1), 0.02)
  .option('--seed <n>', 'seed for the intent mix, duplicates and faults', number(0, 2 ** 31), 42)
  .option('--extra-workers <n>', 'dispatcher processes besides the functions worker', number(0, 4), 1)
  .option(
    '--last-receive-rate <r>',
    'share of intents handed on their last receive to a dispatcher that is SIGKILLed mid-dispatch',
    number(0, 0.5),
    0.01,
  )
  .option(
    '--long-retry-rate <r>',
    'share of intents whose first request meets a long 429',
    number(0, 0.5),
    0.005,
  )
  .option(
    '--long-retry-after <s>',
    "that 429's Retry-After in seconds (default 45: more than five of the local 8 s visibility timeouts)",
    number(11, 3_600),
    45,
  )
  .option(
    '--template-gone-rate <r>',
    'share of intents added as scheduled receipts whose template revision is removed before sendAt',
    number(0, 0.5),
    0.002,
  )
  .option(
    '--early-bounce-rate <r>',
    "share of intents added as resets whose bounce is read before the dispatcher hears 'accepted'",
    number(0, 0.5),
    0.002,
  )
  .option(
    '--storm-rate <r>',
    'share of intents added as SMS of a breaker-guarded purpose, each published --storm-copies times',
    number(0, 0.5),
    0.002,
  )
  .option('--storm-copies <n>', 'publishes of each storm message', number(2, 100), 8)
  .option('--timeout <s>', 'bound on the run after start-up, in seconds', number(10, 86_400), 1_800)
  .option('--json <file>', 'also write the report as JSON')
  .parse();

const opts = program.opts<{
  intents: number;
  faultRate: number;
  duplicateRate: number;
  seed: number;
  extraWorkers: number;
  lastReceiveRate: number;
  longRetryRate: number;
  longRetryAfter: number;
  templateGoneRate: number;
  earlyBounceRate: number;
  stormRate: number;
  stormCopies: number;
  timeout: number;
  json?: string;
}>();

const print = (report: SoakReport) => {
  const f = report.figures;
  const kinds = (r: Record<string, number>) =>
    Object.entries(r)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const lines = [
    '',
    'Sendproof fault-load run',
    `  intents               ${f.intents} (+${f.duplicatePublishes} duplicate publishes; ${f.channelsExpected} channel rows expected)`,
    `  faults planned        ${Object.values(f.faultsPlanned).reduce((a, b) => a + b, 0)}: ${kinds(f.faultsPlanned)}`,
    `  faults injected       ${Object.values(f.faultsInjected).reduce((a, b) => a + b, 0)}: ${kinds(f.faultsInjected)}`,
    `  provider requests     ${f.providerRequests} (${f.providerAcceptances} acceptances, ${f.providerAnswersLost} answers lost, ${f.providerReplays} replays under the same key)`,
    `  duplicates found      ${f.duplicatesFound}`,
    `  lost                  ${f.lost}`,
    `  stranded              ${f.stranded} (non-terminal rows with no seal and no live lease; ${f.stalled} stalled, ${f.sealsLeft} seals left)`,
    `  last-receive crashes  ${f.lastReceive.killed} of ${f.lastReceive.planned} killed (${kinds(f.lastReceive.byEdge)}), ${f.lastReceive.recovered} finished by the sweep`,
    `  long Retry-After      ${f.longRetryAfter.honoured} of ${f.longRetryAfter.planned} 429s with Retry-After ${f.longRetryAfter.seconds} s honoured, then sent once`,
    `  template gone         ${f.templateGone.blocked + f.templateGone.stalled} of ${f.templateGone.planned} scheduled receipts whose revision was removed ended blocked (${f.templateGone.blocked}) or stalled (${f.templateGone.stalled}) with the reason: ${kinds(f.templateGone.reasons)}`,
    `  early bounces         ${f.earlyBounce.bounced} of ${f.earlyBounce.planned} bounced, ${f.earlyBounce.suppressed} suppressed (${f.earlyBounce.readBeforeAnswer} read from the feed before the provider answered, ${f.earlyBounce.recordedBeforeAccepted} recorded before the accepted write)`,
    `  duplicate storm       ${f.storm.accepted} of ${f.storm.messages} guarded SMS sent once from ${f.storm.messages * f.storm.copies} publishes; breaker counted ${f.storm.breakerSends} (allows ${f.storm.messages}), ${f.storm.breakerState}; ${f.storm.blockedByBreaker} blocked by it`,
    `  unknown/quarantined   ${f.unknown}/${f.quarantined}`,
    `  rows by state         ${kinds(f.rowsByState)}`,
    `  recovered unknowns    ${f.unknownRecovered.byReplay} by replay under the same key, ${f.unknownRecovered.byLookup} by provider lookup, ${f.unknownRecovered.other} otherwise; ${f.retried} rows retried after retry_wait`,
    `  reconciler            ${f.reconcilePasses} passes, ${f.reconcileResolved} resolved, ${f.reconcileQuarantined} quarantined`,
    `  archive               ${f.archiveTransitions} transitions (ledger ${f.ledgerTransitions})`,
    `  dead letters          ${f.deadLetters}`,
    `  secrets found         ${f.secretsFound} (scanned ${f.secretScan.dynamoItems} items, ${f.secretScan.logLines} log lines, ${f.secretScan.metricLines} metric lines, ${f.secretScan.s3Objects} S3 objects, ${f.secretScan.archiveFiles} archive files)`,
    `  duration              ${f.durationSeconds} s (start-up ${f.startupSeconds} s; all rows settled after ${f.settledSeconds} s, then reconcile, archive catch-up and scan), ${f.intentsPerSecond} intents/s overall`,
  ];
  for (const w of report.waiting.slice(0, 50))
    lines.push(`  waiting: ${w.state} ${w.ageSeconds} s  ${w.dedupeKey}${w.why ? `  (${w.why})` : ''}`);
  if (report.waiting.length > 50) lines.push(`  … ${report.waiting.length - 50} more waiting rows`);
  lines.push(
    report.violations.length ? `FAILED: ${report.violations.length} violations` : 'PASSED: no violations',
  );
  for (const v of report.violations) lines.push(`  ✗ ${v}`);
  process.stdout.write(`${lines.join('\n')}\n`);
};

const report = await runSoak({
  intents: opts.intents,
  faultRate: opts.faultRate,
  duplicateRate: opts.duplicateRate,
  seed: opts.seed,
  extraWorkers: opts.extraWorkers,
  lastReceiveRate: opts.lastReceiveRate,
  longRetryRate: opts.longRetryRate,
  longRetryAfterSeconds: opts.longRetryAfter,
  templateGoneRate: opts.templateGoneRate,
  earlyBounceRate: opts.earlyBounceRate,
  stormRate: opts.stormRate,
  stormCopies: opts.stormCopies,
  timeoutSeconds: opts.timeout,
  progress: (line) => process.stdout.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
});
print(report);
if (opts.json) writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
process.exit(report.violations.length ? 1 : 0);
