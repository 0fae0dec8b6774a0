import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import { LocalStreamPoller } from '../lib/archive/LocalStreamPoller.js';
import { dynamoClient } from '../lib/aws/clients.js';
import { dynamoStreamsClient } from '../lib/aws/storageClients.js';

/**
 * Write units counted from a table's stream, independently of what the SDK reports: each INSERT or
 * MODIFY record is billed as DynamoDB bills the write that made it, ceil(max(old, new item size) / 1 KB),
 * with item sizes computed by DynamoDB's documented rules
 * (docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
 * - string: UTF-8 bytes of the name + UTF-8 bytes of the value; binary: name + raw bytes;
 * - number: name + 1 byte per two significant digits (leading and trailing zeroes trimmed) + 1;
 * - null, boolean: name + 1; list, map: name + 3 + the elements, each element 1 byte more;
 * - sets: name + the elements.
 * A REMOVE made by TTL (userIdentity dynamodb.amazonaws.com) is free; any other REMOVE is a write.
 * What the stream cannot show (a refused conditional write, a write that changed nothing) is not here:
 * this is the floor a change must meet, the SDK meter (CapacityMeter) the ceiling.
 */

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Binary arrives base64 in the Lambda shape, raw from the SDK. */
const rawBytes = (b: unknown): number =>
  typeof b === 'string' ? Buffer.from(b, 'base64').length : ((b as Uint8Array | undefined)?.length ?? 0);

const numberSize = (n: string): number => {
  const digits = n
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '');
  const significant = digits.replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(significant.length, 1) / 2) + 1;
};

export const valueSize = (value: AttributeValue): number => {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return rawBytes(value.B);
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS) return value.NS.reduce((sum, s) => sum + numberSize(s), 0);
  if (value.BS) return value.BS.reduce((sum, b) => sum + rawBytes(b), 0);
  if (value.L) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (value.M)
    return 3 + Object.entries(value.M).reduce((sum, [k, v]) => sum + 1 + utf8(k) + valueSize(v), 0);
  return 0;
};

/** An item's size in bytes (attribute names included), as DynamoDB counts it for capacity. */
export const itemSize = (item: Record<string, AttributeValue> | undefined): number =>
  item ? Object.entries(item).reduce((sum, [name, v]) => sum + utf8(name) + valueSize(v), 0) : 0;

export const KB = 1024;

/** Write units the write behind one stream record was billed. */
export const recordWriteUnits = (record: DynamoDBRecord): number => {
  const image = record.dynamodb;
  if (record.eventName === 'REMOVE' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com')
    return 0;
  const size = Math.max(itemSize(image?.OldImage), itemSize(image?.NewImage));
  return Math.max(1, Math.ceil(size / KB));
};

export interface StreamWrite {
  pk: string;
  event: 'INSERT' | 'MODIFY' | 'REMOVE';
  units: number;
  /** Size of the item after the write (bytes). */
  newSize: number;
}

/** Reads a table's whole stream (DynamoDB Local) and returns every write it shows, in order. */
export const readStreamWrites = async (endpoint: string, table: string): Promise<StreamWrite[]> => {
  const writes: StreamWrite[] = [];
  const poller = new LocalStreamPoller({
    streams: dynamoStreamsClient({ region: 'us-east-1', endpoint }),
    streamArn: await LocalStreamPoller.streamArnOf(dynamoClient({ region: 'us-east-1', endpoint }), table),
    batchSize: 1000,
    maxBatchingWindowMs: 0,
    handler: async (event) => {
      for (const record of event.Records) {
        const image = record.dynamodb;
        writes.push({
          pk: String(image?.Keys?.pk?.S ?? ''),
          event: record.eventName as StreamWrite['event'],
          units: recordWriteUnits(record),
          newSize: itemSize(image?.NewImage),
        });
      }
      return undefined;
    },
  });
  while ((await poller.pollOnce()) > 0);
  await poller.flush();
  return writes;
};
