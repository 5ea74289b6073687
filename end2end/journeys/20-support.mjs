// Support's day: a customer quotes an order number ("#10231") or their email; support types it in
// the top bar and lands, one click on, on the order with its current revision. A Stripe object
// (a dedup source: no revisions) lists its accepted deliveries, never "never applied". A large
// snapshot is shown cut, with its size and a link to all of it; the top bar's box keeps the query
// on /search.

export function sources() {
  return `
[[sources]]
name = "support-shop"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]

[[sources]]
name = "support-stripe"
preset = "stripe"
secrets_env = ["DEMO_SECRET"]
`;
}

export default function ({ test, assert, base, send, signIn, hydrated, shots, browser, VIEWER_PASSWORD }) {
  // Types `text` in the top bar's search box and submits it.
  async function search(page, text) {
    const box = page.locator('#top-search-q');
    await box.fill(text);
    await box.press('Enter');
    await page.waitForURL((url) => url.pathname === '/search' && url.searchParams.get('q') === text);
  }

  test('support types an order number, then a customer email, and lands on the order', async (page) => {
    const email = 'ana.support@example.com';
    assert.match(send('support-shop', { event_id: 'sup-1', object_id: 'ord_10231', revision: 1, snapshot: { status: 'paid', customer: { email } } }), /"status":"applied"/);
    assert.match(send('support-shop', { event_id: 'sup-2', object_id: 'ord_10231', revision: 2, snapshot: { status: 'shipped', customer: { email } } }), /"status":"applied"/);
    assert.match(send('support-shop', { event_id: 'sup-3', object_id: 'ord_10232', revision: 1, snapshot: { status: 'paid', customer: { email: 'someone.else@example.com' } } }), /"status":"applied"/);
    await signIn(page, 'vera', VIEWER_PASSWORD, '/');
    await hydrated(page);

    await search(page, '#10231');
    assert.equal(await page.locator('#top-search-q').inputValue(), '#10231', 'the box keeps what was searched');
    const order = page.locator('[data-testid="found-object"][data-source="support-shop"][data-object="ord_10231"]');
    await order.waitFor();
    assert.equal(await page.locator('[data-testid="found-object"][data-object="ord_10232"]').count(), 0, 'only the order quoted');
    assert.match(await order.getByTestId('found-revision').innerText(), /revision 2/);
    assert.match(await order.innerText(), /object id ends with it/);
    await page.screenshot({ path: `${shots}search-desktop.png`, fullPage: true });
    await order.getByTestId('found-object-link').click();
    await page.waitForURL(/\/objects\/support-shop\/ord_10231$/);
    assert.match(await page.getByTestId('current-revision').innerText(), /Current revision 2/);
    assert.equal(await page.locator('#top-search-q').inputValue(), '', 'off /search, the box is empty');

    await hydrated(page);
    await search(page, email);
    const byEmail = page.locator('[data-testid="found-object"][data-object="ord_10231"]');
    await byEmail.waitFor();
    assert.equal(await page.getByTestId('found-object').count(), 1, 'one order holds the email');
    assert.match(await byEmail.innerText(), /a value in a body/);
    await byEmail.getByTestId('found-object-link').click();
    await page.waitForURL(/\/objects\/support-shop\/ord_10231$/);
    assert.match(await page.getByTestId('current-revision').innerText(), /Current revision 2/);

    // Nothing found says what was searched, and gives no shell advice.
    await hydrated(page);
    await search(page, 'ord_99999');
    const empty = await page.getByTestId('search-empty').innerText();
    assert.match(empty, /^No event id or object id equal to, starting with or ending with "ord_99999", and no delivery body holding "ord_99999" \(searched .+\)\.$/);
    assert.doesNotMatch(await page.locator('main').innerText(), /hookbox send/);
  });

  test("a Stripe object's page lists its accepted deliveries, newest first, with their types", async (page) => {
    const charge = 'ch_support_3Pq';
    for (const [id, type] of [['evt_sup_1', 'charge.succeeded'], ['evt_sup_2', 'charge.updated'], ['evt_sup_3', 'charge.refunded']]) {
      assert.match(send('support-stripe', { id, object: 'event', type, data: { object: { id: charge, object: 'charge', amount: 4200 } } }), /"status":"accepted"/);
    }
    await signIn(page, 'vera', VIEWER_PASSWORD, '/');
    await hydrated(page);
    await search(page, charge.toUpperCase());
    const found = page.locator(`[data-testid="found-object"][data-object="${charge}"]`);
    await found.waitFor();
    assert.match(await found.getByTestId('found-accepted').innerText(), /^3 accepted deliveries$/);
    await found.getByTestId('found-object-link').click();
    await page.waitForURL(new RegExp(`/objects/support-stripe/${charge}$`));
    const rows = page.getByTestId('accepted-row');
    await page.getByTestId('accepted-deliveries').waitFor();
    assert.equal(await rows.count(), 3);
    const texts = await rows.allInnerTexts();
    assert.deepEqual(texts.map((t) => t.match(/charge\.\w+/)[0]), ['charge.refunded', 'charge.updated', 'charge.succeeded']);
    assert.match(texts[0], /evt_sup_3/);
    assert.match(await page.getByTestId('dedup-note').innerText(), /It has 3 accepted deliveries\./);
    assert.doesNotMatch(await page.locator('main').innerText(), /never applied/);
    await page.screenshot({ path: `${shots}object-dedup-desktop.png`, fullPage: true });
  });

  test('the top bar keeps the query of a /search address, loaded or navigated to', async (page) => {
    await signIn(page, 'vera', VIEWER_PASSWORD, '/search?q=' + encodeURIComponent('ana.support@example.com'));
    await hydrated(page);
    const box = page.locator('#top-search-q');
    assert.equal(await box.inputValue(), 'ana.support@example.com');
    await page.goto(base + '/search?q=ORD_10231');
    await hydrated(page);
    assert.equal(await box.inputValue(), 'ORD_10231');
    await search(page, 'sup-2');
    assert.equal(await box.inputValue(), 'sup-2');
    // Back to the search before: the box follows the address.
    await page.goBack();
    await page.waitForURL((url) => url.searchParams.get('q') === 'ORD_10231');
    await page.waitForFunction(() => document.querySelector('#top-search-q').value === 'ORD_10231');
    await page.goBack();
    await page.waitForURL((url) => url.searchParams.get('q') === 'ana.support@example.com');
    await page.waitForFunction(() => document.querySelector('#top-search-q').value === 'ana.support@example.com');
  });

  test('a large snapshot is shown cut, with its size and a link to all of it', async (page) => {
    const items = Array.from({ length: 2500 }, (_, i) => `line-${i + 1}`);
    const snapshot = { items };
    assert.match(send('support-shop', { event_id: 'sup-big-1', object_id: 'ord_big', revision: 1, snapshot }), /"status":"applied"/);
    await signIn(page, 'vera', VIEWER_PASSWORD, '/objects/support-shop/ord_big');
    await hydrated(page);
    const shown = await page.getByTestId('snapshot').innerText();
    assert.match(shown, /"line-1"/);
    assert.doesNotMatch(shown, /"line-2500"/, 'the end is not shown at first');
    const showAll = page.getByTestId('snapshot-cut').getByTestId('show-all');
    const kib = Math.ceil(JSON.stringify(snapshot).length / 1024);
    assert.equal(await showAll.innerText(), `Show all (${kib} KiB)`, 'the size as stored');
    await page.screenshot({ path: `${shots}object-cut-desktop.png`, fullPage: false });
    await showAll.click();
    await page.waitForURL(/\/objects\/support-shop\/ord_big\?snapshot=all$/);
    await page.waitForFunction(() => document.querySelector('[data-testid="snapshot"]')?.innerText.includes('"line-2500"'));
    assert.equal(await page.getByTestId('show-all').count(), 0, 'nothing more to show');
  });

  test('at 1280 px the top bar is one line; at 390 px no page is wider than the screen', async (page) => {
    await signIn(page, 'vera', VIEWER_PASSWORD, '/');
    const brand = await page.locator('.topbar .brand').boundingBox();
    const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
    assert.ok(Math.abs(signOut.y - brand.y) < brand.height, `Sign out on the brand's line: ${JSON.stringify({ brand, signOut })}`);
    assert.ok(signOut.height < 1.5 * brand.height, `"Sign out" on one line: ${JSON.stringify(signOut)}`);

    const phone = await browser().newContext({ viewport: { width: 390, height: 844 } });
    try {
      const small = await phone.newPage();
      await signIn(small, 'vera', VIEWER_PASSWORD, '/events?q=sup-1');
      const event = await small.getByTestId('event-row').first().getByRole('link').first().getAttribute('href');
      for (const path of ['/', '/events', event, '/objects/support-shop/ord_10231', '/objects/support-shop/ord_big', '/problems', '/search?q=10231', '/sources', '/destinations']) {
        await small.goto(base + path);
        await small.waitForLoadState('networkidle');
        const [scroll, client] = await small.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
        assert.ok(scroll <= client, `${path}: ${scroll} px wide on a ${client} px screen`);
      }
      await small.goto(base + '/search?q=10231');
      const box = await small.locator('#top-search-q').boundingBox();
      assert.ok(box.width > 300, `the search box has a row of its own: ${box.width} px`);
      await small.screenshot({ path: `${shots}search-phone.png`, fullPage: true });
    } finally {
      await phone.close();
    }
  });
}
