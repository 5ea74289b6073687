// Browser tests for the hookbox dashboard in Debian's Chromium, driven by playwright-core.
//
// This script runs hookbox itself (the binary in HOOKBOX_BIN, the site in LEPTOS_SITE_ROOT) on a
// fresh SQLite file, seeds deliveries with `hookbox send`, and restarts it once with a corrected
// config so a failed delivery can be replayed "after fixing its cause".
// Screenshots of each page at 1280 px and 390 px go to end2end/screenshots/ (ignored by git).
//
// Each file in end2end/journeys/ is one user's journey: it declares its own sources (`sources(fixed)`)
// and registers its tests with `ctx.test`; they run after the tests here, in file-name order, on
// the same hookbox. `ctx.fix(name)` restarts hookbox with that journey's sources in their fixed form.
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, writeFileSync, openSync, readdirSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import assert from 'node:assert/strict';

const bin = process.env.HOOKBOX_BIN;
assert.ok(bin, 'HOOKBOX_BIN names the hookbox binary');
const shots = new URL('./screenshots/', import.meta.url).pathname;
mkdirSync(shots, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), 'hookbox-e2e-'));
const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});
const base = `http://127.0.0.1:${port}`;
const ADMIN_PASSWORD = 'e2e-admin-password';
const VIEWER_PASSWORD = 'e2e-viewer-password';

// The operator's application: records each forwarded request; answers 500 while it is down.
const application = { down: true, got: [] };
const appPort = await new Promise((resolve) => {
  const s = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      application.got.push({ id: req.headers['webhook-id'], body });
      res.statusCode = application.down ? 500 : 200;
      res.end(application.down ? 'down for maintenance' : 'ok');
    });
  }).listen(0, '127.0.0.1', () => resolve(s.address().port));
});

// The journeys (end2end/journeys/*.mjs), and those whose sources are in their fixed form.
const journeyDir = new URL('./journeys/', import.meta.url).pathname;
const journeys = [];
for (const file of readdirSync(journeyDir).filter((f) => f.endsWith('.mjs')).sort()) {
  journeys.push({ name: file.replace(/\.mjs$/, ''), ...(await import(journeyDir + file)) });
}
const fixed = new Set();

// "legacy" maps its snapshot to the wrong field at first; the fix maps it to /data. "shop"
// forwards to the application, which is down at first: its deliveries die after two attempts.
const config = (snapshotField) => `
[[destinations]]
name = "orders-app"
url = "http://127.0.0.1:${appPort}/hookbox"
secret_env = "ORDERS_APP_SECRET"
timeout_secs = 5
retry_schedule_secs = [1]

[[sources]]
name = "demo"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]
forward = ["orders-app"]

[[sources]]
name = "legacy"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]
snapshot = "${snapshotField}"
${journeys.map((j) => (j.sources ? j.sources(fixed.has(j.name)) : '')).join('\n')}
`;
const env = {
  ...process.env,
  DATABASE_URL: `sqlite://${join(dir, 'hookbox.db')}?mode=rwc`,
  HOOKBOX_CONFIG: join(dir, 'hookbox.toml'),
  DEMO_SECRET: 'e2e-secret',
  ORDERS_APP_SECRET: 'whsec_' + Buffer.from('e2e destination secret, 32 bytes').toString('base64'),
  HOOKBOX_ADMIN_PASSWORD: ADMIN_PASSWORD,
  LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
};

