import type { DeliveryState } from '../domain/states.js';
import type { TransitionRequest } from './port.js';

/** The states whose `nextAttemptAt` is a due time someone waits for (a retry, sendAt, a provider's hold). */
export const DUE_TIME_STATES: readonly DeliveryState[] = ['retry_wait', 'scheduled', 'provider_scheduled'];

/**
 * Whether a transition drops the row's `nextAttemptAt`: it leaves a state with a due time for one that
 * has none, and sets no new one. One rule for both ledger adapters, so they cannot drift (the contract
 * suite, test/contract/ledger.contract.ts, holds both to it).
 */
export const dropsDueTime = (request: Pick<TransitionRequest, 'from' | 'to' | 'set'>): boolean =>
  request.to !== 'retry_wait' &&
  request.set?.nextAttemptAt === undefined &&
  DUE_TIME_STATES.includes(request.from);
