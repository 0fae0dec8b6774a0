import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { sqsClient } from '../../lib/aws/clients.js';
import { publishIntents } from '../../lib/publish/publishIntents.js';
import { purposesFor } from '../../lib/wiring.js';
import { output, resolveTarget, type TargetOptions, targetConfig, withTargetOptions } from '../localState.js';

/** A JSON object, a JSON array, or JSON Lines; a line that is not JSON becomes its own validation error. */
export const readIntents = (text: string): unknown[] => {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    try {
      return JSON.parse(trimmed) as unknown[];
    } catch {
      // Not the parser's message: it quotes the text around the error, and intents hold addresses.
      throw new Error('the input starts like a JSON array but is not valid JSON');
    }
  }
  try {
    return [JSON.parse(trimmed)];
  } catch {
    return trimmed
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => {
        try {
          return JSON.parse(line) as unknown;
        } catch {
          return line;
        }
      });
  }
};

export const register = (program: Command): void => {
  withTargetOptions(
    program
      .command('publish <file>')
      .description(
        'validate intents (JSON object, array or JSON Lines; `-` for stdin) and publish them to the queue',
      )
      .option('--json', 'machine-readable output'),
  ).action(async (file: string, options: TargetOptions & { json?: boolean }) => {
    const target = resolveTarget(options);
    if (!target.queueUrl) throw new Error('no queue: pass --queue-url or start the local stack');
    const intents = readIntents(readFileSync(file === '-' ? 0 : file, 'utf8'));
    const results = await publishIntents(
      sqsClient({ region: target.region, ...(target.endpointSqs ? { endpoint: target.endpointSqs } : {}) }),
      target.queueUrl,
      intents,
      {
        // The deployment's purposes, so keys and validation follow the policy in force.
        purposes: purposesFor(targetConfig(target)),
        // And its templates (SENDPROOF_TEMPLATES_DIR, else the repository's): refuse what will not render.
        templates: targetConfig(target).templatesDir,
        onProgress: (done, total) => total > 10 && process.stderr.write(`published ${done}/${total}\r`),
      },
    );
    const failed = results.filter((r) => !r.ok).length;
    output(options.json, results, () =>
      results
        .map((r) =>
          r.ok
            ? `#${r.index} published ${r.messageId}\n    ${r.dedupeKeys.join('\n    ')}`
            : r.stage === 'validation'
              ? `#${r.index} invalid: ${r.issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`
              : `#${r.index} not published (${r.code}): ${r.message}`,
        )
        .join('\n'),
    );
    if (failed > 0) process.exitCode = 1;
  });
};