let server;
let currentSnapshotField;
async function startServer(snapshotField) {
  currentSnapshotField = snapshotField;
  writeFileSync(env.HOOKBOX_CONFIG, config(snapshotField));
  const log = openSync(join(dir, 'hookbox.log'), 'a');
  server = spawn(bin, ['serve'], { env, stdio: ['ignore', log, log] });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try { if ((await fetch(base + '/healthz')).ok) return; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`hookbox did not start; see ${join(dir, 'hookbox.log')}`);
}
async function stopServer() {
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  await exited;
}
function send(source, body) {
  return execFileSync(bin, ['send', source, '--url', base], { input: JSON.stringify(body), env, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
}
function sendExpectingFailure(source, body) {
  try { send(source, body); } catch (e) { return e.stdout.toString(); }
  throw new Error('the delivery should have been refused');
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
let browser;

async function signIn(page, name, password, next = '/') {
  await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel('User name').fill(name);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('who').waitFor();
}
async function hydrated(page) {
  await page.waitForFunction(() => document.querySelector('[data-hydrated="true"]'), null, { timeout: 20_000 });
}

test('signed out, a page redirects to the sign-in page', async (page) => {
  await page.goto(base + '/events?status=failed');
  assert.match(page.url(), /\/login\?next=%2Fevents%3Fstatus%3Dfailed$/);
  await page.getByRole('heading', { name: 'Sign in to hookbox' }).waitFor();
  await page.screenshot({ path: `${shots}login-desktop.png`, fullPage: true });
});

test('a viewer filters failed events, follows one to its object and sees the stale revision, without replay', async (page) => {
  await signIn(page, 'vera', VIEWER_PASSWORD, '/events');
  await hydrated(page);
  await page.getByLabel('Status').selectOption('failed');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/status=failed/);
  const row = page.getByTestId('event-row').filter({ hasText: 'e-1-again' });
  await row.getByRole('link', { name: 'e-1-again' }).click();
  await page.getByTestId('error-message').waitFor();
  assert.match(await page.getByTestId('error-message').innerText(), /already held by event e-1/);
  assert.equal(await page.getByTestId('dry-run').count(), 0, 'viewers see no replay control');
  await page.getByTestId('object-link').click();
  await page.getByTestId('revisions').waitFor();
  const stale = page.locator('[data-testid="revision-row"][data-revision="2"]');
  assert.equal(await stale.getByTestId('stale-mark').count(), 1, 'revision 2 is marked stale');
  const current = page.locator('[data-testid="revision-row"][data-revision="3"]');
  assert.equal(await current.getByTestId('current-mark').count(), 1, 'revision 3 is current');
  assert.match(await page.getByTestId('current-revision').innerText(), /Current revision 3/);
});

test('the search box finds an order', async (page) => {
  await signIn(page, 'vera', VIEWER_PASSWORD);
  await page.locator('#top-search-q').fill('order-1');
  await page.locator('#top-search-q').press('Enter');
  await page.waitForURL(/\/search\?q=order-1$/);
  await page.getByTestId('found-object-link').filter({ hasText: /^order-1$/ }).click();
  await page.waitForURL(/\/objects\/demo\/order-1$/);
  await page.getByTestId('current-revision').waitFor();
});

test('after fixing its cause, an operator dry-runs then replays a failed delivery and sees it audited', async (page) => {
  await signIn(page, 'admin', ADMIN_PASSWORD, '/events?status=failed&source=legacy');
  await hydrated(page);
  const first = page.getByTestId('event-row').filter({ hasText: 'legacy-1' });
  await first.getByRole('link', { name: 'legacy-1' }).click();
  await hydrated(page);
  await page.getByTestId('dry-run').click();
  const dry = page.getByTestId('dry-run-result');
  await dry.waitFor();
  assert.match(await dry.innerText(), /Would be: applied/);
  const related = page.getByTestId('related').locator('li');
  const before = await related.count();
  await page.getByTestId('confirm-replay').click();
  const done = page.getByTestId('replay-result');
  await done.waitFor();
  assert.match(await done.innerText(), /Replayed: applied/);
  // The page refreshes what the replay changed: the new delivery is among this event's.
  const newId = (await done.getByRole('link').innerText()).match(/\d+/)[0];
  await page.getByTestId('related').getByRole('link', { name: `delivery ${newId}` }).waitFor();
  assert.equal(await related.count(), before + 1, 'one more delivery of this event');
  await done.getByRole('link').click();
  // The replay's own page (the original's page has an error too: wait for the new one).
  await page.waitForURL(new RegExp(`/events/${newId}$`));
  const fields = page.locator('dl.fields', { hasText: 'Replay of' });
  await fields.waitFor();
  assert.match(await fields.innerText(), /Replay of\s+delivery \d+ by admin/);
  await page.goto(base + '/audit?action=replay');
  const entry = page.getByTestId('audit-row').first();
  await entry.waitFor();
  assert.match(await entry.innerText(), /admin\s+replay\s+delivery \d+\s+applied/);
});

test('an operator bulk-replays the failed deliveries of a filter with the count shown', async (page) => {
  await signIn(page, 'admin', ADMIN_PASSWORD, '/events?status=failed&source=legacy');
  await hydrated(page);
  await page.getByTestId('bulk-dry-run').click();
  const dry = page.getByTestId('bulk-dry-run-result');
  await dry.waitFor();
  const text = await dry.innerText();
  const matched = Number(text.match(/^(\d+) failed deliveries match/)[1]);
  assert.equal(matched, 3, text);
  assert.match(text, /applied: 2/);
  // legacy-1 was resolved by the replay before: left out.
  assert.match(text, /skipped 1: already resolved 1/);
  assert.match(text, /\(source legacy, status failed\)/);
  assert.equal(await page.getByTestId('bulk-confirm').isDisabled(), true, 'needs the typed confirmation');
  assert.match(await page.getByTestId('bulk-confirm').innerText(), /Replay 2 of the 3 failed deliveries of source legacy, status failed/);
  await page.getByLabel(/to replay 2 of the 3 failed deliveries of source legacy, status failed/).fill('replay 2');
  await page.getByTestId('bulk-confirm').click();
  const result = page.getByTestId('bulk-result');
  await result.waitFor();
  assert.match(await result.innerText(), /Replayed 2, skipped 1: already resolved 1\. Outcomes: applied: 2/);
});

// Every failed delivery the seed leaves: e-1-again (demo) and legacy-1..3; replays add none.
const FAILED_IN_ALL_SOURCES = 4;

test('the filter form and the bulk replay follow the URL after Clear and the Back button', async (page) => {
  await signIn(page, 'admin', ADMIN_PASSWORD, '/events');
  await hydrated(page);
  const status = page.getByLabel('Status');
  const source = page.getByLabel('Source');
  await status.selectOption('failed');
  await source.selectOption('legacy');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/status=failed.*source=legacy/);
  // Apply submits the form: a new page, whose button works once it has hydrated.
  await hydrated(page);
  await page.getByTestId('bulk-dry-run').click();
  const dry = page.getByTestId('bulk-dry-run-result');
  await dry.waitFor();
  assert.match(await dry.innerText(), /^3 failed deliveries match \(source legacy, status failed\)/);

  // Clear: the list shows every source, and so must the form and the next dry run.
  await page.getByRole('link', { name: 'Clear' }).click();
  await page.waitForURL(/\/events$/);
  await page.getByTestId('event-row').filter({ hasText: 'e-3' }).first().waitFor();
  assert.equal(await dry.count(), 0, "the dry run of the earlier filter is gone");
  assert.equal(await status.inputValue(), '', 'status shows the URL (any)');
  assert.equal(await source.inputValue(), '', 'source shows the URL (empty)');
  await page.getByTestId('bulk-dry-run').click();
  await dry.waitFor();
  const text = await dry.innerText();
  assert.match(text, new RegExp(`^${FAILED_IN_ALL_SOURCES} failed deliveries match \\(every source, status failed\\)`), text);
  // legacy-1..3 are resolved, e-1-again would fail the same way: nothing to confirm.
  assert.match(text, /skipped 4: already resolved 3, would fail the same way 1/, text);
  assert.equal(await page.getByTestId('bulk-confirm').count(), 0, 'nothing to replay');

  // Back: the form shows the filter of the URL again, and no result of another filter.
  await page.goBack();
  await page.waitForURL(/status=failed.*source=legacy/);
  await page.getByTestId('event-row').filter({ hasText: 'legacy-1' }).first().waitFor();
  assert.equal(await status.inputValue(), 'failed', 'status after Back');
  assert.equal(await source.inputValue(), 'legacy', 'source after Back');
  assert.equal(await dry.count(), 0, 'no dry run of another filter');

  // Another choice applied (a new page), then Back: the browser reloads the earlier page and
  // refills its fields with the choice made there; once hydrated they show the URL's filter.
  const outcome = page.getByLabel('Outcome');
  await status.selectOption('skipped');
  await outcome.selectOption('invalid');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/status=skipped/);
  await hydrated(page);
  await page.goBack();
  await page.waitForURL(/status=failed.*source=legacy/);
  await hydrated(page);
  assert.equal(await status.inputValue(), 'failed', 'status after Back to a reloaded page');
  assert.equal(await outcome.inputValue(), '', 'outcome after Back to a reloaded page');
  assert.equal(await source.inputValue(), 'legacy', 'source after Back to a reloaded page');
  await page.goBack();
  await page.waitForURL(/\/events$/);
  await hydrated(page);
  assert.equal(await status.inputValue(), '', 'status after Back to the unfiltered list');
  assert.equal(await source.inputValue(), '', 'source after Back to the unfiltered list');
  await page.getByTestId('bulk-dry-run').click();
  await dry.waitFor();
  assert.match(await dry.innerText(), new RegExp(`^${FAILED_IN_ALL_SOURCES} failed deliveries match \\(every source`));
});

