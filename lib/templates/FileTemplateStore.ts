import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import { canonicalText, type RenderedContent } from '../domain/content.js';
import { fromPackageRoot } from '../packageRoot.js';
import {
  CHANNEL_FILES,
  DEFINITION_FILE,
  isHtmlFile,
  REVISION_PATTERN,
  TEMPLATE_ID_PATTERN,
  type TemplateDefinition,
  TemplateDefinitionSchema,
  type TemplateFile,
} from './definition.js';
import { TemplateError } from './errors.js';
import { LOCALE_PATTERN, resolveLocale } from './locale.js';
import { changedMessage, readManifest, revisionDigest, revisionKey } from './manifest.js';
import type { RenderedMessage, RenderRequest, TemplateRenderer } from './port.js';
import { countSmsSegments, DEFAULT_MAX_SMS_SEGMENTS } from './smsSegments.js';
import { renderStrict } from './strictRender.js';

/** `<repo>/templates`, found from this module's location so it works from any working directory. */
export const DEFAULT_TEMPLATES_DIR = `${fromPackageRoot('templates')}/`;

export interface FileTemplateStoreOptions {
  /** Reject an SMS rendering longer than this many segments (default 3). */
  maxSmsSegments?: number;
  /**
   * Refuse revisions whose files do not match `manifest.json` (default true). Only `template preview`
   * turns it off, so an author can look at a revision before publishing it.
   */
  requirePublished?: boolean;
}

/** One revision read from disk. Files never change after publication, so a loaded revision is cached. */
export interface LoadedRevision {
  templateId: string;
  revision: string;
  definition: TemplateDefinition;
  digest: string;
  published: 'published' | 'unpublished' | 'changed';
  /** Relative path → contents. */
  files: ReadonlyMap<string, string>;
}

const label = (templateId: string, revision: string): string => revisionKey(templateId, revision);

/**
 * Application-owned templates stored as files: `<dir>/<id>/<revision>/template.json` plus the channel
 * files, optionally repeated per locale in `<locale>/`. Rendering is synchronous and pure: the same
 * request renders the same content (and so the same content hash) every time.
 */
export class FileTemplateStore implements TemplateRenderer {
  readonly dir: string;
  private readonly maxSmsSegments: number;
  private readonly requirePublished: boolean;
  private readonly cache = new Map<string, LoadedRevision>();

  constructor(dir: string | URL = DEFAULT_TEMPLATES_DIR, options: FileTemplateStoreOptions = {}) {
    this.dir = dir instanceof URL ? fileURLToPath(dir) : dir;
    this.maxSmsSegments = options.maxSmsSegments ?? DEFAULT_MAX_SMS_SEGMENTS;
    this.requirePublished = options.requirePublished ?? true;
  }

