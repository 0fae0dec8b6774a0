import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDbAudit } from '../../../lib/archive/DuckDbAudit.js';
import { startLocalArchive } from '../../../lib/archive/LocalArchive.js';
import type { LocalStreamPoller } from '../../../lib/archive/LocalStreamPoller.js';
import { loadNamedQueries } from '../../../lib/archive/namedQueries.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import { EvidenceRecorder } from '../../../lib/evidence/EvidenceRecorder.js';
import { parseSesEvent } from '../../../lib/evidence/events.js';
import { waitFor } from '../../../lib/local/ports.js';
import {
  type RunningProviderSimulator,
  startProviderSimulator,
} from '../../../lib/simulator/ProviderSimulator.js';
import { createHarness, type Harness, restTransports } from '../../support/dispatchHarness.js';
import { localDynamo } from '../../support/dynamo.js';
import { type Echoed, sesTags, testLabelKeys } from '../../support/evidenceLabels.js';
import { MARKERS, resetIntent } from '../../support/fixtures.js';
import { ManualClock } from '../../support/manualClock.js';
import { startLocalS3 } from './localS3.js';

// Real servers: DynamoDB Local (its stream), the provider simulator over HTTP, fauxqs as S3, DuckDB.
describe('post-acceptance facts in the archive', () => {
  const bucket = 'sendproof-facts-e2e';
  let s3: Awaited<ReturnType<typeof startLocalS3>>;
  let sim: RunningProviderSimulator;
  let h: Harness;
  let poller: LocalStreamPoller | undefined;
  let mirrorDir: string;
  const clock = new ManualClock(Date.parse('2026-11-30T10:00:00Z'));

  beforeAll(async () => {
    s3 = await startLocalS3('unused-bootstrap-bucket');
    sim = await startProviderSimulator();
    h = await createHarness(sim, clock);
    mirrorDir = await mkdtemp(join(tmpdir(), 'sendproof-facts-e2e-'));
  });
  afterAll(async () => {
    await poller?.stop();
    await s3?.stop();
    await sim?.stop();
    await rm(mirrorDir, { recursive: true, force: true });
  });

  it('a delivered and a bounced email: explain-notification shows both timelines, accepted-not-delivered lists only the bounce', async () => {
    // Prepare
    const { endpoint } = localDynamo();
    poller = await startLocalArchive({
      region: 'us-east-1',
      dynamoEndpoint: endpoint,
      s3Endpoint: s3.endpoint,
      ledgerTable: h.table,
      bucket,
      mirrorDir,
      logger: new Logger({ serviceName: 'sendproof-test', logLevel: 'SILENT' }),
      intervalMs: 100,
    });
    const recorder = new EvidenceRecorder({
      labels: testLabelKeys,
      ledger: h.ledger,
      store: new DynamoEvidenceStore(localDynamo().doc, h.table),
      suppressions: h.suppressions,
      purposes: new PurposeRegistry(),
      clock,
    });
    const send = async (eventId: string, ref: string) => {
      const intent = resetIntent({ eventId, recipient: { ref, email: MARKERS.email } }, clock.now());
      const out = await h.dispatcher({ transports: restTransports(sim) }).handle(JSON.stringify(intent), {
        messageId: eventId,
      });
      return (await h.ledger.get(out.channels[0]!.dedupeKey))!;
    };
    const event = (key: Echoed, msg: string, eventType: string, extra: Record<string, unknown>) => {
      const parsed = parseSesEvent({
        eventType,
        mail: { messageId: msg, tags: sesTags(key) },
        ...extra,
      });
      if (parsed.kind !== 'evidence') throw new Error('not evidence');
      return parsed.evidence;
    };
    // Act
    const delivered = await send('facts-delivered', 'user-d');
    const bounced = await send('facts-bounced', 'user-b');
    await recorder.record(
      event(delivered, delivered.providerMessageId!, 'Delivery', {
        delivery: { timestamp: '2026-11-30T10:00:04.000Z' },
      }),
    );
    await recorder.record(
      event(bounced, bounced.providerMessageId!, 'Bounce', {
        bounce: { bounceType: 'Permanent', bounceSubType: 'General', timestamp: '2026-11-30T10:00:06.000Z' },
      }),
    );
    // 2 × (dispatching, accepted) + 2 facts, in batched objects: wait until the archive holds all six.
    const queries = new Map(loadNamedQueries().map((q) => [q.name, q]));
    const scope = [delivered.tenant, '2000-01-01', '2100-01-01'];
    const archivedLines = async () => {
      const probe = await DuckDbAudit.open(mirrorDir);
      try {
        const both = await Promise.all(
          ['facts-delivered', 'facts-bounced'].map((id) =>
            probe.runNamed(queries.get('explain-notification')!, [...scope, id]),
          ),
        );
        return both.reduce((n, r) => n + r.rows.length, 0);
      } catch {
        return 0;
      } finally {
        probe.close();
      }
    };
    await waitFor(async () => (await archivedLines()) >= 6, 20_000, 'six archived lines');
    // Assess
    const audit = await DuckDbAudit.open(mirrorDir);
    try {
      const timeline = async (eventId: string) =>
        (await audit.runNamed(queries.get('explain-notification')!, [...scope, eventId])).rows.map(
          (r) => `${r.from_state ?? '∅'}→${r.to_state} ${r.actor}${r.reason ? ` ${r.reason}` : ''}`,
        );
      expect(await timeline('facts-delivered')).toEqual([
        '∅→dispatching dispatch:test gates_passed',
        'dispatching→accepted dispatch:test provider_accepted',
        'accepted→delivery:delivered evidence:ses ses:Delivery',
      ]);
      expect(await timeline('facts-bounced')).toEqual([
        '∅→dispatching dispatch:test gates_passed',
        'dispatching→accepted dispatch:test provider_accepted',
        'accepted→delivery:bounced_permanent evidence:ses ses:Bounce:Permanent/General',
      ]);
      const late = await audit.runNamed(queries.get('accepted-not-delivered')!, [
        ...scope,
        String(Date.parse('2026-11-30T11:00:00Z')),
      ]);
      expect(late.rows).toEqual([
        expect.objectContaining({
          dedupe_key: bounced.pk,
          latest_fact: 'delivery:bounced_permanent',
          transport_message_id: bounced.providerMessageId,
        }),
      ]);
    } finally {
      audit.close();
    }
  });
});
