import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash } from '../../../lib/domain/content.js';
import { TemplateError } from '../../../lib/templates/errors.js';
import { FileTemplateStore } from '../../../lib/templates/FileTemplateStore.js';
import type { RenderRequest } from '../../../lib/templates/port.js';
import { countSmsSegments } from '../../../lib/templates/smsSegments.js';
import { makeTemplatesDir, simpleSpec, writeRevision } from './revisionFixture.js';

const HASH_KEY = 'test-content-hash-key-0123456789';
const TOKEN = 'tok_Zq8Lr2XvB9mN4pK7sW1yT6dH3jF0cA5eG8uI2oP';

const resetRequest = (overrides: Partial<RenderRequest> = {}): RenderRequest => ({
  templateId: 'password-reset',
  revision: 'v1',
  channel: 'email',
  data: { appName: 'Acme Play', resetUrl: 'https://play.example.com/reset', expiresInMinutes: 30 },
  secrets: { token: TOKEN },
  ...overrides,
});

const receiptRequest = (overrides: Partial<RenderRequest> = {}): RenderRequest => ({
  templateId: 'receipt',
  revision: 'v5',
  channel: 'email',
  data: {
    playerName: 'Ana',
    orderId: 'ord-1001',
    lines: [
      { name: 'Sword of Dawn', amount: '4.99' },
      { name: 'Shield', amount: '2.00' },
    ],
    total: '6.99',
    currency: 'EUR',
  },
  secrets: {},
  ...overrides,
});

const PDF = { filename: 'report.pdf', contentType: 'application/pdf', sha256: 'a'.repeat(64) };

const healthRequest = (overrides: Partial<RenderRequest> = {}): RenderRequest => ({
  templateId: 'health-report',
  revision: 'v1',
  channel: 'email',
  data: { patientName: 'Jo Park', reportDate: '2026-11-28', portalUrl: 'https://portal.example.com/r/9' },
  secrets: {},
  attachments: [PDF],
  ...overrides,
});

/** Runs `fn`, expecting a TemplateError, and returns it. */
const templateErrorOf = (fn: () => unknown): TemplateError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof TemplateError) return error;
    throw error;
  }
  throw new Error('expected a TemplateError, but rendering succeeded');
};

const store = new FileTemplateStore();

describe('FileTemplateStore: strict variables', () => {
  it('a missing variable is a permanent missing_variable error that names it', () => {
    // Prepare
    const request = resetRequest({ data: { appName: 'Acme Play', expiresInMinutes: 30 } });

    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe('missing_variable');
    expect(error.kind).toBe('permanent');
    expect(error.message).toContain('"resetUrl"');
    expect(error.message).toContain('password-reset/v1');
  });

  it('a field missing from one list item names the field and the item', () => {
    // Prepare
    const request = receiptRequest({
      data: { ...receiptRequest().data, lines: [{ name: 'Sword', amount: '1.00' }, { name: 'Shield' }] },
    });

    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe('missing_variable');
    expect(error.message).toContain('"amount"');
    expect(error.message).toContain('lines[1]');
  });

  it('a null value is missing, never rendered as an empty string', () => {
    // Prepare
    const request = resetRequest({ channel: 'sms', data: { ...resetRequest().data, appName: null } });

    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe('missing_variable');
    expect(error.message).toContain('"appName"');
  });

  it('a list in a value slot is refused instead of printing [object Object]', () => {
    // Prepare
    const request = receiptRequest({ channel: 'sms', data: { ...receiptRequest().data, orderId: [1, 2] } });

    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe('invalid_variable');
    expect(error.message).toContain('"orderId"');
  });

  it('renders every list item as a line of the receipt, with the outer currency in scope', () => {
    // Act
    const rendered = store.render(receiptRequest());

    // Assess
    expect(rendered.content.text).toContain('- Sword of Dawn: 4.99 EUR\n- Shield: 2.00 EUR');
    expect(rendered.content.text).toContain('Total paid: 6.99 EUR');
    expect(rendered.owner).toBe('application');
  });
});

