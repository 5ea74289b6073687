// A real, certified OpenID Provider (the npm package oidc-provider) on loopback, for the tests of
// single sign-on: the Rust tests (server/tests/it/oidc) and the browser journey start one each.
//
// Environment: OIDC_PORT (it listens on 127.0.0.1), OIDC_REDIRECT_URI (hookbox's callback),
// OIDC_CLIENT_SECRET, OIDC_ACCOUNTS (a JSON file { "alice": { "email": …, "groups": [...] } },
// read at every sign-in so a test can move a person between groups). Its own sign-in page takes
// any password for a name in the file. It prints "ready" once it listens.
import Provider from 'oidc-provider';
import { readFileSync } from 'node:fs';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const accounts = () => JSON.parse(readFileSync(process.env.OIDC_ACCOUNTS, 'utf8'));

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'hookbox',
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    profile: ['preferred_username'],
    email: ['email'],
    groups: ['groups'],
  },
  cookies: { keys: ['a key for this test provider only'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const account = accounts()[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, email: account.email, groups: account.groups };
      },
    };
  },
  // hookbox is a first-party client: no consent screen.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid profile email groups');
    await grant.save();
    return grant;
  },
});
provider.listen(port, '127.0.0.1', () => console.log('ready'));
