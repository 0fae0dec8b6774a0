import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { athenaClient } from '../../lib/aws/athenaClient.js';
import { clientOptionsFor } from '../../lib/aws/clientOptions.js';
import { kmsClient } from '../../lib/aws/kmsClient.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import { functionConfig } from '../../lib/config.js';
import { stdoutAuditLog } from '../../lib/console/adapters.js';
import { athenaAuditQueries } from '../../lib/console/athenaAuditQueries.js';
import { jwtClaimsAuthenticator } from '../../lib/console/auth.js';
import { s3BundleExporter } from '../../lib/console/awsExport.js';
import { fromApiGatewayEvent, toApiGatewayResult } from '../../lib/console/http.js';
import { consoleHandlerFor } from '../../lib/console/wiring.js';

/**
 * Console API Lambda behind API Gateway (HTTP API) with a Cognito JWT authorizer: the gateway verifies
 * the token; lib/console reads its verified claims, routes, and answers. Only wiring lives here.
 */
const config = functionConfig('console');
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
  ...(config.archiveBucket && config.digestKeyId
    ? {
        exportBundle: s3BundleExporter(
          s3Client(clientOptionsFor(config)),
          config.archiveBucket,
          kmsClient(clientOptionsFor(config)),
          config.digestKeyId,
        ),
      }
    : {}),
  ...(process.env.SENDPROOF_CONSOLE_ORIGIN ? { allowedOrigin: process.env.SENDPROOF_CONSOLE_ORIGIN } : {}),
});

export const handler = async (
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
): Promise<APIGatewayProxyStructuredResultV2> =>
  toApiGatewayResult(await consoleHandler(fromApiGatewayEvent(event)));
