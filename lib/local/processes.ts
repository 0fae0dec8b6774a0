import type { ChildProcess } from 'node:child_process';

/**
 * Stops a child process by PID: SIGTERM, then SIGKILL if it has not exited after `graceMs`. Resolves once
 * the process is gone, so callers can promise that nothing they started survives them.
 */
export const stopChildProcess = async (child: ChildProcess, graceMs = 3_000): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }, graceMs);
  await exited;
  clearTimeout(timer);
};

/**
 * What a start-up has started, to stop in reverse order: `stopAll` stops each (a failure does not keep
 * the rest running) and empties the list, so a start-up that fails half-way still leaves nothing behind.
 */
export const cleanupStack = () => {
  const cleanups: Array<() => Promise<void>> = [];
  return {
    push: (...stops: Array<() => Promise<void>>) => {
      cleanups.push(...stops);
    },
    /** Stopped after everything pushed (e.g. removing the state file the others' addresses are in). */
    unshift: (stop: () => Promise<void>) => {
      cleanups.unshift(stop);
    },
    stopAll: async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      cleanups.length = 0;
    },
  };
};
