import { createHmac } from 'node:crypto';
import type { Channel } from './purposes.js';

/** What a channel will actually carry, after rendering. Lives in memory only; never persisted or logged. */
export interface RenderedContent {
  channel: Channel;
  subject?: string;
  text: string;
  html?: string;
  /** Checksums of attachments, in the order they are attached. */
  attachments?: ReadonlyArray<{ filename: string; contentType: string; sha256: string }>;
}

/** Normalises text the same way everywhere: LF line endings, no trailing spaces, no trailing blank lines. */
export const canonicalText = (text: string): string =>
  text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/[ \t]+$/u, ''))
    .join('\n')
    .replace(/\n+$/u, '');

/**
 * The one canonical form the content hash is computed over. Field order is fixed; attachments keep the
 * order they are sent in, identified by checksum (the bytes themselves are verified at fetch time).
 */
export const canonicalContent = (content: RenderedContent): string =>
  JSON.stringify([
    'sendproof.content/v1',
    content.channel,
    content.subject === undefined ? null : canonicalText(content.subject),
    canonicalText(content.text),
    content.html === undefined ? null : canonicalText(content.html),
    (content.attachments ?? []).map((a) => [a.filename, a.contentType, a.sha256]),
  ]);

/**
 * Keyed hash (HMAC-SHA256) of the canonical content. A plain hash of a message holding a 6-digit OTP
 * could be brute-forced in a million guesses; without the key, the ledger's hash reveals nothing.
 */
export const contentHash = (content: RenderedContent, key: string | Buffer): string =>
  `h1:${createHmac('sha256', key).update(canonicalContent(content), 'utf8').digest('base64url')}`;
