import { CreateBucketCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishPage } from '../../../cli/commands/console.js';
import { s3Client } from '../../../lib/aws/storageClients.js';
import { PAGE_MODULES } from '../../../lib/console/staticFiles.js';
import { type RunningFauxqs, startFauxqs } from '../../../lib/local/queues.js';

// Real S3 API (fauxqs on 127.0.0.1): what `sendproof console publish-page` leaves in the page bucket.
let app: RunningFauxqs;
let s3: ReturnType<typeof s3Client>;

beforeAll(async () => {
  app = await startFauxqs();
  s3 = s3Client({ region: 'us-east-1', endpoint: app.endpoint });
  await s3.send(new CreateBucketCommand({ Bucket: 'console-page' }));
});
afterAll(async () => {
  await app.stop();
});

describe('sendproof console publish-page', () => {
  it('uploads the page, its modules and style, the chart library, and config.json naming the API and the hosted UI', async () => {
    const config = {
      apiBase: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
      cognito: { domain: 'sendproof-1111.auth.eu-west-1.amazoncognito.com', clientId: 'client123' },
    };
    const uploaded = await publishPage(s3, 'console-page', config);
    expect(uploaded.sort()).toEqual(
      [
        'config.json',
        'console.css',
        'console.js',
        'index.html',
        ...PAGE_MODULES.map((m) => `js/${m}.js`),
        'vendor/uPlot.iife.min.js',
        'vendor/uPlot.min.css',
      ].sort(),
    );
    const get = (Key: string) => s3.send(new GetObjectCommand({ Bucket: 'console-page', Key }));
    const page = await get('index.html');
    expect(page.ContentType).toBe('text/html; charset=utf-8');
    expect(await page.Body!.transformToString()).toContain('<script type="module" src="console.js">');
    // The chart library comes from the page's own bucket (the CSP allows no other script origin)
    const uplot = await get('vendor/uPlot.iife.min.js');
    expect(uplot.ContentType).toBe('text/javascript; charset=utf-8');
    expect(await uplot.Body!.transformToString()).toContain('uPlot');
    expect((await get('js/charts.js')).ContentType).toBe('text/javascript; charset=utf-8');
    expect(JSON.parse(await (await get('config.json')).Body!.transformToString())).toEqual(config);
  });
});
