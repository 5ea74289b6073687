// Confirms vectors with the providers' official npm libraries (pinned in package.json):
// linear.json with @linear/sdk, discord.json with discord-interactions, sendgrid.json with
// @sendgrid/eventwebhook, square.json with square, github-form.json with @octokit/webhooks-methods. Exit status 0 iff every library verdict
// equals the vector's `expect`, except where the library checks no timestamp age (Discord,
// SendGrid): those stale vectors are hookbox's own tolerance rule and are reported as skipped.
//
//   cd app/tests/vectors/generate && npm install && node confirm.mjs [vectors-dir]
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { verifyKey } from 'discord-interactions';
import eventwebhook from '@sendgrid/eventwebhook';
import { WebhooksHelper } from 'square';
import { verify as octokitVerify } from '@octokit/webhooks-methods';

const dir = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const load = (f) => JSON.parse(readFileSync(join(dir, f), 'utf8'));
const header = (v, name) => {
  const k = Object.keys(v.headers).find((h) => h.toLowerCase() === name.toLowerCase());
  return k === undefined ? undefined : v.headers[k];
};
const secrets = (v) => v.secrets ?? [v.secret];
const keys = (v) => v.public_keys ?? [v.public_key];

const realNow = Date.now;
async function linear(v) {
  Date.now = () => v.now * 1000;
  try {
    return secrets(v).some((s) => {
      try {
        return new LinearWebhookClient(s).verify(Buffer.from(v.body, 'utf8'), header(v, 'Linear-Signature') ?? '');
      } catch {
        return false;
      }
    });
  } finally {
    Date.now = realNow;
  }
}

async function discord(v) {
  for (const k of keys(v)) {
    if (await verifyKey(v.body, header(v, 'X-Signature-Ed25519'), header(v, 'X-Signature-Timestamp'), k)) return true;
  }
  return false;
}

const { EventWebhook } = eventwebhook;
async function sendgrid(v) {
  const ew = new EventWebhook();
  return keys(v).some((k) => {
    const pem = k.includes('BEGIN PUBLIC KEY') ? k : `-----BEGIN PUBLIC KEY-----\n${k}\n-----END PUBLIC KEY-----`;
    try {
      return ew.verifySignature(ew.convertPublicKeyToECDSA(pem), v.body,
        header(v, 'X-Twilio-Email-Event-Webhook-Signature'), header(v, 'X-Twilio-Email-Event-Webhook-Timestamp'));
    } catch {
      return false;
    }
  });
}

async function square(v) {
  for (const s of secrets(v)) {
    if (await WebhooksHelper.verifySignature({ requestBody: v.body, signatureHeader: header(v, 'x-square-hmacsha256-signature'),
      signatureKey: s, notificationUrl: v.url })) return true;
  }
  return false;
}

async function githubForm(v) {
  for (const s of secrets(v)) {
    if (await octokitVerify(s, v.body, header(v, 'X-Hub-Signature-256'))) return true;
  }
  return false;
}

// Age of the timestamp, for the libraries that check none.
const age = (v, h) => v.now - Number(header(v, h));
const checks = [
  ['linear.json', '@linear/sdk', linear, () => false],
  ['discord.json', 'discord-interactions', discord, (v) => Math.abs(age(v, 'X-Signature-Timestamp')) > 300],
  ['sendgrid.json', '@sendgrid/eventwebhook', sendgrid, (v) => Math.abs(age(v, 'X-Twilio-Email-Event-Webhook-Timestamp')) > 300],
  ['square.json', 'square', square, () => false],
  ['github-form.json', '@octokit/webhooks-methods', githubForm, () => false],
];

let bad = 0;
for (const [file, lib, check, ageOnly] of checks) {
  let ok = 0;
  let skipped = 0;
  for (const v of load(file)) {
    const got = (await check(v)) ? 'valid' : 'invalid';
    if (got === v.expect) ok += 1;
    else if (got === 'valid' && ageOnly(v)) skipped += 1;
    else {
      bad += 1;
      console.log(`MISMATCH ${file}: ${v.name}: ${lib} says ${got}, vector says ${v.expect}`);
    }
  }
  console.log(`${file}: ${ok} agree with ${lib}, ${skipped} skipped (stale: the library checks no age)`);
}
console.log(bad ? `${bad} MISMATCHES` : 'ALL OK');
process.exit(bad ? 1 : 0);
