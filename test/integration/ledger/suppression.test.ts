import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoSuppressionList } from '../../../lib/ledger/DynamoSuppressionList.js';
import { createSuppressionTable, localDynamo } from '../../support/dynamo.js';

// Real DynamoDB Local (global setup).
let list: DynamoSuppressionList;
beforeAll(async () => {
  const { raw, doc } = localDynamo();
  list = new DynamoSuppressionList(doc, await createSuppressionTable(raw));
});

describe('suppression list on DynamoDB Local', () => {
  it('suppresses one channel of one recipient and leaves the other channel and other recipients alone', async () => {
    // Act
    await list.suppress('acme', 'player-1', 'sms', 'opted_out');
    // Assess
    expect(await list.isSuppressed('acme', 'player-1', 'sms')).toEqual({
      suppressed: true,
      reason: 'opted_out',
    });
    expect(await list.isSuppressed('acme', 'player-1', 'email')).toEqual({ suppressed: false });
    expect(await list.isSuppressed('acme', 'player-2', 'sms')).toEqual({ suppressed: false });
    expect(await list.isSuppressed('other-tenant', 'player-1', 'sms')).toEqual({ suppressed: false });
  });

  it('a wildcard suppression covers every channel, and a later channel entry keeps both reasons', async () => {
    await list.suppress('acme', 'player-3', '*', 'legal_hold');
    await list.suppress('acme', 'player-3', 'email', 'hard_bounce');
    expect(await list.isSuppressed('acme', 'player-3', 'sms')).toEqual({
      suppressed: true,
      reason: 'legal_hold',
    });
    expect(await list.isSuppressed('acme', 'player-3', 'email')).toEqual({
      suppressed: true,
      reason: 'hard_bounce',
    });
  });
});
