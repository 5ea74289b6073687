// Support's day: a customer quotes an order number ("#10231") or their email; support types it in
// the top bar and lands, one click on, on the order with its current revision. A Stripe object
// (a dedup source: no revisions) lists its accepted deliveries, never "never applied".

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

export default function ({ test, assert, send, signIn, hydrated, shots, VIEWER_PASSWORD }) {
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
    const order = page.locator('[data-testid="found-object"][data-source="support-shop"][data-object="ord_10231"]');
    await order.waitFor();
    assert.equal(await page.locator('[data-testid="found-object"][data-object="ord_10232"]').count(), 0, 'only the order quoted');
    assert.match(await order.getByTestId('found-revision').innerText(), /revision 2/);
    assert.match(await order.innerText(), /object id ends with it/);
    await page.screenshot({ path: `${shots}search-desktop.png`, fullPage: true });
    await order.getByTestId('found-object-link').click();
    await page.waitForURL(/\/objects\/support-shop\/ord_10231$/);
    assert.match(await page.getByTestId('current-revision').innerText(), /Current revision 2/);

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
}
