import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { configSchema, ENV, loadConfig, providerCircuitSchema } from '../../lib/config.js';
import { FAST_RULES, fastConfig, PROVIDER_CIRCUIT_DEFAULTS } from '../../lib/configFastPath.js';
import { builtSchemas } from '../../lib/domain/lazySchema.js';

type Rule = (typeof FAST_RULES)[keyof typeof FAST_RULES];

/** What a cold start of the benchmark's dispatcher reads (bench/coldStart.ts), as an operator sets it. */
const DEPLOYED = {
  SENDPROOF_LEDGER_TABLE: 'sendproof-ledger',
  SENDPROOF_SUPPRESSION_TABLE: 'sendproof-suppression',
  SENDPROOF_CONTENT_HASH_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:hash-AbCdEf',
  SENDPROOF_EMAIL_TRANSPORT: 'ses',
  SENDPROOF_SMS_TRANSPORT: 'sms-v2',
  SENDPROOF_EMAIL_FROM: 'no-reply@example.com',
  SENDPROOF_PURPOSES: '[]',
  SENDPROOF_SEAL_KEY_ARN: 'arn:aws:kms:eu-west-1:111122223333:key/00000000-0000-0000-0000-000000000000',
  SENDPROOF_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/sendproof-intake',
  SENDPROOF_MAX_RECEIVE_COUNT: '5',
  SENDPROOF_PARK_GRACE_SECONDS: '360',
  AWS_REGION: 'eu-west-1',
};

/** Values a setting of this rule may meet: well-formed ones, edge cases the schema rewrites, garbage. */
const valuesFor = (rule: Rule): fc.Arbitrary<string> => {
  const garbage = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom(' ', '\t', 'null', '[]', '{}'));
  switch (rule.kind) {
    case 'string': {
      const min = 'min' in rule && rule.min !== undefined ? rule.min : 0;
      const max = 'max' in rule && rule.max !== undefined ? rule.max : 300;
      const lengths = fc.integer({ min: Math.max(0, min - 2), max: max + 2 });
      const sized = lengths.chain((n) => fc.string({ minLength: n, maxLength: n }));
      const prefix = 'prefix' in rule && rule.prefix ? rule.prefix : '';
      return fc.oneof(
        sized,
        sized.map((s) => `${prefix}${s}`),
        garbage,
      );
    }
    case 'url':
      return fc.oneof(
        fc.webUrl(),
        fc.constantFrom(
          'http://127.0.0.1:8000',
          'https://sqs.eu-west-1.amazonaws.com/111122223333/q',
          ' http://127.0.0.1:8000',
          'http://127.0.0.1:8000 ',
          'http://exa\nmple.com',
          'http:example.com',
          'file:///tmp/x',
          'mailto:a@b.c',
          'not a url',
        ),
        garbage,
      );
    case 'int':
      return fc.oneof(
        fc.integer({ min: rule.min - 3, max: rule.max + 3 }).map(String),
        fc.integer({ min: rule.min, max: rule.max }).map(String),
        fc.constantFrom('007', ' 5', '5 ', '5.0', '1e2', '0x10', '+5', '-0', 'Infinity', '9007199254740993'),
        garbage,
      );
    case 'enum':
      return fc.oneof(fc.constantFrom(...rule.values), fc.constantFrom(' ses', 'SES', 'simulator '), garbage);
    case 'providers': {
      const lists = fc.uniqueArray(fc.constantFrom(...rule.values), { minLength: 1, maxLength: 5 });
      return fc.oneof(
        lists.map((l) => l.join(',')),
        lists.map((l) => l.join(' , ')),
        lists.map((l) => JSON.stringify(l)),
        fc.array(fc.constantFrom(...rule.values), { maxLength: 3 }).map((l) => l.join(',')),
        garbage,
      );
    }
    case 'sealKey':
      return fc.oneof(
        fc.uint8Array({ minLength: 31, maxLength: 33 }).map((b) => Buffer.from(b).toString('base64')),
        garbage,
      );
    case 'jsonArray':
    case 'schemaOnly':
      return fc.oneof(fc.json({ maxDepth: 2 }), fc.constantFrom('[]', '[{"purpose":"x"}]', 'nope'), garbage);
  }
};

