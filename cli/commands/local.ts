import type { Command } from 'commander';
import { dynamoDocumentClient, sqsClient } from '../../lib/aws/clients.js';
import { s3Client } from '../../lib/aws/storageClients.js';
import { type LocalConsole, startLocalConsole } from '../../lib/console/local.js';
import { isTerminal } from '../../lib/domain/states.js';
import { DynamoLedger } from '../../lib/ledger/DynamoLedger.js';
import { DynamoOperatorQueries } from '../../lib/ledger/DynamoOperatorQueries.js';
import type { DeliveryRecord } from '../../lib/ledger/port.js';
import { demoTimeline, prepareDemo, REFUNDED_EVENT } from '../../lib/local/demo.js';
import { type LocalEndpoints, type RunningLocalStack, startLocalStack } from '../../lib/local/LocalStack.js';
import { cancelNotifications } from '../../lib/publish/cancelNotifications.js';
import { publishIntents } from '../../lib/publish/publishIntents.js';
import { output, readLocalState } from '../localState.js';
import { describeReport } from './cancel.js';

/** The demo's refund: once the scheduled receipt's rows exist, it is cancelled as `sendproof cancel` would. */
const refundDemo = async (stack: RunningLocalStack, dedupeKeys: string[], print: (line: string) => void) => {
  const doc = dynamoDocumentClient({ region: stack.state.region, endpoint: stack.state.dynamodb });
  const ledger = new DynamoLedger(doc, stack.state.ledgerTable);
  const started = Date.now();
  while (Date.now() - started < 15_000) {
    const rows = await Promise.all(dedupeKeys.map((k) => ledger.get(k)));
    if (rows.every((r) => r !== undefined)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const report = await cancelNotifications(
    { ledger },
    {
      dedupeKeys,
      tenant: 'acme-games',
      eventId: REFUNDED_EVENT,
      reason: 'payment refunded (demo RF-306)',
      operator: 'demo',
    },
  );
  print(`demo: refund → npx sendproof cancel ${REFUNDED_EVENT} --tenant acme-games …`);
  for (const line of describeReport(report).split('\n')) print(`  ${line}`);
};

const endpointsOf = (s: LocalEndpoints): LocalEndpoints => ({
  dynamodb: s.dynamodb,
  sqs: s.sqs,
  queueUrl: s.queueUrl,
  dlqUrl: s.dlqUrl,
  s3: s.s3,
  bucket: s.bucket,
  archiveFailuresUrl: s.archiveFailuresUrl,
  ses: s.ses,
  simulator: s.simulator,
  archiveDir: s.archiveDir,
  ...(s.webhook ? { webhook: s.webhook } : {}),
  ...(s.eventsLog ? { eventsLog: s.eventsLog } : {}),
});

/** An accepted SES email is settled for the demo once an event after `Send` (delivery, bounce) is on it. */
const settled = (row: DeliveryRecord, emailTransport: string) =>
  isTerminal(row.state) &&
  (emailTransport !== 'ses' ||
    row.channel !== 'email' ||
    row.state !== 'accepted' ||
    (row.delivery !== undefined && row.delivery.status !== 'sent'));

/** Prints counts by state every second until every row is final (or 90 s pass). */
const watch = async (stack: RunningLocalStack, print: (line: string) => void): Promise<DeliveryRecord[]> => {
  const started = Date.now();
  const queries = new DynamoOperatorQueries(
    dynamoDocumentClient({ region: stack.state.region, endpoint: stack.state.dynamodb }),
    stack.state.ledgerTable,
  );
  let rows: DeliveryRecord[] = [];
  let last = '';
  let quiet = 0;
  while (Date.now() - started < 90_000) {
    await new Promise((r) => setTimeout(r, 1000));
    rows = await queries.rows();
    const counts = new Map<string, number>();
    for (const row of rows) counts.set(row.state, (counts.get(row.state) ?? 0) + 1);
    const line = [...counts.entries()].map(([s, n]) => `${s} ${n}`).join(' · ');
    if (line !== last) print(`  [+${Math.round((Date.now() - started) / 1000)}s] ${line}`);
    // Settled and quiet for 3 s: a fallback the evidence moved on (an email that bounced) adds its row then.
    quiet = line === last ? quiet + 1 : 0;
    last = line;
    if (rows.length > 0 && rows.every((r) => settled(r, stack.state.emailTransport)) && quiet >= 3) break;
  }
  return rows;
};

/** `--events-endpoint http://…` (every tenant) or `--events-endpoint acme-games=http://…` (one tenant). */
const eventEndpointOf = (value: string): { url: string; tenant?: string } => {
  const match = /^([A-Za-z0-9][A-Za-z0-9._@+-]*)=(https?:\/\/.+)$/.exec(value);
  const endpoint = match ? { tenant: match[1]!, url: match[2]! } : { url: value };
  if (!/^https?:\/\//.test(endpoint.url))
    throw new Error(`--events-endpoint must be a URL or tenant=URL, not ${value}`);
  return endpoint;
};

export const register = (program: Command): void => {
  const local = program.command('local').description('the whole pipeline on local servers (no AWS account)');
  local
    .command('start')
    .description('start DynamoDB Local, fauxqs (SQS/S3), the SES inbox, the SMS simulator and the functions')
    .option('--demo', 'publish the seed scenarios and show their states live')
    .option('--email-transport <name>', 'ses | simulator', process.env.SENDPROOF_EMAIL_TRANSPORT ?? 'ses')
    .option(
      '--email-providers <list>',
      'email failover order among ses and simulator (e.g. ses,simulator): the first is the primary',
      process.env.SENDPROOF_EMAIL_PROVIDERS,
    )
    .option('--sms-transport <name>', 'simulator', process.env.SENDPROOF_SMS_TRANSPORT ?? 'simulator')
    .option('--state-dir <dir>', 'where state, logs and the archive mirror live', '.local')
    .option('--exit-after-demo', 'stop everything once the demo has settled (for scripts and tests)')
    .option('--no-console', 'do not serve the operator console')
    .option(
      '--events-endpoint <url...>',
      'POST every outcome event to this caller endpoint, as an EventBridge API destination would (`tenant=url` for one tenant only)',
    )
    .action(
      async (options: {
        demo?: boolean;
        emailTransport: string;
        emailProviders?: string;
        smsTransport: string;
        stateDir: string;
        exitAfterDemo?: boolean;
        console: boolean;
        eventsEndpoint?: string[];
      }) => {
        if (options.emailTransport !== 'ses' && options.emailTransport !== 'simulator')
          throw new Error(`--email-transport must be ses or simulator, not ${options.emailTransport}`);
        if (options.smsTransport !== 'simulator')
          throw new Error(`--sms-transport must be simulator, not ${options.smsTransport}`);
        const emailProviders = options.emailProviders
          ?.split(',')
          .map((name) => name.trim())
          .filter(Boolean);
        for (const name of emailProviders ?? [])
          if (name !== 'ses' && name !== 'simulator')
            throw new Error(`--email-providers lists ses and simulator only, not ${name}`);
        const print = (line: string) => process.stdout.write(`${line}\n`);
        const stack = await startLocalStack({
          stateDir: options.stateDir,
          emailTransport: options.emailTransport,
          ...(emailProviders?.length ? { emailProviders: emailProviders as Array<'ses' | 'simulator'> } : {}),
          smsTransport: 'simulator',
          progress: (line) => print(`· ${line}`),
          eventEndpoints: (options.eventsEndpoint ?? []).map(eventEndpointOf),
        });
        let stopping = false;
        let operatorConsole: LocalConsole | undefined;
        const stop = async (code = 0) => {
          if (stopping) return;
          stopping = true;
          print('stopping local stack…');
          await operatorConsole?.stop();
          await stack.stop();
          print('stopped; no server left running.');
          process.exit(code);
        };
        process.on('SIGINT', () => void stop(0));
        process.on('SIGTERM', () => void stop(0));
        const s = stack.state;
        print('\nSendproof local stack is up (loopback only):');
        for (const [name, value] of Object.entries(endpointsOf(s))) print(`  ${name.padEnd(10)} ${value}`);
        print(`  SES inbox  ${s.ses}/   ·   simulator log ${s.simulator}/_sim/requests`);
        if (s.emailTransport === 'ses')
          print(`  SES events ${s.ses}/_sendproof/events (emitted to the evidence function)`);
        print(`  functions log ${s.functionsLog}`);
        print('  outcome events: npx sendproof events tail (and --json)\n');
        if (options.console && !options.exitAfterDemo) {
          operatorConsole = await startLocalConsole(s, { stateDir: options.stateDir });
          print(`Operator console ${operatorConsole.url} (tokens shown once, held only by this process):`);
          print(`  operator: ${operatorConsole.operatorUrl}`);
          print(`  viewer:   ${operatorConsole.viewerUrl}\n`);
        }
        if (options.demo) {
          const intents = await prepareDemo({
            s3: s3Client({ region: s.region, endpoint: s.s3 }),
            attachmentsBucket: s.attachmentsBucket,
            simulator: stack.simulator,
            now: Date.now(),
          });
          const results = await publishIntents(
            sqsClient({ region: s.region, endpoint: s.sqs }),
            s.queueUrl,
            intents,
          );
          print('demo: published the seed scenarios');
          for (const r of results)
            print(r.ok ? `  ${r.dedupeKeys.join(', ')}` : `  failed: ${JSON.stringify(r)}`);
          const refunded = results.find((r) => r.ok && r.dedupeKeys[0]?.includes(`:${REFUNDED_EVENT}:`));
          if (refunded?.ok) await refundDemo(stack, refunded.dedupeKeys, print);
          print(
            'demo: states as the functions work (an injected accept_then_drop on one SMS; one receipt scheduled 20 s ahead):',
          );
          const rows = await watch(stack, print);
          print('\nfinal rows:');
          for (const row of rows.sort((a, b) => a.pk.localeCompare(b.pk)))
            print(`  ${row.state.padEnd(12)} ${row.pk}  ${row.history.map((h) => h.s).join('→')}`);
          print("\ntimelines (the ledger's clock, then the provider's events on the provider's clock):");
          for (const row of rows.sort((a, b) => a.pk.localeCompare(b.pk)))
            print(`  ${row.eventId} ${row.channel}: ${demoTimeline(row)}`);
          print(
            '\ntry: npx sendproof status rst_8a02 · npx sendproof explain report-42 · npx sendproof explain pay_90211-ord_306 · npx sendproof audit list',
          );
        }
        if (options.exitAfterDemo) return stop(0);
        print('waiting for intents (`npx sendproof publish <file>`); Ctrl-C stops everything.');
      },
    );
  local
    .command('endpoints')
    .description('print the running local stack endpoints')
    .option('--state <file>', 'state file', '.local/state.json')
    .option('--json', 'machine-readable output')
    .action((options: { state: string; json?: boolean }) => {
      const state = readLocalState(options.state);
      if (!state) throw new Error('no local stack is running (start one with `npm start`)');
      const endpoints = endpointsOf(state);
      output(options.json, endpoints, () =>
        Object.entries(endpoints)
          .map(([k, v]) => `${k.padEnd(10)} ${v}`)
          .join('\n'),
      );
    });
};
