import * as z from 'zod/mini';
import '../domain/zodLocale.js';
import type { Channel } from '../domain/purposes.js';
import { LOCALE_PATTERN } from './locale.js';

/** Template ids and revisions become folder names: letters, digits and . _ - only, starting alphanumeric. */
export const TEMPLATE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const REVISION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/;

export const DEFINITION_FILE = 'template.json';

export type TemplateFile = 'email.subject' | 'email.txt' | 'email.html' | 'sms.txt';

/** The files each channel needs, in the default locale and in every declared locale folder. */
export const CHANNEL_FILES: Readonly<Record<Channel, readonly TemplateFile[]>> = {
  email: ['email.subject', 'email.txt', 'email.html'],
  sms: ['sms.txt'],
};

/** Only this file is rendered with HTML escaping; everything else is plain text. */
export const isHtmlFile = (file: TemplateFile): boolean => file.endsWith('.html');

const VariableNameSchema = z
  .string()
  .check(z.regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'must be a letter followed by letters, digits or _'));

/** A plain value (`"appName"`) or a list rendered as a section, with the fields each item carries. */
export const VariableSchema = z.union([
  VariableNameSchema,
  z.strictObject({ name: VariableNameSchema, items: z.array(VariableNameSchema).check(z.minLength(1)) }),
]);
export type Variable = z.infer<typeof VariableSchema>;

export const TemplateDefinitionSchema = z
  .strictObject({
    /** Who owns the copy. Files in this repository are always application-owned. */
    owner: z.literal('application'),
    description: z.optional(z.string().check(z.maxLength(500))),
    channels: z.array(z.enum(['email', 'sms'])).check(
      z.minLength(1),
      z.refine((c) => new Set(c).size === c.length, 'must not repeat a channel'),
    ),
    /** Values the caller passes in `data`. */
    variables: z.array(VariableSchema),
    /** Values the caller passes in `secrets` (reset tokens, OTPs). Only these slots may hold a secret. */
    secrets: z._default(z.array(VariableNameSchema), []),
    /** The locale of the files at the revision's root. */
    defaultLocale: z.string().check(z.regex(LOCALE_PATTERN)),
    /** Extra locales, each a folder `<locale>/` with the same files as the root. */
    locales: z._default(z.array(z.string().check(z.regex(LOCALE_PATTERN))), []),
    /** Whether the email copy talks about an attachment: `required` refuses to render an email without one. */
    attachments: z._default(z.enum(['none', 'optional', 'required']), 'optional'),
  })
  .check(
    z.superRefine((def, ctx) => {
      const names = def.variables.map((v) => (typeof v === 'string' ? v : v.name));
      const all = [...names, ...def.secrets];
      const seen = new Set<string>();
      for (const name of all) {
        if (seen.has(name))
          ctx.addIssue({
            code: 'custom',
            message: `${name} is declared more than once (variables and secrets)`,
          });
        seen.add(name);
      }
      if (def.locales.includes(def.defaultLocale))
        ctx.addIssue({
          code: 'custom',
          message: `locales must not repeat the default locale ${def.defaultLocale}`,
        });
    }),
  );
export type TemplateDefinition = z.output<typeof TemplateDefinitionSchema>;

export const variableName = (v: Variable): string => (typeof v === 'string' ? v : v.name);
export const variableItems = (v: Variable): readonly string[] => (typeof v === 'string' ? [] : v.items);

/** The files a revision must have, relative to its folder. */
export const requiredFiles = (def: TemplateDefinition): string[] => {
  const base = def.channels.flatMap((c) => CHANNEL_FILES[c]);
  return [...base, ...def.locales.flatMap((locale) => base.map((file) => `${locale}/${file}`))];
};
