import type { Command } from 'commander';
import * as z from 'zod/mini';
import '../../lib/domain/zodLocale.js';
import { ChannelSchema } from '../../lib/domain/purposes.js';
import { DynamoSuppressionList } from '../../lib/ledger/DynamoSuppressionList.js';
import { OPT_OUT_SOURCE } from '../../lib/ledger/optOut.js';
import { documentClientFor } from '../../lib/wiring.js';
import { output, resolveTarget, type TargetOptions, targetConfig, withTargetOptions } from '../localState.js';

interface SuppressionOptions extends TargetOptions {
  suppressionTable?: string;
  json?: boolean;
}

const listFor = (options: SuppressionOptions) => {
  const target = resolveTarget(options);
  const table = options.suppressionTable ?? target.local?.suppressionTable;
  if (!table)
    throw new Error(
      'no suppression table: pass --suppression-table (AWS) or start the local stack with `sendproof local start`',
    );
  return new DynamoSuppressionList(documentClientFor(targetConfig(target)), table);
};

const withOptions = (command: Command): Command =>
  withTargetOptions(
    command
      .option('--suppression-table <name>', 'suppression table (default: the local stack)')
      .option('--json', 'machine-readable output'),
  );

/** Validated at the boundary: a bad argument is a structured error, never a half-done write. */
const ChangeSchema = z.strictObject({
  tenant: z.string().check(z.minLength(1), z.maxLength(64)),
  recipientRef: z.string().check(z.minLength(1), z.maxLength(128)),
  channel: z.union([ChannelSchema, z.literal('*')]),
  reason: z.string().check(z.trim(), z.minLength(3), z.maxLength(120)),
  operator: z.string().check(z.regex(/^[A-Za-z0-9._@-]{1,64}$/, 'an operator id (letters, digits, . _ @ -)')),
});

const parseChange = (value: unknown) => {
  const parsed = ChangeSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`);
  process.stderr.write(`sendproof: invalid suppression change\n${issues.map((i) => `  ${i}`).join('\n')}\n`);
  process.exitCode = 2;
  return undefined;
};

const iso = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());

export const register = (program: Command): void => {
  const group = program
    .command('suppressions')
    .description('the suppression list: recipients (by opaque ref) not to contact on a channel, per tenant');

  withOptions(
    group.command('list').description('every suppressed recipient and channel, with reason and source'),
  )
    .option('--tenant <tenant>', 'only this tenant')
    .action(async (options: SuppressionOptions & { tenant?: string }) => {
      const entries = await listFor(options).list(options.tenant);
      output(options.json, entries, () =>
        entries.length === 0
          ? 'no suppressions'
          : entries
              .map(
                (e) =>
                  `${e.tenant}  ${e.recipientRef}  ${e.channel}  ${e.reason}  source=${e.source ?? '-'}  at=${iso(e.at)}  by=${e.by ?? '-'}`,
              )
              .join('\n'),
      );
    });

  withOptions(
    group
      .command('add <tenant> <recipientRef> <channel>')
      .description('suppress a recipient on a channel (email, sms or *)'),
  )
    .requiredOption('--reason <text>', 'why (kept with the entry)')
    .requiredOption('--operator <id>', 'who decides')
    .action(
      async (
        tenant: string,
        recipientRef: string,
        channel: string,
        options: SuppressionOptions & { reason: string; operator: string },
      ) => {
        const change = parseChange({
          tenant,
          recipientRef,
          channel,
          reason: options.reason,
          operator: options.operator,
        });
        if (!change) return;
        const now = Date.now();
        await listFor(options).suppress(change.tenant, change.recipientRef, change.channel, change.reason, {
          source: `operator:${change.operator}`,
          at: now,
          by: `operator:${change.operator}`,
        });
        output(
          options.json,
          { ...change, at: now },
          () => `suppressed ${change.tenant} ${change.recipientRef} on ${change.channel}`,
        );
      },
    );

  withOptions(
    group
      .command('remove <tenant> <recipientRef> <channel>')
      .description(
        'lift a suppression; the removal, its reason and operator are kept with the recipient (a provider_opt_out one needs --force)',
      ),
  )
    .requiredOption('--reason <text>', 'why it is lifted (required)')
    .requiredOption('--operator <id>', 'who decides (required)')
    .option(
      '--force',
      'lift a provider_opt_out suppression (the recipient texted STOP: carriers require it be honoured)',
    )
    .action(
      async (
        tenant: string,
        recipientRef: string,
        channel: string,
        options: SuppressionOptions & { reason: string; operator: string; force?: boolean },
      ) => {
        const change = parseChange({
          tenant,
          recipientRef,
          channel,
          reason: options.reason,
          operator: options.operator,
        });
        if (!change) return;
        const outcome = await listFor(options).remove(
          change.tenant,
          change.recipientRef,
          change.channel,
          change.reason,
          change.operator,
          Date.now(),
          { force: options.force === true },
        );
        if (outcome === 'not_suppressed') {
          process.stderr.write(
            `sendproof: ${change.tenant} ${change.recipientRef} is not suppressed on ${change.channel}\n`,
          );
          process.exitCode = 2;
          return;
        }
        if (outcome === 'needs_force') {
          process.stderr.write(
            `sendproof: ${change.tenant} ${change.recipientRef} opted out at the provider on ${change.channel} (source ${OPT_OUT_SOURCE}); carriers require a STOP to be honoured: pass --force to lift it anyway (recorded with your reason and operator id)\n`,
          );
          process.exitCode = 2;
          return;
        }
        output(
          options.json,
          { ...change, removed: true, ...(options.force ? { forced: true } : {}) },
          () => `lifted ${change.tenant} ${change.recipientRef} on ${change.channel}`,
        );
      },
    );
};
