import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { providerCircuitSchema } from '../../../lib/config.js';
import { createOutcomeConsumer } from '../../../lib/events/OutcomeConsumer.js';
import type { ReportTally } from '../../../lib/transports/reportLag.js';
import {
  bucketOf,
  bucketsToJudge,
  judgeReports,
  REPORT_BUCKET_MS,
  reportTalliesOf,
  sumTallies,
} from '../../../lib/transports/reportLag.js';
import { at, notificationRecords, streamRecord } from '../../fixtures/archive/streamRecords.js';

// Stream records in the shape Lambda delivers a DynamoDB stream (NEW_AND_OLD_IMAGES), as documented in
// https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html ("Example DynamoDB Streams record event")
// and https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_StreamRecord.html
// (ApproximateCreationDateTime in seconds, images as attribute values): test/fixtures/archive/streamRecords.ts.

const settings = providerCircuitSchema().parse({});
const LAG_MS = settings.reportLagSeconds * 1000;
const t0 = at('2026-11-30T10:00:10Z');

/** An email row dispatched and accepted on `provider` at `acceptedAt` (two records: INSERT, MODIFY). */
const acceptedRow = (eventId: string, acceptedAt: number, provider = 'ses') =>
  notificationRecords({ eventId, recipientRef: 'player-1', channel: 'email' }, [
    {
      s: 'dispatching',
      at: acceptedAt - 300,
      by: 'dispatch:w1',
      why: 'gates_passed',
      n: 1,
      p: provider,
      set: { transport: provider, attempts: 1 },
    },
    {
      s: 'accepted',
      at: acceptedAt,
      by: 'dispatch:w1',
      why: 'provider_accepted',
      msg: `${provider}-${eventId}`,
      n: 1,
      set: { providerMessageId: `${provider}-${eventId}` },
    },
  ]);

type Image = Record<string, unknown>;
const imageOf = (record: DynamoDBRecord): Image => unmarshall(record.dynamodb!.NewImage as never);

/** The row's facts as lib/evidence/facts.ts stores them (compact: `~` is the row's message id). */
const withFact = (row: Image, facts: Array<{ f: string; at: number }>): Image => ({
  ...row,
  delivery: {
    status: facts.at(-1)!.f,
    at: facts.at(-1)!.at,
    n: facts.length,
    h: facts.map((x) => ({ f: x.f, at: x.at, why: `ses:${x.f}`, id: `ses:~:${x.f}` })),
  },
});

/** A fact recorded on an accepted row: one MODIFY whose version does not change, at `arrivalMs`. */
const factRecord = (
  previous: DynamoDBRecord,
  facts: Array<{ f: string; at: number }>,
  arrivalMs: number,
  before: Array<{ f: string; at: number }> = [],
) => {
  const row = imageOf(previous);
  return streamRecord({
    eventName: 'MODIFY',
    oldImage: before.length ? withFact(row, before) : row,
    newImage: withFact(row, [...before, ...facts]),
    arrivalMs,
  });
};