/** Same output as the schema wherever the fast path answers: key for key, value for value, in order. */
const agrees = (settings: Record<string, string>): boolean => {
  const fast = fastConfig(settings);
  if (fast === undefined) return false;
  const slow = configSchema().safeParse(settings);
  expect(slow.success, JSON.stringify(settings)).toBe(true);
  expect(fast).toStrictEqual(slow.data);
  expect(JSON.stringify(fast)).toBe(JSON.stringify(slow.data));
  return true;
};

describe('the configuration fast path (lib/configFastPath.ts)', () => {
  it('reads a deployed environment without building the config schema, to what the schema gives', () => {
    // Act (first in this file: nothing has built the schema yet)
    const config = loadConfig(DEPLOYED);
    // Assess
    expect(builtSchemas()).not.toContain('config');
    expect(config.queueUrl).toBe(DEPLOYED.SENDPROOF_QUEUE_URL);
    expect(config.maxReceiveCount).toBe(5);
    expect(config.providerCircuit).toStrictEqual(providerCircuitSchema().parse({}));
    expect(config.leaseSeconds).toBe(90);
  });

  it('has one rule per setting, in the schema order', () => {
    const shape = Object.keys(configSchema()._zod.def.shape);
    expect(Object.keys(FAST_RULES)).toEqual(shape);
    expect(Object.keys(ENV)).toEqual(expect.arrayContaining(shape));
  });

  it("writes out the circuit's defaults as the schema has them", () => {
    expect(JSON.stringify(PROVIDER_CIRCUIT_DEFAULTS)).toBe(JSON.stringify(providerCircuitSchema().parse({})));
  });

  it('agrees with the schema on every value of every setting it answers for', () => {
    let answered = 0;
    let runs = 0;
    for (const [key, rule] of Object.entries(FAST_RULES)) {
      fc.assert(
        fc.property(valuesFor(rule), (value) => {
          runs++;
          if (agrees({ [key]: value })) answered++;
        }),
        { numRuns: 150 },
      );
    }
    // Assess: the generators reach both sides (a path that never answers would agree vacuously).
    expect(answered / runs).toBeGreaterThan(0.3);
    expect(answered / runs).toBeLessThan(0.95);
  });

  it('agrees with the schema on whole environments', () => {
    // Each setting absent or one of the values the fast path takes alone: together they must still agree.
    const entries = Object.entries(FAST_RULES).map(
      ([key, rule]) =>
        [
          key,
          rule.kind === 'schemaOnly'
            ? fc.constant(undefined)
            : fc.option(
                (rule.kind === 'jsonArray'
                  ? fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }).map((a) => JSON.stringify(a))
                  : valuesFor(rule)
                ).filter((v) => fastConfig({ [key]: v }) !== undefined),
                { freq: 2, nil: undefined },
              ),
        ] as const,
    );
    let answered = 0;
    fc.assert(
      fc.property(fc.record(Object.fromEntries(entries)), (env) => {
        const settings = Object.fromEntries(
          Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined),
        );
        if (agrees(settings)) answered++;
      }),
      { numRuns: 300 },
    );
    expect(answered).toBe(300);
  });

  it('leaves every invalid value to the schema, so its error is the one an operator reads', () => {
    expect(fastConfig({ leaseSeconds: '4' })).toBeUndefined();
    expect(() => loadConfig({ SENDPROOF_LEASE_SECONDS: '4' })).toThrow(
      /invalid configuration: SENDPROOF_LEASE_SECONDS: /,
    );
    expect(fastConfig({ queueUrl: 'not a url' })).toBeUndefined();
    expect(() => loadConfig({ SENDPROOF_QUEUE_URL: 'not a url' })).toThrow(/SENDPROOF_QUEUE_URL/);
    expect(fastConfig({ emailProviders: 'ses,ses' })).toBeUndefined();
    expect(() => loadConfig({ SENDPROOF_EMAIL_PROVIDERS: 'ses,ses' })).toThrow(/names a provider twice/);
  });
});
