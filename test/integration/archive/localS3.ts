import { gunzipSync } from 'node:zlib';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { s3Client } from '../../../lib/aws/storageClients.js';
import { startFauxqs } from '../../../lib/local/queues.js';

/** fauxqs (in process, loopback only) as the archive's local S3, with a fresh bucket. */
export const startLocalS3 = async (bucket: string) => {
  const app = await startFauxqs();
  const endpoint = app.endpoint;
  const s3 = s3Client({ region: 'us-east-1', endpoint });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  return { endpoint, s3, stop: () => app.stop() };
};

/** Every object in the bucket, gunzipped (the archive is gzip JSON Lines). */
export const readBucket = async (s3: S3Client, bucket: string): Promise<Map<string, string>> => {
  const objects = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, ...(token ? { ContinuationToken: token } : {}) }),
    );
    for (const item of page.Contents ?? []) {
      const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: item.Key! }));
      const bytes = await object.Body!.transformToByteArray();
      objects.set(item.Key!, gunzipSync(Buffer.from(bytes)).toString('utf8'));
    }
    token = page.NextContinuationToken;
  } while (token);
  return objects;
};

export const linesOf = (objects: Map<string, string>): Array<Record<string, unknown>> =>
  [...objects.values()].flatMap((text) =>
    text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>),
  );
