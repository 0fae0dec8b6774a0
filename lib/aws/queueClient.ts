import { SQSClient } from '@aws-sdk/client-sqs';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/**
 * The SQS client, apart from lib/aws/clients.ts so a function that needs SQS only off its happy path (the
 * dispatcher parks a message with ChangeMessageVisibility only on a retry or a due time) loads it then.
 */
export const sqsClient = (options: ClientOptions): SQSClient =>
  withCommandLog(new SQSClient(base(options)), options.caller);
