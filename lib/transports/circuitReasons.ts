/**
 * A provider circuit's reason, and each history entry's `why` (lib/transports/health.ts), in an
 * operator's words: what `sendproof stats` and the console's circuits panel print next to the raw code.
 *
 * Read defensively: the reasons are written by dispatchers of any version (a newer one may write a
 * reason this one does not know, e.g. `slow_reports:<late>/<accepted>/<window>s`), so a text that does
 * not parse is returned as it is, marked `known: false`, never guessed at and never an error.
 */
export interface ReasonText {
  /** The raw reason as stored (`failures:3/60s`). */
  raw: string;
  /** The sentence (`3 provider failures in 60 s`), or the raw text when it is not understood. */
  text: string;
  known: boolean;
}

const count = (s: string | undefined): number | undefined =>
  s !== undefined && /^\d{1,9}$/.test(s) ? Number(s) : undefined;
const seconds = (s: string | undefined): number | undefined =>
  s !== undefined && /^\d{1,9}s$/.test(s) ? Number(s.slice(0, -1)) : undefined;
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** What a probe's answer kind says (the SendResult kinds health.ts writes after `probe_…:`). */
const PROBE_KINDS: Record<string, string> = {
  ambiguous: 'a provider error after the request was sent',
  retryable: 'the request never reached the provider',
  accepted: 'the provider accepted the message',
  rejected: 'the provider answered with a refusal of the message',
};

type Reader = (args: string[]) => string | undefined;

const READERS: Record<string, Reader> = {
  // `failures:<n>/<window>s`: 5xx answers or requests that never left, counted in one window.
  failures: ([spec]) => {
    const [n, w] = (spec ?? '').split('/');
    const failures = count(n);
    const window = seconds(w);
    if (failures === undefined || window === undefined || (spec ?? '').split('/').length !== 2)
      return undefined;
    return `${plural(failures, 'provider failure', 'provider failures')} in ${window} s (5xx answers or requests that never left)`;
  },
  // `5xx:<n>/<window>s`: the same count named by its cause.
  '5xx': ([spec]) => {
    const parts = (spec ?? '').split('/');
    const failures = count(parts[0]);
    const window = seconds(parts[1]);
    if (failures === undefined || window === undefined || parts.length !== 2) return undefined;
    return `${plural(failures, 'provider error', 'provider errors')} in ${window} s`;
  },
  // `slow_reports:<late>/<accepted>/<window>s`: delivery reports that came late over a window.
  slow_reports: ([spec]) => {
    const parts = (spec ?? '').split('/');
    const late = count(parts[0]);
    const accepted = count(parts[1]);
    const window = seconds(parts[2]);
    if (late === undefined || accepted === undefined || window === undefined || parts.length !== 3)
      return undefined;
    return `${late} of ${plural(accepted, 'delivery report', 'delivery reports')} late over ${window} s`;
  },
  probe_failed: ([kind]) => {
    const said = kind !== undefined ? PROBE_KINDS[kind] : undefined;
    return said ? `the probe failed again: ${said}` : undefined;
  },
  probe_answered: ([kind]) => {
    const said = kind !== undefined ? PROBE_KINDS[kind] : undefined;
    return said ? `the probe was answered: ${said}` : undefined;
  },
  probe_taken: (args) => (args.length === 0 ? 'a dispatcher took the probe' : undefined),
};

/** `failures:3/60s` → "3 provider failures in 60 s (…)"; an unknown or malformed reason as it is. */
export const describeCircuitReason = (raw: string): ReasonText => {
  const [code = '', ...args] = raw.split(':');
  const reader = Object.hasOwn(READERS, code) ? READERS[code] : undefined;
  const text = reader?.(args);
  return text === undefined ? { raw, text: raw, known: false } : { raw, text, known: true };
};
