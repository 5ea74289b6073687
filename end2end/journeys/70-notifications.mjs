// The on-call channel: the source "alerts" fails every delivery, so its cause opens a problem and
// hookbox tells the Slack channel "ops-chat". The channel's webhook is down at first: the overview
// says the channel is failing, how many messages wait and its last answer, at desktop and phone
// widths. Once the webhook takes messages again, the waiting message is sent (once) and the
// overview's panel is gone.
import { createServer } from 'node:http';

// The channel's incoming webhook: records each message; answers 503 while it is down.
const channel = { down: true, got: [] };
const channelPort = await new Promise((resolve) => {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      channel.got.push(body);
      res.statusCode = channel.down ? 503 : 200;
      res.end(channel.down ? 'channel unavailable' : 'ok');
    });
  }).listen(0, '127.0.0.1', () => resolve(s.address().port));
  s.unref();
});

export function sources() {
  return `
[[sources]]
name = "alerts"
scheme = "hmac-sha256"
secrets_env = ["DEMO_SECRET"]
snapshot = "/state"

[[notifications]]
name = "ops-chat"
kind = "slack"
url_env = "E2E_SLACK_URL"
sources = ["alerts"]
min_interval_secs = 0
`;
}

export default function ({ test, assert, env, base, sendExpectingFailure, signIn, hydrated, eventually, shots, browser, ADMIN_PASSWORD }) {
  // Read by hookbox when it starts (every start of this run).
  env.E2E_SLACK_URL = `http://127.0.0.1:${channelPort}/services/T000/B000/e2e`;
  const failing = (page) => page.locator('[data-testid="failing-channel"][data-name="ops-chat"]');

  test('a failing chat channel shows on the overview, then clears once it takes the message', async (page) => {
    assert.match(sendExpectingFailure('alerts', { event_id: 'al-1', object_id: 'pager-1', revision: 1, data: {} }), /snapshot \(\/state\) is missing/);
    await signIn(page, 'admin', ADMIN_PASSWORD, '/');
    await eventually(page, '/', async (p) => (await failing(p).count()) === 1, 'the channel listed as failing');
    const text = await failing(page).innerText();
    assert.match(text, /ops-chat: 1 message waits since/);
    assert.match(text, /last attempt: answered 503/);
    assert.match(text, /hookbox notify test ops-chat/);
    assert.doesNotMatch(text, /services\/T000/, 'never the channel URL');
    assert.ok(channel.got.length >= 1, 'the channel was tried');
    assert.match(JSON.parse(channel.got[0]).text, /alerts/);

    for (const [label, width, height] of [['desktop', 1280, 900], ['phone', 390, 844]]) {
      const context = await browser().newContext({ viewport: { width, height } });
      try {
        const shot = await context.newPage();
        await signIn(shot, 'admin', ADMIN_PASSWORD, '/');
        await hydrated(shot);
        await failing(shot).waitFor();
        await shot.waitForLoadState('networkidle');
        const [scroll, client] = await shot.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
        assert.ok(scroll <= client, `${label}: the overview fits its width (${scroll} > ${client})`);
        await shot.getByTestId('failing-channels').screenshot({ path: `${shots}notifications-failing-${label}.png` });
      } finally {
        await context.close();
      }
    }

    // The webhook is back: the message is sent at its next attempt (10 s after the first).
    channel.down = false;
    const tried = channel.got.length;
    await eventually(page, '/', async (p) => (await failing(p).count()) === 0, 'the panel gone once the message was taken');
    assert.equal(channel.got.length, tried + 1, 'one message, sent once');
    assert.match(JSON.parse(channel.got[tried]).text, /alerts/);
  });
}
