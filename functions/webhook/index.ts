import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyResultV2, Context, LambdaFunctionURLEvent } from 'aws-lambda';
import { functionConfig } from '../../lib/config.js';
import { systemClock } from '../../lib/domain/clock.js';
import { handleWebhook } from '../../lib/evidence/WebhookEndpoint.js';
import { webhookSecretsFor } from '../../lib/evidence/webhookSecrets.js';
import { evidenceRecorderFor, optSignalsFor } from '../../lib/evidenceWiring.js';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.js';
import { powertoolsSink, publishMetrics } from '../reconcile/metricsSink.js';

/**
 * Evidence endpoint (Lambda Function URL): POST /resend, /twilio, /sendgrid. Only wiring lives here; the
 * verification and recording are lib/evidence/WebhookEndpoint.ts, which the local stack serves too.
 */
const config = functionConfig('webhook');
const logger = new Logger({ serviceName: SERVICE_NAME });
const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
const sink = powertoolsSink(metrics);
const recorder = evidenceRecorderFor(config, { clock: systemClock, logger, metrics: sink });
const secrets = webhookSecretsFor(config);
const signals = optSignalsFor(config, { clock: systemClock, logger });

export const handler = async (
  event: LambdaFunctionURLEvent,
  context: Context,
): Promise<APIGatewayProxyResultV2> => {
  logger.addContext(context);
  try {
    const headers = Object.fromEntries(
      Object.entries(event.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const body = event.body
      ? event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body
      : '';
    const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
    const response = await handleWebhook(
      { recorder, secrets, logger, metrics: sink, signals },
      {
        provider: event.rawPath.replace(/^\/+|\/+$/g, ''),
        url: `https://${headers.host ?? event.requestContext.domainName}${event.rawPath}${query}`,
        headers,
        body,
      },
    );
    return {
      statusCode: response.status,
      headers: { 'content-type': 'application/json' },
      body: response.body,
    };
  } finally {
    publishMetrics(metrics);
  }
};
