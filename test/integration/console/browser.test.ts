import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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
import { DynamoEvidenceStore } from '../../../lib/evidence/DynamoEvidenceStore.js';
import type { EvidenceFact } from '../../../lib/evidence/facts.js';
import { DynamoLedger } from '../../../lib/ledger/DynamoLedger.js';
import type { DeliveryRecord } from '../../../lib/ledger/port.js';
import type { LocalState } from '../../../lib/local/LocalStack.js';
import { ProviderHealth } from '../../../lib/transports/health.js';
import { seedRow } from '../../support/consoleSeed.js';
import { MARKERS, receiptIntent } from '../../support/fixtures.js';

// End to end in a real browser: Debian's Chromium driven by playwright-core, against the console that
// `sendproof local start` serves on the local stack (DynamoDB Local, fauxqs, the functions worker with
// the archiver). Nothing is mocked; rows are seeded through the Ledger port into the stack's table.
const CLI = new URL('../../../bin/sendproof.mjs', import.meta.url).pathname;
const CHROMIUM = '/usr/bin/chromium';
/**
 * Each view's screenshot goes to a temporary folder (or SENDPROOF_SCREENSHOT_DIR, kept), never into the
 * work tree: a test run leaves git clean. The docs' pictures are regenerated from this test on purpose
 * only: `npm run docs:pictures` runs it with SENDPROOF_DOCS_PICTURES=1, which also writes them to docs/.
 */
const KEEP_SHOTS = process.env.SENDPROOF_SCREENSHOT_DIR;
const SHOTS = KEEP_SHOTS ?? mkdtempSync(join(tmpdir(), 'sendproof-console-shots-'));
const DOCS =
  process.env.SENDPROOF_DOCS_PICTURES === '1'
    ? new URL('../../../docs/', import.meta.url).pathname
    : undefined;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** The known mix (tenant mix-co) every overview panel is checked against. */
const MIX_TENANT = 'mix-co';
const MIX_FACTS: Array<EvidenceFact | undefined> = [
  'delivered',
  'delivered',
  'bounced_permanent',
  'complained',
];
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
let mix: DeliveryRecord[] = [];
let clockRow: DeliveryRecord;
/** When the seeded ses circuit opened, and until when it is open (the stack fails over ses → simulator). */
let circuitOpenedAt = 0;
let circuitOpenUntil = 0;
const run = promisify(execFile);

const stopStack = () =>
  new Promise<void>((resolve) => {
    if (!stack || stack.exitCode !== null) return resolve();
    stack.once('exit', () => resolve());
    stack.kill('SIGTERM');
  });

