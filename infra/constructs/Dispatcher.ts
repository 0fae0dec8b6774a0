import type { Duration } from 'aws-cdk-lib';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.js';
import { INTAKE_QUEUE } from '../../lib/queueDefinition.js';
import { bundledPath, SendproofFunction } from './SendproofFunction.js';

/** The repository's template folder (templates/<id>/<revision>/ + manifest.json). */
export const TEMPLATES_FOLDER = 'templates';

export interface DispatcherProps {
  queue: sqs.IQueue;
  timeout: Duration;
  /** Upper bound on concurrent dispatcher invocations the SQS poller may start (2..1000). */
  maxConcurrency: number;
  logRetention?: logs.RetentionDays;
  /** An absolute path to the deployment's own templates folder; default: the repository's `templates/`. */
  templatesDir?: string;
}

/** SQS batch size: ten intents per invocation, failures reported per record. */
export const DISPATCH_BATCH_SIZE = INTAKE_QUEUE.batchSize;

/**
 * The SQS consumer that claims, sends and records each intent. Grants are added by the composing construct
 * through the SendproofFunction binders, so this file only decides how intents arrive.
 */
export class Dispatcher extends Construct {
  readonly function: SendproofFunction;

  constructor(scope: Construct, id: string, props: DispatcherProps) {
    super(scope, id);
    this.function = new SendproofFunction(this, 'Dispatch', {
      entry: 'functions/dispatch/index.ts',
      description: 'Claims each intent in the ledger, sends it once, records the provider answer',
      timeout: props.timeout,
      logRetention: props.logRetention,
      // Templates are files (manifest-pinned revisions), not code: ship them beside the bundle.
      copyIntoBundle: [
        props.templatesDir ? { source: props.templatesDir, target: TEMPLATES_FOLDER } : TEMPLATES_FOLDER,
      ],
    });
    this.function.setEnv(ENV.templatesDir, bundledPath(TEMPLATES_FOLDER));
    this.function.fn.addEventSource(
      new SqsEventSource(props.queue, {
        batchSize: DISPATCH_BATCH_SIZE,
        // One failed record must not redeliver the nine that were sent: the handler returns
        // batchItemFailures and only those go back to the queue.
        reportBatchItemFailures: true,
        maxConcurrency: props.maxConcurrency,
      }),
    );
  }
}