  /** Reads (once) and validates one revision. Ids and revisions are checked before they touch a path. */
  load(templateId: string, revision: string): LoadedRevision {
    const key = label(templateId, revision);
    const cached = this.cache.get(key);
    if (cached) return cached;
    if (!TEMPLATE_ID_PATTERN.test(templateId) || !existsSync(join(this.dir, templateId)))
      throw new TemplateError(
        'unknown_template',
        `template ${JSON.stringify(templateId.slice(0, 128))} does not exist`,
      );
    const revisionDir = join(this.dir, templateId, revision);
    if (!REVISION_PATTERN.test(revision) || !existsSync(join(revisionDir, DEFINITION_FILE)))
      throw new TemplateError(
        'unknown_revision',
        `template ${templateId} has no revision ${JSON.stringify(revision.slice(0, 32))}`,
      );
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(join(revisionDir, DEFINITION_FILE), 'utf8'));
    } catch {
      throw new TemplateError('invalid_definition', `${key}/${DEFINITION_FILE} is not valid JSON`);
    }
    const parsed = TemplateDefinitionSchema.safeParse(raw);
    if (!parsed.success)
      throw new TemplateError(
        'invalid_definition',
        `${key}/${DEFINITION_FILE}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      );
    const definition = parsed.data;
    const digest = revisionDigest(revisionDir);
    const expected = readManifest(this.dir)[key];
    const published = expected === undefined ? 'unpublished' : expected === digest ? 'published' : 'changed';
    if (this.requirePublished && published === 'unpublished')
      throw new TemplateError(
        'unpublished_revision',
        `${key} is not in manifest.json; publish it before sending (sendproof template publish ${templateId} ${revision})`,
      );
    if (this.requirePublished && published === 'changed')
      throw new TemplateError('revision_changed', changedMessage(key, expected ?? '', digest));
    const files = new Map<string, string>();
    for (const locale of [null, ...definition.locales])
      for (const channel of definition.channels)
        for (const file of CHANNEL_FILES[channel]) {
          const rel = locale ? `${locale}/${file}` : file;
          const path = join(revisionDir, rel);
          if (!existsSync(path)) throw new TemplateError('missing_file', `${key} is missing ${rel}`);
          files.set(rel, readFileSync(path, 'utf8'));
        }
    const loaded: LoadedRevision = { templateId, revision, definition, digest, published, files };
    // Cache only what may be rendered; an unpublished revision is re-read so a preview sees edits.
    if (published === 'published') this.cache.set(key, loaded);
    return loaded;
  }

  render(request: RenderRequest): RenderedMessage {
    const loaded = this.load(request.templateId, request.revision);
    const { definition } = loaded;
    const key = label(loaded.templateId, loaded.revision);
    if (!definition.channels.includes(request.channel))
      throw new TemplateError(
        'missing_channel',
        `${key} has no ${request.channel} channel (it has ${definition.channels.join(', ')})`,
      );
    if (request.locale !== undefined && !LOCALE_PATTERN.test(request.locale))
      throw new TemplateError('invalid_locale', `locale must look like en, pt or pt-BR`);
    this.checkSecrets(key, definition, request);
    const locale = resolveLocale(request.locale, definition.locales, definition.defaultLocale);
    const view: Record<string, unknown> = { ...request.data, ...request.secrets };
    const renderFile = (file: TemplateFile): string => {
      const rel = locale === definition.defaultLocale ? file : `${locale}/${file}`;
      const source = loaded.files.get(rel);
      if (source === undefined) throw new TemplateError('missing_file', `${key} is missing ${rel}`);
      return canonicalText(renderStrict(source, view, { html: isHtmlFile(file), where: `${key} ${rel}` }));
    };
    const base = { owner: 'application' as const, locale, revisionDigest: loaded.digest };
    if (request.channel === 'sms') {
      const text = renderFile('sms.txt');
      const count = countSmsSegments(text);
      if (count.segments > this.maxSmsSegments)
        throw new TemplateError(
          'sms_too_long',
          `${key} sms (${locale}) renders to ${count.segments} segments (${count.encoding}, ${count.units} units); the limit is ${this.maxSmsSegments}`,
        );
      return {
        ...base,
        content: { channel: 'sms', text },
        sms: { segments: count.segments, encoding: count.encoding },
      };
    }
    return { ...base, content: this.renderEmail(key, definition, request, renderFile) };
  }

  private renderEmail(
    key: string,
    definition: TemplateDefinition,
    request: RenderRequest,
    renderFile: (file: TemplateFile) => string,
  ): RenderedContent {
    const attachments = request.attachments ?? [];
    if (definition.attachments === 'required' && attachments.length === 0)
      throw new TemplateError(
        'missing_attachment',
        `${key} email says a file is attached, but the request has none`,
      );
    if (definition.attachments === 'none' && attachments.length > 0)
      throw new TemplateError('unexpected_attachment', `${key} email does not carry attachments`);
    const subject = renderFile('email.subject');
    if (/[\r\n]/.test(subject))
      throw new TemplateError('invalid_subject', `${key} email.subject renders to more than one line`);
    return {
      channel: 'email',
      subject,
      text: renderFile('email.txt'),
      html: renderFile('email.html'),
      // Copied, in order, so the content hash covers the checksums of exactly what is attached.
      ...(attachments.length > 0 ? { attachments: attachments.map((a) => ({ ...a })) } : {}),
    };
  }

  /**
   * A secret may fill only a slot the template declares secret, and a declared secret slot may be filled
   * only from `secrets` (intent `data` is kept; `secrets` never are). Messages name keys, never values.
   */
  private checkSecrets(key: string, definition: TemplateDefinition, request: RenderRequest): void {
    for (const name of Object.keys(request.secrets))
      if (!definition.secrets.includes(name))
        throw new TemplateError(
          'secret_outside_slot',
          `secret "${name}" does not fill a secret slot of ${key} (its secret slots: ${definition.secrets.join(', ') || 'none'})`,
        );
    for (const name of definition.secrets)
      if (Object.hasOwn(request.data, name))
        throw new TemplateError(
          'secret_outside_slot',
          `"${name}" is a secret slot of ${key}; pass it in secrets, never in data`,
        );
  }
}

/** The store a deployment uses: `SENDPROOF_TEMPLATES_DIR` (config `templatesDir`) overrides the default. */
export const templateStoreFromConfig = (
  config: Pick<Config, 'templatesDir'>,
  options: FileTemplateStoreOptions = {},
): FileTemplateStore => new FileTemplateStore(config.templatesDir ?? DEFAULT_TEMPLATES_DIR, options);
