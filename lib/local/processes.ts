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
