// A program reads the pull feed through a named consumer and commits part of it; a viewer then
// sees on /feed what it reads and how far behind it is, on a desktop and on a phone.

import { execFileSync } from 'node:child_process';

export function sources() {
  return `
[[sources]]
name = "feed-orders"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]
`;
}

export default function ({ test, base, assert, send, signIn, hydrated, shots, bin, env, browser, VIEWER_PASSWORD }) {
  test('a consumer reads and commits through the API; /feed shows how far behind it is', async (page) => {
    for (let n = 1; n <= 3; n++) {
      assert.match(send('feed-orders', { event_id: `feed-${n}`, object_id: `order-${n}`, revision: 1, snapshot: { n } }), /"status":"applied"/);
    }
    const token = execFileSync(bin, ['token', 'add', 'feed-loader', '--role', 'viewer', '--source', 'feed-orders'], { env }).toString().trim().split('\n').pop();
    const api = async (method, path, body) => {
      const response = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: await response.json() };
    };
    const made = await api('PUT', '/api/v1/feed/consumers/warehouse', {});
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual(made.body.sources, ['feed-orders']);
    const items = await api('GET', '/api/v1/feed/consumers/warehouse/items?limit=1');
    assert.equal(items.status, 200);
    assert.deepEqual(items.body.data.map((i) => i.event_id), ['feed-1']);
    assert.deepEqual(items.body.data[0].snapshot, { n: 1 });
    const committed = await api('POST', '/api/v1/feed/consumers/warehouse/commit', { cursor: items.body.next_cursor });
    assert.equal(committed.status, 200, JSON.stringify(committed.body));
    assert.equal(committed.body.lag_items, 2);

    await signIn(page, 'vera', VIEWER_PASSWORD, '/feed');
    await hydrated(page);
    const row = page.getByTestId('feed-consumer').filter({ hasText: 'warehouse' });
    await row.waitFor();
    assert.equal(await row.getByTestId('feed-behind').innerText(), '2 items');
    assert.match(await row.innerText(), /feed-orders; every type/);
    assert.match(await row.innerText(), /token feed-loader/);
    await page.screenshot({ path: `${shots}feed-desktop.png`, fullPage: true });

    const phone = await browser().newContext({ viewport: { width: 390, height: 844 } });
    const small = await phone.newPage();
    await signIn(small, 'vera', VIEWER_PASSWORD, '/feed');
    await small.getByTestId('feed-consumer').first().waitFor();
    const overflow = await small.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no sideways scroll at 390 px (${overflow} px over)`);
    await small.screenshot({ path: `${shots}feed-phone.png`, fullPage: true });
    await phone.close();
  });
}
