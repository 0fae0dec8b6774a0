import type { Config } from '../config.js';
import type { AwsCaller } from './commandLog.js';

/**
 * How every lib/aws client is configured. A local endpoint (DynamoDB Local, fauxqs, aws-ses-v2-local) is
 * passed in from config; in Lambda the endpoints are absent and the SDK's defaults apply. No SDK is
 * imported here, so a module that only builds options (lib/transports/index.ts) loads none.
 */
export interface ClientOptions {
  region: string;
  endpoint?: string;
  /**
   * The function whose role the client's commands run under. Only the command recorder reads it
   * (lib/aws/commandLog.ts, test runs only); absent for the CLI and test set-up.
   */
  caller?: AwsCaller;
}

export const base = ({ region, endpoint }: ClientOptions) => ({
  region,
  ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  maxAttempts: 3,
});

type EndpointSetting =
  | 'endpointDynamoDb'
  | 'endpointSqs'
  | 'endpointS3'
  | 'endpointSes'
  | 'endpointSmsV2'
  | 'endpointEventBridge'
  | 'endpointAthena';

/**
 * Client options from a configuration: its region, the local endpoint the setting names (if any), and,
 * when the configuration is a function's (`functionConfig` in lib/config.ts), that function as the caller.
 */
export const clientOptionsFor = (config: Config, endpoint?: EndpointSetting): ClientOptions => {
  const url = endpoint ? config[endpoint] : undefined;
  return {
    region: config.region,
    ...(url ? { endpoint: url } : {}),
    ...(config.functionName ? { caller: { function: config.functionName, settings: config } } : {}),
  };
};