describe('delivery-report tallies from the ledger stream (pure)', () => {
  it('counts a first acceptance on the provider that took it, in its minute; the dispatching record adds nothing', () => {
    // Prepare
    const [dispatching, accepted] = acceptedRow('a1', t0);
    // Act & Assess
    expect(reportTalliesOf(dispatching!, LAG_MS)).toEqual([]);
    expect(reportTalliesOf(accepted!, LAG_MS)).toEqual([
      { provider: 'ses', bucket: at('2026-11-30T10:00:00Z'), accepted: 1, reported: 0 },
    ]);
  });

  it('after a failover the acceptance counts on the provider the row moved to', () => {
    // Prepare: SES refused the connection, SendGrid took it (the history names both attempts).
    const records = notificationRecords({ eventId: 'fo', recipientRef: 'player-1', channel: 'email' }, [
      { s: 'dispatching', at: t0, by: 'dispatch:w1', n: 1, p: 'ses', set: { transport: 'ses', attempts: 1 } },
      {
        s: 'retry_wait',
        at: t0 + 10,
        by: 'dispatch:w1',
        why: 'failover:ses>sendgrid:request_never_left:ECONNREFUSED',
        p: 'sendgrid',
        set: { transport: 'sendgrid' },
      },
      {
        s: 'dispatching',
        at: t0 + 20,
        by: 'dispatch:w1',
        why: 'retry',
        n: 2,
        p: 'sendgrid',
        set: { attempts: 2 },
      },
      {
        s: 'accepted',
        at: t0 + 30,
        by: 'dispatch:w1',
        msg: 'sg-1',
        n: 2,
        set: { providerMessageId: 'sg-1' },
      },
    ]);
    // Act
    const tallies = records.flatMap((r) => reportTalliesOf(r, LAG_MS));
    // Assess
    expect(tallies).toEqual([{ provider: 'sendgrid', bucket: bucketOf(t0), accepted: 1, reported: 0 }]);
  });

  it('counts the first delivery report in the acceptance minute when it reached the ledger within the lag', () => {
    // Prepare
    const [, accepted] = acceptedRow('r1', t0);
    const delivered = { f: 'delivered', at: t0 + 2_000 };
    // Act
    const onTime = reportTalliesOf(factRecord(accepted!, [delivered], t0 + 5_000), LAG_MS);
    const atTheLag = reportTalliesOf(factRecord(accepted!, [delivered], t0 + LAG_MS), LAG_MS);
    // Assess
    expect(onTime).toEqual([{ provider: 'ses', bucket: bucketOf(t0), accepted: 0, reported: 1 }]);
    expect(atTheLag).toEqual(onTime);
  });

  it('a report that reached the ledger after the lag is late, even when the provider dates it earlier', () => {
    // Prepare: the provider says it delivered within seconds; its receipt came 11 minutes later.
    const [, accepted] = acceptedRow('late', t0);
    // Act
    const late = reportTalliesOf(
      factRecord(accepted!, [{ f: 'delivered', at: t0 + 2_000 }], t0 + LAG_MS + 60_000),
      LAG_MS,
    );
    // Assess
    expect(late).toEqual([]);
  });

  it('a provider acceptance fact (SES Send), a delay and a second report add nothing', () => {
    // Prepare
    const [, accepted] = acceptedRow('n1', t0);
    const arrival = t0 + 1_000;
    // Act & Assess
    expect(reportTalliesOf(factRecord(accepted!, [{ f: 'sent', at: t0 }], arrival), LAG_MS)).toEqual([]);
    expect(reportTalliesOf(factRecord(accepted!, [{ f: 'delayed', at: t0 }], arrival), LAG_MS)).toEqual([]);
    expect(
      reportTalliesOf(
        factRecord(accepted!, [{ f: 'engaged', at: t0 + 900 }], arrival, [{ f: 'delivered', at: t0 + 500 }]),
        LAG_MS,
      ),
    ).toEqual([]);
  });

  it('sums a batch per (provider, minute), in the order of the first record that adds to each', () => {
    // Prepare: 3 rows accepted in minute 0 on SES, 2 in minute 1 on SendGrid, one SES report.
    const m0 = at('2026-11-30T10:00:00Z');
    const m1 = m0 + REPORT_BUCKET_MS;
    const rows = [
      acceptedRow('b1', m0 + 1_000),
      acceptedRow('b2', m0 + 2_000),
      acceptedRow('b3', m1 + 1_000, 'sendgrid'),
      acceptedRow('b4', m0 + 3_000),
      acceptedRow('b5', m1 + 2_000, 'sendgrid'),
    ];
    const batch = [
      ...rows.flat(),
      factRecord(rows[0]![1]!, [{ f: 'delivered', at: m0 + 2_000 }], m0 + 9_000),
    ];
    // Act
    const counters = sumTallies(batch.map((r) => reportTalliesOf(r, LAG_MS)));
    // Assess
    expect(counters).toEqual([
      { provider: 'ses', bucket: m0, accepted: 3, reported: 1, firstIndex: 1 },
      { provider: 'sendgrid', bucket: m1, accepted: 2, reported: 0, firstIndex: 5 },
    ]);
  });
});

