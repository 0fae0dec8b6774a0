import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { SendproofError } from '../domain/errors.js';
import {
  DIGEST_PREFIX,
  type ParsedDigest,
  parseDigest,
  publicKeyId,
  sha256Hex,
  type VerifyReport,
  verifyArchive,
} from './digest.js';
import { partitionOfKey } from './objectKey.js';
import { ARCHIVE_COLUMNS, ARCHIVE_PREFIX } from './schema.js';
import { type ArchiveStore, DirStore } from './store.js';
import { orderedByLedger, type TimelineRow } from './timelineOrder.js';

export { isFactLine, orderedByLedger, type TimelineRow } from './timelineOrder.js';

/**
 * An export bundle for a regulator: one notification's (or one event's) archived timeline, the archive
 * objects that hold it (whole, because a digest's hash covers whole objects), the signed digest chain
 * segment that lists them, and the public key, so that `sendproof audit verify --bundle DIR` proves it
 * offline. Layout:
 *
 *   DIR/manifest.json        what was exported, the objects with their sha256, the digests, the key id
 *   DIR/timeline.json|csv    every transition once (evidence transitions included), in the ledger's
 *                            order, each with its clock (`ledger` or `provider`, see orderedByLedger)
 *   DIR/public-key.pem       the digest signing key's public half
 *   DIR/archive/transitions/…  DIR/archive/digests/…   the same keys and bytes as in the archive
 *
 * The objects hold other notifications' transitions of the same batch too; like every archive line they
 * carry no secret, body or address (opaque references and hashes only).
 */
export interface BundleManifest {
  bundleVersion: 1 | 2;
  subject: string;
  tenant: string;
  from: string;
  to: string;
  exportedAt: string;
  transitions: number;
  objects: Array<{ key: string; sha256: string }>;
  digests: Array<{ key: string; sha256: string }>;
  signingKeyId: string;
}

const linesOf = (gzipped: Buffer): TimelineRow[] =>
  gunzipSync(gzipped)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as TimelineRow);

/** A transition's identity across stored copies; two delivery facts of one version in one ms differ in to_state. */
const identity = (r: TimelineRow) => `${r.dedupe_key}#${r.version}#${r.transition_at_ms}#${r.to_state}`;

/** 2: the timeline in the ledger's order, each line with its `clock` and `ledger_at` (see orderedByLedger). */
export const BUNDLE_VERSION = 2;

/**
 * The subject's transitions in the given objects, each once. Bundle version 2 (current): in the
 * ledger's order with each line's clock (`orderedByLedger`); version 1 bundles (exported before) were
 * in time order across both clocks, and are verified as they were written.
 */
export const timelineFrom = (
  objects: ReadonlyArray<{ key: string; bytes: Buffer }>,
  subject: string,
  bundleVersion: 1 | 2 = BUNDLE_VERSION,
): { rows: TimelineRow[]; holding: string[] } => {
  const unique = new Map<string, TimelineRow>();
  const holding: string[] = [];
  for (const { key, bytes } of objects) {
    const partition = partitionOfKey(key);
    const matches = linesOf(bytes).filter((r) => r.dedupe_key === subject || r.event_id === subject);
    if (matches.length === 0) continue;
    holding.push(key);
    for (const row of matches) {
      const id = identity(row);
      if (!unique.has(id)) unique.set(id, { ...row, tenant: partition?.tenant, dt: partition?.date });
    }
  }
  if (bundleVersion === 2) {
    const rows = orderedByLedger([...unique.values()]).map(({ ledger_at_ms, ...row }) => ({
      ...row,
      ledger_at: new Date(ledger_at_ms).toISOString(),
    }));
    return { rows, holding };
  }
  const rows = [...unique.values()].sort(
    (a, b) =>
      Number(a.transition_at_ms) - Number(b.transition_at_ms) ||
      String(a.dedupe_key).localeCompare(String(b.dedupe_key)) ||
      Number(a.version) - Number(b.version),
  );
  return { rows, holding };
};

const TIMELINE_COLUMNS_V1 = ['tenant', 'dt', ...ARCHIVE_COLUMNS.map((c) => c.name)];
/** `clock`: whose clock `transition_at` is; `ledger_at`: the ledger time the line is ordered by. */
const TIMELINE_COLUMNS = ['tenant', 'dt', 'clock', 'ledger_at', ...ARCHIVE_COLUMNS.map((c) => c.name)];

