import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import { FACTS } from '../../../lib/evidence/facts.js';
import { HOLD_REASONS, REJECTION_CAUSES } from '../../../lib/transports/port.js';

/**
 * The provider contract corpus: one JSON file per documented payload or error answer, under
 * test/contract/providers/<provider>/ (README.md there describes the fields). This module reads and
 * validates every file; test/integration/contract/providerCorpus.test.ts runs them through the real
 * parsers, recorder and adapters, and scripts/transports-table.ts renders docs/transports.md's table.
 */
export const CORPUS_DIR = dirname(fileURLToPath(import.meta.url));

const Source = z.union([
  z.object({ title: z.string().min(10), url: z.string().url() }).passthrough(),
  z
    .object({
      title: z.string().min(10),
      repository: z.string().regex(/^[\w.-]+\/[\w.-]+$/),
      path: z.string().min(1),
    })
    .passthrough(),
]);

const EvidenceExpected = z.strictObject({
  result: z.literal('evidence'),
  fact: z.enum(FACTS),
  settlesTo: z.enum(['accepted', 'rejected']),
  suppresses: z.boolean(),
  unlocksFallback: z.boolean(),
  why: z.string().min(1),
  providerMessageId: z.string(),
});
const Signal = z.union([
  z.strictObject({
    kind: z.enum(['opt_out', 'opt_in']),
    provider: z.enum(['sms-v2', 'twilio']),
    keyword: z.string().min(1),
    phone: z.string().regex(/^\+\d{8,15}$/),
  }),
  z.strictObject({
    kind: z.literal('account_status'),
    provider: z.literal('sendgrid'),
    status: z.string().min(1),
    effect: z.enum(['held', 'restored']),
  }),
]);
const IgnoredExpected = z.strictObject({
  result: z.literal('ignored'),
  reason: z.string().min(1),
  signal: Signal.optional(),
});
const ErrorExpected = z.strictObject({
  kind: z.enum(['rejected', 'retryable', 'ambiguous']),
  cause: z.enum(REJECTION_CAUSES).optional(),
  hold: z.enum(HOLD_REASONS).optional(),
});

const Common = {
  id: z.string().regex(/^[a-z0-9-]+\/[a-z0-9-]+$/),
  provider: z.enum(['ses', 'sms-v2', 'resend', 'sendgrid', 'twilio']),
  name: z.string().min(3),
  source: Source,
  /** `example`: the provider's own example; otherwise what it was built from (`field table`, `model`, …). */
  builtFrom: z.enum(['example', 'field table', 'model', 'documented error']),
  /** How a case not copied verbatim from an example was built. */
  note: z.string().optional(),
  /** The provider's words for what it means. */
  documented: z.string().min(10),
  /** What Sendproof does with it, and why. */
  sendproof: z.string().min(3),
};

export const CaseSchema = z
  .discriminatedUnion('kind', [
    z.strictObject({
      ...Common,
      kind: z.literal('event'),
      envelope: z.enum(['eventbridge', 'sns', 'none', 'webhook', 'status-callback']),
      /** Whether the provider echoes our labels (key hash, row label) on it; false for account events. */
      echo: z.boolean(),
      payload: z.record(z.string(), z.unknown()),
      expected: z.union([EvidenceExpected, IgnoredExpected]),
    }),
    z.strictObject({
      ...Common,
      kind: z.literal('inbound'),
      envelope: z.enum(['sns', 'inbound-webhook']),
      echo: z.boolean(),
      payload: z.record(z.string(), z.unknown()),
      expected: IgnoredExpected,
    }),
    z.strictObject({
      ...Common,
      kind: z.literal('error'),
      echo: z.boolean(),
      payload: z.strictObject({
        status: z.number().int().min(400).max(599),
        headers: z.record(z.string(), z.string()),
        body: z.unknown(),
      }),
      expected: ErrorExpected,
    }),
  ])
  .superRefine((c, ctx) => {
    if (c.builtFrom !== 'example' && c.builtFrom !== 'documented error' && c.builtFrom !== 'model' && !c.note)
      ctx.addIssue({
        code: 'custom',
        message: 'a case not built from an example says how it was built (note)',
      });
    if (!c.id.startsWith(`${c.provider}/`))
      ctx.addIssue({ code: 'custom', message: 'id must start with the provider' });
  });
export type CorpusCase = z.output<typeof CaseSchema>;

const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.json') ? [join(dir, e.name)] : [],
  );

/** Every case file, validated, sorted by id; its id must be its path. Throws on the first bad file. */
export const loadCorpus = (): CorpusCase[] =>
  files(CORPUS_DIR)
    .map((path) => {
      const parsed = CaseSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
      if (!parsed.success)
        throw new Error(
          `${relative(CORPUS_DIR, path)}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        );
      const expectedId = relative(CORPUS_DIR, path).replace(/\.json$/, '');
      if (parsed.data.id !== expectedId)
        throw new Error(`${expectedId}: id ${parsed.data.id} is not the file's path`);
      return parsed.data;
    })
    .sort((a, b) => a.id.localeCompare(b.id));
