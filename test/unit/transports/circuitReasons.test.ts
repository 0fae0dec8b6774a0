import { describe, expect, it } from 'vitest';
import { describeCircuitReason } from '../../../lib/transports/circuitReasons.js';

// The reasons lib/transports/health.ts writes (`failures:<n>/<window>s`, `probe_failed:<kind>`,
// `probe_answered:<kind>`, `probe_taken`) and the delivery-report one (`slow_reports:<late>/<accepted>/<window>s`).
describe('a provider circuit reason in words', () => {
  it.each([
    ['failures:3/60s', '3 provider failures in 60 s (5xx answers or requests that never left)'],
    ['failures:1/60s', '1 provider failure in 60 s (5xx answers or requests that never left)'],
    ['5xx:3/60s', '3 provider errors in 60 s'],
    ['slow_reports:12/20/1800s', '12 of 20 delivery reports late over 1800 s'],
    ['slow_reports:1/1/60s', '1 of 1 delivery report late over 60 s'],
    ['probe_failed:ambiguous', 'the probe failed again: a provider error after the request was sent'],
    ['probe_failed:retryable', 'the probe failed again: the request never reached the provider'],
    ['probe_answered:accepted', 'the probe was answered: the provider accepted the message'],
    ['probe_taken', 'a dispatcher took the probe'],
  ])('%s reads "%s"', (raw, text) => {
    expect(describeCircuitReason(raw)).toEqual({ raw, text, known: true });
  });

  it.each([
    'quota_exhausted:7',
    'failures:3',
    'failures:x/60s',
    'failures:3/60',
    'failures:3/60s/9',
    'slow_reports:12/20',
    'slow_reports:12/20/1800',
    'slow_reports:-1/20/1800s',
    'probe_failed:exploded',
    'probe_taken:extra',
    'toString',
    '__proto__:1/2s',
    '',
  ])('an unknown or malformed reason (%j) is shown as it is', (raw) => {
    expect(describeCircuitReason(raw)).toEqual({ raw, text: raw, known: false });
  });
});
