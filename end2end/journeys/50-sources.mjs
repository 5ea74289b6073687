// The sources page: each source's endpoint as this browser reaches hookbox, its scheme in words,
// and a silent source flagged; and the bundle it loads: hashed names, compressed, kept for good.

export function sources() {
  return `
[[sources]]
name = "sources-live"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]

[[sources]]
name = "sources-quiet"
preset = "stripe"
secrets_env = ["DEMO_SECRET"]
`;
}

export default function ({ test, base, assert, send, signIn, hydrated, shots, VIEWER_PASSWORD }) {
  test('the sources page shows each endpoint, its scheme in words, and flags a silent source', async (page) => {
    assert.match(send('sources-live', { event_id: 'src-1', object_id: 'thing-1', revision: 1, snapshot: { ok: true } }), /"status":"applied"/);
    await signIn(page, 'vera', VIEWER_PASSWORD, '/sources');
    await hydrated(page);
    const live = page.locator('article[data-source="sources-live"]');
    const quiet = page.locator('article[data-source="sources-quiet"]');
    // The full URL once the page knows the address the browser used.
    await page.waitForFunction((url) => document.querySelector('article[data-source="sources-live"] [data-testid="endpoint"]')?.textContent === url,
      `POST ${base}/hooks/sources-live`, { timeout: 10_000 });
    assert.equal(await quiet.getByTestId('endpoint').innerText(), `POST ${base}/hooks/sources-quiet`);
    assert.match(await live.innerText(), /HMAC-SHA256 of the timestamp and body, hex, in X-Hookbox-Signature/);
    assert.match(await quiet.innerText(), /stripe \(preset stripe\)/);
    assert.match(await quiet.innerText(), /Stripe-Signature/);
    assert.equal(await live.getAttribute('data-silent'), 'false');
    assert.match(await live.getByTestId('received-24h').innerText(), /^1 delivery$/);
    assert.match(await live.getByTestId('silence').innerText(), /^Receiving: last delivery .* ago; its limit is 1 h 0 min/);
    assert.equal(await live.getAttribute('data-health'), 'receiving');
    // Never a delivery: neutral, not a red "silent".
    assert.equal(await quiet.getAttribute('data-health'), 'no deliveries yet');
    assert.equal(await quiet.getByTestId('health').innerText(), 'no deliveries yet');
    assert.match(await quiet.getByTestId('silence').innerText(), /^No deliveries yet: none from it in the archive/);
    for (const name of ['demo', 'shop', 'legacy']) {
      await page.locator(`article[data-source="${name}"]`).waitFor();
    }
    await page.screenshot({ path: `${shots}sources-desktop.png`, fullPage: true });
  });

  test('pages load the bundle by its hashed names, compressed and kept for good; the page itself is not stored', async (page) => {
    const assets = [];
    page.on('response', (r) => { if (r.url().includes('/pkg/')) assets.push(r); });
    await signIn(page, 'vera', VIEWER_PASSWORD, '/sources');
    await hydrated(page);
    const document = await page.goto(base + '/sources');
    assert.equal(document.headers()['cache-control'], 'no-store');
    const wasm = assets.find((r) => r.url().endsWith('.wasm'));
    assert.ok(wasm, 'the page loaded the wasm bundle');
    assert.match(new URL(wasm.url()).pathname, /^\/pkg\/hookbox\.[A-Za-z0-9_-]{22}\.wasm$/);
    const headers = await wasm.allHeaders();
    assert.equal(headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(headers['content-encoding'] ?? '', /^(br|gzip)$/);
    const css = assets.find((r) => r.url().endsWith('.css'));
    assert.match(new URL(css.url()).pathname, /^\/pkg\/hookbox\.[A-Za-z0-9_-]{22}\.css$/);
  });
}
