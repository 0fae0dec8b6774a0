import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/*
 * The EventBridge client, apart from lib/aws/clients.ts so only the outcome-events function loads it.
 */
export const eventBridgeClient = (options: ClientOptions): EventBridgeClient =>
  withCommandLog(new EventBridgeClient(base(options)), options.caller);
