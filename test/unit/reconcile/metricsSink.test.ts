import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { powertoolsSink, publishMetrics } from '../../../functions/reconcile/metricsSink.js';

/** Every EMF document Powertools writes to stdout in this test, parsed. */
const documents = (): Array<Record<string, unknown>> =>
  written
    .join('')
    .split('\n')
    .filter((line) => line.includes('"_aws"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
let written: string[] = [];

describe('the Powertools metrics sink', () => {
  beforeEach(() => {
    written = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => written.push(`${args.join(' ')}\n`));
    vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => written.push(`${args.join(' ')}\n`));
  });
  afterEach(() => vi.restoreAllMocks());

  it('writes one document per dimension set and invocation, with the sum, not one per count', () => {
    // Arrange: a batch of 40 delivered events of one purpose and 2 bounces
    const metrics = new Metrics({ namespace: 'Test', serviceName: 'sendproof' });
    const sink = powertoolsSink(metrics);
    for (let i = 0; i < 40; i++)
      sink.count('DeliveryFacts', 1, { fact: 'delivered', channel: 'email', purpose: 'password-reset' });
    sink.count('DeliveryFacts', 1, { purpose: 'password-reset', fact: 'bounced', channel: 'email' });
    sink.count('DeliveryFacts', 1, { channel: 'email', fact: 'bounced', purpose: 'password-reset' });

    // Act
    publishMetrics(metrics);

    // Assert: two documents, the dimension order of the call does not split a set
    const docs = documents();
    expect(docs).toHaveLength(2);
    expect(docs.map((d) => [d.fact, d.DeliveryFacts])).toEqual([
      ['delivered', 40],
      ['bounced', 2],
    ]);
    for (const doc of docs) expect(doc.purpose).toBe('password-reset');

    // A second invocation starts from nothing.
    written = [];
    publishMetrics(metrics);
    expect(documents()).toHaveLength(0);
  });

  it('keeps undimensioned counts in the invocation document, and writes nothing when nothing was counted', () => {
    const metrics = new Metrics({ namespace: 'Test', serviceName: 'sendproof' });
    publishMetrics(metrics);
    expect(written.join('')).toBe('');

    powertoolsSink(metrics).count('RowsResolved', 3);
    publishMetrics(metrics);
    expect(documents().map((d) => d.RowsResolved)).toEqual([3]);
  });
});
