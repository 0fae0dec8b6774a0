import { createHash } from 'node:crypto';
import {
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Command } from 'commander';
import { sqsClient } from '../../lib/aws/clients.js';
import { safeHints } from '../../lib/dispatch/sideRows.js';
import { output, resolveTarget, type TargetOptions, withTargetOptions } from '../localState.js';

/**
 * The DLQ holds intents that kept failing (maxReceiveCount) — typically fallback intents parked behind an
 * unknown outcome, or messages whose processing threw. `list` shows what is there without printing
 * bodies (they may carry secrets): ids, receive counts, sizes, body hashes and the intent's identifiers
 * that pass `safeHints` (an eventId or purpose that could be an address is left out).
 */
export const summarise = (m: Message) => {
  const body = m.Body ?? '';
  // The one filter the dispatcher uses for invalid rows: only well-formed ids that cannot be an address.
  const { tenant, purpose, eventId } = safeHints(body);
  return {
    messageId: m.MessageId,
    receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 0),
    sentAt: m.Attributes?.SentTimestamp
      ? new Date(Number(m.Attributes.SentTimestamp)).toISOString()
      : undefined,
    bytes: Buffer.byteLength(body),
    bodySha256: createHash('sha256').update(body).digest('hex'),
    tenant,
    eventId,
    purpose,
  };
};

/** `--max` as a positive whole number; anything else is an error, never a silent "DLQ is empty". */
const positiveCount = (raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--max must be a positive whole number, not ${JSON.stringify(raw)}`);
  return n;
};

const drain = async (
  sqs: SQSClient,
  queueUrl: string,
  max: number,
  visibility: number,
): Promise<Message[]> => {
  const seen: Message[] = [];
  while (seen.length < max) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(10, max - seen.length),
        WaitTimeSeconds: 1,
        VisibilityTimeout: visibility,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if (!out.Messages?.length) break;
    seen.push(...out.Messages);
  }
  return seen;
};

export const register = (program: Command): void => {
  const dlq = program.command('dlq').description('inspect and redrive the intake dead-letter queue');
  withTargetOptions(
    dlq
      .command('list')
      .description('list DLQ messages (ids, receive counts, event ids, body hashes — never bodies)')
      .option('--max <n>', 'at most this many', '100')
      .option('--json', 'machine-readable output'),
  ).action(async (options: TargetOptions & { json?: boolean; max: string }) => {
    const target = resolveTarget(options);
    if (!target.dlqUrl) throw new Error('no DLQ: pass --dlq-url or start the local stack');
    const sqs = sqsClient({
      region: target.region,
      ...(target.endpointSqs ? { endpoint: target.endpointSqs } : {}),
    });
    // A short visibility timeout: listing must not hide messages from a redrive for long.
    const messages = (await drain(sqs, target.dlqUrl, positiveCount(options.max), 2)).map(summarise);
    output(options.json, messages, () =>
      messages.length === 0
        ? 'DLQ is empty'
        : messages
            .map(
              (m) =>
                `${m.messageId} receives=${m.receiveCount} event=${m.eventId ?? '?'} purpose=${m.purpose ?? '?'} sha256=${m.bodySha256.slice(0, 16)}…`,
            )
            .join('\n'),
    );
  });
  withTargetOptions(
    dlq
      .command('redrive')
      .description('move DLQ messages back to the intake queue (the ledger keeps redelivery safe)')
      .option('--max <n>', 'at most this many', '1000')
      .option('--json', 'machine-readable output'),
  ).action(async (options: TargetOptions & { json?: boolean; max: string }) => {
    const target = resolveTarget(options);
    if (!target.dlqUrl || !target.queueUrl)
      throw new Error('need both --dlq-url and --queue-url (or the local stack)');
    const sqs = sqsClient({
      region: target.region,
      ...(target.endpointSqs ? { endpoint: target.endpointSqs } : {}),
    });
    const max = positiveCount(options.max);
    let moved = 0;
    // Batch by batch: each received batch is moved before the next receive, well inside its visibility
    // timeout, so no message reappears in the DLQ while the redrive is still running.
    while (moved < max) {
      const batch = await drain(sqs, target.dlqUrl, Math.min(10, max - moved), 60);
      if (batch.length === 0) break;
      for (const message of batch) {
        // Send first, delete second: a crash between them duplicates a message, and the ledger dedupes it.
        await sqs.send(
          new SendMessageCommand({ QueueUrl: target.queueUrl, MessageBody: message.Body ?? '' }),
        );
        await sqs.send(
          new DeleteMessageCommand({ QueueUrl: target.dlqUrl, ReceiptHandle: message.ReceiptHandle! }),
        );
        moved += 1;
      }
      if (moved > 10) process.stderr.write(`redriven ${moved}\r`);
    }
    output(options.json, { redriven: moved }, () => `redriven ${moved} message(s) to the intake queue`);
  });
};
