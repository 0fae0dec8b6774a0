import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../lib/packageRoot.js';
import { sourceFiles } from '../support/sourceFiles.js';

/**
 * Issue 27: a Lambda bundle that reaches one `import … from 'zod'` carries classic zod (and with it most of
 * zod's core) on its start-up path. The schemas move to `zod/mini`, and mini loads no locale: a schema
 * module without lib/domain/zodLocale.ts would answer "Invalid input" wherever it happens to load first.
 */
const sourcesUnder = sourceFiles;
const source = (file: string) => readFileSync(join(PACKAGE_ROOT, file), 'utf8');
const importsFrom = (text: string, specifier: string) =>
  new RegExp(`(?:import|export)[^'";]*?from\\s+'${specifier.replace('/', '\\/')}'`).test(text);

describe('schema modules and zod', () => {
  it('every module that builds zod/mini schemas also loads the English locale', () => {
    const missing = sourcesUnder('lib', 'cli', 'infra', 'functions')
      .filter((file) => file !== 'lib/domain/zodLocale.ts')
      .filter((file) => importsFrom(source(file), 'zod/mini'))
      .filter(
        // lib/domain's own modules import it as './zodLocale.js'.
        (file) => !/import '(?:(?:\.\.?\/)+(?:lib\/)?domain\/|\.\/)zodLocale\.js';/.test(source(file)),
      );
    expect(missing).toEqual([]);
  });

  it('no Lambda, library, CLI or CDK-context module imports classic zod', () => {
    const classic = sourcesUnder('lib', 'functions', 'cli', 'infra').filter((file) =>
      importsFrom(source(file), 'zod'),
    );
    expect(classic).toEqual([]);
  });
});
