import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The consumer code is quoted in docs/install.md (moved out of the README, which links to it).
const INSTALL = readFileSync(fileURLToPath(new URL('../../docs/install.md', import.meta.url)), 'utf8');
const consumerFile = (name: string) =>
  readFileSync(fileURLToPath(new URL(`./consumer/${name}`, import.meta.url)), 'utf8');

describe('docs/install.md "Use it in your own stack"', () => {
  it('quotes the consumer code the package test installs and runs, verbatim', () => {
    const blocks = [...INSTALL.matchAll(/<!-- consumer:(\S+) -->\n```js\n([\s\S]*?)```/g)];
    expect(blocks.map(([, name]) => name)).toEqual(['app.mjs', 'purposes.mjs', 'publish.mjs']);
    for (const [, name, code] of blocks) expect(code, name).toBe(consumerFile(name!));
  });
});
