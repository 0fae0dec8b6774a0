import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { S3Client } from '@aws-sdk/client-s3';
import { ConfigurationError, SendproofError } from '../domain/errors.js';

/** Fetches attachment bytes by immutable reference. The caller verifies the checksum it was given. */
export interface AttachmentStore {
  fetch(uri: string): Promise<Uint8Array>;
}

export class AttachmentFetchError extends SendproofError {
  constructor(uri: string, reason: string, options?: ErrorOptions) {
    // The reference is not secret (it is an immutable object location), the body never appears here.
    super(
      'retryable',
      'attachment_unavailable',
      `attachment ${uri} could not be fetched: ${reason}`,
      options,
    );
  }
}

export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * s3://bucket/key[?versionId=…] through the S3 client, file:// from disk (local stack and tests),
 * https:// with fetch. Any other scheme is refused at the intent boundary already.
 */
export class UriAttachmentStore implements AttachmentStore {
  private loaded: Promise<S3Client> | undefined;

  /** An S3 client, or a loader for one (called on the first s3:// fetch, so init never loads the SDK). */
  constructor(private readonly s3?: S3Client | (() => Promise<S3Client>)) {}

  private client(): Promise<S3Client> | undefined {
    const s3 = this.s3;
    if (!s3) return undefined;
    this.loaded ??= typeof s3 === 'function' ? s3() : Promise.resolve(s3);
    return this.loaded;
  }

  async fetch(uri: string): Promise<Uint8Array> {
    const url = new URL(uri);
    try {
      if (url.protocol === 'file:') return new Uint8Array(await readFile(fileURLToPath(url)));
      if (url.protocol === 's3:') {
        const pending = this.client();
        if (!pending) throw new ConfigurationError('no S3 client configured');
        const [{ GetObjectCommand }, s3] = await Promise.all([import('@aws-sdk/client-s3'), pending]);
        const versionId = url.searchParams.get('versionId');
        const out = await s3.send(
          new GetObjectCommand({
            Bucket: url.hostname,
            Key: decodeURIComponent(url.pathname.slice(1)),
            ...(versionId ? { VersionId: versionId } : {}),
          }),
        );
        if (!out.Body) throw new SendproofError('retryable', 'attachment_empty', 'empty body');
        return await out.Body.transformToByteArray();
      }
      const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new SendproofError('retryable', 'attachment_http', `HTTP ${response.status}`);
      return new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      throw new AttachmentFetchError(uri, error instanceof Error ? error.message : String(error), {
        cause: error,
      });
    }
  }
}
