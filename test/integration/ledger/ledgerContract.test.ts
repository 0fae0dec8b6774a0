import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../../lib/ledger/DynamoOperatorQueries.js';
import { ledgerContract } from '../../contract/ledger.contract.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';

const { raw, doc } = localDynamo();

// The same cases as test/unit/ledger/memoryLedger.test.ts runs against the in-memory ledger.
ledgerContract('DynamoLedger on DynamoDB Local', async ({ attentionShards }) => {
  const table = await createLedgerTable(raw, 'contract');
  return {
    ledger: new DynamoLedger(doc, table, { attentionShards }),
    queries: new DynamoOperatorQueries(doc, table),
  };
});
