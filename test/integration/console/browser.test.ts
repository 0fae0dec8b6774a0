import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDocumentClient } from '../../../lib/aws/clients.js';
import { buildClaimRecord } from '../../../lib/dispatch/claimRecord.js';
import { systemClock } from '../../../lib/domain/clock.js';
import { parseIntent } from '../../../lib/domain/intent.js';
import { PurposeRegistry } from '../../../lib/domain/purposes.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import type { LocalState } from '../../../lib/local/LocalStack.js';
import { seedRow } from '../../support/consoleSeed.js';
import { MARKERS, receiptIntent } from '../../support/fixtures.js';

// End to end in a real browser: Debian's Chromium driven by playwright-core, against the console that
// `sendproof local start` serves on the local stack (DynamoDB Local, fauxqs, the functions worker with
// the archiver). Nothing is mocked; rows are seeded through the Ledger port into the stack's table.
const CLI = new URL('../../../bin/sendproof.mjs', import.meta.url).pathname;
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = new URL('../../../test-artifacts/console/', import.meta.url).pathname;
const XSS_PROBE = '<img src=x onerror=window.__xss=1>';
const stateDir = mkdtempSync(join(tmpdir(), 'sendproof-console-'));
const userDataDir = mkdtempSync(join(tmpdir(), 'sendproof-chromium-'));
let stack: ChildProcess;
let output = '';
let state: LocalState;
let urls: { operator: string; viewer: string };
let context: BrowserContext;
let quarantined: DeliveryRecord[] = [];
let hostile: DeliveryRecord;
let scheduled: DeliveryRecord;
let ledgerForTest: DynamoLedger;
let stalled: DeliveryRecord;
const run = promisify(execFile);

const stopStack = () =>
  new Promise<void>((resolve) => {
    if (!stack || stack.exitCode !== null) return resolve();
    stack.once('exit', () => resolve());
    stack.kill('SIGTERM');
  });