beforeAll(async () => {
  stack = spawn(
    process.execPath,
    [CLI, 'local', 'start', '--state-dir', stateDir, '--email-providers', 'ses,simulator'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
  // The known mix: 4 accepted (2 delivered, 1 hard bounce, 1 complaint), 3 quarantined, 1 stalled, all
  // password resets by email. Facts through the evidence store's own write.
  const evidence = new DynamoEvidenceStore(
    dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb }),
    state.ledgerTable,
  );
  mix = [];
  for (const [i, fact] of MIX_FACTS.entries()) {
    const row = await seedRow(ledger, systemClock, {
      eventId: `mix-a${i}`,
      state: 'accepted',
      transport: 'rest',
      tenant: MIX_TENANT,
      recipientRef: `member-${i}`,
    });
    if (fact) {
      const written = await evidence.addFact(row, {
        f: fact,
        at: Date.now(),
        by: 'evidence:rest',
        why: `rest:${fact}`,
        id: `rest:sim-mix-a${i}:${fact}`,
        msg: `sim-mix-a${i}`,
      });
      if (written.kind !== 'ok') throw new Error(`seed fact on ${row.pk}: ${written.kind}`);
    }
    mix.push(row);
  }
  // A fast provider: its clock stamps the delivery 5 ms before the ledger stamped the acceptance.
  const fast = await seedRow(ledger, systemClock, {
    eventId: 'b-clock',
    state: 'accepted',
    transport: 'rest',
  });
  const acceptedAt = fast.history.at(-1)!.at;
  const written = await evidence.addFact(fast, {
    f: 'delivered',
    at: acceptedAt - 5,
    by: 'evidence:rest',
    why: 'rest:delivered',
    id: 'rest:sim-b-clock:delivered',
    msg: 'sim-b-clock',
  });
  if (written.kind !== 'ok') throw new Error('seed fact on the fast row');
  clockRow = fast;
  // The ses circuit, opened the way the dispatchers open it: three 5xx answers in one window, written by
  // their own ProviderHealth into the stack's table (open for an hour, so the page says "open until").
  circuitOpenedAt = Date.now();
  const health = new ProviderHealth(
    dynamoDocumentClient({ region: state.region, endpoint: state.dynamodb }),
    state.ledgerTable,
    {
      settings: { failures: 3, windowSeconds: 60, openSeconds: 3600, cacheMs: 0 },
      workerId: 'dispatch:browser-seed',
      now: () => circuitOpenedAt,
    },
  );
  for (let i = 0; i < 3; i += 1)
    await health.observe('ses', { kind: 'ambiguous', reason: 'provider_error_after_send:503' }, false);
  const opened = await health.read('ses');
  if (opened.state !== 'open') throw new Error(`seed: the ses circuit is ${opened.state}, not open`);
  circuitOpenUntil = opened.openUntil!;
  // States the stack's own workers leave alone (the reconciler settles `unknown` rows, the sweep resumes
  // `retry_wait` ones): quarantined rows (each went through unknown) and one stalled row.
  for (const [id, seedState] of [
    ['mix-q0', 'quarantined'],
    ['mix-q1', 'quarantined'],
    ['mix-q2', 'quarantined'],
    ['mix-s0', 'stalled'],
  ] as const)
    mix.push(
      await seedRow(ledger, systemClock, {
        eventId: id,
        state: seedState,
        transport: 'rest',
        tenant: MIX_TENANT,
        recipientRef: `member-${id}`,
      }),
    );
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
  if (!KEEP_SHOTS) rmSync(SHOTS, { recursive: true, force: true });
}, 60_000);

const openConsole = async (url: string, query = ''): Promise<Page> => {
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') failures.push(message.text());
  });
  const target = new URL(url);
  target.search = query;
  await page.goto(target.toString());
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  expect(failures).toEqual([]);
  return page;
};

/** Switches view with the nav and waits until its data has rendered. */
const view = async (page: Page, name: 'overview' | 'attention' | 'find' | 'timeline' | 'audit') => {
  await page.click(`#nav-${name}`);
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector(`#view-${name}:not([hidden])`);
};

const rowSelector = (key: string) => `[data-testid="attention-table"] tr[data-key="${key}"]`;

/**
 * axe-core in the page (evaluate runs outside the page's CSP); serious and critical violations only. On
 * the whole document, or on the elements a selector names.
 */
const axe = async (page: Page, selector?: string) => {
  await page.evaluate(AXE_SOURCE);
  const context = selector ? JSON.stringify(selector) : 'document';
  const result = (await page.evaluate(
    `axe.run(${context}, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`,
  )) as Array<{ id: string; impact: string; nodes: number; targets: string[] }>;
  return result;
};

/** The whole page, or (with a selector) one element of it. */
const shoot = async (page: Page, name: string, selector?: string) => {
  mkdirSync(SHOTS, { recursive: true });
  const picture = selector
    ? await page.locator(selector).screenshot({ path: join(SHOTS, name) })
    : await page.screenshot({ path: join(SHOTS, name), fullPage: true });
  expect(picture.subarray(0, 8).equals(PNG_SIGNATURE), `${name} is a PNG`).toBe(true);
  // The docs get the very picture the test took (npm run docs:pictures).
  if (DOCS) writeFileSync(join(DOCS, name), picture);
};

