import type { Config } from '../config.js';
import { resolveContentHashKey } from '../secrets/contentHashKey.js';
import { type LabelKey, labelKeyOf, openLabel } from '../transports/labels.js';
import type { Evidence, ProviderEvidence } from './events.js';

/**
 * Who may speak for one of our rows. Provider events are signed by the provider, but the provider signs
 * whatever a sender on the account asked for: two deployments on one SendGrid account (or one SES
 * configuration set) receive each other's events, and anyone with a send-only key can send to a
 * bouncing address with custom arguments of their choosing and get a genuinely signed bounce. So every
 * event, pushed or pulled, must also carry a label only this deployment can make (lib/transports/labels.ts:
 * sealed under keys derived from the deployment's secret), and for a row the provider already named, the
 * provider's message id:
 * - label_unauthenticated: the label does not open under our secret (another deployment's, forged, or
 *   the unkeyed hash messages carried before labels were sealed);
 * - message_id_mismatch: the row has a provider message id and the event names another one (or none):
 *   a replayed label on someone else's message.
 * A refused event is not applied: it is counted (EvidenceRefused, by source and reason, alarmed) and
 * logged with its event id, never silently dropped.
 */
export type EvidenceRefusal = 'label_unauthenticated' | 'message_id_mismatch';

/** The deployment's label keys, resolved per use (Secrets Manager caches; a rotation lands without a deploy). */
export type LabelKeys = () => Promise<LabelKey>;

export const labelKeysFor =
  (config: Config): LabelKeys =>
  async () =>
    labelKeyOf(await resolveContentHashKey(config));

/** Fixed label keys (tests, the local stack's in-process wiring). */
export const fixedLabelKeys =
  (secret: string): LabelKeys =>
  async () =>
    labelKeyOf(secret);

/** The evidence with the row its label names, or the refusal. */
export const authenticateEvidence = (
  input: ProviderEvidence,
  key: LabelKey,
): { ok: true; evidence: Evidence } | { ok: false; reason: EvidenceRefusal } => {
  const opened = openLabel(key, input.label);
  if (!opened) return { ok: false, reason: 'label_unauthenticated' };
  return {
    ok: true,
    evidence: {
      ...input,
      idempotencyKey: opened.idempotencyKey,
      ...(opened.rowKey !== undefined ? { rowKey: opened.rowKey } : {}),
    },
  };
};

/**
 * Whether an event may speak for this row: always when the row has no provider message id yet (an
 * `unknown` row, whose id the evidence supplies), else only when the event names that same message.
 */
export const namesRowMessage = (
  row: { providerMessageId?: string | undefined },
  event: { providerMessageId?: string; msg?: string },
): boolean => {
  if (!row.providerMessageId) return true;
  return (event.providerMessageId ?? event.msg) === row.providerMessageId;
};
