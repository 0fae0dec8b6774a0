import type { Command } from 'commander';
import * as z from 'zod/mini';
import '../../lib/domain/zodLocale.js';
import { systemClock } from '../../lib/domain/clock.js';
import { SpendBreaker } from '../../lib/rate/SpendBreaker.js';
import { documentClientFor } from '../../lib/wiring.js';
import {
  output,
  requireTable,
  resolveTarget,
  type TargetOptions,
  targetConfig,
  withTargetOptions,
} from '../localState.js';

interface BreakerOptions extends TargetOptions {
  reason?: string;
  operator?: string;
  json?: boolean;
}

/** Validated at the boundary: a bad argument is a structured error, never a half-done write. */
const ResetSchema = z.strictObject({
  purpose: z.string().check(z.regex(/^[a-z][a-z0-9-]{1,47}$/, 'a purpose name')),
  country: z
    .string()
    .check(z.regex(/^([A-Z]{2})$/, 'an ISO 3166-1 alpha-2 country code (ZZ: unknown region)')),
  reason: z.string().check(z.trim(), z.minLength(3), z.maxLength(100)),
  operator: z.string().check(z.regex(/^[A-Za-z0-9._@-]{1,64}$/, 'an operator id (letters, digits, . _ @ -)')),
});

const breakerFor = (options: TargetOptions) => {
  const target = resolveTarget(options);
  return new SpendBreaker(documentClientFor(targetConfig(target)), requireTable(target), {
    workerId: 'cli:breaker',
  });
};

const iso = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());

export const register = (program: Command): void => {
  const group = program
    .command('breaker')
    .description('SMS spend circuit breakers, one per purpose and destination country');

  withTargetOptions(
    group
      .command('show <purpose> <country>')
      .description('the breaker: state, count in the current window, history')
      .option('--json', 'machine-readable output'),
  ).action(async (purpose: string, country: string, options: BreakerOptions) => {
    const item = await breakerFor(options).read(purpose, country.toUpperCase());
    output(options.json, item ?? null, () =>
      !item
        ? `no breaker for ${purpose}/${country}: nothing sent yet`
        : [
            `${purpose}/${country.toUpperCase()}  ${item.state}  sends=${item.sends ?? 0}  openUntil=${iso(item.openUntil)}`,
            ...item.history.map((e) => `  ${iso(e.at)}  ${e.s}  by=${e.by}  ${e.why}`),
          ].join('\n'),
    );
  });

  withTargetOptions(
    group
      .command('reset <purpose> <country>')
      .description('close an open breaker now and start a fresh count (recorded with operator and reason)')
      .requiredOption('--reason <text>', 'why (kept in the breaker history)')
      .requiredOption('--operator <id>', 'who decides (recorded as operator:<id>)')
      .option('--json', 'machine-readable output'),
  ).action(async (purpose: string, country: string, options: BreakerOptions) => {
    const parsed = ResetSchema.safeParse({
      purpose,
      country: country.toUpperCase(),
      reason: options.reason,
      operator: options.operator,
    });
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`);
      process.stderr.write(`sendproof: invalid breaker reset\n${issues.map((i) => `  ${i}`).join('\n')}\n`);
      process.exitCode = 2;
      return;
    }
    const { reason, operator } = parsed.data;
    const result = await breakerFor(options).reset(
      parsed.data.purpose,
      parsed.data.country,
      { operator, reason },
      systemClock.now(),
    );
    if (!result.reset) process.exitCode = 1;
    output(options.json, result, () =>
      result.reset
        ? `breaker ${parsed.data.purpose}/${parsed.data.country} closed (was ${result.previous?.state ?? '-'}), recorded as operator:${operator}`
        : `no breaker for ${parsed.data.purpose}/${parsed.data.country}: nothing to reset`,
    );
  });
};