describe('the report-lag judgement (pure)', () => {
  const counts = (accepted: number, reported: number) => [{ accepted, reported }];

  it('never opens below the minimum sample, however late', () => {
    // Act & Assess
    expect(judgeReports(counts(19, 0), settings)).toMatchObject({ accepted: 19, late: 19, slow: false });
  });

  it('opens at a late share exactly at the threshold, not just below it', () => {
    // Act
    const atShare = judgeReports(counts(20, 10), settings);
    const below = judgeReports(counts(20, 11), settings);
    // Assess
    expect(atShare).toEqual({
      accepted: 20,
      reported: 10,
      late: 10,
      slow: true,
      reason: 'slow_reports:10/20/1800s',
    });
    expect(below).toMatchObject({ late: 9, slow: false });
  });

  it('reports that came after the lag count as late in the judgement', () => {
    // Prepare: 20 accepted; 12 reports, 8 of them after the lag (not counted as reported).
    const [, accepted] = acceptedRow('j', t0);
    const tallies: ReportTally[][] = [];
    for (let i = 0; i < 20; i += 1) tallies.push(reportTalliesOf(accepted!, LAG_MS));
    for (let i = 0; i < 12; i += 1)
      tallies.push(
        reportTalliesOf(
          factRecord(
            accepted!,
            [{ f: 'delivered', at: t0 + 1_000 }],
            i < 4 ? t0 + 60_000 : t0 + LAG_MS + 1_000,
          ),
          LAG_MS,
        ),
      );
    // Act
    const judgement = judgeReports(sumTallies(tallies), settings);
    // Assess: 4 in time, 16 late of 20.
    expect(judgement).toMatchObject({ accepted: 20, reported: 4, late: 16, slow: true });
  });

  it('reads the whole minutes accepted at least the lag ago, within the window, and none before the last change', () => {
    // Prepare
    const now = at('2026-11-30T11:00:30Z');
    // Act
    const all = bucketsToJudge(now, settings);
    const since = bucketsToJudge(now, settings, at('2026-11-30T10:45:10Z'));
    // Assess: 10:31 .. 10:49 (10:30:30 is not a whole minute in the window; 10:50 ends after now − lag).
    expect(all.length).toBe(19);
    expect(new Date(all[0]!).toISOString()).toBe('2026-11-30T10:31:00.000Z');
    expect(new Date(all.at(-1)!).toISOString()).toBe('2026-11-30T10:49:00.000Z');
    expect(since.map((b) => new Date(b).toISOString().slice(11, 16))).toEqual([
      '10:46',
      '10:47',
      '10:48',
      '10:49',
    ]);
  });

  it('rejects a window no longer than the lag (no minute would ever be judged)', () => {
    // Act & Assess
    expect(
      providerCircuitSchema().safeParse({ reportLagSeconds: 600, reportWindowSeconds: 600 }).success,
    ).toBe(false);
  });
});

describe('the outcomes consumer keeps the counters once per batch', () => {
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const m0 = at('2026-11-30T10:00:00Z');
  const batch = () => [
    ...acceptedRow('c1', m0 + 1_000),
    ...acceptedRow('c2', m0 + 2_000),
    ...acceptedRow('c3', m0 + 3_000),
  ];

  it('adds one counter for three acceptances in one minute (one write, not three)', async () => {
    // Prepare
    const adds: ReportTally[] = [];
    const consume = createOutcomeConsumer({
      sink: { publish: async () => ({ failedIds: [] }) },
      logger: quiet,
      reports: { counters: { add: async (c) => void adds.push(c) }, lagMs: LAG_MS },
    });
    // Act
    const out = await consume({ Records: batch() });
    // Assess
    expect(out.batchItemFailures).toEqual([]);
    expect(adds).toMatchObject([{ provider: 'ses', bucket: m0, accepted: 3, reported: 0 }]);
  });

  it('counts only the records before the failure point, so a record read again is counted once', async () => {
    // Prepare: the bus refuses the events of the second row's acceptance (record 3).
    const records = batch();
    const adds: ReportTally[] = [];
    const consume = createOutcomeConsumer({
      sink: {
        publish: async (events) => ({
          failedIds: events.filter((e) => e.eventId === 'c2' && e.state === 'accepted').map((e) => e.id),
        }),
      },
      logger: quiet,
      reports: { counters: { add: async (c) => void adds.push(c) }, lagMs: LAG_MS },
    });
    // Act
    const out = await consume({ Records: records });
    // Assess: record 0..2 done (c1 accepted, c2 dispatching); the retry starts at c2's acceptance.
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: records[3]!.dynamodb!.SequenceNumber }]);
    expect(adds).toMatchObject([{ accepted: 1 }]);
  });

  it('a counter it cannot write moves the failure point to its first record and takes back what earlier counters got from there on', async () => {
    // Prepare: minute 0 (rows d1, d3) and minute 1 (row d2); the minute-1 counter cannot be written.
    const records = [
      ...acceptedRow('d1', m0 + 1_000),
      ...acceptedRow('d2', m0 + REPORT_BUCKET_MS + 1_000),
      ...acceptedRow('d3', m0 + 5_000),
    ];
    const adds: ReportTally[] = [];
    const consume = createOutcomeConsumer({
      sink: { publish: async () => ({ failedIds: [] }) },
      logger: quiet,
      reports: {
        counters: {
          add: async (c) => {
            if (c.bucket !== m0) throw new Error('ProvisionedThroughputExceededException');
            adds.push(c);
          },
        },
        lagMs: LAG_MS,
      },
    });
    // Act
    const out = await consume({ Records: records });
    // Assess: minute 0 got d1 and d3, gives back d3 (read again from d2's acceptance on).
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: records[3]!.dynamodb!.SequenceNumber }]);
    expect(adds.map((c) => [c.bucket, c.accepted])).toEqual([
      [m0, 2],
      [m0, -1],
    ]);
  });
});
