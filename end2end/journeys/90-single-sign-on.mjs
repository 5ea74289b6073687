// Single sign-on: the company's OpenID Provider (the certified npm `oidc-provider`, on loopback)
// signs people in. Sam, in the operators' group, signs in through it from /login, lands on the
// page he asked for and finds himself on /users as a user of single sign-on; Nora, in no group
// hookbox knows, is sent back to /login with a sentence that says why.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const providerPort = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});
const issuer = `http://127.0.0.1:${providerPort}`;
const accounts = join(mkdtempSync(join(tmpdir(), 'hookbox-oidc-')), 'accounts.json');
writeFileSync(accounts, JSON.stringify({
  sam: { email: 'sam@example.com', groups: ['hookbox-operators'] },
  nora: { email: 'nora@example.com', groups: ['marketing'] },
}));
let publicUrl;
let provider;

export function sources() {
  return `
[server]
public_url = "${publicUrl}"

[auth.oidc]
issuer = "${issuer}"
client_id = "hookbox"
client_secret_env = "E2E_OIDC_SECRET"
scopes = ["openid", "profile", "email", "groups"]
role_claim = "groups"
operator_values = ["hookbox-operators"]
viewer_values = ["support"]
`;
}

async function providerReady() {
  for (let i = 0; i < 100; i += 1) {
    try { if ((await fetch(`${issuer}/.well-known/openid-configuration`)).ok) return; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the OpenID Provider did not start');
}

// Through the provider's own sign-in page, back to hookbox.
async function signInThroughProvider(page, base, name, next) {
  await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
  await page.getByTestId('sso-start').click();
  await page.locator('input[name="login"]').waitFor();
  await page.locator('input[name="login"]').fill(name);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
}

export default function ({ test, assert, env, base, hydrated, shots, browser }) {
  publicUrl = base;
  env.E2E_OIDC_SECRET = 'e2e-oidc-client-secret';
  const script = new URL('../oidc-provider.mjs', import.meta.url).pathname;
  provider = spawn(process.execPath, [script], {
    env: {
      ...process.env,
      OIDC_PORT: String(providerPort),
      OIDC_REDIRECT_URI: `${base}/auth/oidc/callback`,
      OIDC_CLIENT_SECRET: env.E2E_OIDC_SECRET,
      OIDC_ACCOUNTS: accounts,
    },
    stdio: 'ignore',
  });
  provider.unref();
  process.on('exit', () => provider.kill());

  test('an operator signs in through the company provider and is listed as a user of single sign-on', async (page) => {
    await providerReady();
    await signInThroughProvider(page, base, 'sam', '/events?status=failed');
    await page.waitForURL(/\/events\?status=failed$/);
    await page.getByTestId('who').waitFor();
    assert.match(await page.getByTestId('who').innerText(), /sam · operator/);
    await page.goto(`${base}/users`);
    await hydrated(page);
    const row = page.getByTestId('user-row').filter({ hasText: 'sam' });
    await row.waitFor();
    assert.match(await row.innerText(), /sam\s+operator\s+single sign-on/);
    // At 1280 px the operator's top bar (Tokens, Users) stays one line.
    const brand = await page.locator('.topbar .brand').boundingBox();
    const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
    assert.ok(Math.abs(signOut.y - brand.y) < brand.height, `Sign out on the brand's line: ${JSON.stringify({ brand, signOut })}`);
    // On a phone, the sign-in page and /users fit the screen.
    const phone = await browser().newContext({ viewport: { width: 390, height: 844 } });
    try {
      const small = await phone.newPage();
      await small.goto(`${base}/login?sso=no-role`);
      await small.getByTestId('sso-start').waitFor();
      await signInThroughProvider(small, base, 'sam', '/users');
      await small.waitForURL(/\/users$/);
      await small.getByTestId('user-row').first().waitFor();
      for (const path of ['/users', '/login?sso=failed']) {
        await small.goto(base + path);
        await small.waitForLoadState('networkidle');
        const [scroll, client] = await small.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
        assert.ok(scroll <= client, `${path} is ${scroll} px wide on a ${client} px screen`);
        await small.screenshot({ path: `${shots}${path === '/users' ? 'users' : 'login-sso'}-phone.png`, fullPage: true });
      }
    } finally {
      await phone.close();
    }
  });

  test('someone in no group hookbox knows is refused and told why, with no session', async (page) => {
    await providerReady();
    await signInThroughProvider(page, base, 'nora', '/');
    await page.waitForURL(/\/login\?sso=no-role$/);
    const said = page.getByTestId('sso-failure');
    await said.waitFor();
    assert.match(await said.innerText(), /not in a group that may use hookbox/);
    await page.goto(`${base}/events`);
    await page.waitForURL(/\/login\?next=/);
    await page.screenshot({ path: `${shots}login-sso-refused-desktop.png`, fullPage: true });
  });
}
