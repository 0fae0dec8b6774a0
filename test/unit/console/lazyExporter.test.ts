import { describe, expect, it } from 'vitest';
import type { BundleExporter } from '../../../lib/console/deps.js';
import { lazyExporter } from '../../../lib/console/lazyExporter.js';

const SCOPE = { tenant: 'acme', from: '2026-12-01', to: '2026-12-02' };

describe('lazyExporter (the console Lambda builds its S3/KMS exporter on the first export)', () => {
  it('builds nothing until an export, then builds once and passes every export through', async () => {
    const built: number[] = [];
    const calls: Array<[string, typeof SCOPE]> = [];
    const inner: BundleExporter = async (subject, scope) => {
      calls.push([subject, scope]);
      return { subject } as unknown as Awaited<ReturnType<BundleExporter>>;
    };
    const exporter = lazyExporter(async () => {
      built.push(1);
      return inner;
    });
    expect(built).toEqual([]);
    await exporter('key-1', SCOPE);
    await exporter('key-2', SCOPE);
    expect(built).toHaveLength(1);
    expect(calls).toEqual([
      ['key-1', SCOPE],
      ['key-2', SCOPE],
    ]);
  });

  it('does not keep a failed build: the export fails, the next one builds again', async () => {
    let attempts = 0;
    const exporter = lazyExporter(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('chunk failed to load');
      return async (subject) => ({ subject }) as unknown as Awaited<ReturnType<BundleExporter>>;
    });
    await expect(exporter('key-1', SCOPE)).rejects.toThrow('chunk failed to load');
    await expect(exporter('key-1', SCOPE)).resolves.toEqual({ subject: 'key-1' });
    expect(attempts).toBe(2);
  });
});
