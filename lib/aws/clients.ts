/**
 * The one place AWS clients are built, one module per SDK so a function loads only the SDKs it uses:
 * dynamoClients, queueClient (re-exported here), messagingClients, storageClients, athenaClient, kmsClient.
 * Options: lib/aws/clientOptions.ts. Code on a Lambda's module path imports the module it needs, not this
 * one: through this index every re-exported client would load at init (bench/coldStart.ts measures it).
 */
export { base, type ClientOptions, clientOptionsFor } from './clientOptions.js';
export { dynamoClient, dynamoDocumentClient } from './dynamoClients.js';
export { sqsClient } from './queueClient.js';
