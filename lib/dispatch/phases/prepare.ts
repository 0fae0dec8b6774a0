import { admit, expired, fetchAttachments, suppressionOf } from '../gateReads.js';
import { chooseProvider } from '../providers.js';
import { type ChannelRun, type GateVerdict, ledgerSchedules, type Step } from '../run.js';

/**
 * prepare: the read-only gates, before anything is written — expiry, suppression (read once per queue
 * batch when the batch's facts are given), attachment checksums, admission, then expiry once more with
 * no I/O after it, so the claim that follows is the first write and, on the happy path, the only one
 * before the outcome. Next: the claim, with the verdict it writes.
 */
export const prepare = async (run: ChannelRun): Promise<Step> => ({
  next: 'claim',
  verdict: await verdictOf(run),
});

const verdictOf = async (run: ChannelRun): Promise<GateVerdict> => {
  // The provider first: its circuit may skip it, and the pace and the provider's schedule are its own.
  await chooseProvider(run);
  // A send the ledger schedules is gated at its due time, not at publish (a suppression lifted or a
  // cancel committed in between must count).
  if (ledgerSchedules(run, run.ctx.clock.now())) return { kind: 'schedule', dueAt: run.job.valid.sendAtMs! };
  if (expired(run)) return { kind: 'refuse', state: 'expired', why: 'expired_before_dispatch' };
  const suppression = await suppressionOf(run);
  if (suppression.suppressed)
    return { kind: 'refuse', state: 'suppressed', why: `suppressed:${suppression.reason ?? 'listed'}` };
  const checksum = await fetchAttachments(run);
  if (checksum) return { kind: 'refuse', state: 'blocked', why: checksum };
  const admitted = await admit(run);
  if (admitted.kind === 'refuse') return { kind: 'refuse', state: 'blocked', why: admitted.why };
  if (admitted.kind === 'wait') return { kind: 'pace', until: admitted.until, why: admitted.why };
  run.admitted = true;
  if (expired(run)) return { kind: 'refuse', state: 'expired', why: 'expired_before_dispatch' };
  return { kind: 'dispatch' };
};
