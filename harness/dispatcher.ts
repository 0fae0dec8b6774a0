import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { UriAttachmentStore } from '../lib/attachments/AttachmentStore.js';
import type { DispatcherDeps } from '../lib/dispatch/types.js';
import { PurposeRegistry } from '../lib/domain/purposes.js';
import { DynamoGateFacts } from '../lib/ledger/DynamoGateFacts.js';
import { DynamoLedger } from '../lib/ledger/DynamoLedger.js';
import { DynamoSuppressionList } from '../lib/ledger/DynamoSuppressionList.js';
import { localSealer } from '../lib/seal/IntentSealer.js';
import { FileTemplateStore } from '../lib/templates/FileTemplateStore.js';
import type { Transport } from '../lib/transports/port.js';
import { RestTransport } from '../lib/transports/RestTransport.js';

/** The dispatcher's adapters over a local stack, ready to spread into `new Dispatcher({...})`. */
export interface LocalAdapters
  extends Pick<DispatcherDeps, 'renderer' | 'attachments' | 'purposes' | 'sealer' | 'leaseMs'> {
  ledger: DynamoLedger;
  suppressions: DynamoSuppressionList;
  /** The batch read of suppression entries and fallback flows (functions/dispatch wires it too). */
  gateFacts: DynamoGateFacts;
}

/**
 * The production adapters the benchmark and the integration tests give the dispatcher: DynamoLedger,
 * DynamoSuppressionList and DynamoGateFacts over the given tables (DynamoDB Local), FileTemplateStore
 * over the committed templates, UriAttachmentStore (file:// attachments) and the raw-key sealer, with a
 * 60 s lease. What differs between callers stays at the call: transports, clock, content-hash key,
 * worker id, logger, backoff randomness, and any decorator around the ledger or the suppression list.
 */
export const localAdapters = (options: {
  doc: DynamoDBDocumentClient;
  ledgerTable: string;
  suppressionTable: string;
  /** The raw AES key (32 bytes, UTF-8) intents are sealed under when they leave the happy path. */
  sealKey: string;
}): LocalAdapters => ({
  ledger: new DynamoLedger(options.doc, options.ledgerTable),
  suppressions: new DynamoSuppressionList(options.doc, options.suppressionTable),
  gateFacts: new DynamoGateFacts(options.doc, {
    ledger: options.ledgerTable,
    suppression: options.suppressionTable,
  }),
  renderer: new FileTemplateStore(),
  attachments: new UriAttachmentStore(),
  purposes: new PurposeRegistry(),
  sealer: localSealer(Buffer.from(options.sealKey, 'utf8')),
  leaseMs: 60_000,
});

/** The REST convention (RestTransport) for both channels, over HTTP to the provider simulator at `baseUrl`. */
export const restTransports = (baseUrl: string): { email: Transport; sms: Transport } => ({
  email: new RestTransport({ baseUrl, channel: 'email' }),
  sms: new RestTransport({ baseUrl, channel: 'sms' }),
});
