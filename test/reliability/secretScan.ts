import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import pLimit from 'p-limit';
import { dynamoClient, dynamoDocumentClient } from '../../lib/aws/clients.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import type { LocalState } from '../../lib/local/LocalStack.js';

/**
 * Looks for marker values (secrets, addresses, attachment bytes) everywhere Sendproof writes on the
 * local stack: every item of every DynamoDB table, every line the functions wrote (Powertools logs and
 * EMF metric lines), every archived object in S3 and in the mirror folder (gunzipped).
 */
export interface SecretHit {
  /** `dynamodb:<table>`, `log`, `metric`, `s3:<key>`, `archive:<file>`. */
  where: string;
  marker: string;
}

export interface SecretScanResult {
  hits: SecretHit[];
  scanned: {
    dynamoItems: number;
    logLines: number;
    metricLines: number;
    s3Objects: number;
    archiveFiles: number;
    /** Files of export bundles (timeline JSON/CSV, manifest, copied objects and digests). */
    bundleFiles: number;
  };
}

const hitsIn = (text: string, where: string, markers: readonly string[]): SecretHit[] =>
  markers.filter((m) => text.includes(m)).map((marker) => ({ where, marker }));

const listFiles = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('.gz'))
    : [];

export const scanForSecrets = async (
  state: Pick<LocalState, 'dynamodb' | 'region' | 'functionsLog' | 'archiveDir' | 's3' | 'bucket'>,
  markers: readonly string[],
  extraLogs: readonly string[] = [],
  bundleDirs: readonly string[] = [],
): Promise<SecretScanResult> => {
  const hits: SecretHit[] = [];
  const scanned = {
    dynamoItems: 0,
    logLines: 0,
    metricLines: 0,
    s3Objects: 0,
    archiveFiles: 0,
    bundleFiles: 0,
  };

  const raw = dynamoClient({ region: state.region, endpoint: state.dynamodb });
  const doc = dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb });
  const tables = (await raw.send(new ListTablesCommand({}))).TableNames ?? [];
  for (const table of tables) {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
      for (const item of page.Items ?? []) {
        scanned.dynamoItems += 1;
        hits.push(...hitsIn(JSON.stringify(item), `dynamodb:${table}`, markers));
      }
      start = page.LastEvaluatedKey;
    } while (start);
  }

  for (const file of [state.functionsLog, ...extraLogs]) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      // Powertools metrics are EMF lines: JSON with an `_aws` block.
      const metric = line.includes('"_aws"');
      if (metric) scanned.metricLines += 1;
      else scanned.logLines += 1;
      hits.push(...hitsIn(line, metric ? 'metric' : 'log', markers));
    }
  }

  const s3 = s3Client({ region: state.region, endpoint: state.s3 });
  // The archive writes one object per stream batch; read several at a time.
  const limit = pLimit(16);
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: state.bucket, ContinuationToken: token }));
    await Promise.all(
      (page.Contents ?? []).map((object) =>
        limit(async () => {
          const body = await s3.send(new GetObjectCommand({ Bucket: state.bucket, Key: object.Key! }));
          const bytes = Buffer.from(await body.Body!.transformToByteArray());
          const text = object.Key!.endsWith('.gz')
            ? gunzipSync(bytes).toString('utf8')
            : bytes.toString('utf8');
          scanned.s3Objects += 1;
          hits.push(...hitsIn(text, `s3:${object.Key}`, markers));
        }),
      ),
    );
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);

  for (const file of listFiles(state.archiveDir)) {
    const text = gunzipSync(readFileSync(join(state.archiveDir, file))).toString('utf8');
    scanned.archiveFiles += 1;
    hits.push(...hitsIn(text, `archive:${file}`, markers));
  }

  for (const dir of bundleDirs) {
    const result = scanBundle(dir, markers);
    scanned.bundleFiles += result.files;
    hits.push(...result.hits);
  }
  return { hits, scanned };
};

/** Every file of an export bundle, gunzipped where gzip: the timeline, the manifest, objects, digests. */
export const scanBundle = (dir: string, markers: readonly string[]): { hits: SecretHit[]; files: number } => {
  const hits: SecretHit[] = [];
  let files = 0;
  if (!existsSync(dir)) return { hits, files };
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const bytes = readFileSync(path);
    const text = entry.name.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
    files += 1;
    hits.push(...hitsIn(text, `bundle:${path.slice(dir.length + 1)}`, markers));
  }
  return { hits, files };
};
