import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/**
 * tsx bench/cpuProfileTop.ts <file.cpuprofile> [--top 30]
 *
 * The top self-time functions and packages of a V8 CPU profile (`node --cpu-prof`, or
 * `npm run bench:throughput -- --profile <file>`), as shares of the busy (non-idle) samples.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' } },
});
const file = positionals[0];
if (!file) throw new Error('usage: tsx bench/cpuProfileTop.ts <file.cpuprofile> [--top N]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));

const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

const shortUrl = (url: string) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/.*node_modules\//, '')
    .replace(/^.*?\/(lib|bench|functions)\//, '$1/');
const packageOf = (url: string) => {
  const short = shortUrl(url);
  if (!short) return '(native)';
  if (short.startsWith('node:')) return 'node (http, net, streams)';
  const scoped = short.match(/^(@[^/]+\/[^/]+|[^/]+)/)?.[1] ?? short;
  return /^(lib|bench|functions)$/.test(scoped) ? short.split('/').slice(0, 2).join('/') : scoped;
};

const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
let busy = 0;
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
  if (functionName === '(idle)' || functionName === '(program)') continue;
  busy += us;
  const name = `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  const pkg = functionName === '(garbage collector)' ? '(garbage collector)' : packageOf(url);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
}

const print = (title: string, table: Map<string, number>, top: number) => {
  console.log(title);
  for (const [name, us] of [...table].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(
      `${((100 * us) / busy).toFixed(1).padStart(6)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`,
    );
};
console.log(`busy ${(busy / 1000).toFixed(0)} ms (idle and (program) excluded)`);
print('self time by function', byFunction, Number(values.top));
print('self time by package', byPackage, 20);
