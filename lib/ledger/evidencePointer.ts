import { labelCarriesKey } from '../domain/keys.js';
import type { DeliveryState } from '../domain/states.js';
import type { DeliveryRecord } from './port.js';

/** States a claim is written in from which the row may still reach a provider. */
const SENDABLE_INITIAL_STATES: readonly DeliveryState[] = ['claimed', 'dispatching', 'scheduled'];

/**
 * Whether a claim also writes the `ev#<key hash>` pointer (key hash → dedupe key). Provider events name
 * their row by its label (the readable key, sealed: lib/transports/labels.ts), so the happy path needs none;
 * only a row that may still be sent and whose key is too long for a label to carry (lib/domain/keys.ts) gets it. One rule, for
 * DynamoLedger and MemoryLedger alike (the ledger contract holds both to it).
 */
export const needsEvidencePointer = (record: DeliveryRecord): boolean =>
  record.kind === 'delivery' && SENDABLE_INITIAL_STATES.includes(record.state) && !labelCarriesKey(record.pk);
