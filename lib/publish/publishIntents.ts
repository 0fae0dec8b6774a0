import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type Clock, systemClock } from '../domain/clock.js';
import { ConfigurationError, type FieldIssue } from '../domain/errors.js';
import { DEFAULT_SCHEDULE_HORIZON_MS, parseIntent } from '../domain/intent.js';
import { deriveDedupeKey, identityOf } from '../domain/keys.js';
import { PurposeRegistry, SCHEDULE_HORIZON_DAYS } from '../domain/purposes.js';
import { FileTemplateStore } from '../templates/FileTemplateStore.js';
import { checkIntentTemplate } from '../templates/intentCheck.js';

export type PublishResult =
  | { index: number; ok: true; messageId: string; dedupeKeys: string[] }
  | { index: number; ok: false; stage: 'validation'; issues: FieldIssue[] }
  | { index: number; ok: false; stage: 'queue'; code: string; message: string };

export interface PublishOptions {
  purposes?: PurposeRegistry;
  clock?: Clock;
  /**
   * The templates the dispatcher renders from, to refuse an intent they cannot render before it is queued:
   * a folder path (your `templatesDir`), a FileTemplateStore, or `false` to skip the check. Default: the
   * templates shipped with Sendproof, which the construct deploys when you do not pass `templatesDir`.
   * The dispatcher checks again on arrival, so skipping only moves the refusal to an `invalid` row.
   */
  templates?: string | FileTemplateStore | false;
  /** How far ahead `sendAt` may be (default and maximum 30 days: Resend's own scheduling horizon). */
  scheduleHorizonMs?: number;
  /** Called after each batch of up to 10 with the number published so far. */
  onProgress?: (done: number, total: number) => void;
}

const SQS_BATCH = 10;

/**
 * Validates each intent with the same schema the dispatcher uses and against the template revision it
 * names (same files, same renderer), then sends the valid ones to the intake
 * queue in batches of 10. Every intent gets its own result: a validation error naming the field, a
 * queue-side failure, or the message id and the dedupe keys its channels will be claimed under.
 * An intent that is already expired is refused here (the dispatcher would record it as expired), and so is
 * a `sendAt` in the past, after `expiresAt` or beyond the scheduling horizon.
 *
 * To withdraw notifications already published, see `cancelNotifications()` (./cancelNotifications.ts).
 */
export const publishIntents = async (
  client: SQSClient,
  queueUrl: string,
  intents: readonly unknown[],
  options: PublishOptions = {},
): Promise<PublishResult[]> => {
  if (options.scheduleHorizonMs !== undefined && options.scheduleHorizonMs > DEFAULT_SCHEDULE_HORIZON_MS)
    // Every purpose's retention covers the default horizon and no more: a later sendAt could outlive the
    // cancel marker that must stop it (lib/domain/purposes.ts SCHEDULE_HORIZON_DAYS).
    throw new ConfigurationError(
      `scheduleHorizonMs may not exceed ${DEFAULT_SCHEDULE_HORIZON_MS} (${SCHEDULE_HORIZON_DAYS} days, the scheduling horizon every purpose's retention covers)`,
    );
  const purposes = options.purposes ?? new PurposeRegistry();
  const clock = options.clock ?? systemClock;
  const templates =
    options.templates === false
      ? undefined
      : options.templates instanceof FileTemplateStore
        ? options.templates
        : new FileTemplateStore(options.templates);
  const results: PublishResult[] = new Array(intents.length);
  const ready: Array<{ index: number; body: string; dedupeKeys: string[] }> = [];
  intents.forEach((raw, index) => {
    const parsed = parseIntent(raw, {
      purposes,
      clock,
      ...(options.scheduleHorizonMs !== undefined ? { scheduleHorizonMs: options.scheduleHorizonMs } : {}),
    });
    if (!parsed.ok) {
      results[index] = { index, ok: false, stage: 'validation', issues: parsed.error.issues };
      return;
    }
    const { intent, policy } = parsed.value;
    const templateIssues = templates ? checkIntentTemplate(templates, intent) : [];
    if (templateIssues.length > 0) {
      results[index] = { index, ok: false, stage: 'validation', issues: templateIssues };
      return;
    }
    ready.push({
      index,
      // The publish time rides with the intent: the service level objectives measure from it.
      body: JSON.stringify({
        ...intent,
        publishedAt: intent.publishedAt ?? new Date(clock.now()).toISOString(),
      }),
      dedupeKeys: intent.channels.map(
        (channel) => deriveDedupeKey(identityOf(intent, policy, channel)).readable,
      ),
    });
  });
  for (let start = 0; start < ready.length; start += SQS_BATCH) {
    const batch = ready.slice(start, start + SQS_BATCH);
    try {
      const out = await client.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: batch.map((item) => ({ Id: String(item.index), MessageBody: item.body })),
        }),
      );
      for (const ok of out.Successful ?? []) {
        const item = batch.find((b) => String(b.index) === ok.Id)!;
        results[item.index] = {
          index: item.index,
          ok: true,
          messageId: ok.MessageId!,
          dedupeKeys: item.dedupeKeys,
        };
      }
      for (const failed of out.Failed ?? []) {
        const index = Number(failed.Id);
        results[index] = {
          index,
          ok: false,
          stage: 'queue',
          code: failed.Code ?? 'unknown',
          message: failed.Message ?? 'send failed',
        };
      }
    } catch (error) {
      for (const item of batch) {
        results[item.index] = {
          index: item.index,
          ok: false,
          stage: 'queue',
          code: error instanceof Error ? error.name : 'error',
          message: error instanceof Error ? error.message : String(error),
        };
      }
    }
    options.onProgress?.(Math.min(start + SQS_BATCH, ready.length), ready.length);
  }
  return results;
};