const csvCell = (value: unknown): string => {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

export const timelineCsv = (rows: readonly TimelineRow[], bundleVersion: 1 | 2 = BUNDLE_VERSION): string => {
  const columns = bundleVersion === 1 ? TIMELINE_COLUMNS_V1 : TIMELINE_COLUMNS;
  return `${[columns.join(','), ...rows.map((r) => columns.map((c) => csvCell(r[c])).join(','))].join('\n')}\n`;
};

export interface ExportOptions {
  store: ArchiveStore;
  subject: string;
  tenant: string;
  from: string;
  to: string;
  outDir: string;
  publicKeyPem: string;
  /** Key id the digests name (default: the local id of the public key). */
  keyId?: string;
  now?: () => number;
}

export const exportBundle = async (options: ExportOptions): Promise<BundleManifest> => {
  const { store, subject, tenant, from, to, outDir } = options;
  const candidates: Array<{ key: string; bytes: Buffer }> = [];
  for (const key of await store.list(`${ARCHIVE_PREFIX}tenant=${tenant}/`)) {
    const partition = partitionOfKey(key);
    if (!partition || partition.date < from || partition.date > to) continue;
    const bytes = await store.get(key);
    if (bytes) candidates.push({ key, bytes });
  }
  const { rows, holding } = timelineFrom(candidates, subject);
  if (rows.length === 0)
    throw new SendproofError(
      'permanent',
      'not_archived',
      `no archived transition of ${subject} for tenant ${tenant} in ${from}..${to}`,
    );

  // The chain segment: from the first digest that lists a bundled object to the last one, contiguous.
  const digests: ParsedDigest[] = [];
  for (const key of await store.list(`${DIGEST_PREFIX}tenant=${tenant}/`)) {
    const bytes = await store.get(key);
    if (bytes) digests.push(parseDigest(key, bytes));
  }
  const wanted = new Set(holding);
  const listing = digests
    .map((d, i) => (d.payload.objects.some((o) => wanted.has(o.key)) ? i : -1))
    .filter((i) => i >= 0);
  const segment = listing.length ? digests.slice(listing[0], listing[listing.length - 1]! + 1) : [];

  const archiveDir = join(outDir, 'archive');
  const out = new DirStore(archiveDir);
  const byKey = new Map(candidates.map((c) => [c.key, c.bytes]));
  for (const key of holding) await out.put(key, byKey.get(key)!);
  for (const digest of segment) await out.put(digest.key, digest.bytes);
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'timeline.json'), `${JSON.stringify(rows, null, 2)}\n`);
  await writeFile(join(outDir, 'timeline.csv'), timelineCsv(rows));
  await writeFile(join(outDir, 'public-key.pem'), options.publicKeyPem);
  const manifest: BundleManifest = {
    bundleVersion: BUNDLE_VERSION,
    subject,
    tenant,
    from,
    to,
    exportedAt: new Date((options.now ?? Date.now)()).toISOString(),
    transitions: rows.length,
    objects: holding.map((key) => ({ key, sha256: sha256Hex(byKey.get(key)!) })),
    digests: segment.map((d) => ({ key: d.key, sha256: sha256Hex(d.bytes) })),
    signingKeyId: options.keyId ?? publicKeyId(options.publicKeyPem),
  };
  await writeFile(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
};

export interface BundleReport extends VerifyReport {
  /** Problems with the bundle itself (its timeline disagrees with its objects, an object undigested…). */
  bundleProblems: string[];
}

