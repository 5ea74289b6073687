// Routes: the source "routed80" forwards nothing by `forward`; its route "paid80" sends the
// application its paid orders. /sources shows the route with what it would match among the
// source's deliveries; the event page of an order that is not paid says, for orders-app, that it
// was not sent and which condition failed; that of a paid order, which route sent it. Both pages
// at desktop and phone widths.

export function sources() {
  return `
[[sources]]
name = "routed80"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]

[[routes]]
name = "paid80"
source = "routed80"
destination = "orders-app"
event_types = ["order.*"]
match = { snapshot = { status = "paid" } }
`;
}

export default function ({ test, assert, base, send, signIn, hydrated, shots, browser, VIEWER_PASSWORD }) {
  const verdict = (page) => page.locator('[data-testid="destination-verdict"][data-destination="orders-app"]');
  const openEvent = async (page, eventId) => {
    await page.goto(`${base}/events?source=routed80&event_id=${eventId}`);
    await hydrated(page);
    await page.getByTestId('event-row').first().getByRole('link', { name: eventId }).click();
    await verdict(page).waitFor();
  };

  test('a route shows on /sources with its preview, and each event page says why orders-app was or was not sent it', async (page) => {
    assert.match(send('routed80', { event_id: 'r80-open', object_id: 'r80-order-1', revision: 1, type: 'order.created', snapshot: { status: 'open' } }), /"status":"applied"/);
    assert.match(send('routed80', { event_id: 'r80-paid', object_id: 'r80-order-2', revision: 1, type: 'order.paid', snapshot: { status: 'paid' } }), /"status":"applied"/);
    await signIn(page, 'vera', VIEWER_PASSWORD, '/sources');
    await hydrated(page);
    const route = page.locator('[data-testid="route"][data-route="paid80"]');
    await route.waitFor();
    assert.match(await route.innerText(), /routed80 → orders-app/);
    const preview = route.getByTestId('route-preview');
    assert.match(await preview.innerText(), /^1 of the last 2/);
    assert.match(await preview.innerText(), /not matched: #\d+ \(match: \/snapshot\/status is not "paid"\)/);

    await openEvent(page, 'r80-open');
    assert.equal(await verdict(page).getAttribute('data-sent'), 'false');
    assert.match(await verdict(page).innerText(), /not sent\s+route paid80: match: \/snapshot\/status is not "paid"/);
    await openEvent(page, 'r80-paid');
    assert.equal(await verdict(page).getAttribute('data-sent'), 'true');
    assert.match(await verdict(page).innerText(), /sent\s+route paid80 matched/);

    for (const [label, width, height] of [['desktop', 1280, 900], ['phone', 390, 844]]) {
      const context = await browser().newContext({ viewport: { width, height } });
      try {
        const shot = await context.newPage();
        await signIn(shot, 'vera', VIEWER_PASSWORD, '/sources');
        await hydrated(shot);
        await shot.getByTestId('routes').waitFor();
        await shot.getByTestId('routes').screenshot({ path: `${shots}routes-sources-${label}.png` });
        await openEvent(shot, 'r80-open');
        const [scroll, client] = await shot.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
        assert.ok(scroll <= client, `${label}: the event page fits its width (${scroll} > ${client})`);
        await shot.getByTestId('destinations').screenshot({ path: `${shots}routes-event-${label}.png` });
      } finally {
        await context.close();
      }
    }
  });
}
