import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as smsv2 from '@aws-sdk/client-pinpoint-sms-voice-v2';
import * as sesv2 from '@aws-sdk/client-sesv2';
import { isThrottlingError, isTransientError } from '@smithy/core/retry';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AWS_COMMON_ERRORS,
  type AwsErrorTable,
  classifyAwsError,
  sdkRetrySignals,
} from '../../../lib/transports/classify.js';
import { SES_ERRORS } from '../../../lib/transports/SesTransport.js';
import { SMS_V2_ERRORS } from '../../../lib/transports/SmsV2Transport.js';

const NOW = Date.parse('2026-12-02T12:00:00Z');

type ExceptionClass = new (options: {
  message: string;
  $metadata: object;
}) => Error & {
  $fault?: 'client' | 'server';
};

/** Every class the SDK exports that extends the service's own ServiceException. */
const exceptionsOf = (sdk: Record<string, unknown>, base: string): ExceptionClass[] => {
  const root = sdk[base] as abstract new (...args: never[]) => unknown;
  return Object.values(sdk).filter(
    (value): value is ExceptionClass =>
      typeof value === 'function' && (value as { prototype: unknown }).prototype instanceof root,
  );
};

const services: Array<{ service: string; sdk: Record<string, unknown>; base: string; table: AwsErrorTable }> =
  [
    { service: '@aws-sdk/client-sesv2', sdk: sesv2, base: 'SESv2ServiceException', table: SES_ERRORS },
    {
      service: '@aws-sdk/client-pinpoint-sms-voice-v2',
      sdk: smsv2,
      base: 'PinpointSMSVoiceV2ServiceException',
      table: SMS_V2_ERRORS,
    },
  ];

/** An instance as the SDK's deserializer builds it, with the status its fault implies. */
const instanceOf = (Exception: ExceptionClass) => {
  const error = new Exception({ message: 'from the service', $metadata: {} });
  const status = error.$fault === 'server' ? 500 : 400;
  return Object.assign(error, { $metadata: { httpStatusCode: status } });
};

/**
 * The names the SDK's retry logic treats as throttling or transient, read from the installed
 * @smithy/core (the constants are not exported): a new SDK release that adds a name is covered at once.
 */
const smithyRetryNames = (): string[] => {
  const require = createRequire(import.meta.url);
  const root = dirname(require.resolve('@smithy/core/package.json'));
  const source = readFileSync(join(root, 'dist-cjs', 'submodules', 'retry', 'index.js'), 'utf8');
  const names = ['THROTTLING_ERROR_CODES', 'TRANSIENT_ERROR_CODES'].flatMap((constant) => {
    const list = new RegExp(`const ${constant} = \\[([^\\]]*)\\]`).exec(source)?.[1] ?? '';
    return [...list.matchAll(/"([A-Za-z0-9]+)"/g)].map((m) => m[1]!);
  });
  return [...new Set(names)];
};

describe('error classification from the SDKs’ own models (issue 25)', () => {
  for (const { service, sdk, base, table } of services) {
    it(`every exception class ${service} exports has an explicit classification`, () => {
      // Prepare
      const classes = exceptionsOf(sdk, base);
      const names = classes.map((C) => instanceOf(C).name);

      // Act
      const unclassified = names.filter((name) => !(name in table));

      // Assess: a new SDK release with a new exception fails here instead of falling to a status default
      expect(classes.length).toBeGreaterThanOrEqual(7);
      expect(unclassified).toEqual([]);
    });

    it(`no ${service} exception the SDK would retry is classified rejected`, async () => {
      // Prepare
      const signals = await sdkRetrySignals();
      const classes = exceptionsOf(sdk, base);

      // Act
      const wrong = classes
        .map((C) => instanceOf(C))
        .filter((e) => isThrottlingError(e as never) || isTransientError(e as never))
        .map((e) => [e.name, classifyAwsError(e, table, NOW, signals).kind])
        .filter(([, kind]) => kind === 'rejected');

      // Assess
      expect(wrong).toEqual([]);
    });
  }

  it('the installed SDK names its throttling and transient errors (the list this suite reads)', () => {
    // Act
    const names = smithyRetryNames();

    // Assess: ThrottlingException and friends are there, so the property below covers them
    expect(names).toEqual(expect.arrayContaining(['ThrottlingException', 'TooManyRequestsException']));
    expect(names.length).toBeGreaterThanOrEqual(10);
  });

  it('an unmodeled error the SDK treats as throttling or transient is never rejected, whatever the status', async () => {
    // Prepare
    const signals = await sdkRetrySignals();
    const names = [...smithyRetryNames(), ...Object.keys(AWS_COMMON_ERRORS), 'SomethingNew'];
    const tables = services.map((s) => s.table);

    // Act / Assess
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        fc.constantFrom(400, 403, 404, 408, 409, 429, 500, 502, 503, 504),
        fc.constantFrom(...tables),
        fc.boolean(),
        (name, status, table, retryableTrait) => {
          const error = Object.assign(new Error('from the service'), {
            name,
            $metadata: { httpStatusCode: status },
            ...(retryableTrait ? { $retryable: { throttling: false } } : {}),
          });
          const sdkRetries = isThrottlingError(error as never) || isTransientError(error as never);
          const kind = classifyAwsError(error, table, NOW, signals).kind;
          return !sdkRetries || kind !== 'rejected';
        },
      ),
      { numRuns: 500 },
    );
  });

  it('an unmodeled 4xx the SDK retries as transient (RequestTimeoutException) is retryable, with the signals', async () => {
    // Prepare
    const error = Object.assign(new Error('timed out'), {
      name: 'RequestTimeoutException',
      $metadata: { httpStatusCode: 400 },
    });

    // Act
    const withSignals = classifyAwsError(error, SES_ERRORS, NOW, await sdkRetrySignals());

    // Assess
    expect(withSignals).toEqual({ kind: 'retryable', reason: 'RequestTimeoutException' });
  });
});
