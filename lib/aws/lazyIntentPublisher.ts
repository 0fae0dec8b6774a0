import { onFirstUse } from '../onFirstUse.js';
import type { IntentPublisher } from '../reconcile/OperatorDecisions.js';
import type { ClientOptions } from './clientOptions.js';

/**
 * The intake queue's publisher with the SQS SDK loaded on the first publish. The reconcile run publishes
 * only when its sweep finds a sealed notification whose queue message is gone; every other run (each one
 * a cold start, on its schedule) never loads the SDK (bench/coldStart.ts). A failed load fails that
 * publish as an SQS error would (the seal stays for the next sweep), and the next publish loads again.
 */
export const lazyIntentPublisher = (options: ClientOptions, queueUrl: string): IntentPublisher => {
  const publisher = onFirstUse(async () => {
    const [{ sqsClient }, { SqsIntentPublisher }] = await Promise.all([
      import('./queueClient.js'),
      import('./SqsIntentPublisher.js'),
    ]);
    return new SqsIntentPublisher(sqsClient(options), queueUrl);
  });
  return { publish: async (body) => (await publisher()).publish(body) };
};