describe('operator console in Chromium', () => {
  it('resolves three quarantined rows at once with one reason; their timelines and the archive show it', async () => {
    const page = await openConsole(urls.operator, '?view=attention');
    // The token left the address bar as soon as the page read it; the view stayed.
    expect(page.url()).not.toContain('token=');
    expect(new URL(page.url()).searchParams.get('view')).toBe('attention');
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

    await view(page, 'timeline');
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
    // The timeline's key is in the URL: a colleague opening the link sees the same notification.
    expect(new URL(page.url()).searchParams.get('key')).toBe(chosen.at(-1)!.pk);
    // Refs and key hashes only: the page never holds an address or a secret.
    const html = await page.content();
    for (const marker of Object.values(MARKERS)) expect(html).not.toContain(marker);
    await page.close();
  }, 240_000);

  it("every overview panel's numbers match a seeded mix, each figure names its source and window", async () => {
    // Wait for the archive to hold the mix (the stream is seconds behind the ledger).
    const page = await openConsole(urls.viewer, `?tenant=${MIX_TENANT}`);
    const token = new URL(urls.viewer).hash.replace('#token=', '');
    // biome-ignore lint/suspicious/noExplicitAny: the overview's JSON is read loosely here
    let o: any;
    for (let i = 0; i < 120; i++) {
      o = await page.evaluate(
        async ({ token, tenant }) =>
          (
            await fetch(`/api/overview?tenant=${tenant}`, { headers: { authorization: `Bearer ${token}` } })
          ).json(),
        { token, tenant: MIX_TENANT },
      );
      const facts = (o.panels.deliveryFacts.rows ?? []) as Array<Record<string, string>>;
      const archived = (o.panels.latency.percentiles.rows ?? []).reduce(
        (n: number, r: Record<string, string>) => n + Number(r.accepted),
        0,
      );
      const factCount = facts.reduce(
        (n, r) => n + Number(r.delivered) + Number(r.bounced) + Number(r.complained),
        0,
      );
      if (archived === 4 && factCount === 4) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const p = o.panels;
    const byState = Object.fromEntries(
      p.byState.rows.map((r: { state: string; rows: number }) => [r.state, r.rows]),
    );
    // Ledger, now
    expect(p.byState).toMatchObject({ source: 'ledger', window: 'now', total: 8 });
    expect(byState).toEqual({ accepted: 4, quarantined: 3, stalled: 1 });
    // The DLQ is empty
    expect(p.dlq).toMatchObject({ source: 'dead-letter queue (SQS)', window: 'now', depth: 0 });
    // Archive, last 7 days: transitions into each state (every row was claimed and dispatched; the
    // quarantined rows went through unknown, the stalled one through retry_wait)
    expect(p.statesOverTime.source).toBe('archive (DuckDB over the local archive mirror)');
    expect(p.statesOverTime.window.days).toBe(7);
    const entered: Record<string, number> = {};
    for (const r of p.statesOverTime.rows) entered[r.state] = (entered[r.state] ?? 0) + Number(r.transitions);
    expect(entered).toEqual({
      claimed: 8,
      dispatching: 8,
      accepted: 4,
      unknown: 3,
      quarantined: 3,
      retry_wait: 1,
      stalled: 1,
    });
    // Delivery facts: as seeded
    const facts = { delivered: 0, bounced: 0, complained: 0, failed: 0 };
    for (const r of p.deliveryFacts.rows)
      for (const k of Object.keys(facts) as Array<keyof typeof facts>) facts[k] += Number(r[k]);
    expect(facts).toEqual({ delivered: 2, bounced: 1, complained: 1, failed: 0 });
    // Latency: the ledger's accepted rows and the archive's accepted notifications agree
    expect(p.latency.ledgerAccepted.rows).toEqual([{ purpose: 'password-reset', channel: 'email', rows: 4 }]);
    expect(
      p.latency.percentiles.rows.map((r: Record<string, string>) => [
        r.purpose,
        r.channel,
        Number(r.accepted),
      ]),
    ).toEqual([['password-reset', 'email', 4]]);
    const stage = (s: string) =>
      p.latency.distribution.rows
        .filter((r: Record<string, string>) => r.stage === s)
        .reduce((n: number, r: Record<string, string>) => n + Number(r.notifications), 0);
    expect([stage('accepted'), stage('delivered')]).toEqual([4, 2]);
    // Decided by a human: nothing yet; 3 rows wait (quarantined)
    expect(p.human).toMatchObject({ manualDecisions: 0, notificationsDecided: 0, duplicateAcceptances: 0 });
    expect(p.human.manualShare).toMatchObject({ value: 0, decided: 0, waiting: 3, source: 'ledger' });
    // SLOs, as the console's wiring reads them (the SLO read model over the same archive): acceptance
    // decided for all 8 (4 accepted in time; 3 quarantined, 1 stalled), delivery reported for the 4
    // accepted (3 good: 2 delivered, 1 complaint), none accepted twice (as the human panel says).
    expect(p.slo).toMatchObject({
      source: 'archive (DuckDB over the local archive mirror): named query slo-attainment',
      error: null,
    });
    const sloRow = (objectiveName: string) =>
      p.slo.rows.find(
        (r: Record<string, unknown>) =>
          r.purpose === 'password-reset' && r.objectiveName === objectiveName && r.channel === undefined,
      );
    expect(
      ['accepted', 'delivered', 'duplicates'].map((n) => [n, sloRow(n).good, sloRow(n).eligible]),
    ).toEqual([
      ['accepted', 4, 8],
      ['delivered', 3, 4],
      ['duplicates', 4, 4],
    ]);
    expect(sloRow('duplicates').eligible - sloRow('duplicates').good).toBe(p.human.duplicateAcceptances);

    // The page shows the same numbers, and every panel says where its figures come from
    await page.locator('[data-testid="latency"] tbody tr').first().waitFor();
    await expect(
      page.locator('[data-testid="latency"] tbody tr').first().getAttribute('data-agrees'),
    ).resolves.toBe('true');
    const cells = async (testid: string, column: number) =>
      page.locator(`[data-testid="${testid}"] tbody td:nth-child(${column})`).allTextContents();
    const shownStates = await cells('by-state', 1);
    const shownCounts = await cells('by-state', 2);
    expect(Object.fromEntries(shownStates.map((st, i) => [st, Number(shownCounts[i])]))).toEqual(byState);
    // delivered, bounced, complained, failed, total of the one day
    const factCells = await Promise.all([2, 3, 4, 5, 6].map((c) => cells('facts-chart-table', c)));
    expect(factCells.map((c) => c.map(Number))).toEqual([[2], [1], [1], [0], [4]]);
    await expect(cells('latency', 3)).resolves.toEqual(['4']);
    await expect(cells('latency', 4)).resolves.toEqual(['4']);
    for (const panel of ['by-state', 'dlq', 'states-over-time', 'delivery-facts', 'latency', 'human'])
      await expect(page.locator(`[data-testid="${panel}-source"]`).textContent()).resolves.toMatch(
        /^Source: .+ · window: (now|\d{4}-\d\d-\d\d → \d{4}-\d\d-\d\d \(7 days\))/,
      );
    // The charts are drawn (uPlot canvases), and their numbers are tables in the accessibility tree
    await page.locator('[data-chart="states-chart"] canvas').waitFor();
    await expect(page.locator('[data-chart] canvas').count()).resolves.toBeGreaterThanOrEqual(4);
    await expect(
      page.getByRole('table', { name: 'Delivery facts per day: the numbers' }).count(),
    ).resolves.toBe(1);
    // The SLO panel: attainment and budget charts, their numbers as tables, the same figures in its table
    await page.locator('[data-chart="slo-chart"] canvas').waitFor();
    await page.locator('[data-chart="slo-budget-chart"] canvas').waitFor();
    await expect(
      page.getByRole('table', { name: 'Attainment and objective per purpose (%): the numbers' }).count(),
    ).resolves.toBe(1);
    await expect(
      page.getByRole('table', { name: 'Error budget left per purpose (%): the numbers' }).count(),
    ).resolves.toBe(1);
    const sloShown = await page
      .locator('[data-testid="slo"] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    const resetShown = sloShown.filter((cells) => cells[0] === 'password-reset');
    expect(resetShown.map((c) => [c[1], c[2], c[4], c[6]])).toEqual([
      ['all', 'accepted', '50.00 %', '4 / 8'],
      ['all', 'delivered', '75.00 %', '3 / 4'],
      ['all', 'duplicates', '100.00 %', '4 / 4'],
    ]);
    const sloChartRows = await page
      .locator('[data-testid="slo-chart-table"] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(sloChartRows).toContainEqual(['password-reset · accepted', '50', '99']);
    await expect(page.locator('[data-testid="slo-source"]').textContent()).resolves.toMatch(
      /^Source: archive \(DuckDB over the local archive mirror\): named query slo-attainment · window: /,
    );
    await shoot(page, 'console.png');
    await page.close();
  }, 180_000);

  it('cancels a scheduled receipt by its event id; the row is cancelled under the signed-in operator', async () => {
    const page = await openConsole(urls.operator, '?view=audit');
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
    const page = await openConsole(urls.operator, '?view=attention');
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
    await view(page, 'timeline');
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
    // Version 2: every line says whose clock its time is
    expect(bundle.manifest).toMatchObject({ bundleVersion: 2 });
    expect((JSON.parse(timeline) as Array<{ clock: string }>).every((l) => l.clock === 'ledger')).toBe(true);
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, bundleProblems: [] });
    const decoded = bundle.files.map((f) => Buffer.from(f.base64, 'base64').toString('utf8')).join('\n');
    for (const marker of Object.values(MARKERS)) expect(decoded).not.toContain(marker);
    await page.close();
  }, 120_000);

  it('renders a hostile event id as text: no element, no script run', async () => {
    const page = await openConsole(urls.operator, '?view=attention');
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
    const page = await openConsole(urls.viewer, '?view=attention');
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

  it('finds a notification by event id, recipient ref, provider message id or dedupe key; sorted, paged, and the URL reopens it', async () => {
    const page = await openConsole(urls.viewer, '?view=find');
    const find = async (fieldName: string, value: string) => {
      await page.selectOption('#find-field', fieldName);
      await page.fill('#find-value', value);
      // The previous answer's rows go first, so what is read below is this search's render (the page
      // renders after the response arrives: on a loaded machine, not in the same tick).
      await page.evaluate(`document.querySelector('[data-testid="find-table"] tbody')?.replaceChildren()`);
      await Promise.all([
        page.waitForResponse((r) => r.url().includes('/api/search')),
        page.click('#find-submit'),
      ]);
      const rows = page.locator('[data-testid="find-table"] tbody tr');
      await rows.first().waitFor({ timeout: 10_000 });
      return rows.evaluateAll((found) => found.map((r) => r.getAttribute('data-key')));
    };
    const target = mix[0]!;
    expect(await find('eventId', target.eventId)).toEqual([target.pk]);
    expect(await find('recipientRef', target.recipientRef)).toEqual([target.pk]);
    expect(await find('providerMessageId', String(target.providerMessageId))).toEqual([target.pk]);
    expect(await find('dedupeKey', target.pk)).toEqual([target.pk]);
    // Every row of player-73 (the fixture's recipient: 7 rows): sorted by event id, 5 per page
    const params = new URLSearchParams({
      view: 'find',
      'f.field': 'recipientRef',
      'f.value': 'player-73',
      'f.sort': 'eventId',
      'f.dir': 'asc',
      'f.size': '5',
    });
    const shared = await openConsole(urls.viewer, `?${params}`);
    await shared.locator('[data-testid="find-table"] tbody tr').first().waitFor();
    const first = await shared.locator('[data-testid="find-table"] .event-id').allTextContents();
    expect(first.length).toBe(5);
    expect([...first].sort()).toEqual(first);
    await expect(shared.locator('th[aria-sort="ascending"]').textContent()).resolves.toContain('event');
    // Sort descending by clicking the header, then the next page: both land in the URL
    await Promise.all([
      shared.waitForResponse((r) => r.url().includes('/api/search')),
      shared.click('th button[data-sort="eventId"]'),
    ]);
    // The response arrives before the page renders it: wait for the render, not only the answer.
    await shared.locator('th[aria-sort="descending"]').waitFor({ timeout: 10_000 });
    const desc = await shared.locator('[data-testid="find-table"] .event-id').allTextContents();
    expect([...desc].sort().reverse()).toEqual(desc);
    await Promise.all([
      shared.waitForResponse((r) => r.url().includes('/api/search')),
      shared.click('.page-next'),
    ]);
    await shared.locator('.page-of', { hasText: 'page 2 of' }).first().waitFor({ timeout: 10_000 });
    const url = new URL(shared.url());
    // (descending is the search's default direction, so the link leaves it out)
    expect([
      url.searchParams.get('f.sort'),
      url.searchParams.get('f.dir'),
      url.searchParams.get('f.page'),
    ]).toEqual(['eventId', null, '2']);
    const second = await shared.locator('[data-testid="find-table"] .event-id').allTextContents();
    expect(second.length).toBe(2);
    expect(second.some((e) => desc.includes(e))).toBe(false);
    await shared.close();
    await page.close();
  }, 90_000);

  it('shows both clocks in a timeline: a delivery the provider stamped before the ledger stamped the acceptance is said to be', async () => {
    const page = await openConsole(urls.viewer, `?view=timeline&key=${encodeURIComponent(clockRow.pk)}`);
    await page.locator('[data-testid="timeline-clocked"] tbody tr').first().waitFor();
    const rows = page.locator('[data-testid="timeline-clocked"] tbody tr');
    const clocks = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-clock')));
    expect(clocks).toEqual(['ledger', 'ledger', 'ledger', 'provider']);
    const last = await rows.last().textContent();
    expect(last).toContain('fact: delivered');
    expect(last).toContain('5 ms before the ledger recorded accepted (two clocks; recorded after it)');
    await shoot(page, 'console-timeline.png');
    await page.close();
  }, 60_000);

  it('works from the keyboard alone: find a row, open its timeline, decide a quarantined row', async () => {
    const page = await openConsole(urls.operator);
    const focused = () =>
      page.evaluate("document.activeElement?.id || document.activeElement?.textContent || ''");
    const tabTo = async (id: string, limit = 300) => {
      for (let i = 0; i < limit; i++) {
        if ((await page.evaluate("document.activeElement?.id ?? ''")) === id) return;
        await page.keyboard.press('Tab');
      }
      throw new Error(`Tab never reached #${id} (last: ${await focused()})`);
    };
    // The nav: Tab to "Find", Enter; the view's heading takes the focus
    await tabTo('nav-find');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#view-find:not([hidden])');
    expect(await focused()).toBe('find-h');
    await tabTo('find-value');
    await page.keyboard.type(mix[5]!.eventId);
    await page.keyboard.press('Enter');
    await page.locator(`[data-testid="find-table"] tr[data-key="${mix[5]!.pk}"]`).waitFor();
    // Tab into the result and open its timeline with Enter
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate("document.activeElement?.classList.contains('key') ?? false")) === true) break;
    }
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="timeline-key"]').filter({ hasText: mix[5]!.pk }).waitFor();
    // Decide it: nav to the attention list, select the row with Space, reason, Enter
    await tabTo('nav-attention');
    await page.keyboard.press('Enter');
    await page.waitForSelector(rowSelector(mix[5]!.pk));
    await page.locator(`${rowSelector(mix[5]!.pk)} input[type="checkbox"]`).focus();
    await page.keyboard.press('Space');
    await expect(page.locator('#decision-count').textContent()).resolves.toBe('1 selected');
    await tabTo('d-reason');
    await page.keyboard.type('checked with the provider, OPS-78');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('d-submit');
    await page.keyboard.press('Enter');
    await page
      .locator('[data-testid="status"]')
      .filter({ hasText: /^recorded 1 decision/ })
      .waitFor();
    await page.close();
  }, 90_000);

  it("shows the provider circuits in failover order: the open one's state, reason and since when; axe passes on the panel", async () => {
    const page = await openConsole(urls.viewer);
    // Wait for the rendered badge itself (the page renders after the answer arrives), not for the response.
    const ses = page.locator('[data-testid="circuit-email-ses"]');
    const until = new Date(circuitOpenUntil).toISOString().slice(11, 19);
    await ses
      .locator('[data-testid="circuit-state"]')
      .filter({ hasText: `open until ${until} UTC` })
      .waitFor();
    // Assess: the state in words and a symbol, the reason in words with its code, since when
    await expect(ses.getAttribute('data-state')).resolves.toBe('open');
    await expect(ses.locator('[data-testid="circuit-state"]').textContent()).resolves.toBe(
      `✕ open until ${until} UTC`,
    );
    await expect(ses.locator('[data-testid="circuit-reason"]').textContent()).resolves.toBe(
      '3 provider failures in 60 s (5xx answers or requests that never left)',
    );
    await expect(ses.textContent()).resolves.toContain('(failures:3/60s)');
    await expect(ses.locator('[data-testid="circuit-changed"]').textContent()).resolves.toMatch(
      new RegExp(`^Opened \\d+ (s|min) ago \\(${new Date(circuitOpenedAt).toISOString()}\\)\\.$`),
    );
    // Who opened it, in its history
    await ses.locator('summary').click();
    await expect(ses.locator('tbody tr').first().textContent()).resolves.toContain('dispatch:browser-seed');
    // The failover order, the provider that never failed listed closed, the summary line at a glance
    const panel = page.locator('[data-panel="circuits"]');
    await expect(panel.locator('h4').allTextContents()).resolves.toEqual(['email: ses → rest']);
    await expect(
      page.locator('[data-testid="circuit-email-rest"] [data-testid="circuit-state"]').textContent(),
    ).resolves.toBe('✓ closed');
    await expect(page.locator('[data-testid="circuits-summary"]').textContent()).resolves.toBe(
      `✕ 1 provider off: ses (email) open since ${new Date(circuitOpenedAt).toISOString().slice(11, 19)} UTC.`,
    );
    await expect(page.locator('[data-testid="circuits-source"]').textContent()).resolves.toMatch(
      /^Source: ledger: provider health items · window: now · as of /,
    );
    const violations = await axe(page, '[data-panel="circuits"]');
    expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
    await shoot(page, 'console-circuits.png', '[data-panel="circuits"]');
    await page.close();
  }, 90_000);

  it('passes axe-core with no serious or critical violation on every view, and works 375 px wide; screenshots of each', async () => {
    const report: Record<string, Array<{ id: string; impact: string }>> = {};
    const page = await openConsole(urls.operator, `?tenant=${MIX_TENANT}`);
    await page.locator('[data-chart="states-chart"] canvas').waitFor();
    for (const name of ['overview', 'attention', 'find', 'timeline', 'audit'] as const) {
      if (name !== 'overview') await view(page, name);
      if (name === 'find') {
        await page.selectOption('#find-field', 'recipientRef');
        await page.fill('#find-value', 'player-73');
        await Promise.all([
          page.waitForResponse((r) => r.url().includes('/api/search')),
          page.click('#find-submit'),
        ]);
      }
      if (name === 'timeline') {
        await page.fill('#t-key', clockRow.pk);
        await page.click('#t-show');
        await page.locator('[data-testid="timeline-clocked"]').waitFor();
      }
      if (name === 'audit') {
        await page.locator('#q-name').waitFor();
        await page.selectOption('#q-name', 'channel-outcomes-daily');
        const today = new Date().toISOString().slice(0, 10);
        for (const [param, value] of Object.entries({ tenant: MIX_TENANT, day_from: today, day_to: today }))
          await page.fill(`[data-param="${param}"]`, value);
        await page.click('#queries-form button[type="submit"]');
        await page.locator('[data-testid="query-results"] tbody tr').first().waitFor();
      }
      // An absent value is shown as a dash, never as the word null
      expect(await page.locator(`#view-${name}`).textContent()).not.toMatch(/\bnull\b|\bundefined\b/);
      report[name] = await axe(page);
      if (name !== 'overview' && name !== 'timeline') await shoot(page, `console-${name}.png`);
    }
    // Narrow: a phone's width. Nothing overflows the page sideways (wide tables scroll in their box).
    await page.setViewportSize({ width: 375, height: 812 });
    await view(page, 'overview');
    await page.locator('[data-chart="states-chart"] canvas').waitFor();
    await page.waitForTimeout(400); // the charts redraw at the new width (a debounced resize)
    const widths = (await page.evaluate(
      '({ page: document.documentElement.scrollWidth, viewport: window.innerWidth, chart: document.querySelector(\'[data-chart="states-chart"] canvas\')?.getBoundingClientRect().width ?? 0 })',
    )) as { page: number; viewport: number; chart: number };
    report.narrow = await axe(page);
    await shoot(page, 'console-375.png');
    await view(page, 'attention');
    const narrowAttention = (await page.evaluate('document.documentElement.scrollWidth')) as number;
    await page.close();
    const blocking = Object.fromEntries(
      Object.entries(report).map(([k, v]) => [
        k,
        v.filter((x) => x.impact === 'serious' || x.impact === 'critical'),
      ]),
    );
    mkdirSync(SHOTS, { recursive: true });
    writeFileSync(join(SHOTS, 'axe.json'), `${JSON.stringify(report, null, 2)}\n`);
    expect(blocking).toEqual({ overview: [], attention: [], find: [], timeline: [], audit: [], narrow: [] });
    expect(widths.page).toBeLessThanOrEqual(widths.viewport);
    expect(widths.chart).toBeGreaterThan(250);
    expect(widths.chart).toBeLessThanOrEqual(375);
    expect(narrowAttention).toBeLessThanOrEqual(375);
  }, 120_000);
});
