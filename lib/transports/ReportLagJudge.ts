import type { RunLogger } from '../observability.js';
import type { ProviderHealth } from './health.js';
import type { ReportCounterStore } from './ReportCounters.js';
import { bucketsToJudge, judgeReports, type ReportJudgement, type ReportLagSettings } from './reportLag.js';

export interface ReportLagVerdict {
  provider: string;
  /** The circuit's state before the judgement. */
  state: string;
  /** Absent when the circuit was not closed (nothing to judge: it sends nothing but probes). */
  judgement?: ReportJudgement;
  opened: boolean;
}

export interface ReportLagJudgeDeps {
  counters: Pick<ReportCounterStore, 'read'>;
  circuits: Pick<ProviderHealth, 'read' | 'open'>;
  settings: ReportLagSettings;
  now: () => number;
  logger?: RunLogger;
}

/**
 * Opens the circuit of a provider whose delivery reports fall behind (lib/transports/reportLag.ts), once
 * per reconcile run: per provider, one circuit read and a few counter reads.
 *
 * Only minutes accepted after the circuit's last change count, so the evidence that opened it (or that
 * came before a probe closed it) does not open it again: a closed circuit is judged on what its provider
 * was given since.
 */
export class ReportLagJudge {
  constructor(private readonly deps: ReportLagJudgeDeps) {}

  async judge(providers: readonly string[]): Promise<ReportLagVerdict[]> {
    const out: ReportLagVerdict[] = [];
    for (const provider of providers) {
      const view = await this.deps.circuits.read(provider);
      if (view.state !== 'closed') {
        out.push({ provider, state: view.state, opened: false });
        continue;
      }
      const since = view.history.at(-1)?.at ?? 0;
      const buckets = bucketsToJudge(this.deps.now(), this.deps.settings, since);
      const judgement = judgeReports(await this.deps.counters.read(provider, buckets), this.deps.settings);
      const opened = judgement.slow ? await this.deps.circuits.open(provider, judgement.reason, view) : false;
      if (judgement.slow)
        this.deps.logger?.warn('provider delivery reports fall behind', { provider, ...judgement, opened });
      out.push({ provider, state: view.state, judgement, opened });
    }
    return out;
  }
}
