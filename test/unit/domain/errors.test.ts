import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AttachmentFetchError, UriAttachmentStore } from '../../../lib/attachments/AttachmentStore.js';
import { SendproofError } from '../../../lib/domain/errors.js';

const LIB = new URL('../../../lib/', import.meta.url).pathname;

describe('the SendproofError family', () => {
  it('keeps the error it explains as its cause (ES2022 ErrorOptions)', () => {
    // Prepare
    const original = new TypeError('socket hang up');
    // Act
    const error = new SendproofError('retryable', 'feed_down', 'event feed unavailable', { cause: original });
    // Assess
    expect(error).toMatchObject({ kind: 'retryable', code: 'feed_down', message: 'event feed unavailable' });
    expect(error.cause).toBe(original);
    expect(error.name).toBe('SendproofError');
  });

  it('an attachment that cannot be read carries the file system error as its cause', async () => {
    // Act
    const error = await new UriAttachmentStore()
      .fetch('file:///nonexistent/sendproof/report.pdf')
      .catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(AttachmentFetchError);
    expect((error as AttachmentFetchError).kind).toBe('retryable');
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('ENOENT');
  });

  it('lib/ throws no bare Error: every failure has a kind and a code', () => {
    // Act
    const offenders = readdirSync(LIB, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .flatMap((file) =>
        readFileSync(join(LIB, file), 'utf8')
          .split('\n')
          .map((line, i) => ({ where: `lib/${file}:${i + 1}`, line }))
          .filter(({ line }) => /throw new Error\(/.test(line)),
      )
      .map(({ where }) => where);
    // Assess
    expect(offenders).toEqual([]);
  });
});
