import { parseArgs } from 'node:util';
import { startProviderSimulator } from './ProviderSimulator.js';

/**
 * Runs the provider simulator (a test double) on its own for the local stack:
 *   tsx lib/simulator/main.ts --port 4010 [--retention-seconds 86400]
 * Prints its URL on the first line of stdout and stops on SIGINT/SIGTERM.
 */
const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'retention-seconds': { type: 'string' },
  },
});

const port = Number(values.port);
const retention = values['retention-seconds'] === undefined ? undefined : Number(values['retention-seconds']);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error('--port must be an integer between 0 and 65535');
  process.exit(2);
}
if (retention !== undefined && (!Number.isInteger(retention) || retention < 0)) {
  console.error('--retention-seconds must be a non-negative integer');
  process.exit(2);
}

const sim = await startProviderSimulator({
  port,
  ...(retention !== undefined ? { keyRetentionSeconds: retention } : {}),
});
console.log(sim.url);
console.error(`provider simulator (test double) listening on ${sim.url}; admin API under ${sim.url}/_sim`);

const shutdown = () => {
  sim.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
