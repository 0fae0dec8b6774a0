import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * Sendproof validates with `zod/mini`: the same schemas, parser and issue format as classic zod, but
 * functions instead of methods, so a bundle carries only what its schemas use and building a schema at
 * module load attaches no methods (issue 27: zod classic was the largest share of the dispatcher's cold
 * start). Mini loads no locale, so every issue would read "Invalid input"; English messages are set
 * here, once per process. Every module that declares a schema imports this file for its side effect
 * (`import '../domain/zodLocale.js'`), so whichever of them a bundle reaches first sets it before any
 * parse runs (parses run after module init).
 */
config(en());