test('a body search from the form, then from a field of an event page, and the export link of the filter', async (page) => {
  await signIn(page, 'vera', VIEWER_PASSWORD, '/events');
  await hydrated(page);
  await page.getByLabel('Body contains (JSON)').fill('{"snapshot":{"total_cents":4200}}');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/match=/);
  await hydrated(page);
  const rows = page.getByTestId('event-row');
  await rows.first().waitFor();
  const found = (await rows.allInnerTexts()).map((t) => t.match(/e-\d/)?.[0]).sort();
  assert.deepEqual(found, ['e-2', 'e-3'], 'the deliveries whose snapshot has total_cents 4200');
  // The export links carry the filter on screen.
  const href = await page.getByTestId('export-csv').getAttribute('href');
  assert.match(href, /^\/export\/events\?format=csv&match=/);
  const csv = await page.evaluate(async (h) => (await fetch(h)).text(), href);
  assert.equal(csv.trim().split('\n').length, 3, 'a header and the two rows');
  // From a field of an event's body.
  await rows.filter({ hasText: 'e-3' }).getByRole('link', { name: 'e-3' }).click();
  await hydrated(page);
  await page.getByTestId('searchable').locator('summary').click();
  await page.getByTestId('find-by-field').filter({ hasText: '/snapshot/status' }).click();
  await page.waitForURL(/match=/);
  await rows.first().waitFor();
  assert.deepEqual((await rows.allInnerTexts()).map((t) => t.match(/e-\d/)?.[0]), ['e-3'], 'only the shipped one');
});

