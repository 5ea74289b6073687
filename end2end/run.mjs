// Browser tests for hookbox in Debian's Chromium, driven by playwright-core.
// Expects a running hookbox at HOOKBOX_E2E_URL (started by .ci/test); polls it first.
// Screenshots of each page at 1280 px and 390 px go to end2end/screenshots/ (ignored by git).
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';

const base = process.env.HOOKBOX_E2E_URL ?? 'http://127.0.0.1:3000';
const shots = new URL('./screenshots/', import.meta.url).pathname;
mkdirSync(shots, { recursive: true });

async function waitForServer() {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(base + '/');
      if (res.ok) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`hookbox did not answer at ${base} within 60 s`);
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('the home page renders on the server and hydrates in the browser', async (page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(base + '/');
  const home = page.getByTestId('home');
  await home.waitFor();
  assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /receiving webhooks/);
  await page.waitForFunction(() => document.querySelector('[data-testid="home"]')?.dataset.hydrated === 'true', null, { timeout: 15_000 });
  assert.deepEqual(errors, [], 'no console errors');
});

test('hookbox send delivers a signed event to the live endpoint', async () => {
  const bin = process.env.HOOKBOX_BIN;
  assert.ok(bin, 'HOOKBOX_BIN is set by .ci/test');
  const body = JSON.stringify({ event_id: 'e2e-1', object_id: 'order-1', revision: 1, snapshot: { status: 'paid' } });
  const env = { ...process.env, HOOKBOX_CONFIG: new URL('./demo.toml', import.meta.url).pathname, DEMO_SECRET: 'e2e-secret' };
  const out = execFileSync(bin, ['send', 'demo', '--url', base], { input: body, env }).toString();
  assert.match(out, /^200 OK/);
  assert.match(out, /"status":"applied"/);
  const again = execFileSync(bin, ['send', 'demo', '--url', base], { input: body, env }).toString();
  assert.match(again, /"status":"duplicate"/);
});

test('unknown pages answer 404', async (page) => {
  const res = await page.goto(base + '/no-such-page');
  assert.equal(res.status(), 404);
  assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /Not found/);
});

await waitForServer();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failed = 0;
for (const { name, fn } of tests) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  try {
    await fn(page);
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}\n     ${e.stack ?? e}`);
  } finally {
    await context.close();
  }
}
for (const [label, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]]) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  await page.goto(base + '/');
  await page.screenshot({ path: `${shots}home-${label}.png`, fullPage: true });
  await context.close();
}
await browser.close();
console.log(`${tests.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
