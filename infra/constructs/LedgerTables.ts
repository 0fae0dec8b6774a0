import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.js';
import { LEDGER_TABLE, SEAL_PREFIX, SUPPRESSION_TABLE } from '../../lib/ledger/tableDefinition.js';
import { REPORTS_PREFIX } from '../../lib/transports/reportLag.js';
import type { SendproofFunction, TableAccess } from './SendproofFunction.js';

/**
 * What one function does with the two tables, named by the code that needs it, so the grant follows
 * the code (test/infra/iamCommands.test.ts holds every command the integration suite recorded to it).
 */
export interface LedgerUse {
  ledger: TableAccess;
  suppression?: TableAccess;
  /**
   * lib/ledger/DynamoGateFacts.ts: one strongly consistent BatchGetItem per queue batch over both tables
   * (suppression entries and fallback-flow pointers). Needs `suppression`.
   */
  batchGateReads?: true;
  /**
   * The sweep's `release()` (lib/reconcile/Sweeper.ts, DynamoLedger.release): DeleteItem on sealed
   * notifications only, `seal#…` items (the `dynamodb:LeadingKeys` condition); rows never leave but by TTL.
   */
  releaseSeals?: true;
}

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

  /**
   * Binds the tables a function uses (their names in its environment) and grants exactly what `use`
   * says: the item actions of each access level (SendproofFunction.bindLedger/bindSuppression) and the
   * named extras. Returns the function, for chaining.
   */
  bindTo(fn: SendproofFunction, use: LedgerUse): SendproofFunction {
    fn.bindLedger(this.ledger, use.ledger);
    if (use.suppression) fn.bindSuppression(this.suppression, use.suppression);
    if (use.batchGateReads) {
      if (!use.suppression) throw new Error('LedgerTables: batchGateReads reads the suppression table too');
      fn.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'GateFactsBatchRead',
          actions: ['dynamodb:BatchGetItem'],
          resources: [this.ledger.tableArn, this.suppression.tableArn],
        }),
      );
    }
    if (use.releaseSeals)
      fn.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'LedgerReleaseSeals',
          actions: ['dynamodb:DeleteItem'],
          resources: [this.ledger.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${SEAL_PREFIX}*`] } },
        }),
      );
    return fn;
  }

  /**
   * The outcomes consumer's delivery-report counters (lib/transports/ReportCounters.ts): the ledger table's
   * name, and UpdateItem on `reports#…` items only (the `dynamodb:LeadingKeys` condition). It reads no row
   * and writes no other item; the reconcile run reads the counters with its own ledger access.
   */
  bindReportCounters(fn: SendproofFunction): SendproofFunction {
    fn.setEnv(ENV.ledgerTable, this.ledger.tableName);
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'LedgerReportCounters',
        actions: ['dynamodb:UpdateItem'],
        resources: [this.ledger.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${REPORTS_PREFIX}*`] } },
      }),
    );
    return fn;
  }
}
