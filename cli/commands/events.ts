import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { OutcomeEvent } from '../../lib/events/outcomeEvent.js';
import { startEventReceiver } from '../../lib/events/receiver.js';
import { readLocalState } from '../localState.js';

/**
 * `sendproof events …`: the outcome events a calling service receives. `tail` follows the local event
 * bus (the local stack's stand-in for the EventBridge bus); `receive` is a caller's endpoint to point
 * `local start --events-endpoint` at. In AWS, subscribe to the bus with a rule instead (docs/events.md).
 */

interface TailOptions {
  json?: boolean;
  follow: boolean;
  tenant?: string;
  event?: string;
  file?: string;
  state?: string;
}

const out = (line: string) => process.stdout.write(`${line}\n`);

/** One event as a line a person reads: time, who, what moved, why, the provider's id, the event id. */
export const describeEvent = (e: OutcomeEvent): string => {
  const what =
    e.kind === 'fact'
      ? `${e.state} · fact ${e.fact}`
      : `${e.previousState ? `${e.previousState} → ` : ''}${e.state}`;
  const details = [e.reason, e.providerMessageId ? `msg ${e.providerMessageId}` : undefined].filter(Boolean);
  return `${e.time}  ${e.tenant}  ${e.purpose}  ${e.eventId}  ${e.recipientRef}  ${e.channel}  ${what}${details.length ? `  (${details.join(', ')})` : ''}  ${e.id}`;
};

const matches = (e: OutcomeEvent, options: TailOptions) =>
  (!options.tenant || e.tenant === options.tenant) && (!options.event || e.eventId === options.event);

/** The bus file: `--file`, else `eventsLog` of the local stack's state. */
const busFile = (options: TailOptions): string => {
  if (options.file) return resolve(options.file);
  const state = readLocalState(options.state);
  if (!state)
    throw new Error(
      'no local stack (.local/state.json); start one with `sendproof local start`, or pass --file',
    );
  if (!state.eventsLog)
    throw new Error('this local stack has no event bus; start it again with this version');
  return state.eventsLog;
};

/** Reads complete lines appended to `file` since `offset`; returns them and the new offset. */
const readNew = (file: string, offset: number): { lines: string[]; offset: number } => {
  if (!existsSync(file)) return { lines: [], offset };
  const size = statSync(file).size;
  if (size <= offset) return { lines: [], offset: size < offset ? 0 : offset };
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(size - offset);
    readSync(fd, buffer, 0, buffer.length, offset);
    const text = buffer.toString('utf8');
    const end = text.lastIndexOf('\n') + 1;
    return {
      lines: text.slice(0, end).split('\n').filter(Boolean),
      offset: offset + Buffer.byteLength(text.slice(0, end)),
    };
  } finally {
    closeSync(fd);
  }
};

const tail = async (options: TailOptions): Promise<void> => {
  const file = busFile(options);
  let offset = 0;
  const print = (lines: string[]) => {
    for (const line of lines) {
      const event = JSON.parse(line) as OutcomeEvent;
      if (matches(event, options)) out(options.json ? line : describeEvent(event));
    }
  };
  const first = readNew(file, offset);
  print(first.lines);
  offset = first.offset;
  if (!options.follow) return;
  await new Promise<void>((stop) => {
    const timer = setInterval(() => {
      const next = readNew(file, offset);
      offset = next.offset;
      print(next.lines);
    }, 250);
    const end = () => {
      clearInterval(timer);
      stop();
    };
    process.once('SIGINT', end);
    process.once('SIGTERM', end);
  });
};

export const register = (program: Command): void => {
  const events = program
    .command('events')
    .description('Outcome events for the calling service (schema/outcome-event-v1.json)');

  events
    .command('tail')
    .description('Show the outcome events of the local stack as they are published (Ctrl-C stops)')
    .option('--json', 'one event per line, as JSON (the body a caller endpoint receives)')
    .option('--no-follow', 'print the events so far and exit')
    .option('--tenant <tenant>', 'only this tenant')
    .option('--event <eventId>', 'only this business event')
    .option('--file <file>', 'the event bus file (default: eventsLog of .local/state.json)')
    .option('--state <file>', 'local stack state file (default: .local/state.json)')
    .action((options: TailOptions) => tail(options));

  events
    .command('receive')
    .description("A caller's HTTPS endpoint stand-in: prints every event POSTed to it, marks redeliveries")
    .option('--port <port>', 'port on 127.0.0.1 (default: a free one)')
    .option('--json', 'one event per line, as JSON')
    .action(async (options: { port?: string; json?: boolean }) => {
      const receiver = await startEventReceiver({
        ...(options.port ? { port: Number(options.port) } : {}),
        onEvent: ({ event, duplicate }) =>
          out(
            options.json
              ? JSON.stringify({ ...event, duplicate })
              : `${duplicate ? 'DUPLICATE ' : ''}${describeEvent(event)}`,
          ),
      });
      process.stderr.write(`receiving outcome events at ${receiver.url} (Ctrl-C stops)\n`);
      await new Promise<void>((stop) => {
        process.once('SIGINT', () => stop());
        process.once('SIGTERM', () => stop());
      });
      await receiver.stop();
    });
};
