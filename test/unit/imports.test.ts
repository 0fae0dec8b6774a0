import { readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../lib/packageRoot.js';
import { sourceFiles } from '../support/sourceFiles.js';

/** Every relative import (and re-export) of every .ts file under lib/, resolved to a path under lib/. */
const importGraph = (): Map<string, string[]> => {
  const root = PACKAGE_ROOT;
  const files = sourceFiles('lib').map((file) => join(root, file));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const source = readFileSync(file, 'utf8');
    const targets = [...source.matchAll(/(?:import|export)[^'";]*?from\s+'(\.[^']+)'/g)].map((m) =>
      relative(root, normalize(join(dirname(file), m[1]!.replace(/\.js$/, '.ts')))),
    );
    graph.set(relative(root, file), targets);
  }
  return graph;
};

const cyclesOf = (graph: Map<string, string[]>): string[] => {
  const state = new Map<string, 'open' | 'closed'>();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (state.get(target) === 'open')
        cycles.push([...stack.slice(stack.indexOf(target)), target].join(' → '));
      else if (!state.has(target)) visit(target);
    }
    stack.pop();
    state.set(file, 'closed');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return cycles;
};

describe('the import graph of lib/', () => {
  const graph = importGraph();

  it('has no import cycle between files (types included)', () => {
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('lib/evidence never imports lib/reconcile (the reconciler depends on evidence, not the reverse)', () => {
    const offending = [...graph].filter(
      ([file, targets]) =>
        file.startsWith('lib/evidence/') && targets.some((t) => t.startsWith('lib/reconcile/')),
    );
    expect(offending.map(([file]) => file)).toEqual([]);
  });

  it('lib/ never imports the test and benchmark harness (harness/, bench/, test/): what ships stands alone', () => {
    const offending = [...graph].filter(([, targets]) =>
      targets.some((t) => /^(harness|bench|test)\//.test(t)),
    );
    expect(offending.map(([file]) => file)).toEqual([]);
  });

  it('lib/dispatch keeps no file over 300 lines (one phase per module)', () => {
    const long = [...graph.keys()]
      .filter((file) => file.startsWith('lib/dispatch/'))
      .map((file) => ({ file, lines: readFileSync(join(PACKAGE_ROOT, file), 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > 300);
    expect(long).toEqual([]);
  });
});
