import { describe, expect, it } from 'vitest';
import { measureEvidenceReads } from '../../../bench/evidenceReads.js';
import { createLedgerTable, localDynamo } from '../../support/dynamo.js';

// DynamoDB Local reports consumed capacity for GetItem/Query as DynamoDB does; the figures are its own.
describe('evidence reads per event', () => {
  it('are the same with 100 and with 10,000 rows waiting, and at most 2', { timeout: 240_000 }, async () => {
    // Prepare
    const { raw, doc } = localDynamo();
    const table = await createLedgerTable(raw, 'evreads');
    // Act
    const [small, large] = await measureEvidenceReads(doc, table, [100, 10_000]);
    // Assess
    expect(small!.deliveryReadUnits).toBe(large!.deliveryReadUnits);
    expect(small!.settleReadUnits).toBe(large!.settleReadUnits);
    expect(large!.deliveryReadUnits).toBeLessThanOrEqual(2);
    expect(large!.settleReadUnits).toBeLessThanOrEqual(2);
    expect(large!.deliveryReadUnits).toBeGreaterThan(0);
    // The lookup this replaced grows with the backlog (so this test fails on the old recorder).
    expect(large!.indexScanReadUnits).toBeGreaterThan(10 * small!.indexScanReadUnits);
  });
});
