import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Writes a small "PDF" to a fresh temp directory and returns the attachment reference an intent
 * carries: a file:// URI (UriAttachmentStore reads it) with the content's real SHA-256.
 */
export const pdfOnDisk = (options: { content: string; filename: string; dirPrefix: string }) => {
  const dir = mkdtempSync(join(tmpdir(), options.dirPrefix));
  const path = join(dir, options.filename);
  writeFileSync(path, options.content);
  return {
    uri: pathToFileURL(path).href,
    sha256: createHash('sha256').update(options.content).digest('hex'),
    filename: options.filename,
    contentType: 'application/pdf',
  };
};
