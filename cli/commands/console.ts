import { readFile } from 'node:fs/promises';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Command } from 'commander';
import { s3Client } from '../../lib/aws/storageClients.js';
import { startLocalConsole } from '../../lib/console/local.js';
import { bucketKeyOf, STATIC_DIR, STATIC_FILES, staticFileOf } from '../../lib/console/staticFiles.js';
import { IdentifierSchema } from '../../lib/domain/intent.js';
import { stateFilePath } from '../../lib/local/LocalStack.js';
import { readLocalState } from '../localState.js';

/** Uploads the page's files and its config; `no-cache` so CloudFront revalidates after a new upload. */
export const publishPage = async (s3: S3Client, bucket: string, config: Record<string, unknown>) => {
  // One object per served path (the page's modules under js/, the chart library under vendor/).
  const files = Object.entries(STATIC_FILES)
    .filter(([path]) => path !== '/')
    .map(([path, entry]) => ({ key: bucketKeyOf(path), entry }));
  for (const { key, entry } of files)
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: await readFile(staticFileOf(entry, STATIC_DIR)),
        ContentType: entry.type,
        CacheControl: 'no-cache',
      }),
    );
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: 'config.json',
      Body: JSON.stringify(config),
      ContentType: 'application/json',
      CacheControl: 'no-cache',
    }),
  );
  return [...files.map((f) => f.key), 'config.json'];
};

export const register = (program: Command): void => {
  const group = program
    .command('console')
    .description('the operator console (local server, or the page in AWS)');
  group
    .command('publish-page')
    .description("upload the console page and its config.json to the stack's page bucket (after cdk deploy)")
    .requiredOption('--bucket <name>', 'ConsolePageBucket output')
    .requiredOption('--api-url <url>', 'ConsoleApiUrl output')
    .requiredOption('--cognito-domain <domain>', 'ConsoleHostedUiDomain output')
    .requiredOption('--client-id <id>', 'ConsoleClientId output')
    .option('--region <region>', 'AWS region', process.env.AWS_REGION)
    .action(
      async (options: {
        bucket: string;
        apiUrl: string;
        cognitoDomain: string;
        clientId: string;
        region?: string;
      }) => {
        const uploaded = await publishPage(
          s3Client({ region: options.region ?? 'us-east-1' }),
          options.bucket,
          {
            apiBase: new URL(options.apiUrl).toString().replace(/\/+$/, ''),
            cognito: { domain: options.cognitoDomain, clientId: options.clientId },
          },
        );
        process.stdout.write(`uploaded ${uploaded.join(', ')} to s3://${options.bucket}/\n`);
      },
    );
  group
    .command('serve', { isDefault: true })
    .description('serve the operator console for the running local stack on 127.0.0.1 (tokens printed once)')
    .option('--state <file>', 'local stack state file', stateFilePath())
    .option('--port <port>', 'port (default: a random free one)')
    .option('--operator <id>', 'the identity decisions are recorded under (operator:<id>)', 'local-operator')
    .action(async (options: { state: string; port?: string; operator: string }) => {
      const state = readLocalState(options.state);
      if (!state) throw new Error('no local stack is running (start one with `npm start`)');
      if (!IdentifierSchema.safeParse(options.operator).success || options.operator.includes('@'))
        throw new Error('--operator must be an identifier without @ (letters, digits, . _ + -)');
      const port = options.port === undefined ? undefined : Number(options.port);
      if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536))
        throw new Error('--port must be a port number');
      const running = await startLocalConsole(state, {
        operatorId: options.operator,
        ...(port ? { port } : {}),
      });
      process.stdout.write(
        [
          `Sendproof console on ${running.url} (loopback only). Tokens are shown once and live only in this process:`,
          `  operator (${options.operator}): ${running.operatorUrl}`,
          `  viewer (read-only): ${running.viewerUrl}`,
          `  audit log: ${running.auditLogFile}`,
          'Ctrl-C stops it.',
          '',
        ].join('\n'),
      );
      const stop = () => void running.stop().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
};
