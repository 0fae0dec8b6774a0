import { KMSClient } from '@aws-sdk/client-kms';
import { base, type ClientOptions } from './clientOptions.js';
import { withCommandLog } from './commandLog.js';

/** KMS for the archive digests' signatures (lib/archive/digest.ts); its own module, for the one function that signs. */
export const kmsClient = (options: ClientOptions): KMSClient =>
  withCommandLog(new KMSClient(base(options)), options.caller);