/** Verifies a bundle offline: signatures, the chain segment, object hashes, and the timeline itself. */
export const verifyBundle = async (dir: string, trustedPublicKeyPem?: string): Promise<BundleReport> => {
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as BundleManifest;
  // The key to trust should come from the operator (e.g. KMS GetPublicKey), not the bundle; the bundle's
  // copy is the default for convenience and is reported as such by the CLI.
  const publicKeyPem = trustedPublicKeyPem ?? (await readFile(join(dir, 'public-key.pem'), 'utf8'));
  const store = new DirStore(join(dir, 'archive'));
  const report = await verifyArchive({
    store,
    publicKeys: new Map([[manifest.signingKeyId, publicKeyPem]]),
    tenant: manifest.tenant,
    from: '0000-00-00',
    to: '9999-99-99',
    objectsInScope: new Set(manifest.objects.map((o) => o.key)),
  });
  const bundleProblems: string[] = [];
  // A segment starts mid-chain: its first digest's predecessor is (rightly) not in the bundle.
  const first = manifest.digests[0]?.key;
  report.chainBreaks = report.chainBreaks.filter(
    (b) => !(first && b.startsWith(`${first}: previous digest `) && b.endsWith(' is missing')),
  );
  for (const { key, sha256 } of manifest.objects) {
    const bytes = await store.get(key);
    if (!bytes) bundleProblems.push(`${key}: in the manifest, not in the bundle`);
    else if (sha256Hex(bytes) !== sha256) bundleProblems.push(`${key}: sha256 differs from the manifest`);
  }
  if (manifest.digests.length === 0) bundleProblems.push('no digest covers the exported objects');
  const objects = [];
  for (const { key } of manifest.objects) {
    const bytes = await store.get(key);
    if (bytes) objects.push({ key, bytes });
  }
  const version = manifest.bundleVersion === 1 ? 1 : 2;
  const recomputed = timelineFrom(objects, manifest.subject, version).rows;
  const timeline = existsSync(join(dir, 'timeline.json'))
    ? (JSON.parse(await readFile(join(dir, 'timeline.json'), 'utf8')) as TimelineRow[])
    : [];
  if (JSON.stringify(recomputed) !== JSON.stringify(timeline))
    bundleProblems.push('timeline.json does not match the transitions in the bundled objects');
  const csv = existsSync(join(dir, 'timeline.csv')) ? await readFile(join(dir, 'timeline.csv'), 'utf8') : '';
  if (csv !== timelineCsv(recomputed, version))
    bundleProblems.push('timeline.csv does not match the transitions in the bundled objects');
  const ok =
    report.missing.length +
      report.changed.length +
      report.added.length +
      report.badSignatures.length +
      report.chainBreaks.length +
      bundleProblems.length ===
    0;
  return { ...report, ok, bundleProblems };
};

/**
 * The same bundle as one JSON document, for a download over HTTP (the console's timeline link): every
 * file of the bundle folder, by its path in the folder, base64. `sendproof audit verify --bundle FILE`
 * unpacks it and verifies exactly as it verifies the folder.
 */
export interface BundleDocument {
  sendproofBundle: 1;
  manifest: BundleManifest;
  files: Array<{ path: string; base64: string }>;
}

export const bundleDocument = async (options: Omit<ExportOptions, 'outDir'>): Promise<BundleDocument> => {
  const dir = await mkdtemp(join(tmpdir(), 'sendproof-bundle-'));
  try {
    const manifest = await exportBundle({ ...options, outDir: dir });
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    const files = [];
    for (const entry of entries.filter((e) => e.isFile())) {
      const full = join(entry.parentPath, entry.name);
      files.push({
        path: relative(dir, full).split('\\').join('/'),
        base64: (await readFile(full)).toString('base64'),
      });
    }
    return { sendproofBundle: 1, manifest, files: files.sort((a, b) => a.path.localeCompare(b.path)) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

/** Writes a bundle document's files into `outDir`; refuses a path that would leave it. */
export const unpackBundleDocument = async (document: unknown, outDir: string): Promise<void> => {
  const doc = document as Partial<BundleDocument> | null;
  if (doc?.sendproofBundle !== 1 || !Array.isArray(doc.files))
    throw new SendproofError(
      'permanent',
      'bundle_invalid',
      'not a Sendproof bundle document (sendproofBundle: 1 with files)',
    );
  for (const file of doc.files) {
    if (typeof file?.path !== 'string' || typeof file.base64 !== 'string')
      throw new SendproofError(
        'permanent',
        'bundle_invalid',
        'bundle document: every file needs a path and base64 content',
      );
    const target = normalize(join(outDir, file.path));
    if (file.path.startsWith('/') || relative(outDir, target).startsWith('..'))
      throw new SendproofError(
        'permanent',
        'bundle_invalid',
        `bundle document: path ${file.path} leaves the bundle folder`,
      );
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, Buffer.from(file.base64, 'base64'));
  }
};
