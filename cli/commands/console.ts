import type { Command } from 'commander';
import { startLocalConsole } from '../../lib/console/local.js';
import { IdentifierSchema } from '../../lib/domain/intent.js';
import { stateFilePath } from '../../lib/local/LocalStack.js';
import { readLocalState } from '../localState.js';

export const register = (program: Command): void => {
  program
    .command('console')
    .description('serve the operator console for the running local stack on 127.0.0.1 (tokens printed once)')
    .option('--state <file>', 'local stack state file', stateFilePath())
    .option('--port <port>', 'port (default: a random free one)')
    .option('--operator <id>', 'the identity decisions are recorded under (operator:<id>)', 'local-operator')
    .action(async (options: { state: string; port?: string; operator: string }) => {
      const state = readLocalState(options.state);
      if (!state) throw new Error('no local stack is running (start one with `npm start`)');
      if (!IdentifierSchema.safeParse(options.operator).success || options.operator.includes('@'))
        throw new Error('--operator must be an identifier without @ (letters, digits, . _ + -)');
      const port = options.port === undefined ? undefined : Number(options.port);
      if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536))
        throw new Error('--port must be a port number');
      const running = await startLocalConsole(state, {
        operatorId: options.operator,
        ...(port ? { port } : {}),
      });
      process.stdout.write(
        [
          `Sendproof console on ${running.url} (loopback only). Tokens are shown once and live only in this process:`,
          `  operator (${options.operator}): ${running.operatorUrl}`,
          `  viewer (read-only):         ${running.viewerUrl}`,
          `  audit log: ${running.auditLogFile}`,
          'Ctrl-C stops it.',
          '',
        ].join('\n'),
      );
      const stop = () => void running.stop().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
};
