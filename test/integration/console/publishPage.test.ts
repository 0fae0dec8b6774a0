import { CreateBucketCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { buildApp } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishPage } from '../../../cli/commands/console.js';
import { s3Client } from '../../../lib/aws/storageClients.js';
import { freePort } from '../../../lib/local/ports.js';

// Real S3 API (fauxqs on 127.0.0.1): what `sendproof console publish-page` leaves in the page bucket.
let app: ReturnType<typeof buildApp>;
let s3: ReturnType<typeof s3Client>;

beforeAll(async () => {
  app = buildApp({ logger: false });
  const port = await freePort();
  await app.listen({ port, host: '127.0.0.1' });
  s3 = s3Client({ region: 'us-east-1', endpoint: `http://127.0.0.1:${port}` });
  await s3.send(new CreateBucketCommand({ Bucket: 'console-page' }));
});
afterAll(async () => {
  await app.close();
});

describe('sendproof console publish-page', () => {
  it('uploads the page, its script and style, and config.json naming the API and the hosted UI', async () => {
    const config = {
      apiBase: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
      cognito: { domain: 'sendproof-1111.auth.eu-west-1.amazoncognito.com', clientId: 'client123' },
    };
    const uploaded = await publishPage(s3, 'console-page', config);
    expect(uploaded.sort()).toEqual(['config.json', 'console.css', 'console.js', 'index.html']);
    const get = (Key: string) => s3.send(new GetObjectCommand({ Bucket: 'console-page', Key }));
    const page = await get('index.html');
    expect(page.ContentType).toBe('text/html; charset=utf-8');
    expect(await page.Body!.transformToString()).toContain('<script type="module" src="console.js">');
    expect(JSON.parse(await (await get('config.json')).Body!.transformToString())).toEqual(config);
  });
});
