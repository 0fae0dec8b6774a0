import type { RunLogger as ReconcileLogger, MetricsSink as ReconcileMetricsSink } from '../observability.js';
import { METRIC } from '../observability.js';
import type { EvidenceResult } from './EvidenceRecorder.js';
import type { ProviderEvidence } from './events.js';
import { applyOptSignal, type OptSignalDeps } from './optSignals.js';
import { verifyWebhook, type WebhookRequest, type WebhookSecrets } from './webhooks.js';

export interface WebhookEndpointDeps {
  recorder: { record(evidence: ProviderEvidence): Promise<EvidenceResult> };
  /** Resolved per request (cached by the caller): a rotated secret takes effect without a deploy. */
  secrets: () => Promise<WebhookSecrets>;
  now?: () => number;
  logger?: ReconcileLogger;
  metrics?: ReconcileMetricsSink;
  /** Where an inbound STOP/START reply (Twilio `OptOutType`) acts: the suppression list (lib/evidence/optSignals.ts). */
  signals?: OptSignalDeps | undefined;
}

export interface WebhookResponse {
  status: number;
  body: string;
}

/**
 * The evidence HTTP endpoint, the same in the Lambda (Function URL) and the local stack: verify, then
 * record. A refused request (unsigned, forged, replayed, unknown provider) gets 401/404, is counted in
 * WebhookRefused and never reaches the ledger. Logs carry provider, reason and event ids only: never the
 * body, which holds recipient addresses. An infrastructure failure throws (the caller answers 500, and
 * the provider retries).
 */
export const handleWebhook = async (
  deps: WebhookEndpointDeps,
  request: WebhookRequest,
): Promise<WebhookResponse> => {
  const verdict = await verifyWebhook(request, await deps.secrets(), deps.now?.() ?? Date.now());
  if (!verdict.ok) {
    deps.metrics?.count(METRIC.webhookRefused, 1, {
      provider: verdict.provider.slice(0, 32),
      reason: verdict.reason,
    });
    deps.logger?.warn('webhook refused', { provider: verdict.provider.slice(0, 32), reason: verdict.reason });
    const status = verdict.reason === 'unknown_provider' ? 404 : 401;
    return { status, body: JSON.stringify({ error: verdict.reason }) };
  }
  const results: string[] = [];
  for (const parsed of verdict.events) {
    if (parsed.kind === 'ignored') {
      if (parsed.signal && deps.signals) {
        const applied = await applyOptSignal(parsed.signal, deps.signals);
        if (applied !== 'not_an_opt_signal') {
          results.push(`signal:${applied}`);
          continue;
        }
      }
      deps.logger?.info('webhook event is not evidence', {
        provider: verdict.provider,
        reason: parsed.reason,
      });
      results.push(`ignored:${parsed.reason}`);
      continue;
    }
    results.push((await deps.recorder.record(parsed.evidence)).kind);
  }
  return { status: 200, body: JSON.stringify({ results }) };
};
