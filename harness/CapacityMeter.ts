import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Counts the capacity every DynamoDB request of one client consumes. A middleware asks for
 * `ReturnConsumedCapacity: 'TOTAL'` on every request (indexes included) and sums the answer, so write
 * units are measured the same way for the ledger, its fallback pointer and the baselines — including the
 * writes whose callers do not ask for capacity themselves.
 *
 * A refused conditional write carries no capacity in its error; AWS charges it 1 unit for a small item,
 * which is what the ledger reports too, so it is counted as 1.
 */
export interface CapacityTotals {
  writeUnits: number;
  /** Units of TransactWriteItems (DynamoDB Local reports 1 per item; AWS bills 2). */
  transactWriteUnits: number;
  writeRequests: number;
  readUnits: number;
  readRequests: number;
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);

/** `PutCommand` (document client) and `PutItemCommand` (raw client) are the same operation. */
const operationOf = (commandName: string | undefined): string => {
  const name = (commandName ?? '').replace(/Command$/, '');
  const documentNames: Record<string, string> = {
    Put: 'PutItem',
    Update: 'UpdateItem',
    Delete: 'DeleteItem',
    Get: 'GetItem',
    BatchWrite: 'BatchWriteItem',
    BatchGet: 'BatchGetItem',
    TransactWrite: 'TransactWriteItems',
    TransactGet: 'TransactGetItems',
  };
  return documentNames[name] ?? name;
};

const unitsOf = (capacity: unknown): number => {
  if (Array.isArray(capacity)) return capacity.reduce((sum: number, c) => sum + unitsOf(c), 0);
  if (capacity && typeof capacity === 'object') {
    const units = (capacity as { CapacityUnits?: unknown }).CapacityUnits;
    return typeof units === 'number' ? units : 0;
  }
  return 0;
};

export const emptyTotals = (): CapacityTotals => ({
  writeUnits: 0,
  transactWriteUnits: 0,
  writeRequests: 0,
  readUnits: 0,
  readRequests: 0,
});

export const subtractTotals = (after: CapacityTotals, before: CapacityTotals): CapacityTotals => ({
  writeUnits: after.writeUnits - before.writeUnits,
  transactWriteUnits: after.transactWriteUnits - before.transactWriteUnits,
  writeRequests: after.writeRequests - before.writeRequests,
  readUnits: after.readUnits - before.readUnits,
  readRequests: after.readRequests - before.readRequests,
});

/** AWS bills transactional writes twice; DynamoDB Local reports them once. */
export const billedWriteUnits = (totals: CapacityTotals): number =>
  totals.writeUnits + totals.transactWriteUnits;

export class CapacityMeter {
  private totals = emptyTotals();

  /** Installs the middleware on a client (document clients share their base client's stack). */
  attach(client: DynamoDBDocumentClient): void {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const operation = operationOf(context.commandName);
        const isWrite = WRITES.has(operation);
        const isRead = READS.has(operation);
        if (isWrite || isRead) (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'TOTAL';
        try {
          const result = await next(args);
          const units = unitsOf((result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity);
          this.count(operation, isWrite, isRead, units);
          return result;
        } catch (error) {
          if (isWrite && (error as { name?: string }).name === 'ConditionalCheckFailedException')
            this.count(operation, isWrite, isRead, 1);
          throw error;
        }
      },
      { step: 'initialize', name: 'benchCapacityMeter', override: true },
    );
  }

  private count(operation: string, isWrite: boolean, isRead: boolean, units: number): void {
    if (isWrite) {
      this.totals.writeRequests += 1;
      this.totals.writeUnits += units;
      if (operation === 'TransactWriteItems') this.totals.transactWriteUnits += units;
    } else if (isRead) {
      this.totals.readRequests += 1;
      this.totals.readUnits += units;
    }
  }

  snapshot(): CapacityTotals {
    return { ...this.totals };
  }

  /** Runs `work` and returns what it consumed. Only meaningful when nothing else uses the client meanwhile. */
  async measure<T>(work: () => Promise<T>): Promise<{ value: T; totals: CapacityTotals }> {
    const before = this.snapshot();
    const value = await work();
    return { value, totals: subtractTotals(this.snapshot(), before) };
  }
}