describe('FileTemplateStore: secrets', () => {
  it('a secret the template does not declare is refused as secret_outside_slot', () => {
    // Prepare
    const request = receiptRequest({ secrets: { token: TOKEN } });

    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe('secret_outside_slot');
    expect(error.message).toContain('"token"');
  });

  it('a secret aimed at a plain data slot is refused as secret_outside_slot', () => {
    // Prepare
    const request = resetRequest({
      data: { resetUrl: 'https://play.example.com/reset', expiresInMinutes: 30 },
      secrets: { token: TOKEN, appName: 'Acme Play' },
    });

    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe('secret_outside_slot');
    expect(error.message).toContain('"appName"');
  });

  it('a declared secret passed in data (which is persisted) is refused', () => {
    // Prepare
    const request = resetRequest({ data: { ...resetRequest().data, token: TOKEN }, secrets: {} });

    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe('secret_outside_slot');
    expect(error.message).toContain('pass it in secrets');
  });

  it('secret values never appear in a thrown error message', () => {
    // Prepare: one request per failure mode, each carrying the secret.
    const longToken = `${TOKEN}${'x'.repeat(500)}`;
    const failures = [
      resetRequest({ data: { appName: 'Acme Play', expiresInMinutes: 30 } }),
      resetRequest({ data: { ...resetRequest().data, token: TOKEN } }),
      receiptRequest({ secrets: { token: TOKEN } }),
      resetRequest({ channel: 'sms', secrets: { token: longToken } }),
      resetRequest({ locale: `../${TOKEN}` }),
    ];

    // Act
    const errors = failures.map((request) => templateErrorOf(() => store.render(request)));

    // Assess
    expect(errors.map((e) => e.code)).toEqual([
      'missing_variable',
      'secret_outside_slot',
      'secret_outside_slot',
      'sms_too_long',
      'invalid_locale',
    ]);
    for (const error of errors) {
      expect(error.message).not.toContain(TOKEN);
      expect(JSON.stringify(error)).not.toContain(TOKEN);
      expect(error.stack ?? '').not.toContain(TOKEN);
    }
  });
});

