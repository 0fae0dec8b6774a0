import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cell, renderBarChart, renderBenchmarkDoc, renderTable } from '../../../bench/report.js';
import type { BenchResults } from '../../../bench/results.js';

describe('bench report: tables', () => {
  it('pads columns to one width and right-aligns columns whose cells are all numbers', () => {
    // Act
    const table = renderTable(
      ['scenario', 'WCU'],
      [
        ['happy', '3'],
        ['retry_after_429', '8'],
      ],
    );
    // Assess
    expect(table.split('\n')).toEqual([
      '| scenario        | WCU |',
      '|-----------------|----:|',
      '| happy           |   3 |',
      '| retry_after_429 |   8 |',
    ]);
  });

  it('escapes pipes and newlines inside cells so a note cannot break the table', () => {
    // Act
    const table = renderTable(['note'], [['a|b\nc']]);
    // Assess
    expect(table.split('\n')[2]).toBe('| a\\|b c |');
  });

  it('refuses a row whose cell count differs from the header', () => {
    // Act / Assess
    expect(() => renderTable(['a', 'b'], [['1']])).toThrow(RangeError);
  });

  it('prints NaN as n/a and rounds numbers for display', () => {
    // Act / Assess
    expect(cell(Number.NaN)).toBe('n/a');
    expect(cell(0.57328, 3)).toBe('0.573');
    expect(cell(undefined)).toBe('');
  });
});

describe('bench report: chart', () => {
  it('scales bars to the largest value, escapes labels and draws no bar for a missing value', () => {
    // Act
    const svg = renderBarChart('WCU <per> notification', [
      { label: 'happy · ledger', value: 3 },
      { label: 'happy · transact & history', value: 12 },
      { label: 'broken', value: Number.NaN },
    ]);
    // Assess
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('WCU &lt;per&gt; notification');
    expect(svg).toContain('transact &amp; history');
    const widths = [...svg.matchAll(/<rect [^>]*width="(\d+)"/g)].map((m) => Number(m[1]));
    expect(widths).toEqual([90, 360, 0]);
  });
});

describe('bench report: the benchmark document', () => {
  // The committed results of the last full run: the document is rendered from exactly this shape.
  const results = JSON.parse(
    readFileSync(new URL('../../../bench/results/latest.json', import.meta.url), 'utf8'),
  ) as BenchResults;

  it('fills in the run, the machine and the chart instead of printing their expressions', () => {
    const doc = renderBenchmarkDoc(results, 'results/latest.svg');
    expect(doc).toContain(`- Date: ${results.finishedAt}`);
    expect(doc).toContain(`${results.machine.nproc} cores`);
    expect(doc).toContain('![write units per notification](results/latest.svg)');
    // A template literal that lost its braces prints `$name.field` verbatim.
    expect(doc).not.toMatch(/\$[A-Za-z_][\w]*\.[A-Za-z_]/);
  });
});
