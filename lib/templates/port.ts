import type { RenderedContent } from '../domain/content.js';
import type { Channel } from '../domain/purposes.js';

export type TemplateOwner = 'application' | 'provider';

export interface RenderRequest {
  templateId: string;
  revision: string;
  channel: Channel;
  locale?: string;
  data: Readonly<Record<string, unknown>>;
  secrets: Readonly<Record<string, string>>;
  /** Checksums of the attachments the email will carry, in order (included in the content hash). */
  attachments?: ReadonlyArray<{ filename: string; contentType: string; sha256: string }>;
}

export interface RenderedMessage {
  content: RenderedContent;
  owner: TemplateOwner;
  /** The locale actually used after the fallback chain (e.g. `pt` for a `pt-BR` request). */
  locale: string;
  /** SMS only: number of segments and the encoding that decided it. */
  sms?: { segments: number; encoding: 'GSM-7' | 'UCS-2' };
  /**
   * Application-owned templates: SHA-256 of the revision's files, as pinned in templates/manifest.json.
   * Evidence of exactly which copy was rendered; safe to record (it covers templates, not data).
   */
  revisionDigest?: string;
}

/** Renders one channel of one template revision. Throws TemplateError (permanent) on any problem. */
export interface TemplateRenderer {
  render(request: RenderRequest): RenderedMessage;
}
