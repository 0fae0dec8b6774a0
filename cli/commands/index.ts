import type { Command } from 'commander';
import { register as registerAudit } from './audit.js';
import { register as registerBreaker } from './breaker.js';
import { register as registerCancel } from './cancel.js';
import { register as registerConsole } from './console.js';
import { register as registerDlq } from './dlq.js';
import { register as registerEvents } from './events.js';
import { register as registerExplain } from './explain.js';
import { register as registerLocal } from './local.js';
import { register as registerPublish } from './publish.js';
import { register as registerReconcile } from './reconcile.js';
import { register as registerResolve } from './resolve.js';
import { register as registerSlo } from './slo.js';
import { register as registerStats } from './stats.js';
import { register as registerStatus } from './status.js';
import { register as registerSuppressions } from './suppressions.js';
import { register as registerTemplate } from './template.js';

/**
 * Each command group lives in its own file and exports `register(program)`. Add one line here per
 * group; keep the groups independent of each other.
 */
export const registerCommands = (program: Command): void => {
  // command groups are added below, one line each
  registerTemplate(program);
  registerAudit(program);
  registerLocal(program);
  registerPublish(program);
  registerStatus(program);
  registerExplain(program);
  registerStats(program);
  registerDlq(program);
  registerReconcile(program);
  registerResolve(program);
  registerConsole(program);
  registerSuppressions(program);
  registerCancel(program);
  registerBreaker(program);
  registerSlo(program);
  registerEvents(program);
};
