import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { base, type ClientOptions } from './clients.js';

/*
 * The EventBridge client, apart from lib/aws/clients.ts so only the outcome-events function loads it.
 */
export const eventBridgeClient = (options: ClientOptions): EventBridgeClient =>
  new EventBridgeClient(base(options));
