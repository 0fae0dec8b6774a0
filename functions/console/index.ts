import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { athenaClient } from '../../lib/aws/athenaClient.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { functionConfig } from '../../lib/config.js';
import { stdoutAuditLog } from '../../lib/console/adapters.js';
import { athenaAuditQueries } from '../../lib/console/athenaAuditQueries.js';
import { jwtClaimsAuthenticator } from '../../lib/console/auth.js';
import { fromApiGatewayEvent, toApiGatewayResult } from '../../lib/console/http.js';
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
const { handler: consoleHandler } = consoleHandlerFor(config, {
  authenticate: jwtClaimsAuthenticator(),
  auditLog: stdoutAuditLog(),
  // The named audit queries run in the archive's Athena workgroup (the same SQL as the local DuckDB).
  ...(config.athenaWorkGroup && config.athenaDatabase
    ? {
        audit: athenaAuditQueries({
          client: athenaClient(clientOptionsFor(config)),
          workGroup: config.athenaWorkGroup,
          database: config.athenaDatabase,
        }),
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
