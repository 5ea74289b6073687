// Reading the pages: every time in one zone, named in the top bar, with a UTC/local switch that
// is remembered, and the events filter's days in that zone; JSON shown with its characters
// decoded (the copy button still gives the bytes as received) and a long body cut with "Show
// all"; a phone's tables with a label on every cell; dark mode; the keyboard (skip link, `/`,
// code boxes); a plain message when hookbox cannot be reached.
import { execFileSync } from 'node:child_process';

export function sources() {
  return `
[[sources]]
name = "reading"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]
`;
}

export default function ({ test, assert, base, bin, env, signIn, hydrated, shots, browser, VIEWER_PASSWORD }) {
  // Sends `text` exactly as written (`ctx.send` would re-encode it).
  function sendRaw(text) {
    return execFileSync(bin, ['send', 'reading', '--url', base], { input: text, env, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
  }
  // A page of a context of its own (zone, viewport, colour scheme), failing on a script error.
  async function pageIn(options) {
    const context = await browser().newContext({ viewport: { width: 1280, height: 900 }, ...options });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) errors.push(m.text()); });
    return { context, page, errors };
  }
  // `iso` as the pages write it in `timeZone`: 2026-11-30 15:59:59.
  function written(iso, timeZone) {
    const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    }).formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
  }

  test('times are in one zone, named, and the UTC/local switch is remembered; From/To are days in it', async () => {
    assert.match(sendRaw('{"event_id":"reading-time","object_id":"reading-clock","revision":1,"snapshot":{}}'), /"status":"applied"/);
    const { context, page, errors } = await pageIn({ timezoneId: 'America/Los_Angeles' });
    try {
      await signIn(page, 'vera', VIEWER_PASSWORD, '/events?q=reading-time');
      await hydrated(page);
      const zone = page.getByTestId('zone');
      const time = page.getByTestId('event-row').first().locator('time');
      const iso = await time.getAttribute('datetime');
      // No choice yet: UTC, said so, hydrated to the same text.
      assert.equal(await zone.innerText(), 'Times in UTC');
      assert.equal(await time.innerText(), written(iso, 'UTC'));
      assert.equal(await time.getAttribute('title'), `${written(iso, 'UTC')} UTC`);

      await page.getByTestId('zone-switch').click();
      await page.waitForFunction(() => document.querySelector('[data-testid="zone"]')?.innerText.includes('America/Los_Angeles'));
      await hydrated(page);
      assert.equal(await zone.innerText(), 'Times in America/Los_Angeles');
      assert.equal(await time.innerText(), written(iso, 'America/Los_Angeles'));
      assert.equal(await page.getByTestId('zone-switch').innerText(), 'Show UTC');
      const cookie = (await context.cookies()).find((c) => c.name === 'hookbox_tz');
      assert.equal(cookie?.value, 'America/Los_Angeles');
      assert.equal(cookie?.sameSite, 'Lax');
      assert.ok(cookie.expires * 1000 > Date.now() + 360 * 24 * 3600 * 1000, 'kept for a year');

      // Remembered: another page of the same browser, later.
      const again = await context.newPage();
      await again.goto(`${base}/events?q=reading-time`);
      await hydrated(again);
      assert.equal(await again.getByTestId('zone').innerText(), 'Times in America/Los_Angeles');
      assert.equal(await again.getByTestId('event-row').first().locator('time').innerText(), written(iso, 'America/Los_Angeles'));
      await again.close();

      // From and To: the delivery's own day in Los Angeles finds it; the day is 08:00 or 07:00 UTC.
      const day = written(iso, 'America/Los_Angeles').slice(0, 10);
      await page.goto(`${base}/events`);
      await hydrated(page);
      assert.match(await page.locator('form.filters').innerText(), /From \(day in America\/Los_Angeles\)/);
      await page.locator('form.filters input[name=from]').fill(day);
      await page.locator('form.filters input[name=to]').fill(day);
      await page.locator('form.filters input[name=q]').fill('reading-time');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.waitForURL(/tz=America%2FLos_Angeles/);
      await hydrated(page);
      await page.getByTestId('event-row').first().waitFor();
      assert.equal(await page.getByTestId('event-row').count(), 1, 'the delivery of that local day');
      const range = await page.getByTestId('filter-range').innerText();
      assert.match(range, new RegExp(`^Received from ${day} 0[78]:00:00 UTC up to \\d{4}-\\d\\d-\\d\\d 0[78]:00:00 UTC$`), range);
      const exported = await page.getByTestId('export-csv').getAttribute('href');
      assert.match(exported, /&tz=America%2FLos_Angeles/);

      // And back to UTC.
      await page.getByTestId('zone-switch').click();
      await page.waitForFunction(() => document.querySelector('[data-testid="zone"]')?.innerText === 'Times in UTC');
      assert.equal((await context.cookies()).find((c) => c.name === 'hookbox_tz')?.value, 'UTC');
      await page.screenshot({ path: `${shots}reading-zone-desktop.png`, fullPage: true });
      assert.deepEqual(errors, [], 'no script errors');
    } finally {
      await context.close();
    }
  });

  test('München is shown decoded, the copy is the bytes as received, a long body is cut with Show all', async () => {
    const raw = '{"event_id":"reading-munich","object_id":"reading-order","revision":1,"snapshot":{"city":"M\\u00fcnchen"}}';
    assert.match(sendRaw(raw), /"status":"applied"/);
    const items = Array.from({ length: 2500 }, (_, i) => i + 1).join(',');
    assert.match(sendRaw(`{"event_id":"reading-long","object_id":"reading-list","revision":1,"snapshot":{"items":[${items}]}}`), /"status":"applied"/);
    const { context, page, errors } = await pageIn({});
    try {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
      await signIn(page, 'vera', VIEWER_PASSWORD, '/events?q=reading-munich');
      await page.getByTestId('event-row').first().getByRole('link', { name: 'reading-munich' }).click();
      await hydrated(page);
      const body = page.getByTestId('body');
      await body.waitFor();
      assert.match(await body.innerText(), /"city": "München"/);
      assert.doesNotMatch(await body.innerText(), /\\u00fc/);
      assert.equal(await body.getAttribute('tabindex'), '0', 'the code box takes the focus');
      // The page carries the body once: the copy fetches the bytes, then says so.
      await page.getByRole('button', { name: 'Copy', exact: true }).click();
      await page.getByRole('button', { name: 'Copied', exact: true }).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), raw, 'the bytes as received');
      await page.getByTestId('curl').waitFor({ state: 'attached' });
      assert.match(await page.getByTestId('curl').textContent(), /M\\u00fcnchen/);
      assert.equal(await page.getByTestId('show-all').count(), 0, 'a short body is whole');

      await page.goto(`${base}/events?q=reading-long`);
      await page.getByTestId('event-row').first().getByRole('link', { name: 'reading-long' }).click();
      await hydrated(page);
      const showAll = page.getByTestId('show-all');
      await showAll.waitFor();
      assert.match(await showAll.innerText(), /^Show all \(\d+ KiB\)$/);
      assert.doesNotMatch(await body.innerText(), /2499,/);
      await showAll.click();
      await page.waitForURL(/\?body=all$/);
      await page.waitForFunction(() => document.querySelector('[data-testid="body"]')?.innerText.includes('2499,'));
      assert.equal(await showAll.count(), 0);
      assert.deepEqual(errors, [], 'no script errors');
    } finally {
      await context.close();
    }
  });

  test('on a phone every table cell carries its label', async () => {
    const { context, page, errors } = await pageIn({ viewport: { width: 390, height: 844 } });
    try {
      await signIn(page, 'vera', VIEWER_PASSWORD, '/events');
      const row = page.getByTestId('event-row').first();
      await row.waitFor();
      // Each cell shows its column's name before its value.
      const labels = await row.locator('td').evaluateAll((cells) => cells.map((td) => getComputedStyle(td, '::before').content));
      const columns = await page.getByTestId('events-table').locator('thead th').evaluateAll((ths) => ths.map((th) => `"${th.textContent}"`));
      assert.deepEqual(labels, columns);
      assert.deepEqual(labels.slice(0, 3), ['"Received"', '"Outcome"', '"Source"']);
      const head = await page.getByTestId('events-table').locator('thead').boundingBox();
      assert.ok(!head || head.height <= 1, 'the header row is hidden (the cells say it)');
      await page.goto(`${base}/audit`);
      const audit = page.locator('table.data tbody td').first();
      if (await audit.count()) {
        assert.notEqual(await audit.evaluate((td) => getComputedStyle(td, '::before').content), 'none', 'the audit table too');
      }
      await page.goto(`${base}/events`);
      await page.screenshot({ path: `${shots}reading-events-phone.png`, fullPage: true });
      assert.deepEqual(errors, [], 'no script errors');
    } finally {
      await context.close();
    }
  });

  test('dark mode follows the system, and the keyboard reaches everything', async () => {
    const { context, page, errors } = await pageIn({ colorScheme: 'dark' });
    try {
      await signIn(page, 'vera', VIEWER_PASSWORD, '/events');
      await hydrated(page);
      const luminance = (rgb) => {
        const [r, g, b] = rgb.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number).map((c) => c / 255)
          .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const colours = await page.evaluate(() => {
        const style = (el) => getComputedStyle(el);
        const panel = document.querySelector('table.data') ?? document.querySelector('.panel');
        return { page: style(document.documentElement).backgroundColor, text: style(document.body).color, panel: style(panel).backgroundColor };
      });
      assert.ok(luminance(colours.page) < 0.05, `a dark page: ${colours.page}`);
      assert.ok(luminance(colours.panel) < 0.05, `dark panels: ${colours.panel}`);
      const contrast = (luminance(colours.text) + 0.05) / (luminance(colours.panel) + 0.05);
      assert.ok(contrast >= 7, `light text on them (${contrast.toFixed(1)}:1)`);
      await page.screenshot({ path: `${shots}reading-events-dark.png`, fullPage: true });

      // The first Tab on a freshly loaded page shows the skip link; following it lands on the
      // content. (A fresh load: after the sign-in's navigation Chromium starts Tab from where the
      // sign-in form was.)
      await page.goto(base + '/events');
      await hydrated(page);
      await page.keyboard.press('Tab');
      const skip = page.locator('.skip-link');
      assert.equal(await skip.evaluate((a) => a === document.activeElement), true);
      const box = await skip.boundingBox();
      assert.ok(box && box.x >= 0 && box.y >= 0, 'visible when focused');
      await page.keyboard.press('Enter');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'content');
      // `/` focuses the search box, but types a slash in a field.
      await page.keyboard.press('/');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'top-search-q');
      await page.locator('form.filters input[name=q]').focus();
      await page.keyboard.press('/');
      assert.equal(await page.locator('form.filters input[name=q]').inputValue(), '/');
      assert.deepEqual(errors, [], 'no script errors');
    } finally {
      await context.close();
    }
  });

  test('when hookbox cannot be reached the page says so plainly, and recovers by itself', async () => {
    const { context, page, errors } = await pageIn({});
    try {
      await signIn(page, 'vera', VIEWER_PASSWORD, '/events');
      await hydrated(page);
      await page.getByTestId('event-row').first().waitFor();
      await page.route('**/api/events*', (route) => route.abort('internetdisconnected'));
      const note = page.getByTestId('error-note');
      await note.waitFor({ timeout: 15_000 });
      assert.equal(await note.innerText(), 'hookbox could not be reached. Check your connection; this page will retry.');
      await page.unroute('**/api/events*');
      await page.getByTestId('event-row').first().waitFor({ timeout: 15_000 });
      assert.equal(await note.count(), 0, 'the note goes once hookbox answers');
      assert.deepEqual(errors, [], 'no script errors');
    } finally {
      await context.close();
    }
  });
}
