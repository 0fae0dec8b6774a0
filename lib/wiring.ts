import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { clientOptionsFor } from './aws/clientOptions.js';
import { dynamoDocumentClient } from './aws/dynamoClients.js';
import { type Config, requireSettings } from './config.js';
import { PurposeRegistry } from './domain/purposes.js';
import { DynamoLedger } from './ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from './ledger/DynamoOperatorQueries.js';

/**
 * The small pieces every entry and the CLI build from config, each built one way only. Kept apart from
 * lib/dispatchRuntime.ts (the dispatcher's full set) so the reconcile and evidence functions load only these.
 * The evidence pieces are lib/evidenceWiring.ts: the dispatcher loads them only when a row has recorded
 * events to apply, so nothing here may import lib/evidence (a static import puts it on its cold start).
 */
export const documentClientFor = (config: Config): DynamoDBDocumentClient =>
  dynamoDocumentClient(clientOptionsFor(config, 'endpointDynamoDb'));

export const ledgerFor = (config: Config, documentClient = documentClientFor(config)): DynamoLedger =>
  new DynamoLedger(documentClient, requireSettings(config, ['ledgerTable']).ledgerTable, {
    attentionShards: config.attentionShards,
  });

/** Operator scans of the ledger table (CLI only: the functions' role may not Scan). */
export const operatorQueriesFor = (config: Config, documentClient = documentClientFor(config)) =>
  new DynamoOperatorQueries(documentClient, requireSettings(config, ['ledgerTable']).ledgerTable);

export const purposesFor = (config: Config): PurposeRegistry =>
  PurposeRegistry.withOverrides(config.purposes);
