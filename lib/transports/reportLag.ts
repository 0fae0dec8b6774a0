import type { DynamoDBRecord } from 'aws-lambda';
import { transitionsOf } from '../archive/transitions.js';
import type { ProviderCircuitSettings } from '../config.js';
import { type EvidenceFact, FACTS } from '../evidence/facts.js';

/**
 * Whether a provider's delivery reports fall behind (issue 29; GOV.UK Notify switches SMS providers on the
 * same signal: too large a share of the messages sent in a window still have no delivery receipt after X
 * minutes). Derived from the ledger stream, never from a write per notification:
 *
 *   ledger stream batch ─► tallies per (provider, acceptance minute): accepted, reported in time
 *        (lib/events/OutcomeConsumer.ts)   └─► ONE UpdateItem ADD per (provider, minute) per batch
 *                                                 on `reports#<provider>#<minute ms>` (TTL'd)
 *   reconcile run ─► per provider: the minutes accepted at least `reportLagSeconds` ago, within the last
 *        (functions/reconcile)    `reportWindowSeconds`, read (a few small GetItems) ─► late = accepted −
 *                                 reported; at least `reportMinSample` accepted and late/accepted at least
 *                                 `reportLateShare` ─► the circuit opens (`slow_reports:<late>/<accepted>/<window>s`)
 *
 * The pure parts live here (no AWS import): what one stream record adds to the tallies, which minutes a
 * judgement reads, and the judgement itself. lib/transports/ReportCounters.ts is the DynamoDB adapter.
 */
export const REPORTS_PREFIX = 'reports#';
/** Counters are kept per minute of acceptance. */
export const REPORT_BUCKET_MS = 60_000;
export const reportsKey = (provider: string, bucket: number): string =>
  `${REPORTS_PREFIX}${provider}#${bucket}`;
export const bucketOf = (at: number): number => Math.floor(at / REPORT_BUCKET_MS) * REPORT_BUCKET_MS;

/**
 * The facts that count as a delivery report: the provider telling what became of the message after it
 * took it. Not `sent` (the provider's own acceptance, SES Send: it says nothing about delivery) and not
 * `delayed` (still trying: the report is yet to come).
 */
export const REPORT_FACTS: readonly EvidenceFact[] = FACTS.filter((f) => f !== 'sent' && f !== 'delayed');
const reportFacts = new Set<string>(REPORT_FACTS);
const FACT = 'delivery:';

/** What one stream record adds to one (provider, acceptance minute) counter. */
export interface ReportTally {
  provider: string;
  /** The acceptance minute (epoch ms, a multiple of REPORT_BUCKET_MS). */
  bucket: number;
  accepted: number;
  reported: number;
}

type Image = NonNullable<DynamoDBRecord['dynamodb']>['NewImage'];

/**
 * The row's first entry into `accepted` (history entries `{ s, at }` in the stream image; history[i] is
 * the transition into version i+1).
 */
const firstAccepted = (image: Image): { at: number; version: number } | undefined => {
  const entries = image?.history?.L ?? [];
  for (const [i, entry] of entries.entries()) {
    const m = entry.M;
    if (m?.s?.S === 'accepted' && m.at?.N !== undefined) return { at: Number(m.at.N), version: i + 1 };
  }
  return undefined;
};

const hadReport = (record: DynamoDBRecord): boolean => {
  if (record.eventName !== 'MODIFY') return false;
  const facts = record.dynamodb?.OldImage?.delivery?.M?.h?.L ?? [];
  return facts.some((f) => reportFacts.has(f.M?.f?.S ?? ''));
};

/** When the record reached the ledger (its stream time), else undefined. */
const arrivalMs = (record: DynamoDBRecord): number | undefined => {
  const seconds = record.dynamodb?.ApproximateCreationDateTime;
  return typeof seconds === 'number' ? Math.round(seconds * 1000) : undefined;
};

/**
 * What one ledger stream record adds to the report counters (at most one tally each for accepted and
 * reported, on the row's provider):
 * - `accepted`: the record moves a delivery row into `accepted` for the first time in its history, counted
 *   on the provider the transition names (after a failover, the one that took it), in its minute;
 * - `reported`: the record adds the row's first delivery report (REPORT_FACTS) and the row has been
 *   accepted; counted in the minute of that acceptance, and only when the report reached the ledger
 *   within `lagMs` of it (the record's stream time; the fact's own time when the record has none). A report
 *   that came later is late, as if it had not come: the judgement's `late` counts both.
 */
