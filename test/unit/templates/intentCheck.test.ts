import { describe, expect, it } from 'vitest';
import { type IntentInput, parseIntent } from '../../../lib/domain/intent.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { FileTemplateStore } from '../../../lib/templates/FileTemplateStore.js';
import { checkIntentTemplate } from '../../../lib/templates/intentCheck.js';
import { healthReportIntent, receiptIntent, resetIntent } from '../../support/fixtures.js';
import { makeTemplatesDir, writeRevision } from './revisionFixture.js';

// The repository's templates/, the folder the dispatcher renders from.
const store = new FileTemplateStore();
const check = (input: IntentInput) => {
  const parsed = parseIntent(input, { purposes: new PurposeRegistry(), clock: { now: () => Date.now() } });
  if (!parsed.ok) throw new Error(`fixture does not validate: ${parsed.error.message}`);
  return checkIntentTemplate(store, parsed.value.intent);
};

describe('checkIntentTemplate', () => {
  it('passes the intents the dispatcher can render', () => {
    expect(check(receiptIntent())).toEqual([]);
    expect(check(resetIntent({ channels: ['email', 'sms'] }))).toEqual([]);
    expect(check(healthReportIntent())).toEqual([]);
  });

  it('names every missing declared variable and secret slot, each on its own', () => {
    const { total: _total, currency: _currency, ...data } = receiptIntent().data as Record<string, unknown>;
    expect(check(receiptIntent({ data }))).toEqual([
      { field: 'data.total', message: 'is a variable of template receipt/v4 and is missing' },
      { field: 'data.currency', message: 'is a variable of template receipt/v4 and is missing' },
    ]);
    expect(check(resetIntent({ secrets: {} }))).toEqual([
      { field: 'secrets.token', message: 'is a secret slot of template password-reset/v1 and is missing' },
    ]);
  });

  it('refuses a channel the template lacks, the template’s attachment rule, and an unknown revision', () => {
    const withAttachment = {
      ...resetIntent(),
      purpose: 'receipt',
      attachments: healthReportIntent().attachments,
    } satisfies IntentInput;
    expect(check(withAttachment)).toEqual([
      { field: 'attachments', message: 'template password-reset/v1 does not carry attachments' },
    ]);
    // The receipt purpose allows no attachment; the health-report template says one is attached.
    expect(check(healthReportIntent({ purpose: 'receipt', attachments: [] }))).toEqual([
      {
        field: 'attachments',
        message: 'template health-report/v1 says a file is attached; the intent has none',
      },
    ]);
    expect(check(receiptIntent({ template: { id: 'receipt', revision: 'v9' } }))).toMatchObject([
      { field: 'template.revision' },
    ]);
    expect(check(receiptIntent({ template: { id: 'no-such-template', revision: 'v1' } }))).toMatchObject([
      { field: 'template.id' },
    ]);
  });

  it('refuses a channel the template does not have', () => {
    const { dir, remove } = makeTemplatesDir();
    try {
      writeRevision(dir, 'email-only', 'v1', {
        definition: { owner: 'application', channels: ['email'], variables: ['name'], defaultLocale: 'en' },
        files: { 'email.subject': 'Hi', 'email.txt': 'Hi {{name}}', 'email.html': '<p>Hi {{name}}</p>' },
      });
      const parsed = parseIntent(
        receiptIntent({
          recipient: { ref: 'player-73', email: 'a@example.com', phone: '+15555550100' },
          channels: ['email', 'sms'],
          template: { id: 'email-only', revision: 'v1' },
          data: { name: 'Ana' },
        }),
        { purposes: new PurposeRegistry(), clock: { now: () => Date.now() } },
      );
      if (!parsed.ok) throw parsed.error;
      expect(checkIntentTemplate(new FileTemplateStore(dir), parsed.value.intent)).toEqual([
        { field: 'channels', message: 'template email-only/v1 has no sms channel (it has email)' },
      ]);
    } finally {
      remove();
    }
  });

  it('renders as the dispatcher does, so an item field of a list or a secret in data is refused too', () => {
    const data = { ...(receiptIntent().data as Record<string, unknown>), lines: [{ name: 'Dragon skin' }] };
    expect(check(receiptIntent({ data }))).toMatchObject([
      { field: 'data', message: expect.stringContaining('amount') },
    ]);
    const leaked = resetIntent({ data: { ...resetIntent().data, token: 'abc' } });
    expect(check(leaked)).toMatchObject([{ field: 'secrets' }]);
  });
});