describe('FileTemplateStore: escaping', () => {
  it('escapes markup in the HTML body and keeps it verbatim in the text body, subject and SMS', () => {
    // Prepare
    const appName = '<script>alert("x")</script> & Co';
    const data = { ...resetRequest().data, appName };

    // Act
    const email = store.render(resetRequest({ data }));
    const sms = store.render(resetRequest({ data, channel: 'sms' }));

    // Assess
    expect(email.content.html).not.toContain('<script>');
    expect(email.content.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;&#x2F;script&gt; &amp; Co');
    expect(email.content.text).toContain(appName);
    expect(email.content.subject).toBe(`Reset your ${appName} password`);
    expect(sms.content.text).toContain(appName);
    expect(sms.content.text).not.toContain('&lt;');
  });

  it('a subject value with a line break is refused rather than sent as two header lines', () => {
    // Prepare
    const data = { ...resetRequest().data, appName: 'Acme\nBcc: someone' };

    // Act
    const error = templateErrorOf(() => store.render(resetRequest({ data })));

    // Assess
    expect(error.code).toBe('invalid_subject');
  });
});

describe('FileTemplateStore: locales', () => {
  it.each([
    ['pt-BR', 'pt', 'Redefina a sua senha do Acme Play'],
    ['pt', 'pt', 'Redefina a sua senha do Acme Play'],
    ['fr-CA', 'en', 'Reset your Acme Play password'],
    ['en', 'en', 'Reset your Acme Play password'],
    [undefined, 'en', 'Reset your Acme Play password'],
  ])('a request for %s renders the %s files', (requested, used, subject) => {
    // Act
    const rendered = store.render(resetRequest(requested ? { locale: requested } : {}));

    // Assess
    expect(rendered.locale).toBe(used);
    expect(rendered.content.subject).toBe(subject);
  });

  describe('with both pt-BR and pt variants', () => {
    const temp = makeTemplatesDir();
    beforeAll(() => {
      const base = simpleSpec();
      writeRevision(temp.dir, 'greeting', 'r1', {
        definition: { ...base.definition, locales: ['pt', 'pt-BR'] },
        files: {
          ...base.files,
          'pt/email.subject': 'Olá {{name}} (pt)\n',
          'pt/email.txt': 'Código {{code}}, {{name}}.\n',
          'pt/email.html': '<p>Código {{code}}, {{name}}.</p>\n',
          'pt/sms.txt': 'Codigo {{code}} {{name}}\n',
          'pt-BR/email.subject': 'Olá {{name}} (pt-BR)\n',
          'pt-BR/email.txt': 'Código {{code}}, {{name}}.\n',
          'pt-BR/email.html': '<p>Código {{code}}, {{name}}.</p>\n',
          'pt-BR/sms.txt': 'Codigo {{code}} {{name}}\n',
        },
      });
    });
    afterAll(() => temp.remove());

    it.each([
      ['pt-BR', 'pt-BR'],
      ['pt-PT', 'pt'],
      ['de', 'en'],
    ])('a request for %s uses %s, the most specific variant present', (requested, used) => {
      // Prepare
      const fixtureStore = new FileTemplateStore(temp.dir);

      // Act
      const rendered = fixtureStore.render({
        templateId: 'greeting',
        revision: 'r1',
        channel: 'email',
        locale: requested,
        data: { name: 'Bia' },
        secrets: { code: '123456' },
      });

      // Assess
      expect(rendered.locale).toBe(used);
      expect(rendered.content.subject).toBe(used === 'en' ? 'Hello Bia' : `Olá Bia (${used})`);
    });
  });
});

describe('FileTemplateStore: content hash', () => {
  it('rendering the same request twice, even in two stores, yields the same content hash', () => {
    // Act
    const first = new FileTemplateStore().render(receiptRequest({ attachments: [PDF] }));
    const second = new FileTemplateStore().render(receiptRequest({ attachments: [PDF] }));

    // Assess
    expect(contentHash(first.content, HASH_KEY)).toBe(contentHash(second.content, HASH_KEY));
    expect(first.content).toEqual(second.content);
  });

  it.each([
    ['a data value', receiptRequest({ data: { ...receiptRequest().data, total: '7.00' } })],
    [
      'a list item',
      receiptRequest({ data: { ...receiptRequest().data, lines: [{ name: 'Sword', amount: '4.99' }] } }),
    ],
    ['the revision', receiptRequest({ revision: 'v4' })],
    ['an attachment checksum', receiptRequest({ attachments: [{ ...PDF, sha256: 'b'.repeat(64) }] })],
  ])('changing %s changes the content hash', (_what, changed) => {
    // Prepare
    const baseline = contentHash(store.render(receiptRequest({ attachments: [PDF] })).content, HASH_KEY);

    // Act
    const other = contentHash(store.render({ attachments: [PDF], ...changed }).content, HASH_KEY);

    // Assess
    expect(other).not.toBe(baseline);
  });

  it('copies the attachment checksums into the email content, in order, and never into an SMS', () => {
    // Prepare
    const second = { ...PDF, filename: 'summary.pdf', sha256: 'c'.repeat(64) };

    // Act
    const email = store.render(healthRequest({ attachments: [PDF, second] }));
    const sms = store.render(healthRequest({ channel: 'sms', attachments: [PDF, second] }));

    // Assess
    expect(email.content.attachments).toEqual([PDF, second]);
    expect(sms.content.attachments).toBeUndefined();
    expect(sms.content.text).toBe(
      'A new report is ready in your patient portal: https://portal.example.com/r/9',
    );
  });

  it('records the revision digest from the manifest as evidence of the copy used', () => {
    // Act
    const v1 = store.render(resetRequest());
    const v2 = store.render(resetRequest({ revision: 'v2' }));

    // Assess
    expect(v1.revisionDigest).toMatch(/^[a-f0-9]{64}$/);
    expect(v2.revisionDigest).not.toBe(v1.revisionDigest);
    expect(v2.content.subject).not.toBe(v1.content.subject);
  });
});

describe('FileTemplateStore: refusals', () => {
  it.each([
    ['unknown_template', resetRequest({ templateId: 'no-such-template' })],
    ['unknown_template', resetRequest({ templateId: '../templates' })],
    ['unknown_revision', resetRequest({ revision: 'v9' })],
    ['unknown_revision', resetRequest({ revision: '..' })],
    ['invalid_locale', resetRequest({ locale: '../../etc' })],
    ['missing_attachment', healthRequest({ attachments: [] })],
    ['unexpected_attachment', resetRequest({ attachments: [PDF] })],
  ])('refuses with %s', (code, request) => {
    // Act
    const error = templateErrorOf(() => store.render(request));

    // Assess
    expect(error.code).toBe(code);
    expect(error.kind).toBe('permanent');
  });

  it('a channel the template lacks is a missing_channel error', () => {
    // Prepare
    const temp = makeTemplatesDir();
    const base = simpleSpec();
    writeRevision(temp.dir, 'email-only', 'r1', {
      definition: { ...base.definition, channels: ['email'] },
      files: { 'email.subject': 'Hi {{name}}', 'email.txt': '{{code}}', 'email.html': '{{code}}' },
    });

    // Act
    const error = templateErrorOf(() =>
      new FileTemplateStore(temp.dir).render({
        templateId: 'email-only',
        revision: 'r1',
        channel: 'sms',
        data: { name: 'x' },
        secrets: { code: '1' },
      }),
    );
    temp.remove();

    // Assess
    expect(error.code).toBe('missing_channel');
    expect(error.message).toContain('no sms channel');
  });

  it('an SMS over the segment limit is refused with the count, before anything is sent', () => {
    // Prepare
    const strict = new FileTemplateStore(undefined, { maxSmsSegments: 1 });
    const request = resetRequest({ channel: 'sms', secrets: { token: `${TOKEN}${'Q'.repeat(60)}` } });

    // Act
    const error = templateErrorOf(() => strict.render(request));
    const relaxed = store.render(request);

    // Assess
    expect(error.code).toBe('sms_too_long');
    expect(error.message).toMatch(/renders to 2 segments \(GSM-7, \d+ units\); the limit is 1/);
    expect(relaxed.sms).toEqual({ segments: 2, encoding: 'GSM-7' });
  });
});

describe('built-in templates', () => {
  const requests: RenderRequest[] = [
    ...['v1', 'v2'].flatMap((revision) =>
      [undefined, 'pt'].flatMap((locale) =>
        (['email', 'sms'] as const).map((channel) =>
          resetRequest({ revision, channel, ...(locale ? { locale } : {}) }),
        ),
      ),
    ),
    ...['v4', 'v5'].flatMap((revision) =>
      (['email', 'sms'] as const).map((channel) => receiptRequest({ revision, channel })),
    ),
    healthRequest(),
    healthRequest({ channel: 'sms' }),
  ];

  it.each(
    requests.map((r) => [`${r.templateId}/${r.revision} ${r.channel} ${r.locale ?? 'default'}`, r] as const),
  )('%s renders with realistic data within the SMS limit', (_name, request) => {
    // Act
    const rendered = store.render(request);

    // Assess
    expect(rendered.content.channel).toBe(request.channel);
    expect(rendered.content.text).not.toMatch(/\{\{|\}\}/);
    if (request.channel === 'sms') {
      expect(rendered.sms).toEqual({
        segments: countSmsSegments(rendered.content.text).segments,
        encoding: countSmsSegments(rendered.content.text).encoding,
      });
      expect(rendered.sms?.segments).toBeLessThanOrEqual(2);
    } else {
      expect(rendered.content.subject).toBeTruthy();
      expect(rendered.content.html).toContain('<html');
    }
    if (request.templateId === 'password-reset') expect(rendered.content.text).toContain(`?token=${TOKEN}`);
  });
});
