/**
 * `sendproof/construct`: the CDK construct. `aws-cdk-lib` and `constructs` are peer dependencies: your
 * app's copies are used. The Lambda code it deploys is pre-built inside the package.
 */
export type { NamedQuery } from '../lib/archive/namedQueries.js';
export type { PurposePolicy } from '../lib/domain/purposes.js';
export type { AlarmThresholds } from './constructs/Alarms.js';
export {
  DISPATCHER_TIMEOUT,
  type EmailChannelProps,
  type EmailTransportName,
  NotificationLedger,
  type NotificationLedgerProps,
  type SmsChannelProps,
  type SmsTransportName,
} from './NotificationLedger.js';
export { SendproofStack, type SendproofStackProps } from './SendproofStack.js';
