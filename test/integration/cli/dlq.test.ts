import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '../../../lib/aws/clients.js';
import { type RunningFauxqs, startFauxqs } from '../../../lib/local/queues.js';
import { MARKERS, resetIntent } from '../../support/fixtures.js';

// Real SQS API (fauxqs on 127.0.0.1) and the real CLI in a child process.
const run = promisify(execFile);
const CLI = new URL('../../../bin/sendproof.mjs', import.meta.url).pathname;
let app: RunningFauxqs;
let statePath: string;
let queueUrl: string;
let dlqUrl: string;
const sqs = () => sqsClient({ region: 'us-east-1', endpoint: app.endpoint });

const depth = async (url: string) =>
  Number(
    (
      await sqs().send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }),
      )
    ).Attributes?.ApproximateNumberOfMessages,
  );

beforeAll(async () => {
  app = await startFauxqs();
  queueUrl = (await sqs().send(new CreateQueueCommand({ QueueName: 'intake' }))).QueueUrl!;
  dlqUrl = (await sqs().send(new CreateQueueCommand({ QueueName: 'intake-dlq' }))).QueueUrl!;
  const dir = mkdtempSync(join(tmpdir(), 'sendproof-dlq-'));
  statePath = join(dir, 'state.json');
  writeFileSync(
    statePath,
    JSON.stringify({
      region: 'us-east-1',
      sqs: app.endpoint,
      queueUrl,
      dlqUrl,
      ledgerTable: 'unused',
    }),
  );
  // 23 dead letters: more than two receive batches.
  for (let start = 0; start < 23; start += 10) {
    const entries = Array.from({ length: Math.min(10, 23 - start) }, (_, i) => ({
      Id: String(i),
      MessageBody: JSON.stringify(resetIntent({ eventId: `dead-${start + i}` })),
    }));
    await sqs().send(new SendMessageBatchCommand({ QueueUrl: dlqUrl, Entries: entries }));
  }
});
afterAll(async () => {
  await app.stop();
});

describe('sendproof dlq', () => {
  it('lists dead letters without their bodies, then redrives all of them batch by batch', async () => {
    // Act
    const listed = JSON.parse(
      (await run(process.execPath, [CLI, 'dlq', 'list', '--json', '--state', statePath])).stdout,
    ) as Array<{ eventId?: string; bodySha256: string }>;
    await new Promise((r) => setTimeout(r, 2_500)); // the listing's short visibility timeout runs out
    const redriven = JSON.parse(
      (await run(process.execPath, [CLI, 'dlq', 'redrive', '--json', '--state', statePath])).stdout,
    ) as { redriven: number };
    // Assess
    expect(listed).toHaveLength(23);
    expect(listed.every((m) => m.eventId?.startsWith('dead-') && /^[a-f0-9]{64}$/.test(m.bodySha256))).toBe(
      true,
    );
    expect(JSON.stringify(listed)).not.toContain(MARKERS.email);
    expect(redriven).toEqual({ redriven: 23 });
    expect(await depth(dlqUrl)).toBe(0);
    expect(await depth(queueUrl)).toBe(23);
  }, 60_000);

  it('refuses a --max that is not a positive number instead of reporting an empty DLQ', async () => {
    const failure = await run(process.execPath, [
      CLI,
      'dlq',
      'list',
      '--max',
      'ten',
      '--state',
      statePath,
    ]).then(
      () => undefined,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failure?.code).not.toBe(0);
    expect(failure?.stderr).toMatch(/--max must be a positive whole number/);
  });
});
