import Mustache from 'mustache';
import { TemplateError } from './errors.js';

/**
 * Mustache with strict variables. Mustache itself renders a missing name as an empty string, which is how a
 * reset email ends up with a link that carries no token. Before rendering, we walk the parsed tokens with
 * the same context rules Mustache uses (Mustache.Context, so dotted names and section scoping agree) and
 * refuse any name that does not resolve to a printable value.
 */

/** Mustache token: [type, value, start, end, children?, closeIndex?]. */
export type MustacheToken = [string, string, number, number, MustacheToken[]?, number?];

export const parseTemplate = (source: string, where: string): MustacheToken[] => {
  try {
    return Mustache.parse(source) as MustacheToken[];
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TemplateError('syntax_error', `${where}: ${reason}`);
  }
};

const describe = (name: string, sections: readonly string[]): string =>
  sections.length === 0 ? `"${name}"` : `"${name}" (inside section ${sections.join(' > ')})`;

const isPrintable = (value: unknown): boolean =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

const assertResolvable = (
  tokens: readonly MustacheToken[],
  context: Mustache.Context,
  where: string,
  sections: readonly string[],
): void => {
  for (const token of tokens) {
    const [type, name] = token;
    if (type === 'text' || type === '!' || type === '=') continue;
    if (type === '>')
      throw new TemplateError('unsupported_tag', `${where}: partials ({{> ${name}}}) are not supported`);
    const value: unknown = context.lookup(name);
    if (value === undefined || value === null)
      throw new TemplateError(
        'missing_variable',
        `${where} needs variable ${describe(name, sections)}, which the request does not provide`,
      );
    if (typeof value === 'function')
      throw new TemplateError(
        'invalid_variable',
        `${where}: variable ${describe(name, sections)} is a function`,
      );
    if (type === 'name' || type === '&') {
      if (!isPrintable(value))
        throw new TemplateError(
          'invalid_variable',
          `${where}: variable ${describe(name, sections)} is ${Array.isArray(value) ? 'a list' : 'an object'}; ` +
            'use it as a section ({{#name}}…{{/name}})',
        );
      continue;
    }
    const children = token[4] ?? [];
    if (type === '#') {
      // Same truthiness as Mustache.Writer.renderSection: arrays iterate, other truthy values are pushed.
      if (Array.isArray(value))
        value.forEach((item, index) => {
          assertResolvable(children, context.push(item), where, [...sections, `${name}[${index}]`]);
        });
      else if (value) assertResolvable(children, context.push(value), where, [...sections, name]);
    } else if (type === '^') {
      if (!value || (Array.isArray(value) && value.length === 0))
        assertResolvable(children, context, where, [...sections, `^${name}`]);
    }
  }
};

const plainText = (value: unknown): string => String(value);

/**
 * Renders one template file. `html` switches on HTML escaping; plain text, SMS and subjects are rendered
 * verbatim (escaping them would put `&amp;` into an SMS). Throws TemplateError naming the variable.
 */
export const renderStrict = (
  source: string,
  view: Readonly<Record<string, unknown>>,
  options: { html: boolean; where: string },
): string => {
  const tokens = parseTemplate(source, options.where);
  // A prototype-free view: `{{constructor}}` must not resolve to Object.prototype.constructor.
  const root = Object.assign(Object.create(null) as Record<string, unknown>, view);
  assertResolvable(tokens, new Mustache.Context(root), options.where, []);
  return options.html
    ? Mustache.render(source, root)
    : Mustache.render(source, root, {}, { escape: plainText });
};