test('a viewer follows the overview\'s refusals to the refused-requests page and filters it', async (page) => {
  await signIn(page, 'vera', VIEWER_PASSWORD, '/');
  await eventually(page, '/', async (p) => (await p.getByTestId('refused-count').count()) === 2, 'two refusal counts on the overview');
  const count = page.getByTestId('refused-count').filter({ hasText: 'unauthorized' });
  assert.match(await count.innerText(), /demo\s+unauthorized\s+1/);
  await count.getByRole('link').click();
  await page.waitForURL(/\/rejected\?source=demo&reason=unauthorized$/);
  await hydrated(page);
  const rows = page.getByTestId('rejected-row');
  await rows.first().waitFor();
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().getByTestId('rejected-cause').innerText(), /^timestamp \d+ s older than the tolerance of 300 s allows$/);
  await rows.first().locator('summary').click();
  const shown = await rows.first().innerText();
  assert.match(shown, /x-hookbox-signature\s+\[redacted, 9 bytes\]/);
  assert.doesNotMatch(shown, /v1=00/, 'the signature itself is not shown');
  // The form: every source, the unknown-source reason.
  await page.locator('select[name=source]').selectOption('');
  await page.locator('select[name=reason]').selectOption('unknown_source');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/reason=unknown_source/);
  await hydrated(page);
  await rows.first().waitFor();
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().innerText(), /nosuch \(not configured\)[\s\S]*no source named "nosuch" is configured/);
});

// Reloads `path` until `check(page)` holds (the forwarder works in the background).
async function eventually(page, path, check, what) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    await page.goto(base + path);
    await hydrated(page);
    if (await check(page)) return;
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}
const deadCount = async (page) => Number(await page.getByTestId('destination-row').filter({ hasText: 'orders-app' }).getByTestId('dead').innerText());

