import { type Config, requireSettings } from './config.js';
import { ProviderHealth, type ProviderHealthDeps } from './transports/health.js';
import { DynamoReportCounters } from './transports/ReportCounters.js';
import { ReportLagJudge } from './transports/ReportLagJudge.js';
import { documentClientFor } from './wiring.js';

/**
 * The report-lag judgement (lib/transports/ReportLagJudge.ts) over the providers of every channel that
 * fails over (a circuit is only read by a dispatcher with somewhere to skip to), with the circuits'
 * settings; undefined when no channel has a second provider. Its own module, like lib/evidenceWiring.ts:
 * only the reconcile function builds it, so lib/wiring.ts (on every function's module path) stays small.
 */
export const reportLagJudgeFor = (
  config: Config,
  providers: { email: ReadonlyArray<{ name: string }>; sms: ReadonlyArray<{ name: string }> },
  deps: Omit<ProviderHealthDeps, 'settings'>,
  documentClient = documentClientFor(config),
): { judge: ReportLagJudge; providers: string[] } | undefined => {
  const judged = [providers.email, providers.sms].filter((chain) => chain.length > 1).flat();
  if (judged.length === 0) return undefined;
  const table = requireSettings(config, ['ledgerTable']).ledgerTable;
  return {
    providers: [...new Set(judged.map((t) => t.name))],
    judge: new ReportLagJudge({
      counters: new DynamoReportCounters(documentClient, table),
      circuits: new ProviderHealth(documentClient, table, { ...deps, settings: config.providerCircuit }),
      settings: config.providerCircuit,
      now: deps.now,
      ...(deps.logger ? { logger: deps.logger } : {}),
    }),
  };
};
