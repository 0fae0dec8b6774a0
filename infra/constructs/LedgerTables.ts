import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { LEDGER_TABLE, SUPPRESSION_TABLE } from '../../lib/ledger/tableDefinition.js';

/**
 * The ledger (one row per claim, streamed to the archive) and the suppression list. Keys, the sparse
 * attention index, the TTL attribute and the stream view come from lib/ledger/tableDefinition.ts, the same
 * constants DynamoDB Local is built from.
 */
export class LedgerTables extends Construct {
  readonly ledger: dynamodb.Table;
  readonly suppression: dynamodb.Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.ledger = new dynamodb.Table(this, 'Ledger', {
      partitionKey: { name: LEDGER_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      // The ledger is evidence: a stack deletion must never take it along.
      removalPolicy: RemovalPolicy.RETAIN,
      stream: dynamodb.StreamViewType[LEDGER_TABLE.streamView],
      timeToLiveAttribute: LEDGER_TABLE.ttlAttribute,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
    });
    this.ledger.addGlobalSecondaryIndex({
      indexName: LEDGER_TABLE.attentionIndex.name,
      partitionKey: { name: LEDGER_TABLE.attentionIndex.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: LEDGER_TABLE.attentionIndex.sortKey, type: dynamodb.AttributeType.NUMBER },
      projectionType: dynamodb.ProjectionType.ALL,
    });

    this.suppression = new dynamodb.Table(this, 'Suppression', {
      partitionKey: { name: SUPPRESSION_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
    });
  }
}
