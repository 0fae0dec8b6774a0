import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamoDocumentClient } from './aws/clients.js';
import { type Config, requireSettings } from './config.js';
import { PurposeRegistry } from './domain/purposes.js';
import { DynamoLedger } from './ledger/DynamoLedger.js';

/**
 * The small pieces every entry and the CLI build from config, each built one way only. Kept apart from
 * lib/runtime.ts (the dispatcher's full set) so the reconcile and evidence functions load only these.
 */
export const documentClientFor = (config: Config): DynamoDBDocumentClient =>
  dynamoDocumentClient({
    region: config.region,
    ...(config.endpointDynamoDb ? { endpoint: config.endpointDynamoDb } : {}),
  });

export const ledgerFor = (config: Config, documentClient = documentClientFor(config)): DynamoLedger =>
  new DynamoLedger(documentClient, requireSettings(config, ['ledgerTable']).ledgerTable, {
    attentionShards: config.attentionShards,
  });

export const purposesFor = (config: Config): PurposeRegistry =>
  PurposeRegistry.withOverrides(config.purposes);
