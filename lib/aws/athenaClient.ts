import { AthenaClient } from '@aws-sdk/client-athena';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/**
 * The console's named audit queries in AWS (lib/console/athenaAuditQueries.ts). Its own module, so only
 * the console function's bundle carries the Athena SDK (the dispatcher's cold start does not).
 */
export const athenaClient = (options: ClientOptions): AthenaClient =>
  withCommandLog(new AthenaClient(base(options)), options.caller);