test('a viewer sees the dead deliveries of a destination that is down, and cannot retry them', async (page) => {
  await signIn(page, 'vera', VIEWER_PASSWORD, '/destinations');
  await eventually(page, '/destinations', async (p) => (await deadCount(p)) === 2, 'two dead deliveries');
  const row = page.getByTestId('destination-row').filter({ hasText: 'orders-app' });
  assert.match(await row.getByTestId('last-error').innerText(), /answered 500/);
  assert.equal(await row.getByTestId('pause').count(), 0, 'viewers cannot pause');
  await row.getByTestId('dead').getByRole('link').click();
  await page.waitForURL(/\/destinations\/orders-app\?status=dead$/);
  await hydrated(page);
  assert.equal(await page.getByTestId('forward-row').count(), 2);
  assert.equal(await page.getByTestId('retry').count(), 0, 'viewers see no retry control');
  assert.equal(await page.getByTestId('retry-count').count(), 0, 'nor the bulk retry');
  const attempts = page.getByTestId('forward-row').first().getByTestId('attempts');
  await page.getByTestId('forward-row').first().getByTestId('attempt-count').click();
  assert.match(await attempts.innerText(), /500[\s\S]*down for maintenance/);
  // Expanded at a laptop's 1366 px, the table keeps within the page: nothing clipped.
  await page.setViewportSize({ width: 1366, height: 900 });
  const overflow = await page.evaluate(() => {
    const table = document.querySelector('[data-testid="forward-row"]').closest('table');
    return { table: table.getBoundingClientRect().right, page: document.documentElement.clientWidth, scroll: document.documentElement.scrollWidth };
  });
  assert.ok(overflow.table <= overflow.page && overflow.scroll <= overflow.page, `the expanded table fits 1366 px: ${JSON.stringify(overflow)}`);
  await page.screenshot({ path: `${shots}destination-attempts-1366.png`, fullPage: true });
  // The server refuses a viewer's retry whatever the page shows.
  const status = await page.evaluate(async () => (await fetch('/api/retry_forward', {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=orders-app&id=1',
  })).status);
  assert.equal(status, 403);
});

test('an operator retries one dead delivery once the application is back, and it is delivered and audited', async (page) => {
  application.down = false;
  const before = application.got.length;
  await signIn(page, 'admin', ADMIN_PASSWORD, '/destinations/orders-app?status=dead');
  await hydrated(page);
  const rows = page.getByTestId('forward-row');
  assert.equal(await rows.count(), 2);
  await rows.first().getByTestId('retry').click();
  // The retried delivery leaves the dead list, and the application gets it.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="forward-row"]').length === 1, null, { timeout: 20_000 });
  await eventually(page, '/destinations/orders-app?status=delivered', async (p) => (await p.getByTestId('forward-row').count()) === 1, 'the retried delivery delivered');
  assert.equal(application.got.length, before + 1, 'one more request reached the application');
  await page.goto(base + '/audit?action=retry_forward');
  const entry = page.getByTestId('audit-row').first();
  await entry.waitFor();
  assert.match(await entry.innerText(), /admin\s+retry_forward\s+orders-app\/\d+\s+done/);
});

test('an operator retries every dead delivery of the filter after the count and the typed confirmation', async (page) => {
  await signIn(page, 'admin', ADMIN_PASSWORD, '/destinations/orders-app?status=dead');
  await hydrated(page);
  await page.getByTestId('retry-count').click();
  const counted = page.getByTestId('retry-count-result');
  await counted.waitFor();
  assert.match(await counted.innerText(), /^1 dead deliveries match \(orders-app, status dead\)/);
  assert.equal(await page.getByTestId('retry-confirm').isDisabled(), true, 'needs the typed confirmation');
  await page.getByLabel(/to retry them/).fill('retry 1');
  await page.getByTestId('retry-confirm').click();
  await page.getByTestId('retry-result').waitFor();
  await eventually(page, '/destinations', async (p) => (await deadCount(p)) === 0, 'no dead delivery left');
});

// What a journey is given.
const journeyTests = [];
const ctx = {
  base, assert, shots, application, env, bin, ADMIN_PASSWORD, VIEWER_PASSWORD,
  send, sendExpectingFailure, signIn, hydrated, eventually,
  browser: () => browser,
  fix: async (name) => { fixed.add(name); await stopServer(); await startServer(currentSnapshotField); },
};
for (const j of journeys) {
  if (j.default) j.default({ ...ctx, test: (name, fn) => journeyTests.push({ name: `${j.name}: ${name}`, fn }) });
}

