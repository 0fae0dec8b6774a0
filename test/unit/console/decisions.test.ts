import { describe, expect, it } from 'vitest';
import { SendproofError } from '../../../lib/domain/errors.js';
import { MemorySuppressionList } from '../../../lib/ledger/MemorySuppressionList.js';
import { call, operator, viewer, world } from '../../support/consoleWorld.js';

// lib/console/decisions.ts on the in-memory ledger: the operator's writes.
describe('operator writes (decisions.ts)', () => {
  it('records one decision for several rows under the token, refuses viewers, and rate-limits per principal', async () => {
    const { deps, rows, log } = await world();
    const keys = rows.slice(0, 3).map((r) => r.pk);
    const body = { keys, outcome: 'rejected', reason: 'provider says bounced, OPS-9' };
    expect((await call(deps, viewer, 'POST', '/api/decisions', { body })).status).toBe(403);
    const done = await call(deps, operator, 'POST', '/api/decisions', { body });
    expect(done.body).toMatchObject({ decidedBy: 'operator:ana', recorded: 3, refused: 0 });
    expect((await deps.ledger.get(keys[0]!))?.history.at(-1)?.by).toBe('operator:ana');
    expect(
      (await call(deps, operator, 'POST', '/api/decisions', { body: { ...body, operator: 'mallory' } }))
        .status,
    ).toBe(400);
    const limited = { ...deps, decisionRowsPerMinute: 2 };
    const handlerDeps = limited;
    expect(
      (
        await call(handlerDeps, operator, 'POST', '/api/decisions', {
          body: { ...body, keys: rows.slice(3, 6).map((r) => r.pk) },
        })
      ).status,
    ).toBe(429);
    expect(log.entries.filter((e) => e.kind === 'denied').map((e) => e.status)).toEqual([403, 429]);
  });
});

describe('operator writes: suppress and cancel (decisions.ts)', () => {
  it('adds a suppression by opaque ref under the principal, refuses an address, a viewer, and an unconfigured list', async () => {
    const { deps, log } = await world();
    const suppressionList = new MemorySuppressionList();
    const body = {
      tenant: 'acme-games',
      recipientRef: 'player-9',
      channel: 'email',
      reason: 'asked by phone, OPS-3',
    };
    expect((await call(deps, operator, 'POST', '/api/suppressions', { body })).status).toBe(501);
    const withList = { ...deps, suppressionList };
    expect((await call(withList, viewer, 'POST', '/api/suppressions', { body })).status).toBe(403);
    expect(
      (
        await call(withList, operator, 'POST', '/api/suppressions', {
          body: { ...body, recipientRef: 'ana@example.com' },
        })
      ).status,
    ).toBe(400);
    expect((await call(withList, operator, 'POST', '/api/suppressions', { body })).body).toEqual({
      suppressed: { tenant: 'acme-games', recipientRef: 'player-9', channel: 'email' },
      by: 'operator:ana',
    });
    await expect(suppressionList.isSuppressed('acme-games', 'player-9', 'email')).resolves.toMatchObject({
      suppressed: true,
    });
    expect(log.entries.filter((e) => e.kind === 'decision').map((e) => e.outcome)).toEqual(['suppress']);
  });

  it('cancels by business identity only when configured, and never takes the operator from the body', async () => {
    const { deps } = await world();
    const body = { tenant: 'acme-games', eventId: 'q01', reason: 'payment refunded, RF-1' };
    expect((await call(deps, operator, 'POST', '/api/cancel', { body })).status).toBe(501);
    const seen: unknown[] = [];
    const cancel: NonNullable<typeof deps.cancel> = async (request) => {
      seen.push(request);
      throw new SendproofError('permanent', 'nothing_to_cancel', 'no cancellable row');
    };
    expect(
      (
        await call({ ...deps, cancel }, operator, 'POST', '/api/cancel', {
          body: { ...body, operator: 'mallory' },
        })
      ).status,
    ).toBe(400);
    expect((await call({ ...deps, cancel }, operator, 'POST', '/api/cancel', { body })).body).toMatchObject({
      error: 'nothing_to_cancel',
    });
    expect(seen).toEqual([{ ...body, operator: 'ana', waitMs: 5_000 }]);
  });
});
