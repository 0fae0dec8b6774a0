import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { writeMirror } from './archiver.js';

/**
 * Where the archive's objects live, for the digester and the verifier: the S3 bucket in AWS, the mirror
 * folder locally (the same keys and bytes). Keys use `/` on every platform.
 */
export interface ArchiveStore {
  /** Every key under the prefix, sorted. */
  list(prefix: string): Promise<string[]>;
  /** The object's bytes, or undefined when it does not exist. */
  get(key: string): Promise<Buffer | undefined>;
  put(key: string, body: Buffer, extra?: Partial<PutObjectCommandInput>): Promise<void>;
}

export class DirStore implements ArchiveStore {
  constructor(readonly dir: string) {}

  async list(prefix: string): Promise<string[]> {
    if (!existsSync(this.dir)) return [];
    const entries = await readdir(this.dir, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile() && !e.name.endsWith('.partial'))
      .map((e) => relative(this.dir, join(e.parentPath, e.name)).split(sep).join('/'))
      .filter((key) => key.startsWith(prefix))
      .sort();
  }

  async get(key: string): Promise<Buffer | undefined> {
    const path = join(this.dir, key);
    return existsSync(path) ? readFile(path) : undefined;
  }

  async put(key: string, body: Buffer): Promise<void> {
    await writeMirror(this.dir, key, body);
  }
}

export class S3Store implements ArchiveStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** Local mode: every object put is mirrored here too (as the archiver does). */
    private readonly mirrorDir?: string,
  ) {}

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const item of page.Contents ?? []) if (item.Key) keys.push(item.Key);
      token = page.NextContinuationToken;
    } while (token);
    return keys.sort();
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return Buffer.from(await out.Body!.transformToByteArray());
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  }

  async put(key: string, body: Buffer, extra: Partial<PutObjectCommandInput> = {}): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ChecksumAlgorithm: 'SHA256',
        ...extra,
      }),
    );
    if (this.mirrorDir) await writeMirror(this.mirrorDir, key, body);
  }
}
