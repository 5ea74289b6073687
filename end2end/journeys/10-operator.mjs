// The operator's day: the source "billing" maps its snapshot to a field its sender does not
// send, so its deliveries fail; /problems shows them as two causes, not five rows. The operator
// fixes the mapping, bulk-replays the source's failed deliveries: those the fix helps are
// replayed and resolved (each links its replay), the others are left out and said so; the
// overview's open-failure count goes down and the fixed cause leaves /problems. Then the operator
// makes an API token for a support tool on /tokens, sees it once, and revokes it.

export function sources(fixed) {
  return `
[[sources]]
name = "billing"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]
snapshot = "${fixed ? '/data' : '/snapshot'}"
`;
}

export default function ({ test, assert, base, sendExpectingFailure, signIn, hydrated, fix, shots, browser, ADMIN_PASSWORD }) {
  // The billing rows of /problems: class → count.
  async function billingGroups(page) {
    await page.goto(base + '/problems');
    await hydrated(page);
    await page.getByTestId('problems-summary').waitFor();
    const rows = page.locator('[data-testid="problem-row"][data-source="billing"]');
    const groups = {};
    for (let i = 0; i < (await rows.count()); i += 1) {
      const row = rows.nth(i);
      groups[await row.getByTestId('problem-class').innerText()] = Number(await row.getByTestId('problem-count').innerText());
    }
    return groups;
  }
  // The overview's open failures (0 when the panel says there are none).
  async function openFailures(page) {
    await page.goto(base + '/');
    await hydrated(page);
    await page.getByTestId('open-problems').waitFor();
    const count = page.getByTestId('open-failure-count');
    return (await count.count()) ? Number((await count.innerText()).match(/\d+/)[0]) : 0;
  }

  let before;
  test('five failures of a broken source are two problems on /problems', async (page) => {
    for (const i of [1, 2, 3]) {
      assert.match(sendExpectingFailure('billing', { event_id: `inv-${i}`, object_id: `invoice-${i}`, revision: i, data: { amount: i * 100 } }), /snapshot \(\/snapshot\) is missing/);
    }
    for (const i of [4, 5]) {
      assert.match(sendExpectingFailure('billing', { event_id: `inv-${i}`, object_id: `invoice-${i}`, revision: 'three', data: { amount: 1 } }), /must be a JSON integer/);
    }
    await signIn(page, 'admin', ADMIN_PASSWORD, '/problems');
    assert.deepEqual(await billingGroups(page), {
      'snapshot (/snapshot) is missing': 3,
      'revision (/revision) must be a JSON integer': 2,
    });
    const row = page.locator('[data-testid="problem-row"][data-source="billing"]').filter({ hasText: 'snapshot (/snapshot) is missing' });
    assert.equal(await row.getByTestId('problem-acknowledged').count(), 1, 'an operator can acknowledge it');
    // The group's failed list: these three, each with its error.
    await row.getByTestId('problem-count').click();
    await page.waitForURL(/class=/);
    await hydrated(page);
    assert.equal(await page.getByTestId('event-row').count(), 3);
    assert.match(await page.getByTestId('event-error').first().innerText(), /snapshot \(\/snapshot\) is missing/);
    await page.screenshot({ path: `${shots}problems-before-desktop.png`, fullPage: true });
    before = await openFailures(page);
    assert.ok(before >= 5, `the overview counts the five open failures (${before})`);
  });

  test('after the fix, a bulk replay resolves the failures it can and the problem group is gone', async (page) => {
    await fix('10-operator');
    await signIn(page, 'admin', ADMIN_PASSWORD, '/events?status=failed&source=billing');
    await hydrated(page);
    await page.getByTestId('bulk-dry-run').click();
    const dry = page.getByTestId('bulk-dry-run-result');
    await dry.waitFor();
    const text = await dry.innerText();
    assert.match(text, /^5 failed deliveries match \(source billing, status failed\)\. Would be: applied: 3; skipped 2: would fail the same way 2/, text);
    await page.getByLabel(/to replay 3 of the 5 failed deliveries of source billing, status failed/).fill('replay 3');
    await page.getByTestId('bulk-confirm').click();
    const result = page.getByTestId('bulk-result');
    await result.waitFor();
    assert.match(await result.innerText(), /^Replayed 3, skipped 2: would fail the same way 2\. Outcomes: applied: 3/);

    // The three are resolved, each linking its replay, which links back.
    await page.goto(base + '/events?status=failed&source=billing');
    await hydrated(page);
    const resolved = page.getByTestId('event-row').filter({ has: page.getByTestId('resolved-by') });
    assert.equal(await resolved.count(), 3, 'three failures show their replay');
    await resolved.first().getByRole('link', { name: /^inv-/ }).click();
    await page.getByTestId('resolved-by').waitFor();
    assert.match(await page.getByTestId('resolved-by').innerText(), /Resolved by replay #\d+/);
    await page.getByTestId('resolved-by').getByRole('link').click();
    await hydrated(page);
    // The link navigates in the page: the replay's fields replace the failure's once loaded.
    await page.locator('dl.fields', { hasText: 'Replay of' }).waitFor();
    assert.match(await page.locator('dl.fields').innerText(), /Replay of\s+delivery \d+ by admin/);

    assert.equal(await openFailures(page), before - 3, 'the overview\'s open failures went down by three');
    assert.deepEqual(await billingGroups(page), { 'revision (/revision) must be a JSON integer': 2 }, 'the fixed cause is gone');
    await page.screenshot({ path: `${shots}problems-after-desktop.png`, fullPage: true });
  });

  test('an operator adds a viewer token, sees it once, then revokes it; /tokens fits a phone', async (page) => {
    await signIn(page, 'admin', ADMIN_PASSWORD, '/tokens');
    await hydrated(page);
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    // An operator's top bar, with its Tokens link, is one line at 1280 px too.
    const brand = await page.locator('.topbar .brand').boundingBox();
    const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
    assert.ok(Math.abs(signOut.y - brand.y) < brand.height, `Sign out on the brand's line: ${JSON.stringify({ brand, signOut })}`);
    await page.getByLabel('Name', { exact: true }).fill('e2e-support-tool');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('checkbox', { name: 'demo', exact: true }).check();
    await page.getByTestId('add-token-submit').click();
    const shown = page.getByTestId('new-token-secret');
    await shown.waitFor();
    const secret = await shown.innerText();
    assert.match(secret, /^hbt_[A-Za-z0-9_-]{43}$/, secret);
    assert.match(await page.getByTestId('new-token').innerText(), /will not be shown again/);
    const row = page.locator('[data-testid="token-row"][data-name="e2e-support-tool"]');
    await row.waitFor();
    const api = (token) => fetch(base + '/api/v1/sources', { headers: { Authorization: `Bearer ${token}` } });
    const sources = await (await api(secret)).json();
    assert.deepEqual(sources.data.map((s) => s.name), ['demo'], 'the token sees its one source');
    await page.screenshot({ path: `${shots}tokens-desktop.png`, fullPage: true });

    // Reloaded: listed, its secret gone for good.
    await page.reload();
    await hydrated(page);
    await row.waitFor();
    assert.equal(await page.getByTestId('new-token').count(), 0, 'the secret is not shown again');
    assert.ok(!(await page.content()).includes(secret.slice(4)), 'nor anywhere in the page');
    const cells = await row.innerText();
    assert.match(cells, /viewer/);
    assert.match(cells, /demo/);
    assert.equal(await row.getAttribute('data-state'), 'live');

    // Revoked after the confirmation: the page says so and the API refuses it.
    await row.getByTestId('revoke').click();
    assert.match(await row.getByTestId('revoke-question').innerText(), /Revoke e2e-support-tool\?/);
    await row.getByTestId('confirm-revoke').click();
    await page.locator('[data-testid="token-row"][data-name="e2e-support-tool"][data-state="revoked"]').waitFor();
    assert.match(await row.getByTestId('token-state').innerText(), /revoked/);
    assert.equal(await row.getByTestId('revoke').count(), 0, 'a revoked token has no Revoke');
    assert.equal((await api(secret)).status, 401);
    await page.goto(base + '/audit?action=revoke_token');
    assert.match(await page.getByTestId('audit-row').first().innerText(), /admin\s+revoke_token\s+e2e-support-tool/);

    const phone = await browser().newContext({ viewport: { width: 390, height: 844 } });
    try {
      const small = await phone.newPage();
      await signIn(small, 'admin', ADMIN_PASSWORD, '/tokens');
      await small.getByTestId('tokens-table').waitFor();
      await small.waitForLoadState('networkidle');
      const [scroll, client] = await small.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      assert.ok(scroll <= client, `/tokens: ${scroll} px wide on a ${client} px screen`);
      await small.screenshot({ path: `${shots}tokens-phone.png`, fullPage: true });
    } finally {
      await phone.close();
    }
  });
}