test('screenshots of every page at 1280 px and 390 px', async () => {
  for (const [label, width, height] of [['desktop', 1280, 900], ['phone', 390, 844]]) {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    await signIn(page, 'admin', ADMIN_PASSWORD);
    const id = await (async () => { await page.goto(base + '/events?q=e-1-again'); return (await page.getByTestId('event-row').first().getByRole('link').first().getAttribute('href')); })();
    for (const [name, path] of [['overview', '/'], ['events', '/events'], ['failed', '/events?status=failed'], ['event', id], ['object', '/objects/demo/order-1'], ['audit', '/audit'], ['destinations', '/destinations'], ['destination', '/destinations/orders-app'], ['rejected', '/rejected'], ['problems', '/problems'], ['users', '/users']]) {
      await page.goto(base + path);
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: `${shots}${name}-${label}.png`, fullPage: true });
    }
    await context.close();
  }
});

let failed = 0;
try {
  await startServer('/snapshot');
  execFileSync(bin, ['user', 'add', 'vera', '--role', 'viewer'], { input: VIEWER_PASSWORD + '\n', env });
  assert.match(send('demo', { event_id: 'e-1', object_id: 'order-1', revision: 1, snapshot: { status: 'new' } }), /"status":"applied"/);
  assert.match(send('demo', { event_id: 'e-3', object_id: 'order-1', revision: 3, snapshot: { status: 'shipped', total_cents: 4200 } }), /"status":"applied"/);
  assert.match(send('demo', { event_id: 'e-2', object_id: 'order-1', revision: 2, snapshot: { status: 'paid', total_cents: 4200 } }), /"status":"stale"/);
  assert.match(send('demo', { event_id: 'e-1', object_id: 'order-1', revision: 1, snapshot: { status: 'new' } }), /"status":"duplicate"/);
  assert.match(sendExpectingFailure('demo', { event_id: 'e-1-again', object_id: 'order-1', revision: 1, snapshot: { status: 'new' } }), /reused_revision/);
  for (const i of [1, 2]) {
    assert.match(send('shop', { event_id: `s-${i}`, object_id: `cart-${i}`, revision: 1, snapshot: { items: i } }), /"status":"applied"/);
  }
  for (const i of [1, 2, 3]) {
    assert.match(sendExpectingFailure('legacy', { event_id: `legacy-${i}`, object_id: `invoice-${i}`, revision: 1, data: { amount: i } }), /snapshot/);
  }
  // Two refused requests: a signature from 1970, and a source that is not configured.
  assert.equal((await fetch(base + '/hooks/demo', { method: 'POST', body: '{}', headers: { 'x-hookbox-signature': 't=1,v1=00' } })).status, 401);
  assert.equal((await fetch(base + '/hooks/nosuch', { method: 'POST', body: '{}' })).status, 404);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const run = async (t) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // The pages keep their own Content-Security-Policy: a violation is logged as a console error.
    page.on('console', (m) => { if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) errors.push(m.text()); });
    try {
      await t.fn(page);
      assert.deepEqual(errors, [], 'no script errors on the page');
      console.log(`ok   ${t.name}`);
    } catch (e) {
      failed += 1;
      console.log(`FAIL ${t.name}\n     ${e.stack ?? e}`);
      await page.screenshot({ path: `${shots}FAILED-${t.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.png`, fullPage: true }).catch(() => {});
    } finally {
      await context.close();
    }
  };
  const [redirect, viewer, search, replay, bulk, followsUrl, bodySearch, refused, deadForViewer, retryOne, retryAll, screenshots] = tests;
  for (const t of [redirect, viewer, search, bodySearch, refused]) await run(t);
  // The operator fixes the legacy mapping and restarts hookbox.
  await stopServer();
  await startServer('/data');
  for (const t of [replay, bulk, followsUrl, deadForViewer, retryOne, retryAll]) await run(t);
  for (const t of journeyTests) await run(t);
  await run(screenshots);
} finally {
  if (browser) await browser.close();
  if (server && server.exitCode === null) await stopServer();
}
console.log(`${tests.length + journeyTests.length - failed} passed, ${failed} failed (hookbox log: ${join(dir, 'hookbox.log')})`);
process.exit(failed ? 1 : 0);
