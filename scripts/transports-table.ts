/**
 * Renders docs/transports.md's table of every documented provider event and error from the provider
 * contract corpus (test/contract/providers): what the provider says it is, and what Sendproof does with it.
 *
 *   npx tsx scripts/transports-table.ts           prints the table
 *   npx tsx scripts/transports-table.ts --write   rewrites it between the markers in docs/transports.md
 *
 * test/unit/docs/transportsTable.test.ts fails when the document and the corpus disagree.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CorpusCase, loadCorpus } from '../test/contract/providers/corpus.js';

export const TABLE_START = '<!-- corpus-table:start (npx tsx scripts/transports-table.ts --write) -->';
export const TABLE_END = '<!-- corpus-table:end -->';
export const TRANSPORTS_DOC = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'transports.md');

const PROVIDERS: ReadonlyArray<[CorpusCase['provider'], string]> = [
  ['ses', 'Amazon SES v2'],
  ['sms-v2', 'AWS End User Messaging SMS'],
  ['resend', 'Resend'],
  ['sendgrid', 'SendGrid'],
  ['twilio', 'Twilio'],
];
const KINDS: ReadonlyArray<[CorpusCase['kind'], string]> = [
  ['event', 'events'],
  ['inbound', 'inbound replies'],
  ['error', 'errors (answers to a send)'],
];

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();
const yes = (value: boolean) => (value ? 'yes' : 'no');

/** What Sendproof makes of the case, in the table's terms. */
const reading = (c: CorpusCase): string => {
  if (c.kind === 'error') {
    const e = c.expected;
    return `\`${e.kind}\`${e.cause ? `, cause \`${e.cause}\`` : ''}${e.hold ? `, hold \`${e.hold}\`` : ''}`;
  }
  const e = c.expected;
  if (e.result === 'evidence')
    return `\`${e.fact}\` · settles \`${e.settlesTo}\` · suppresses ${yes(e.suppresses)} · fallback ${yes(e.unlocksFallback)}`;
  return `ignored (\`${e.reason}\`)${e.signal ? ` · signal \`${e.signal.kind}\`` : ''}`;
};

const sourceLink = (c: CorpusCase): string => {
  const s = c.source as { title: string; url?: string; repository?: string; path?: string };
  const label = c.builtFrom === 'example' ? 'example' : c.builtFrom;
  if (s.url) return `[${label}](${s.url})`;
  return `${label}: ${s.repository}/${s.path}`;
};

export const renderTable = (corpus: readonly CorpusCase[] = loadCorpus()): string => {
  const counts = PROVIDERS.map(([p, title]) => `${title} ${corpus.filter((c) => c.provider === p).length}`);
  const lines = [
    TABLE_START,
    '',
    `${corpus.length} documented cases (${counts.join(', ')}), each one a file in test/contract/providers/ run through the real parser, recorder or adapter. _settles_: what an \`unknown\` row becomes; _suppresses_: the recipient on that channel; _fallback_: moves a fallback purpose on from an accepted row (the default \`fallbackOn\`).`,
  ];
  for (const [provider, title] of PROVIDERS) {
    for (const [kind, kindTitle] of KINDS) {
      const rows = corpus.filter((c) => c.provider === provider && c.kind === kind);
      if (rows.length === 0) continue;
      lines.push(
        '',
        `#### ${title}: ${kindTitle}`,
        '',
        '| documented | Sendproof reads it as | what it does, and why | source | case |',
        '| --- | --- | --- | --- | --- |',
        ...rows.map(
          (c) =>
            `| ${cell(c.name)} | ${cell(reading(c))} | ${cell(c.sendproof)} | ${cell(sourceLink(c))} | \`${c.id}\` |`,
        ),
      );
    }
  }
  lines.push('', TABLE_END);
  return lines.join('\n');
};

/**
 * A Markdown table with its cell padding dropped (biome aligns the columns when it formats the document):
 * what the table says, not how it is laid out.
 */
export const normalizeTables = (markdown: string): string =>
  markdown
    .split('\n')
    .map((line) =>
      line.startsWith('|')
        ? line
            .split(/(?<!\\)\|/)
            .map((cellText) => cellText.trim().replace(/^-{3,}$/, '---'))
            .join('|')
        : line,
    )
    .join('\n');

/** The document with its table section replaced by `table`. */
export const withTable = (doc: string, table: string): string => {
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  if (start < 0 || end < start)
    throw new Error(`docs/transports.md has no ${TABLE_START} … ${TABLE_END} section`);
  return doc.slice(0, start) + table + doc.slice(end + TABLE_END.length);
};

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const table = renderTable();
  if (process.argv.includes('--write')) {
    writeFileSync(TRANSPORTS_DOC, withTable(readFileSync(TRANSPORTS_DOC, 'utf8'), table));
    // The repository's formatter aligns the table's columns, as it does for every document.
    spawnSync('npx', ['biome', 'format', '--write', TRANSPORTS_DOC], { stdio: 'inherit' });
    console.log(`docs/transports.md: table of ${loadCorpus().length} cases written`);
  } else console.log(table);
}
