import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { loadNamedQueries } from '../../lib/archive/namedQueries.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { functionConfig } from '../../lib/config.js';
import { stdoutAuditLog } from '../../lib/console/adapters.js';
import { athenaEngine } from '../../lib/console/athenaEngine.js';
import { jwtClaimsAuthenticator } from '../../lib/console/auth.js';
import { fromApiGatewayEvent, toApiGatewayResult } from '../../lib/console/http.js';
import { lazyAuditQueries } from '../../lib/console/lazyAuditQueries.js';
import { lazyExporter } from '../../lib/console/lazyExporter.js';
import { consoleHandlerFor } from '../../lib/console/wiring.js';

/**
 * Console API Lambda behind API Gateway (HTTP API) with a Cognito JWT authorizer: the gateway verifies
 * the token; lib/console reads its verified claims, routes, and answers. Only wiring lives here.
 */
const config = functionConfig('console');
const exportSource =
  config.archiveBucket && config.digestKeyId
    ? { bucket: config.archiveBucket, digestKeyId: config.digestKeyId }
    : undefined;
const athena =
  config.athenaWorkGroup && config.athenaDatabase
    ? { workGroup: config.athenaWorkGroup, database: config.athenaDatabase }
    : undefined;
const { handler: consoleHandler } = await consoleHandlerFor(config, {
  authenticate: jwtClaimsAuthenticator(),
  auditLog: stdoutAuditLog(),
  // The named audit queries run in the archive's Athena workgroup (the same SQL as the local DuckDB). The
  // Athena client and runner load on the first query run (the overview's archive figures, the SLO panel,
  // an operator's query), not at the cold start.
  ...(athena
    ? {
        audit: lazyAuditQueries(
          { engine: athenaEngine(athena.workGroup), list: loadNamedQueries },
          async () => {
            const [{ athenaAuditQueries }, { athenaClient }] = await Promise.all([
              import('../../lib/console/athenaAuditQueries.js'),
              import('../../lib/aws/athenaClient.js'),
            ]);
            return athenaAuditQueries({
              client: athenaClient(clientOptionsFor(config)),
              ...athena,
            });
          },
        ),
      }
    : {}),
  // The timeline's export bundle: archive objects and digests from the archive bucket, the public key
  // from KMS (GetPublicKey of the key the digests are signed with), exactly as `sendproof audit export`.
  // The S3 and KMS clients load on the first export, an operator's action: never at the cold start.
  ...(exportSource
    ? {
        exportBundle: lazyExporter(async () => {
          const [{ s3BundleExporter }, { s3Client }, { kmsClient }] = await Promise.all([
            import('../../lib/console/awsExport.js'),
            import('../../lib/aws/storageClients.js'),
            import('../../lib/aws/kmsClient.js'),
          ]);
          return s3BundleExporter(
            s3Client(clientOptionsFor(config)),
            exportSource.bucket,
            kmsClient(clientOptionsFor(config)),
            exportSource.digestKeyId,
          );
        }),
      }
    : {}),
  ...(process.env.SENDPROOF_CONSOLE_ORIGIN ? { allowedOrigin: process.env.SENDPROOF_CONSOLE_ORIGIN } : {}),
});

export const handler = async (
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
): Promise<APIGatewayProxyStructuredResultV2> =>
  toApiGatewayResult(await consoleHandler(fromApiGatewayEvent(event)));
