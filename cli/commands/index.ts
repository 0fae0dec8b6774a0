import type { Command } from 'commander';
import { register as registerAudit } from './audit.js';
import { register as registerTemplate } from './template.js';

/**
 * Each command group lives in its own file and exports `register(program)`. Add one line here per
 * group; keep the groups independent of each other.
 */
export const registerCommands = (program: Command): void => {
  // command groups are added below, one line each
  registerTemplate(program);
  registerAudit(program);
};
