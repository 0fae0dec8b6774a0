import { resolve } from 'node:path';
import type { Command } from 'commander';
import { loadNamedQueries } from '../../lib/archive/namedQueries.js';
import { loadConfig } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import {
  createSloReadModel,
  type ObjectiveAttainment,
  type PurposeAttainment,
} from '../../lib/slo/readModel.js';
import { defaultArchiveDir } from './audit.js';

/**
 * `sendproof slo`: per purpose, each objective, the attainment measured over its window and the error
 * budget left, from the named query `slo-attainment` on the archive (DuckDB over the local mirror; the
 * same SQL Athena runs). Purposes and their objectives come from SENDPROOF_PURPOSES, as the functions'.
 */

interface SloOptions {
  tenant: string;
  purpose?: string[];
  windowDays?: string;
  until?: string;
  lookbackDays?: string;
  archiveDir?: string;
  json?: boolean;
}

const pct = (value: number | null): string =>
  value === null
    ? '-'
    : `${(value * 100).toFixed(value === 1 || value === 0 ? 0 : 3).replace(/\.?0+$/, '')} %`;
const n = (value: number): string => (Number.isInteger(value) ? String(value) : value.toPrecision(4));

const line = (label: string, objective: string, a: ObjectiveAttainment, extra = ''): string =>
  `  ${label.padEnd(26)} objective ${objective.padEnd(22)} measured ${pct(a.attainment).padEnd(9)} (${a.good} of ${a.eligible}${extra})  budget ${n(a.budget)}, left ${n(a.budgetLeft)}${a.budgetLeftFraction === null ? '' : ` (${pct(a.budgetLeftFraction)})`}`;

export const describeAttainment = (r: PurposeAttainment): string => {
  const { slo, total } = r;
  const lines = [
    `${r.purpose}  (window ${r.window.days} d: ${new Date(r.window.fromMs).toISOString()} → ${new Date(r.window.toMs).toISOString()})`,
    line(`accepted within ${slo.accepted.withinSeconds} s`, `${pct(slo.accepted.target)}`, total.accepted),
  ];
  if (slo.delivered && total.delivered)
    lines.push(
      line(
        `delivered within ${slo.delivered.withinSeconds} s`,
        `${pct(slo.delivered.target)}`,
        total.delivered,
        total.deliveryUnreported ? `; ${total.deliveryUnreported} not reported` : '',
      ),
    );
  lines.push(
    line(
      'not accepted twice',
      `≤ 1 in ${slo.duplicates.atMostOneIn.toLocaleString('en-US')}`,
      total.duplicates,
      `; ${total.duplicates.bad} accepted twice`,
    ),
  );
  for (const c of r.channels)
    lines.push(
      `  ${c.channel}: accepted in time ${c.accepted.good}/${c.accepted.eligible}${c.acceptP99Ms === null ? '' : ` (p99 ${c.acceptP99Ms} ms)`}${c.delivered ? ` · delivered in time ${c.delivered.good}/${c.delivered.eligible}` : ''} · accepted twice ${c.duplicates.bad}/${c.duplicates.eligible}`,
    );
  if (total.accepted.eligible === 0) lines.push('  (no message of this purpose was requested in the window)');
  return lines.join('\n');
};

export const register = (program: Command): void => {
  program
    .command('slo')
    .description(
      'Per purpose: the objectives, the attainment measured from the archive, the error budget left',
    )
    .option('--tenant <tenant>', 'tenant (the archive is partitioned by tenant)', 'default')
    .option('--purpose <purpose...>', 'only these purposes (default: every registered purpose)')
    .option('--window-days <days>', "window length (default: each purpose's slo.windowDays)")
    .option('--until <iso>', 'end of the window (default: now)')
    .option(
      '--lookback-days <days>',
      'also look this many days before the window for an earlier copy of a message',
      '0',
    )
    .option(
      '--archive-dir <dir>',
      'archive folder (default: archiveDir of .local/state.json, else .local/archive)',
    )
    .option('--json', 'the read model as JSON')
    .action(async (options: SloOptions) => {
      const purposes = PurposeRegistry.withOverrides(loadConfig().purposes);
      const until = options.until ? Date.parse(options.until) : undefined;
      if (until !== undefined && Number.isNaN(until))
        throw new Error(`--until must be an ISO time, got "${options.until}"`);
      const windowDays = options.windowDays === undefined ? undefined : Number(options.windowDays);
      if (windowDays !== undefined && !(Number.isInteger(windowDays) && windowDays >= 1 && windowDays <= 400))
        throw new Error('--window-days must be a whole number of days, 1 to 400');
      for (const p of options.purpose ?? []) purposes.get(p);
      const { DuckDbAudit, hasArchiveObjects } = await import('../../lib/archive/DuckDbAudit.js');
      const dir = options.archiveDir ? resolve(options.archiveDir) : defaultArchiveDir();
      if (!hasArchiveObjects(dir))
        process.stderr.write(`sendproof: no archive objects under ${dir}; nothing was measured\n`);
      const audit = await DuckDbAudit.open(dir);
      try {
        const queries = new Map(loadNamedQueries().map((q) => [q.name, q]));
        const model = createSloReadModel({
          run: (name, args) => audit.runNamed(queries.get(name)!, args),
          purposes,
          clock: systemClock,
        });
        const reports = await model.attainment({
          tenant: options.tenant,
          ...(options.purpose ? { purposes: options.purpose } : {}),
          ...(windowDays !== undefined ? { windowDays } : {}),
          ...(until !== undefined ? { until } : {}),
          duplicateLookbackDays: Number(options.lookbackDays ?? 0) || 0,
        });
        process.stdout.write(
          `${options.json ? JSON.stringify(reports, null, 2) : reports.map(describeAttainment).join('\n\n')}\n`,
        );
      } finally {
        audit.close();
      }
    });
};
