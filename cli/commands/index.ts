import type { Command } from 'commander';

/**
 * Each command group lives in its own file and exports `register(program)`. Add one line here per
 * group; keep the groups independent of each other.
 */
export const registerCommands = (_program: Command): void => {
  // command groups are added below, one line each
};
