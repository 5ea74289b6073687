// The operator's charts and re-send: the overview's chart of sender deliveries has axes and a
// title on every bar, switches between 24 hours and 7 days, and updates itself when a delivery
// arrives; a destination's page charts its success rate and latency; an operator re-sends every
// delivery of orders-app delivered since a time (the count first, then the typed confirmation),
// and the application receives them again.

export function sources() {
  return `
[[sources]]
name = "charts40"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]
forward = ["orders-app"]
`;
}

export default function ({ test, assert, base, send, signIn, hydrated, shots, application, ADMIN_PASSWORD, VIEWER_PASSWORD }) {
  // Every time on the page in UTC, whatever the browser's zone.
  const inUtc = (page) => page.context().addCookies([{ name: 'hookbox_tz', value: 'UTC', url: base }]);
  // Waits (at most 20 s) until `check()` holds, in this process (the application's requests).
  async function until(check, what) {
    const deadline = Date.now() + 20_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`never: ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // What the last hour's bar of the 24-hour chart says it holds.
  const lastHourProcessed = async (page) => {
    const title = await page.getByTestId('volume-hours').getByTestId('chart-column').last().locator('title').textContent();
    return Number(title.match(/: (\d+) processed/)[1]);
  };

  test('the overview charts sender deliveries with axes and a title on every bar, by hour or by day', async (page) => {
    assert.match(send('charts40', { event_id: 'c40-1', object_id: 'c40-order-1', revision: 1, snapshot: { n: 1 } }), /"status":"applied"/);
    await inUtc(page);
    await signIn(page, 'vera', VIEWER_PASSWORD, '/');
    await hydrated(page);
    const chart = page.getByTestId('volume-hours');
    await chart.waitFor();
    assert.equal(await chart.getByTestId('chart-column').count(), 24);
    assert.ok(await chart.locator('line.axis').count() >= 2, 'both axes');
    const values = await chart.locator('g.tick text').allTextContents();
    assert.equal(values[0], '0', `the value axis starts at 0: ${values}`);
    assert.ok(values.length >= 2 && values.every((v) => /^\d+(\.\d)?k?$/.test(v)), `round ticks: ${values}`);
    const times = await chart.locator('g.column text').allTextContents();
    assert.equal(times.length, 8, `every third hour is labelled: ${times}`);
    assert.ok(times.every((t) => /^\d\d:00$/.test(t)), `hours on the time axis: ${times}`);
    const last = chart.getByTestId('chart-column').last();
    assert.match(await last.locator('title').textContent(), /^\d\d:00–now: \d+ processed, \d+ skipped, \d+ failed$/);
    await last.hover();
    assert.match(await page.locator('#volume-hours-description').textContent(), /^Deliveries from senders by hour over the last 24 hours, times in UTC\./);
    await page.screenshot({ path: `${shots}overview-chart-desktop.png`, fullPage: false });

    await page.getByTestId('chart-days').click();
    await page.waitForURL(/\?chart=days$/);
    const days = page.getByTestId('volume-days');
    await days.waitFor();
    assert.equal(await days.getByTestId('chart-column').count(), 7);
    assert.equal(await days.locator('g.column text').count(), 7, 'every day labelled');
    assert.match(await days.getByTestId('chart-column').last().locator('title').textContent(), /^\w{3} \d+ \w{3}: \d+ processed/);
    assert.equal(await page.getByTestId('chart-days').getAttribute('aria-current'), 'true');
    await page.getByTestId('chart-hours').click();
    await page.getByTestId('volume-hours').waitFor();
    assert.equal(await page.getByTestId('volume-days').count(), 0);
  });

  test('the overview updates itself when a delivery arrives', async (page) => {
    await inUtc(page);
    await signIn(page, 'vera', VIEWER_PASSWORD, '/');
    await hydrated(page);
    await page.getByTestId('volume-hours').waitFor();
    const before = await lastHourProcessed(page);
    const url = page.url();
    assert.match(send('charts40', { event_id: 'c40-live', object_id: 'c40-order-2', revision: 1, snapshot: { n: 2 } }), /"status":"applied"/);
    const deadline = Date.now() + 20_000;
    while ((await lastHourProcessed(page)) !== before + 1) {
      if (Date.now() > deadline) throw new Error('the overview did not show the new delivery');
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(page.url(), url, 'no reload, no navigation');
  });

  test('a destination page charts its success rate and latency by hour', async (page) => {
    await inUtc(page);
    await signIn(page, 'vera', VIEWER_PASSWORD, '/destinations/orders-app');
    await hydrated(page);
    for (const id of ['success-hours', 'latency-hours']) {
      const chart = page.getByTestId(id);
      await chart.waitFor();
      assert.equal(await chart.getByTestId('chart-column').count(), 24, id);
    }
    const titles = await page.getByTestId('success-hours').locator('title').allTextContents();
    assert.ok(titles.some((t) => /\d+ of \d+ attempts answered 2xx \(\d+\.\d %\)$/.test(t)), `a rate on hover: ${titles}`);
    const latency = await page.getByTestId('latency-hours').locator('title').allTextContents();
    assert.ok(latency.some((t) => /p50 \d+ ms, p95 \d+ ms over \d+ attempts$/.test(t)), `latency on hover: ${latency}`);
    assert.match(await page.getByTestId('latency-hours').locator('figcaption').innerText(), /median \(p50\)\s+95th percentile \(p95\)/);
    assert.equal(await page.getByTestId('resend-count').count(), 0, 'viewers see no re-send');
  });

  test('an operator re-sends what orders-app was delivered since a time, after the count and the typed confirmation', async (page) => {
    application.down = false;
    const since = new Date(Date.now() - 1000).toISOString().slice(0, 19);
    const ids = ['c40-resend-1', 'c40-resend-2'];
    for (const [i, id] of ids.entries()) {
      assert.match(send('charts40', { event_id: id, object_id: `c40-resend-order-${i}`, revision: 1, snapshot: { i } }), /"status":"applied"/);
    }
    const sent = (id) => application.got.filter((r) => r.body.includes(`"event_id":"${id}"`));
    await until(() => ids.every((id) => sent(id).length === 1), 'the application received both deliveries');

    await inUtc(page);
    await signIn(page, 'admin', ADMIN_PASSWORD, '/destinations/orders-app');
    await hydrated(page);
    // Delivered on the page before the count (the list updates itself).
    const deadline = Date.now() + 20_000;
    while ((await page.getByTestId('forward-row').filter({ hasText: 'c40-resend-2' }).filter({ hasText: 'delivered' }).count()) === 0) {
      if (Date.now() > deadline) throw new Error('the delivery never showed as delivered');
      await new Promise((r) => setTimeout(r, 250));
    }
    await page.getByTestId('resend-since').fill(since);
    await page.getByTestId('resend-count').click();
    const counted = page.getByTestId('resend-count-result');
    await counted.waitFor();
    const text = await counted.innerText();
    const match = text.match(/^(\d+) delivered deliveries match \(orders-app, delivered since (\S+ \S+) \(UTC\)\)/);
    assert.ok(match, text);
    const n = Number(match[1]);
    assert.ok(n >= 2, `both deliveries counted: ${text}`);
    assert.equal(match[2], since.replace('T', ' '), 'the time as typed, in the zone named');
    const confirm = page.getByTestId('resend-confirm');
    assert.equal(await confirm.isDisabled(), true, 'needs the typed confirmation');
    const before = application.got.length;
    await page.getByLabel(/to re-send them/).fill(`resend ${n}`);
    await confirm.click();
    const result = page.getByTestId('resend-result');
    await result.waitFor();
    assert.match(await result.innerText(), new RegExp(`^Re-sent ${n} deliveries of orders-app, delivered since`));
    await until(() => application.got.length >= before + n && ids.every((id) => sent(id).length === 2), 'the application received them again');
    assert.equal(application.got.length, before + n, 'exactly what the count said');
    for (const id of ids) {
      const [first, again] = sent(id);
      assert.equal(again.body, first.body, 'the same event as first sent');
      assert.notEqual(again.id, first.id, 'a new delivery, with its own webhook-id');
    }
    await page.goto(base + '/audit?action=resend_forward');
    const entry = page.getByTestId('audit-row').first();
    await entry.waitFor();
    assert.match(await entry.innerText(), new RegExp(`admin\\s+resend_forward\\s+orders-app\\s+done\\s+${n} deliveries of orders-app`));
  });
}
