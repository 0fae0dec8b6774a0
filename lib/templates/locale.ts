/** The shape of a locale tag an intent may carry (`en`, `pt`, `pt-BR`); also keeps it safe as a folder name. */
export const LOCALE_PATTERN = /^[a-z]{2,3}(-[A-Z][A-Za-z]{1,3})?$/;

/**
 * The locales to try for a request, most specific first: `pt-BR` → [`pt-BR`, `pt`]. The template's default
 * locale is the implicit last step and is not part of the chain.
 */
export const localeChain = (requested: string | undefined): string[] => {
  if (!requested) return [];
  const parts = requested.split('-');
  const chain: string[] = [];
  for (let n = parts.length; n >= 1; n--) chain.push(parts.slice(0, n).join('-'));
  return chain;
};

/** Picks the first locale of the chain the template provides; otherwise its default locale. */
export const resolveLocale = (
  requested: string | undefined,
  available: readonly string[],
  defaultLocale: string,
): string => {
  for (const candidate of localeChain(requested)) {
    if (candidate === defaultLocale || available.includes(candidate)) return candidate;
  }
  return defaultLocale;
};
