import { dirname, join } from 'node:path';
import { bundleDocument } from '../archive/bundle.js';
import { ensureLocalDigestKey } from '../archive/digest.js';
import { DirStore } from '../archive/store.js';
import { type ConfigOutput, configSchema } from '../config.js';
import { parseOrThrow } from '../domain/parseOrThrow.js';
import type { LocalState } from '../local/LocalStack.js';
import { jsonLinesAuditLog } from './adapters.js';
import { newToken, type Principal, staticTokenAuthenticator } from './auth.js';
import type { ConsoleDeps } from './ConsoleApi.js';
import { duckDbAuditQueries } from './duckDbAuditQueries.js';
import { type RunningConsoleServer, startConsoleServer } from './server.js';
import { staticFilesFrom } from './staticFiles.js';
import { consoleHandlerFor } from './wiring.js';

export interface LocalConsole extends RunningConsoleServer {
  /** Printed once by the caller; never written to a file. */
  viewerUrl: string;
  operatorUrl: string;
  viewerToken: string;
  operatorToken: string;
  auditLogFile: string;
  deps: ConsoleDeps;
}

/**
 * The console on the local stack: the same handler the Lambda runs, over node:http on 127.0.0.1, with
 * two random bearer tokens (viewer, operator) that exist only in this process's memory. The token rides
 * in the URL fragment, which the browser never sends to a server; the page moves it to sessionStorage.
 */
export const startLocalConsole = async (
  state: LocalState,
  options: { operatorId?: string; port?: number; stateDir?: string; decisionRowsPerMinute?: number } = {},
): Promise<LocalConsole> => {
  const config = parseOrThrow(configSchema(), {
    ledgerTable: state.ledgerTable,
    suppressionTable: state.suppressionTable,
    region: state.region,
    queueUrl: state.queueUrl,
    dlqUrl: state.dlqUrl,
    archiveMirrorDir: state.archiveDir,
    emailTransport: state.emailTransport,
    // The stack's failover order, so the circuits panel lists the providers the functions use.
    ...(state.emailProviders ? { emailProviders: state.emailProviders.join(',') } : {}),
    smsTransport: state.smsTransport,
    restBaseUrl: state.simulator,
    endpointSes: state.ses,
    endpointDynamoDb: state.dynamodb,
    endpointSqs: state.sqs,
  }) as ConfigOutput & { ledgerTable: string };
  // The console function's handler: its clients are that function's (the command recorder, test runs only).
  const consoleConfig = { ...config, functionName: 'console' as const };
  const viewerToken = newToken();
  const operatorToken = newToken();
  const operator: Principal = { id: options.operatorId ?? 'local-operator', role: 'operator' };
  const auditLogFile = join(options.stateDir ?? join(state.archiveDir, '..'), 'console-audit.jsonl');
  const { handler, deps } = await consoleHandlerFor(consoleConfig, {
    authenticate: staticTokenAuthenticator([
      { token: viewerToken, principal: { id: 'local-viewer', role: 'viewer' } },
      { token: operatorToken, principal: operator },
    ]),
    auditLog: jsonLinesAuditLog(auditLogFile),
    staticFiles: staticFilesFrom(),
    audit: duckDbAuditQueries(state.archiveDir),
    // As `sendproof audit export`: the archive folder's objects and digests, signed by the local key.
    exportBundle: async (subject, scope) => {
      const key = ensureLocalDigestKey(join(dirname(state.archiveDir), 'keys'));
      return bundleDocument({
        store: new DirStore(state.archiveDir),
        subject,
        ...scope,
        publicKeyPem: key.publicKeyPem,
        keyId: key.keyId,
      });
    },
    ...(options.decisionRowsPerMinute ? { decisionRowsPerMinute: options.decisionRowsPerMinute } : {}),
  });
  const server = await startConsoleServer(handler, {
    host: '127.0.0.1',
    ...(options.port ? { port: options.port } : {}),
  });
  return {
    ...server,
    viewerToken,
    operatorToken,
    viewerUrl: `${server.url}/#token=${viewerToken}`,
    operatorUrl: `${server.url}/#token=${operatorToken}`,
    auditLogFile,
    deps,
  };
};
