import { MemoryLedger } from '../../../lib/ledger/MemoryLedger.js';
import { ledgerContract } from '../../contract/ledger.contract.js';

// The same cases as test/integration/ledger/ledgerContract.test.ts runs against DynamoDB Local.
ledgerContract('MemoryLedger', async ({ attentionShards }) => {
  const ledger = new MemoryLedger({ attentionShards });
  return { ledger, queries: ledger };
});