beforeAll(async () => {
  stack = spawn(process.execPath, [CLI, 'local', 'start', '--state-dir', stateDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stack.stdout?.on('data', (d) => {
    output += String(d);
  });
  stack.stderr?.on('data', (d) => {
    output += String(d);
  });
  const deadline = Date.now() + 120_000;
  const printed = /operator: (http:\/\/127\.0\.0\.1:\d+\/#token=\S+)\n\s+viewer:\s+(\S+)/;
  for (;;) {
    if (printed.test(output)) break;
    if (Date.now() > deadline || stack.exitCode !== null)
      throw new Error(`local stack did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const match = printed.exec(output)!;
  urls = { operator: match[1]!, viewer: match[2]! };
  state = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')) as LocalState;
  const ledger = new DynamoLedger(
    dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb }),
    state.ledgerTable,
  );
  quarantined = [];
  for (const id of ['b-q1', 'b-q2', 'b-q3', 'b-q4'])
    quarantined.push(
      await seedRow(ledger, systemClock, { eventId: id, state: 'quarantined', transport: 'ses' }),
    );
  hostile = await seedRow(ledger, systemClock, {
    eventId: 'b-xss',
    state: 'quarantined',
    transport: 'ses',
    eventIdOverride: XSS_PROBE,
  });
  // A receipt the ledger holds until its sendAt, to be refunded from the page.
  const receipt = parseIntent(
    receiptIntent({
      eventId: 'b-refund',
      recipient: { ref: 'player-31', email: 'p31@example.com' },
      sendAt: new Date(Date.now() + 3_600_000).toISOString(),
    }),
    { purposes: new PurposeRegistry(), clock: systemClock },
  );
  if (!receipt.ok) throw receipt.error;
  const claimed = await ledger.claim(
    buildClaimRecord({
      valid: receipt.value,
      channel: 'email',
      contentHash: 'h:b-refund',
      templateOwner: 'application',
      workerId: 'dispatch:seed',
      now: Date.now(),
      leaseMs: 60_000,
      initial: { state: 'scheduled', why: 'scheduled_for:later', dueAt: Date.now() + 3_600_000 },
    }),
  );
  if (claimed.kind !== 'claimed') throw new Error('seed conflict on the scheduled receipt');
  scheduled = claimed.record;
  ledgerForTest = ledger;
  // A row as the sweep leaves it when nothing can resume it: the stalled list shows it.
  stalled = await seedRow(ledger, systemClock, { eventId: 'b-stalled', state: 'stalled', transport: 'ses' });
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1400, height: 1000 },
    acceptDownloads: true,
  });
  // Generous waits: the machine is shared, and each step waits for a condition, never for a fixed time.
  context.setDefaultTimeout(60_000);
}, 180_000);

afterAll(async () => {
  await context?.close();
  await stopStack();
  rmSync(userDataDir, { recursive: true, force: true });
  rmSync(stateDir, { recursive: true, force: true });
}, 60_000);

const openConsole = async (url: string): Promise<Page> => {
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') failures.push(message.text());
  });
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  expect(failures).toEqual([]);
  return page;
};

const rowSelector = (key: string) => `[data-testid="attention-table"] tr[data-key="${key}"]`;

describe('operator console in Chromium', () => {
  it('resolves three quarantined rows at once with one reason; their timelines and the archive show it', async () => {
    const page = await openConsole(urls.operator);
    // The token left the address bar as soon as the page read it.
    expect(page.url()).not.toContain('token=');
    await expect(page.locator('[data-testid="whoami"]').textContent()).resolves.toBe(
      'operator: local-operator',
    );
    for (const row of quarantined) await page.waitForSelector(rowSelector(row.pk));

    const chosen = quarantined.slice(0, 3);
    for (const row of chosen) await page.locator(`${rowSelector(row.pk)} input[type="checkbox"]`).check();
    await expect(page.locator('#decision-count').textContent()).resolves.toBe('3 selected');
    await page.selectOption('#d-outcome', 'accepted');
    await page.fill('#d-reason', 'provider console shows delivered, ticket OPS-77');
    await page.click('#d-submit');
    // Locators, not waitForFunction: the page's CSP forbids eval, which a string predicate needs.
    await page
      .locator('[data-testid="status"]')
      .filter({ hasText: /^recorded/ })
      .waitFor();
    await expect(page.locator('[data-testid="status"]').textContent()).resolves.toBe(
      'recorded 3 decision(s) as operator:local-operator',
    );
    // Decided rows leave the quarantined list; the fourth stays.
    await page.waitForSelector(rowSelector(quarantined[3]!.pk));
    for (const row of chosen) await expect(page.locator(rowSelector(row.pk)).count()).resolves.toBe(0);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'operator-after-decision.png'), fullPage: true });
    expect(existsSync(join(ARTIFACTS, 'operator-after-decision.png'))).toBe(true);

    for (const row of chosen) {
      // The archive follows the ledger through the stream; reopen the timeline until it has the decision.
      const archived = await (async () => {
        for (let i = 0; i < 40; i++) {
          await page.fill('#t-key', row.pk);
          // Wait for this click's own answer: the one on screen may be from the previous round.
          await Promise.all([
            page.waitForResponse(
              (r) => r.url().includes('/api/timeline') && r.url().includes(encodeURIComponent(row.pk)),
            ),
            page.click('#t-show'),
          ]);
          await page.locator('[data-testid="timeline-key"]').filter({ hasText: row.pk }).waitFor();
          const archive = await page.locator('[data-testid="timeline-archive"] tbody tr').allTextContents();
          if (archive.some((r) => r.includes('resolved_accepted') && r.includes('operator:local-operator')))
            return archive;
          await new Promise((r) => setTimeout(r, 250));
        }
        return [];
      })();
      const history = await page.locator('[data-testid="timeline-history"] tbody tr').allTextContents();
      expect(history.at(-1)).toContain('resolved_accepted');
      expect(history.at(-1)).toContain('operator:local-operator');
      expect(history.at(-1)).toContain('ticket OPS-77');
      expect(archived.at(-1)).toContain('quarantined');
      expect(archived.at(-1)).toContain('resolved_accepted');
    }
    await page.screenshot({ path: join(ARTIFACTS, 'operator-timeline.png'), fullPage: true });
    // Refs and key hashes only: the page never holds an address or a secret.
    const html = await page.content();
    for (const marker of Object.values(MARKERS)) expect(html).not.toContain(marker);
    await page.close();
  }, 240_000);

  it('cancels a scheduled receipt by its event id; the row is cancelled under the signed-in operator', async () => {
    const page = await openConsole(urls.operator);
    await page.fill('#c-tenant', 'acme-games');
    await page.fill('#c-event', 'b-refund');
    await page.fill('#c-reason', 'payment refunded, RF-77');
    await page.click('#c-submit');
    await page.waitForSelector('[data-testid="cancel-result"] td');
    await expect(page.locator('[data-testid="status"]').textContent()).resolves.toBe(
      'cancel committed for b-refund by operator:local-operator',
    );
    await expect(page.locator('[data-testid="cancel-result"] tbody').textContent()).resolves.toContain(
      'cancelled',
    );
    const row = await ledgerForTest.get(scheduled.pk, true);
    expect(row?.state).toBe('cancelled');
    expect(row?.history.at(-1)?.by).toBe('operator:local-operator');
    await page.close();
  }, 60_000);

  it("lists the sweep's stalled rows, and downloads a decided row's export bundle from its timeline that verifies offline", async () => {
    const page = await openConsole(urls.operator);
    // The stalled list is the rows in state `stalled`, with the sweep's reason.
    await page.selectOption('#f-list', 'stalled');
    await page.click('#f-apply');
    await page.waitForSelector(rowSelector(stalled.pk));
    await expect(page.locator(rowSelector(stalled.pk)).textContent()).resolves.toContain('nothing_sealed');
    for (const row of quarantined.slice(0, 3))
      await expect(page.locator(rowSelector(row.pk)).count()).resolves.toBe(0);

    // Sign what the archive holds so far (the hourly maintenance does this in AWS), then export.
    const decided = quarantined[0]!;
    await run(process.execPath, [CLI, 'audit', 'digest', '--archive-dir', state.archiveDir], {
      timeout: 60_000,
    });
    await page.fill('#t-key', decided.pk);
    await page.click('#t-show');
    await page.locator('[data-testid="timeline-key"]').filter({ hasText: decided.pk }).waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('[data-testid="timeline-export"]'),
    ]);
    const file = join(stateDir, 'bundle.json');
    await download.saveAs(file);
    const bundle = JSON.parse(readFileSync(file, 'utf8')) as {
      manifest: { subject: string; transitions: number; digests: unknown[] };
      files: Array<{ path: string; base64: string }>;
    };
    const timeline = Buffer.from(
      bundle.files.find((f) => f.path === 'timeline.json')!.base64,
      'base64',
    ).toString('utf8');
    const { stdout } = await run(process.execPath, [CLI, 'audit', 'verify', '--bundle', file, '--json'], {
      timeout: 60_000,
    });
    // Assess
    expect(download.suggestedFilename()).toBe(`sendproof-bundle-${decided.idempotencyKey.slice(0, 16)}.json`);
    expect(bundle.manifest.subject).toBe(decided.pk);
    expect(bundle.manifest.digests.length).toBeGreaterThan(0);
    expect(timeline).toContain('resolved_accepted');
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, bundleProblems: [] });
    const decoded = bundle.files.map((f) => Buffer.from(f.base64, 'base64').toString('utf8')).join('\n');
    for (const marker of Object.values(MARKERS)) expect(decoded).not.toContain(marker);
    await page.close();
  }, 120_000);

  it('renders a hostile event id as text: no element, no script run', async () => {
    const page = await openConsole(urls.operator);
    const cell = page.locator(`${rowSelector(hostile.pk)} .event-id`);
    await expect(cell.textContent()).resolves.toBe(XSS_PROBE);
    await expect(page.locator('[data-testid="attention-table"] img').count()).resolves.toBe(0);
    await page.locator(`${rowSelector(hostile.pk)} button.key`).click();
    await page.waitForSelector('[data-testid="timeline-row"]');
    await expect(page.locator('[data-testid="timeline-row"] img').count()).resolves.toBe(0);
    await expect(page.evaluate('window.__xss')).resolves.toBeUndefined();
    await page.close();
  }, 60_000);

  it('a viewer sees no decision controls and gets 403 on every decision, each denial audited', async () => {
    const page = await openConsole(urls.viewer);
    await expect(page.locator('[data-testid="whoami"]').textContent()).resolves.toBe('viewer: local-viewer');
    await page.waitForSelector(rowSelector(quarantined[3]!.pk));
    await expect(page.locator('#d-submit').count()).resolves.toBe(0);
    await expect(page.locator('#s-add').count()).resolves.toBe(0);
    await expect(page.locator('#c-submit').count()).resolves.toBe(0);
    await expect(
      page.locator('[data-testid="attention-table"] input[type="checkbox"]').count(),
    ).resolves.toBe(0);
    const viewerToken = new URL(urls.viewer).hash.replace('#token=', '');
    const statuses = await page.evaluate(
      async ({ token, key }) => {
        const out: number[] = [];
        const post = async (path: string, body: unknown) =>
          (
            await fetch(path, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify(body),
            })
          ).status;
        for (const outcome of ['accepted', 'rejected', 'resend'])
          out.push(await post('/api/decisions', { keys: [key], outcome, reason: 'viewer attempt' }));
        out.push(
          await post('/api/suppressions', {
            tenant: 'acme-games',
            recipientRef: 'player-73',
            channel: 'email',
            reason: 'viewer attempt',
          }),
        );
        out.push(
          await post('/api/cancel', { tenant: 'acme-games', eventId: 'b-q4', reason: 'viewer attempt' }),
        );
        return out;
      },
      { token: viewerToken, key: quarantined[3]!.pk },
    );
    expect(statuses).toEqual([403, 403, 403, 403, 403]);
    const audit = readFileSync(join(stateDir, 'console-audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string; principal: string; status: number });
    expect(
      audit.filter((e) => e.kind === 'denied' && e.principal === 'viewer:local-viewer' && e.status === 403),
    ).toHaveLength(5);
    // Three row decisions and one cancel.
    expect(
      audit.filter((e) => e.kind === 'decision' && e.principal === 'operator:local-operator'),
    ).toHaveLength(4);
    await page.close();
  }, 60_000);
});