export const reportTalliesOf = (record: DynamoDBRecord, lagMs: number): ReportTally[] => {
  const lines = transitionsOf(record);
  const out: ReportTally[] = [];
  const image = record.dynamodb?.NewImage;
  const first = firstAccepted(image);
  const acceptedAt = first?.at;
  let reported = hadReport(record);
  for (const line of lines) {
    if (line.record_kind === 'delivery') {
      if (line.to_state !== 'accepted' || !first || line.version !== first.version || !line.transport)
        continue;
      out.push({ provider: line.transport, bucket: bucketOf(first.at), accepted: 1, reported: 0 });
      continue;
    }
    if (line.record_kind !== 'delivery_fact' || reported) continue;
    if (!reportFacts.has((line.to_state ?? '').slice(FACT.length))) continue;
    reported = true;
    if (acceptedAt === undefined || !line.transport) continue;
    const arrived = arrivalMs(record) ?? line.transition_at_ms ?? undefined;
    if (arrived === undefined || arrived - acceptedAt > lagMs) continue;
    out.push({ provider: line.transport, bucket: bucketOf(acceptedAt), accepted: 0, reported: 1 });
  }
  return out;
};

/** The tallies of a batch's records summed per (provider, minute), with the first record that adds to each. */
export interface ReportCounter extends ReportTally {
  /** Index (in the batch) of the first record that adds to this counter. */
  firstIndex: number;
}

export const sumTallies = (perRecord: ReadonlyArray<readonly ReportTally[]>): ReportCounter[] => {
  const counters = new Map<string, ReportCounter>();
  for (const [index, tallies] of perRecord.entries())
    for (const t of tallies) {
      const key = reportsKey(t.provider, t.bucket);
      const c = counters.get(key);
      if (c) {
        c.accepted += t.accepted;
        c.reported += t.reported;
      } else counters.set(key, { ...t, firstIndex: index });
    }
  return [...counters.values()].sort((a, b) => a.firstIndex - b.firstIndex);
};

export type ReportLagSettings = Pick<
  ProviderCircuitSettings,
  'reportLagSeconds' | 'reportWindowSeconds' | 'reportMinSample' | 'reportLateShare'
>;

/**
 * The acceptance minutes a judgement at `now` reads: whole minutes that ended at least `reportLagSeconds`
 * ago (every message in them had its full lag to be reported) and began within the last
 * `reportWindowSeconds`, and none before `since` (the circuit's last change: what it was judged on then
 * does not open it again).
 */
export const bucketsToJudge = (now: number, settings: ReportLagSettings, since = 0): number[] => {
  const newestEnd = now - settings.reportLagSeconds * 1000;
  const oldest = Math.max(now - settings.reportWindowSeconds * 1000, since);
  const first = Math.ceil(oldest / REPORT_BUCKET_MS) * REPORT_BUCKET_MS;
  const out: number[] = [];
  for (let b = first; b + REPORT_BUCKET_MS <= newestEnd; b += REPORT_BUCKET_MS) out.push(b);
  return out;
};

export interface ReportJudgement {
  accepted: number;
  reported: number;
  late: number;
  /** Whether the circuit should open. */
  slow: boolean;
  /** `slow_reports:<late>/<accepted>/<window>s` */
  reason: string;
}

/** Too many late: at least `reportMinSample` accepted and a late share of at least `reportLateShare`. */
export const judgeReports = (
  counters: ReadonlyArray<Pick<ReportTally, 'accepted' | 'reported'>>,
  settings: ReportLagSettings,
): ReportJudgement => {
  const accepted = counters.reduce((n, c) => n + c.accepted, 0);
  // A report counted in a minute whose acceptance this consumer missed cannot make the share negative.
  const reported = Math.min(
    accepted,
    counters.reduce((n, c) => n + c.reported, 0),
  );
  const late = accepted - reported;
  const slow =
    accepted > 0 && accepted >= settings.reportMinSample && late / accepted >= settings.reportLateShare;
  return {
    accepted,
    reported,
    late,
    slow,
    reason: `slow_reports:${late}/${accepted}/${settings.reportWindowSeconds}s`,
  };
};
