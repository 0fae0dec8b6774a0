import type { Channel } from '../domain/purposes.js';
import type { DeliveryState } from '../domain/states.js';
import { isTerminal } from '../domain/states.js';
import { openChannel } from './channel.js';
import { claim } from './phases/claim.js';
import { confirm } from './phases/confirm.js';
import { gates } from './phases/gates.js';
import { lateAnswer } from './phases/lateAnswer.js';
import { prepare } from './phases/prepare.js';
import { record } from './phases/record.js';
import { send } from './phases/send.js';
import { wait } from './phases/wait.js';
import {
  type ChannelRun,
  type DispatchContext,
  type Job,
  LostRace,
  type PhaseStep,
  type Step,
  type StepOf,
} from './run.js';
import type { ChannelOutcome, DispatchEdge } from './types.js';

/**
 * The step table: each step names the phase that runs it (lib/dispatch/phases/<phase>.ts). Each phase
 * ends in at most one conditional write, which is also its recovery point (the row's state).
 *
 *   prepare  read-only gates → verdict            claim   conditional put, or the existing row decides
 *   gates    the gates again → `dispatching`      confirm the cancel marker, after `dispatching`
 *   send     the provider call (nothing written)  record  the outcome
 *   late_answer  the row moved meanwhile          wait    inline back-off, or park
 */
const PHASES: { [N in PhaseStep['next']]: (run: ChannelRun, step: StepOf<N>) => Promise<Step> } = {
  prepare: (run) => prepare(run),
  claim: (run, step) => claim(run, step.verdict),
  gates: (run, step) => gates(run, step.row),
  confirm: (run, step) => confirm(run, step.row),
  send: (run, step) => send(run, step.row),
  record: (run, step) => record(run, step.row, step.result),
  late_answer: (run, step) => lateAnswer(run, step.row, step.result, step.lost),
  wait: (run, step) => wait(run, step.row, step.delayMs),
};

/** Opens the channel, then runs its steps until it has an outcome, calling the probe at every edge. */
export const deliverChannel = async (
  ctx: DispatchContext,
  job: Job,
  channel: Channel,
): Promise<ChannelOutcome> => {
  const opened = await openChannel(ctx, job, channel);
  if ('outcome' in opened) return opened.outcome;
  const { run } = opened;
  try {
    return await runSteps(ctx, run, { next: 'prepare' });
  } finally {
    // Admitted but not sent (a claim conflict, a later gate, a lost race): its pace tokens go back.
    if (run.admitted) ctx.admission?.refund(run.ticket);
  }
};

const runSteps = async (ctx: DispatchContext, run: ChannelRun, first: Step): Promise<ChannelOutcome> => {
  const { channel } = run;
  let step = first;
  try {
    for (;;) {
      if ('done' in step) return step.done;
      const phase = PHASES[step.next] as (run: ChannelRun, step: PhaseStep) => Promise<Step>;
      const next = await phase(run, step);
      for (const [edge, state] of edgesAfter(step, next))
        await ctx.probe?.(edge, { dedupeKey: run.dedupeKey, channel, ...(state ? { state } : {}) });
      step = next;
    }
  } catch (error) {
    if (!(error instanceof LostRace)) throw error;
    ctx.logger.warn('another worker moved the row; leaving it', { dedupeKey: run.dedupeKey, channel });
    const state = error.current?.state ?? 'claimed';
    return {
      channel,
      dedupeKey: run.dedupeKey,
      state,
      action: isTerminal(state) ? 'already_final' : 'retry_later',
      dueAt: ctx.clock.now() + ctx.leaseMs,
    };
  }
};

type Edge = readonly [DispatchEdge, DeliveryState?];

const stateOf = (step: Step): DeliveryState | undefined =>
  'done' in step ? step.done.state : 'row' in step ? step.row.state : undefined;

/** The crash edges a phase ended on, from the step it ran and the step it returned. */
const edgesAfter = (ran: PhaseStep, next: Step): Edge[] => {
  const state = stateOf(next);
  switch (ran.next) {
    case 'prepare':
      return [['before_claim']];
    case 'claim': {
      const edges: Edge[] = [['after_claim', state]];
      // A claim written as `dispatching` is also the dispatching write, and one written in a gate's
      // state is also the gate's write: the same crash edges as on a resumed row.
      if (
        ran.verdict.kind === 'dispatch' &&
        'next' in next &&
        (next.next === 'send' || next.next === 'confirm')
      )
        edges.push(['after_dispatching', state]);
      if (ran.verdict.kind === 'refuse' && 'done' in next && next.done.state === ran.verdict.state)
        edges.push(['after_gate', state]);
      return edges;
    }
    case 'gates':
      if (!('done' in next)) return [['after_dispatching']];
      return next.done.state !== ran.row.state ? [['after_gate', state]] : [];
    case 'confirm':
      return 'done' in next ? [['after_gate', state]] : [];
    case 'send':
      // A send the spend breaker refused ends `blocked` before any provider call: a gate's edge.
      return 'done' in next ? [['after_gate', state]] : [['after_provider']];
    case 'record':
      // A refused outcome write is not an edge: the late-answer phase decides, and ends on it.
      return 'next' in next && next.next === 'late_answer' ? [] : [['after_outcome', state]];
    case 'late_answer':
      return [['after_outcome', state]];
    case 'wait':
      return [['after_wait']];
  }
};
