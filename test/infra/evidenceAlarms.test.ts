import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Template } from 'aws-cdk-lib/assertions';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { powertoolsSink, publishMetrics } from '../../functions/reconcile/metricsSink.js';
import { EVIDENCE_METRIC_DIMENSIONS, evidenceQuery } from '../../infra/constructs/Alarms.js';
import { handleWebhook } from '../../lib/evidence/WebhookEndpoint.js';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { SES_AND_SMS, synthStack } from './synth.js';

const SYNTH_TIMEOUT = 120_000;

/** The EMF lines Powertools writes to stdout while `act` runs (what CloudWatch turns into metrics). */
const emfOf = async (act: (metrics: Metrics) => Promise<void>) => {
  const lines: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
    await act(metrics);
    publishMetrics(metrics);
  } finally {
    write.mockRestore();
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.includes('"_aws"'))
    .map(
      (l) =>
        JSON.parse(l) as {
          _aws: {
            CloudWatchMetrics: Array<{
              Namespace: string;
              Dimensions: string[][];
              Metrics: Array<{ Name: string }>;
            }>;
          };
        },
    );
};

afterEach(() => vi.restoreAllMocks());

describe('evidence alarms', () => {
  let template: Template;
  beforeAll(() => {
    ({ template } = synthStack(SES_AND_SMS));
  }, SYNTH_TIMEOUT);

  it('alarms on refused webhooks, unmatched evidence, hard bounces and complaints with Metrics Insights sums over every dimension value', () => {
    // Prepare
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    const byExpression = (expression: string) =>
      alarms.filter((a) =>
        (a.Metrics ?? []).some((m: { Expression?: string }) => m.Expression === expression),
      );
    // Assess
    const expected: Array<[string, number]> = [
      ['SELECT SUM(WebhookRefused) FROM SCHEMA("Sendproof", provider, reason, service)', 10],
      ['SELECT SUM(EvidenceUnmatched) FROM SCHEMA("Sendproof", service, source)', 10],
      // Any refused event: a label this deployment did not make, or another message than the row's.
      ['SELECT SUM(EvidenceRefused) FROM SCHEMA("Sendproof", reason, service, source)', 0],
      [
        `SELECT SUM(DeliveryFacts) FROM SCHEMA("Sendproof", channel, fact, purpose, service) WHERE fact = 'bounced_permanent'`,
        5,
      ],
      [
        `SELECT SUM(DeliveryFacts) FROM SCHEMA("Sendproof", channel, fact, purpose, service) WHERE fact = 'complained'`,
        0,
      ],
    ];
    for (const [expression, threshold] of expected) {
      const found = byExpression(expression);
      expect(found, expression).toHaveLength(1);
      expect(found[0]).toMatchObject({
        Threshold: threshold,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [expect.anything()],
      });
      expect(found[0].Metrics).toEqual([expect.objectContaining({ Period: 300, ReturnData: true })]);
    }
  });

  it('queries the dimension set the functions really emit: a refused webhook counted through Powertools', async () => {
    // Act: an unsigned SendGrid webhook, refused by the real endpoint code, counted by the real sink
    const emf = await emfOf(async (metrics) => {
      const response = await handleWebhook(
        {
          recorder: { record: () => Promise.reject(new Error('a refused request never reaches the ledger')) },
          secrets: async () => ({ sendgrid: 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE' }),
          metrics: powertoolsSink(metrics),
        },
        { provider: 'sendgrid', url: 'https://example.test/sendgrid', headers: {}, body: '[]' },
      );
      expect(response.status).toBe(401);
    });
    const refused = emf
      .flatMap((e) => e._aws.CloudWatchMetrics)
      .find((m) => m.Metrics.some((x) => x.Name === METRIC.webhookRefused));
    // Assess
    expect(refused?.Namespace).toBe(METRICS_NAMESPACE);
    expect([...(refused?.Dimensions[0] ?? [])].sort()).toEqual([
      ...EVIDENCE_METRIC_DIMENSIONS[METRIC.webhookRefused],
    ]);
    expect(evidenceQuery(METRIC.webhookRefused)).toContain(refused!.Dimensions[0]!.sort().join(', '));
  });
});
