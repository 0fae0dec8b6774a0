#!/usr/bin/env node
import './environment.js';
import { Command } from 'commander';
import { registerCommands } from './commands/index.js';

/**
 * `sendproof`: the operator's and developer's command line. Every command accepts `--json` for
 * machine-readable output; errors go to stderr with a non-zero exit code.
 */
const program = new Command()
  .name('sendproof')
  .description('Delivery-claim ledger for transactional email and SMS: publish, inspect, reconcile, audit.')
  .showHelpAfterError();

registerCommands(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`sendproof: ${message}\n`);
  process.exitCode = process.exitCode || 1;
});
