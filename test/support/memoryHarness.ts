import { UriAttachmentStore } from '../../lib/attachments/AttachmentStore.js';
import { Dispatcher, type DispatcherDeps } from '../../lib/dispatch/Dispatcher.js';
import type { Clock } from '../../lib/domain/clock.js';
import { PurposeRegistry } from '../../lib/domain/purposes.js';
import { MemoryLedger } from '../../lib/ledger/MemoryLedger.js';
import { MemorySuppressionList } from '../../lib/ledger/MemorySuppressionList.js';
import { localSealer } from '../../lib/seal/IntentSealer.js';
import { FileTemplateStore } from '../../lib/templates/FileTemplateStore.js';
import { CapturingLogger, CONTENT_KEY } from './dispatchHarness.js';
import { RecordingTransport } from './recordingTransport.js';
import { TEST_SEAL_KEY } from './sealKey.js';

/**
 * The dispatcher on the in-memory ledger (held to the same contract as DynamoDB Local by
 * test/contract/ledger.contract.ts) with recording transports: for decision tests, no server. The
 * adapter, the HTTP transports and the races stay proven by test/support/dispatchHarness.ts.
 */
export const createMemoryHarness = (clock: Clock) => {
  const ledger = new MemoryLedger();
  const suppressions = new MemorySuppressionList();
  const logger = new CapturingLogger();
  const transports = { email: new RecordingTransport('email'), sms: new RecordingTransport('sms') };
  const renderer = new FileTemplateStore();
  const sealer = localSealer(Buffer.from(TEST_SEAL_KEY, 'utf8'));
  /** Every provider call made, on either channel. */
  const sends = () => [...transports.email.calls, ...transports.sms.calls];
  const dispatcher = (options: { workerId?: string } & Partial<DispatcherDeps> = {}) =>
    new Dispatcher({
      ledger,
      suppressions,
      renderer,
      transports,
      attachments: new UriAttachmentStore(),
      purposes: new PurposeRegistry(),
      clock,
      contentHashKey: CONTENT_KEY,
      sealer,
      workerId: options.workerId ?? 'dispatch:test',
      leaseMs: 60_000,
      logger,
      random: () => 0.5,
      sleep: async () => {},
      ...options,
    });
  return { ledger, suppressions, logger, transports, sends, dispatcher };
};
