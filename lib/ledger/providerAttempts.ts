import type { DeliveryRecord } from './port.js';

/** One provider attempt of a row, read from its append-only history (issue 29, failover). */
export interface ProviderAttempt {
  /** Attempt number (`n` of the `dispatching` entry). */
  n: number;
  /** The provider it went to (`p`); the row's transport for entries written before providers were named. */
  provider: string;
  /** The state that attempt ended in, and why (`accepted`, `retry_wait` + `failover:ses>sendgrid:…`). */
  outcome?: string;
  why?: string;
  msg?: string;
  /** Providers this attempt skipped because their circuit was open (`…:circuit_open:ses`). */
  skipped?: string[];
}

/**
 * The attempts a row made, by provider: each `dispatching` entry and the entry that followed it. A
 * failover shows as an attempt ending `retry_wait` with `failover:<from>><to>:<answer>`, followed by an
 * attempt at the next provider; a circuit skip as the attempt's `skipped`.
 */
export const providerAttempts = (row: Pick<DeliveryRecord, 'history' | 'transport'>): ProviderAttempt[] => {
  const out: ProviderAttempt[] = [];
  row.history.forEach((entry, i) => {
    if (entry.s !== 'dispatching') return;
    const after = row.history[i + 1];
    const skipped = entry.why?.split(':circuit_open:')[1]?.split('+');
    out.push({
      n: entry.n ?? out.length + 1,
      provider: entry.p ?? row.transport ?? '-',
      ...(after ? { outcome: after.s } : {}),
      ...(after?.why ? { why: after.why } : {}),
      ...(after?.msg ? { msg: after.msg } : {}),
      ...(skipped ? { skipped } : {}),
    });
  });
  return out;
};

/** `#1 ses → retry_wait (failover:ses>sendgrid:…) · #2 sendgrid → accepted msg=…` */
export const describeProviderAttempts = (row: Pick<DeliveryRecord, 'history' | 'transport'>): string =>
  providerAttempts(row)
    .map(
      (a) =>
        `#${a.n} ${a.provider}${a.skipped ? ` (skipped ${a.skipped.join(', ')}: circuit open)` : ''} → ${a.outcome ?? 'in flight'}${a.why ? ` (${a.why})` : ''}${a.msg ? ` msg=${a.msg}` : ''}`,
    )
    .join(' · ');
