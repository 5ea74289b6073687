#!/usr/bin/env python3
"""Regenerates the provider-preset vector files of app/tests/vectors/ (issue 24).

Run (see generate/README.md):
    python3 -m venv /tmp/vectors-venv
    /tmp/vectors-venv/bin/pip install -r app/tests/vectors/generate/requirements.txt
    /tmp/vectors-venv/bin/python app/tests/vectors/generate/generate.py
    (cd app/tests/vectors/generate && npm ci && node confirm.mjs)   # npm libraries confirm

Each provider function returns its vectors. A vector is produced in one of three ways, and its
`source` says which:
  * taken verbatim from the provider library's test fixtures (no prefix);
  * signed with the provider's own library where it has a sign/compute function ("COMPUTED: ...
    with <library>");
  * computed here with hmac/hashlib or `cryptography` from the provider's documentation
    ("COMPUTED: ..."), then - where the provider publishes a verify function - confirmed by it.
Every vector whose provider has an official verify function is run through it before the file
is written (`confirm`), with the clock frozen at the vector's `now`; a disagreement aborts.

Secrets and keys below are test values made up for these files (or the fixtures' own).
"""
import base64
import contextlib
import datetime as dt
import hashlib
import hmac
import json
import os
import sys
import urllib.parse
from unittest import mock

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.dirname(HERE)

# A fixed clock for the vectors computed here: 2025-12-03T08:00:00Z.
NOW = 1764748800
PUBLIC_URL = "https://hooks.example.com"

MIRROR = {
    "sendgrid": "github.com/sendgrid/sendgrid-python@76788e70a76b:test/unit/test_eventwebhook.py",
    "square": "github.com/square/square-python-sdk@24302bac57d9:tests/integration/test_webhooks_helper.py",
    "hubspot": "github.com/HubSpot/hubspot-api-python@a2a528a97f4c:tests/spec/utils/test_signature.py",
    "razorpay": "github.com/razorpay/razorpay-python@b56ac018bf02:tests/test_client_utility.py",
    "razorpay_body": "github.com/razorpay/razorpay-python@b56ac018bf02:tests/mocks/fake_payment_authorized_webhook.json",
    "discord_js": "github.com/discord/discord-interactions-js@ed1794792cac:src/__tests__/utils/SharedTestUtils.ts",
    "stdwh_spec": "github.com/standard-webhooks/standard-webhooks@b2fa7b8719fb:spec/standard-webhooks.md",
    "linear": "github.com/linear/linear@8335e09a17dd:packages/sdk/src/webhooks/client.ts",
    "linear_test": "github.com/linear/linear@8335e09a17dd:packages/sdk/src/_tests/LinearWebhooks.test.ts",
    "twilio": "github.com/twilio/twilio-python@306691e793f4:tests/unit/test_request_validator.py",
}

DOCS = {
    "gitlab": "https://docs.gitlab.com/user/project/integrations/webhooks/ (Secret token, delivery headers)",
    "twilio": "https://www.twilio.com/docs/usage/webhooks/webhooks-security",
    "sendgrid": "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
    "discord": "https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers",
    "square": "https://developer.squareup.com/docs/webhooks/step3validate",
    "hubspot": "https://developers.hubspot.com/docs/api/webhooks/validating-requests (v3)",
    "intercom": "https://developers.intercom.com/docs/references/webhooks/webhook-models#signed-notifications",
    "linear": "https://linear.app/developers/webhooks#securing-webhooks",
    "zoom": "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events",
    "mailgun": "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
    "lemonsqueezy": "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
    "typeform": "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
    "calendly": "https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures",
    "vercel": "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
    "bitbucket": "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/#Secure-webhooks",
    "razorpay": "https://razorpay.com/docs/webhooks/validate-test/",
    "pagerduty": "https://developer.pagerduty.com/docs/webhooks/webhook-signatures/",
    "twitch": "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message",
    "sentry": "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/#sentry-hook-signature",
    "notion": "https://developers.notion.com/reference/webhooks#step-3-validating-event-payloads-recommended",
    "woocommerce": "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks (delivery: X-WC-Webhook-Signature, base64 HMAC-SHA256 of the payload)",
    "dropbox": "https://www.dropbox.com/developers/reference/webhooks#documentation",
    "asana": "https://developers.asana.com/docs/webhooks-guide#security",
    "resend": "https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests",
    "postmark": "https://postmarkapp.com/developer/webhooks/webhooks-overview#protecting-your-webhook-using-basic-http-authentication",
}


def lib_version(dist):
    from importlib.metadata import version

    return f"{dist}=={version(dist)}"


# ------------------------------------------------------------------ primitives
def mac(alg, key, msg):
    if isinstance(key, str):
        key = key.encode("utf-8")
    if isinstance(msg, str):
        msg = msg.encode("utf-8")
    return hmac.new(key, msg, getattr(hashlib, alg)).digest()


def hx(alg, key, msg):
    return mac(alg, key, msg).hex()


def b64(alg, key, msg):
    return base64.b64encode(mac(alg, key, msg)).decode()


def flip(body):
    """One byte changed: the first digit, or else the last letter, moves by one."""
    for i, c in enumerate(body):
        if c.isdigit():
            return body[:i] + ("0" if c == "9" else chr(ord(c) + 1)) + body[i + 1:]
    i = max(i for i, c in enumerate(body) if c.isalpha())
    c = body[i]
    return body[:i] + ("a" if c == "z" else "A" if c == "Z" else chr(ord(c) + 1)) + body[i + 1:]


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def vec(name, expect, source, **fields):
    v = {"name": name}
    v.update(fields)
    v["expect"] = expect
    v["source"] = source
    return v


def ed25519_key(seed_text):
    """A deterministic test key: the seed is SHA-256 of a label (never a real key)."""
    return ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed_text.encode()).digest())


def ed25519_pub(priv):
    return priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def p256_key(label):
    scalar = int.from_bytes(hashlib.sha256(label.encode()).digest(), "big") % (2**256 - 2**224 - 1)
    return ec.derive_private_key(scalar, ec.SECP256R1())


@contextlib.contextmanager
def frozen(now):
    """Freeze time.time() (and datetime.now in the libraries that use it) at `now`."""
    fixed = dt.datetime.fromtimestamp(now, tz=dt.timezone.utc)

    class FrozenDatetime(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed if tz else fixed.replace(tzinfo=None)

    with mock.patch("time.time", return_value=float(now)):
        patches = []
        for mod in ("hubspot.utils.signature", "standardwebhooks.webhooks", "svix.webhooks"):
            try:
                __import__(mod)
                p = mock.patch(f"{mod}.datetime", FrozenDatetime)
                p.start()
                patches.append(p)
            except (ImportError, AttributeError):
                pass
        try:
            yield
        finally:
            for p in patches:
                p.stop()


def confirm(provider, vectors, check, library):
    """Run each vector through the provider's own verify function; abort on a disagreement."""
    n = 0
    for v in vectors:
        if v.get("library_check") is False:
            continue
        with frozen(v.get("now", NOW)):
            try:
                got = bool(check(v))
            except Exception:  # the libraries raise on failure
                got = False
        want = v["expect"] == "valid"
        if got != want:
            sys.exit(f"{provider}: {v['name']}: {library} says {got}, vector says {v['expect']}")
        v.setdefault("checked_with", []).append(library)
        n += 1
    print(f"  {provider}: {n}/{len(vectors)} vectors confirmed by {library}")


def secrets_of(v):
    return v.get("secrets") or [v["secret"]]


# ------------------------------------------------------------------ GitLab (token)
def gitlab():
    token = "glwt-hookbox-test-token-3f9a"
    body = compact({
        "object_kind": "issue", "event_type": "issue",
        "user": {"id": 1, "name": "Administrator", "username": "root"},
        "project": {"id": 1, "name": "Gitlab Test", "path_with_namespace": "gitlabhq/gitlab-test"},
        "object_attributes": {"id": 301, "iid": 23, "title": "New API: create/update/delete file",
                              "state": "opened", "action": "open"},
    })
    h = {"Content-Type": "application/json", "X-Gitlab-Event": "Issue Hook", "X-Gitlab-Token": token,
         "X-Gitlab-Instance": "https://gitlab.example.com",
         "X-Gitlab-Webhook-UUID": "6d9b7c1e-5a3e-4f6e-9a0e-1c7c1f8e2b10",
         "X-Gitlab-Event-UUID": "0f3c6a2d-8b5e-4c1a-9d7f-2e4b6a8c0d12",
         "Idempotency-Key": "a7b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d",
         "User-Agent": "GitLab/17.6.0"}
    src = "COMPUTED: token scheme per " + DOCS["gitlab"]
    wrong = dict(h, **{"X-Gitlab-Token": token + "x"})
    missing = {k: val for k, val in h.items() if k != "X-Gitlab-Token"}
    return [
        vec("token-matches", "valid", src, secret=token, headers=h, body=body),
        vec("token-second-secret", "valid", "DERIVED: two secrets configured, the second is the token",
            secrets=["glwt-old-rotated-token", token], headers=h, body=body),
        vec("body-changed-token-still-matches", "valid",
            "DERIVED: one body byte changed; a token does not sign the body, so GitLab's own check passes",
            secret=token, headers=h, body=flip(body)),
        vec("wrong-token", "invalid", "DERIVED: X-Gitlab-Token has one extra character", secret=token,
            headers=wrong, body=body),
        vec("wrong-secret", "invalid", "DERIVED: the configured secret differs", secret="another-token",
            headers=h, body=body),
        vec("token-missing", "invalid", "DERIVED: no X-Gitlab-Token header", secret=token, headers=missing,
            body=body),
        vec("token-prefix-only", "invalid", "DERIVED: the header holds a prefix of the token",
            secret=token, headers=dict(h, **{"X-Gitlab-Token": token[:-1]}), body=body),
    ]


# ------------------------------------------------------------------ Twilio (extends twilio.json)
def twilio_extra():
    from twilio.request_validator import RequestValidator

    token = "hookbox-twilio-auth-token-0123456789abcdef"[:32]
    url = PUBLIC_URL + "/hooks/twilio"
    params = [("AccountSid", "AC00000000000000000000000000000000"), ("Body", "Hello from hookbox ✓"),
              ("From", "+14155550100"), ("MessageSid", "SM11111111111111111111111111111111"),
              ("NumMedia", "0"), ("To", "+14155550199")]
    body = urllib.parse.urlencode(params)
    pdict = {}
    for k, val in params:
        pdict.setdefault(k, []).append(val)
    rv = RequestValidator(token)
    sig = rv.compute_signature(url, {k: val[0] for k, val in pdict.items()})
    lib = lib_version("twilio")
    src = f"COMPUTED: RequestValidator.compute_signature of {lib} over public_url + /hooks/twilio and the form"
    hdr = {"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": sig}
    out = [
        vec("hookbox-public-url-form", "valid", src, secret=token, headers=hdr, body=body, url=url, params=pdict),
        vec("hookbox-second-secret", "valid", "DERIVED: two auth tokens configured, the second signed",
            secrets=["0" * 32, token], headers=hdr, body=body, url=url, params=pdict),
        vec("hookbox-wrong-secret", "invalid", "DERIVED: another auth token", secret="f" * 32, headers=hdr,
            body=body, url=url, params=pdict),
        vec("hookbox-url-without-public-url", "invalid",
            "DERIVED: verified against the proxy-side URL http://127.0.0.1:8080/hooks/twilio instead of public_url",
            secret=token, headers=hdr, body=body, url="http://127.0.0.1:8080/hooks/twilio", params=pdict),
        vec("hookbox-signature-missing", "invalid", "DERIVED: no X-Twilio-Signature header", secret=token,
            headers={"Content-Type": "application/x-www-form-urlencoded"}, body=body, url=url, params=pdict),
    ]
    tampered = [(k, ("1" if k == "NumMedia" else val)) for k, val in params]
    tp = {}
    for k, val in tampered:
        tp.setdefault(k, []).append(val)
    out.append(vec("hookbox-form-byte-changed", "invalid", "DERIVED: NumMedia 0 -> 1 (one byte)", secret=token,
                   headers=hdr, body=urllib.parse.urlencode(tampered), url=url, params=tp))
    # HMAC-SHA256 with a SharedKey secret, announced by X-Twilio-Webhooks-Signature-Settings.
    shared = "webhooks_sharedkey_hookboxtest0123456789"
    sig256 = rv.__class__(shared).compute_signature(url, {k: val[0] for k, val in pdict.items()}, "HMAC_SHA256")
    h256 = {"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": sig256,
            "X-Twilio-Webhooks-Signature-Settings": "key=webhooks_sharedkey_hookbox,algorithm=HMAC_SHA256"}
    out.append(vec("hookbox-sharedkey-hmac-sha256", "valid",
                   f"COMPUTED: compute_signature(..., 'HMAC_SHA256') of {lib} (SharedKey signing; algorithm named in X-Twilio-Webhooks-Signature-Settings)",
                   secret=shared, headers=h256, body=body, url=url, params=pdict))
    out.append(vec("hookbox-sharedkey-sha1-header-mismatch", "invalid",
                   "DERIVED: the SHA-256 signature with the settings header removed (verified as HMAC-SHA1)",
                   secret=shared, headers={k: val for k, val in h256.items() if "Settings" not in k}, body=body,
                   url=url, params=pdict))
    return out


def twilio_check(v):
    from twilio.request_validator import RequestValidator, get_signature_algorithm

    h = {k.lower(): val for k, val in v["headers"].items()}
    sig = h.get("x-twilio-signature")
    if not sig:
        return False
    alg = get_signature_algorithm(h.get("x-twilio-webhooks-signature-settings"))
    url = v["url"]
    if "bodySHA256" in url:
        params = v["body"]
    else:
        params = {k: val if len(val) > 1 else val[0] for k, val in v["params"].items()}

        class Multi(dict):
            def getall(self, k):
                val = dict.__getitem__(self, k)
                return val if isinstance(val, list) else [val]

        params = Multi(params)
    return any(RequestValidator(s).validate(url, params, sig, alg) for s in secrets_of(v))


# ------------------------------------------------------------------ SendGrid (ECDSA P-256)
def sendgrid():
    pk = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
    other = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA=="
    sig = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
    ts = "1600112502"
    payload = json.dumps([{
        "email": "hello@world.com", "event": "dropped", "reason": "Bounced Address",
        "sg_event_id": "ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA",
        "sg_message_id": "LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0",
        "smtp-id": "<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>", "timestamp": 1600112492,
    }], sort_keys=True, separators=(",", ":")) + "\r\n"
    H = "X-Twilio-Email-Event-Webhook-Signature"
    T = "X-Twilio-Email-Event-Webhook-Timestamp"
    f = MIRROR["sendgrid"]

    def hdr(s, t):
        return {"Content-Type": "application/json", H: s, T: t}

    out = [
        vec("fixture-valid", "valid", f"{f} (test_verify_valid_signature; body ends in \\r\\n)", public_key=pk,
            headers=hdr(sig, ts), body=payload, now=int(ts) + 10),
        vec("fixture-bad-key", "invalid", f"{f} (test_verify_bad_key)", public_key=other, headers=hdr(sig, ts),
            body=payload, now=int(ts) + 10),
        vec("fixture-bad-payload", "invalid", f"{f} (test_verify_bad_payload: body 'payload')", public_key=pk,
            headers=hdr(sig, ts), body="payload", now=int(ts) + 10),
        vec("fixture-bad-signature", "invalid", f"{f} (test_verify_bad_signature)", public_key=pk,
            headers=hdr("MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0=", ts),
            body=payload, now=int(ts) + 10),
        vec("fixture-body-byte-changed", "invalid", f"DERIVED: {f} body with one byte changed", public_key=pk,
            headers=hdr(sig, ts), body=flip(payload), now=int(ts) + 10),
        vec("fixture-timestamp-changed", "invalid", f"DERIVED: {f} with the timestamp header 1600112503",
            public_key=pk, headers=hdr(sig, "1600112503"), body=payload, now=int(ts) + 10),
        vec("fixture-second-key", "valid", f"DERIVED: {f}: two public keys configured, the second is the fixture's",
            public_keys=[other, pk], headers=hdr(sig, ts), body=payload, now=int(ts) + 10),
        vec("fixture-stale-301s", "invalid",
            f"DERIVED: {f} evaluated 301 s after its timestamp (hookbox's tolerance_secs = 300; SendGrid's library checks no age)",
            public_key=pk, headers=hdr(sig, ts), body=payload, now=int(ts) + 301, library_check=False),
    ]
    # Our own key pair: SendGrid shows the public key as base64 DER (SubjectPublicKeyInfo).
    priv = p256_key("hookbox sendgrid test key")
    pub = base64.b64encode(priv.public_key().public_bytes(serialization.Encoding.DER,
                                                           serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
    body = compact([
        {"email": "example@test.com", "timestamp": NOW - 5, "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
         "event": "delivered", "category": "cat facts", "sg_event_id": "rbtnWrG1DVDGGGFHFyun0A==",
         "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0", "response": "250 OK"},
        {"email": "example@test.com", "timestamp": NOW - 4, "event": "open", "sg_event_id": "FOTFFO0ecsBE-zxFXfs6WA==",
         "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0", "useragent": "Mozilla/4.0"},
    ]) + "\r\n"
    t2 = str(NOW - 2)
    s2 = base64.b64encode(priv.sign((t2 + body).encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True))).decode()
    src = "COMPUTED: ECDSA P-256/SHA-256 (RFC 6979) of timestamp + body with a test key, per " + DOCS["sendgrid"]
    out += [
        vec("own-key-batch-valid", "valid", src, public_key=pub, headers=hdr(s2, t2), body=body, now=NOW),
        vec("own-key-batch-byte-changed", "invalid", "DERIVED: own-key-batch-valid, one body byte changed",
            public_key=pub, headers=hdr(s2, t2), body=flip(body), now=NOW),
        vec("own-key-verified-with-fixture-key", "invalid", "DERIVED: own-key-batch-valid against the fixture key",
            public_key=pk, headers=hdr(s2, t2), body=body, now=NOW),
        vec("own-key-pem", "valid",
            "DERIVED: own-key-batch-valid with the key configured as PEM (hookbox accepts both forms)",
            public_key="-----BEGIN PUBLIC KEY-----\n" + pub + "\n-----END PUBLIC KEY-----\n", headers=hdr(s2, t2),
            body=body, now=NOW, library_check=False),
        vec("own-key-stale-1h", "invalid", "DERIVED: own-key-batch-valid evaluated one hour later", public_key=pub,
            headers=hdr(s2, t2), body=body, now=NOW + 3600, library_check=False),
    ]
    return out


def sendgrid_check(v):
    from sendgrid import EventWebhook

    h = {k.lower(): val for k, val in v["headers"].items()}
    keys = v.get("public_keys") or [v["public_key"]]
    return any(EventWebhook(k).verify_signature(v["body"], h["x-twilio-email-event-webhook-signature"],
                                                h["x-twilio-email-event-webhook-timestamp"]) for k in keys)


# ------------------------------------------------------------------ Discord (ed25519)
def discord():
    priv = ed25519_key("hookbox discord test application key")
    pub = ed25519_pub(priv).hex()
    other = ed25519_pub(ed25519_key("another discord application")).hex()
    ping = json.dumps({"id": "787053080478613555", "token": "ThisIsATokenFromDiscordThatIsVeryLong", "type": 1,
                       "version": 1}, separators=(",", ":"))
    command = compact({"id": "787053080478613556", "token": "ThisIsATokenFromDiscordThatIsVeryLong", "type": 2,
                       "version": 1, "data": {"id": "787053080478613554", "name": "test"}})
    ts = str(NOW)

    def signed(body, t=ts, key=priv):
        return {"Content-Type": "application/json", "X-Signature-Ed25519": key.sign((t + body).encode()).hex(),
                "X-Signature-Timestamp": t}

    src = ("COMPUTED: ed25519 of X-Signature-Timestamp + body with a test key, bodies from "
           f"{MIRROR['discord_js']}, per {DOCS['discord']}")
    return [
        vec("ping-valid", "valid", src, public_key=pub, headers=signed(ping), body=ping, now=NOW),
        vec("application-command-valid", "valid", src, public_key=pub, headers=signed(command), body=command, now=NOW),
        vec("ping-byte-changed", "invalid", "DERIVED: ping-valid with one body byte changed", public_key=pub,
            headers=signed(ping), body=flip(ping), now=NOW),
        vec("ping-timestamp-changed", "invalid", "DERIVED: ping-valid with X-Signature-Timestamp + 1",
            public_key=pub, headers=dict(signed(ping), **{"X-Signature-Timestamp": str(NOW + 1)}), body=ping, now=NOW),
        vec("ping-other-application-key", "invalid", "DERIVED: ping-valid against another application's key",
            public_key=other, headers=signed(ping), body=ping, now=NOW),
        vec("ping-second-key", "valid", "DERIVED: two public keys configured, the second signed",
            public_keys=[other, pub], headers=signed(ping), body=ping, now=NOW),
        vec("ping-signature-uppercase-hex", "valid",
            "DERIVED: ping-valid with the signature in upper-case hex (hex decoding is case-insensitive)",
            public_key=pub, headers=dict(signed(ping), **{"X-Signature-Ed25519": signed(ping)["X-Signature-Ed25519"].upper()}),
            body=ping, now=NOW),
        vec("ping-stale-301s", "invalid",
            "DERIVED: ping-valid evaluated 301 s later (hookbox's tolerance_secs = 300; Discord's libraries check no age)",
            public_key=pub, headers=signed(ping), body=ping, now=NOW + 301, library_check=False),
        vec("ping-exactly-300s", "valid", "DERIVED: ping-valid evaluated 300 s later (the boundary is accepted)",
            public_key=pub, headers=signed(ping), body=ping, now=NOW + 300),
    ]


def discord_check(v):
    from discord_interactions import verify_key

    h = {k.lower(): val for k, val in v["headers"].items()}
    keys = v.get("public_keys") or [v["public_key"]]
    with contextlib.redirect_stdout(open(os.devnull, "w")):
        return any(verify_key(v["body"].encode(), h["x-signature-ed25519"], h["x-signature-timestamp"], k)
                   for k in keys)


# ------------------------------------------------------------------ Standard Webhooks v1a (ed25519)
def standard_webhooks_v1a():
    from standardwebhooks.webhooks import Webhook

    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    msg_id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    body = '{"test": 2432232314}'
    ts = NOW
    priv = ed25519_key("hookbox standard webhooks v1a test key")
    raw_pub = ed25519_pub(priv)
    whpk = "whpk_" + base64.b64encode(raw_pub).decode()
    whsk = "whsk_" + base64.b64encode(priv.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                                          serialization.NoEncryption())).decode()
    other_priv = ed25519_key("another v1a key")
    other_pk = "whpk_" + base64.b64encode(ed25519_pub(other_priv)).decode()
    signed = f"{msg_id}.{ts}.{body}".encode()
    v1a = "v1a," + base64.b64encode(priv.sign(signed)).decode()
    v1a_other = "v1a," + base64.b64encode(other_priv.sign(signed)).decode()
    v1 = Webhook(secret).sign(msg_id, dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc), body)
    lib = lib_version("standardwebhooks")

    def h(sig, t=ts, i=msg_id):
        return {"webhook-id": i, "webhook-timestamp": str(t), "webhook-signature": sig}

    src = (f"COMPUTED: ed25519 of '{{id}}.{{timestamp}}.{{body}}', base64, 'v1a,' entry, per {MIRROR['stdwh_spec']} "
           f"(Symmetric vs. asymmetric; no library verifies v1a); the test secret key is {whsk}")
    both = f"{v1} {v1a}"
    return [
        vec("v1a-only-valid", "valid", src, public_key=whpk, headers=h(v1a), body=body, now=NOW),
        vec("v1-and-v1a-verified-with-public-key", "valid",
            f"{src}; the v1 entry signed by {lib} Webhook.sign with the standardwebhooks test secret",
            public_key=whpk, headers=h(both), body=body, now=NOW),
        vec("v1-and-v1a-verified-with-secret", "valid",
            f"COMPUTED: same header; only the whsec_ secret configured: the v1 entry verifies ({lib} confirms)",
            secret=secret, headers=h(both), body=body, now=NOW),
        vec("v1-and-v1a-verified-with-both", "valid", "DERIVED: same header, secret and public key configured",
            secret=secret, public_key=whpk, headers=h(both), body=body, now=NOW),
        vec("v1a-signed-by-another-key", "invalid", "DERIVED: v1a entry signed with another ed25519 key",
            public_key=whpk, headers=h(v1a_other), body=body, now=NOW),
        vec("v1a-other-key-second-configured", "valid",
            "DERIVED: v1a-signed-by-another-key with both public keys configured (the second signed)",
            public_keys=[whpk, other_pk], headers=h(v1a_other), body=body, now=NOW),
        vec("v1a-entry-under-v1-label", "invalid",
            "DERIVED: the ed25519 signature labelled 'v1,' (a v1 entry is an HMAC; labels are not interchangeable)",
            public_key=whpk, headers=h("v1," + v1a[4:]), body=body, now=NOW),
        vec("v1-entry-under-v1a-label", "invalid", "DERIVED: the HMAC signature labelled 'v1a,'",
            secret=secret, public_key=whpk, headers=h("v1a," + v1[3:]), body=body, now=NOW),
        vec("v1a-body-byte-changed", "invalid", "DERIVED: v1a-only-valid, one body byte changed", public_key=whpk,
            headers=h(v1a), body=flip(body), now=NOW),
        vec("v1a-id-changed", "invalid", "DERIVED: v1a-only-valid with webhook-id msg_..Jel", public_key=whpk,
            headers=h(v1a, i=msg_id[:-1] + "l"), body=body, now=NOW),
        vec("v1a-stale-301s", "invalid", "DERIVED: v1a-only-valid evaluated 301 s later (tolerance 300 s, spec)",
            public_key=whpk, headers=h(v1a), body=body, now=NOW + 301),
        vec("v1a-future-301s", "invalid", "DERIVED: v1a-only-valid evaluated 301 s before its timestamp",
            public_key=whpk, headers=h(v1a), body=body, now=NOW - 301),
        vec("v1a-exactly-300s", "valid", "DERIVED: v1a-only-valid evaluated 300 s later", public_key=whpk,
            headers=h(v1a), body=body, now=NOW + 300),
        vec("v1a-only-but-only-secret-configured", "invalid",
            "DERIVED: a v1a-only header with only the whsec_ secret configured (nothing can verify it)",
            secret=secret, headers=h(v1a), body=body, now=NOW),
    ]


def stdwh_v1_check(v):
    """The reference library verifies v1 entries only; v1a vectors are confirmed with `cryptography`."""
    from standardwebhooks.webhooks import Webhook

    ok = False
    if v.get("secret"):
        try:
            Webhook(v["secret"]).verify(v["body"], v["headers"])
            ok = True
        except Exception:
            pass
    h = {k.lower(): val for k, val in v["headers"].items()}
    keys = v.get("public_keys") or ([v["public_key"]] if v.get("public_key") else [])
    ts = int(h["webhook-timestamp"])
    if abs(v["now"] - ts) <= 300:
        msg = f"{h['webhook-id']}.{ts}.{v['body']}".encode()
        for entry in h["webhook-signature"].split(" "):
            ver, _, sig = entry.partition(",")
            if ver != "v1a":
                continue
            for k in keys:
                try:
                    ed25519.Ed25519PublicKey.from_public_bytes(base64.b64decode(k[5:])).verify(base64.b64decode(sig), msg)
                    ok = True
                except Exception:
                    pass
    return ok


# ------------------------------------------------------------------ Square
def square():
    from square.utils.webhooks_helper import verify_signature

    f = MIRROR["square"]
    body = '{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}'
    sig = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
    key = "Ibxx_5AKakO-3qeNVR61Dw"
    url = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
    H = "x-square-hmacsha256-signature"

    def hd(s):
        return {"Content-Type": "application/json", H: s}

    formatted = """
        {
            "merchant_id": "MLEFBHHSJGVHD",
            "type": "webhooks.test_notification",
            "event_id": "ac3ac95b-f97d-458c-a6e6-18981597e05f",
            "created_at": "2022-07-13T20:30:59.037339943Z",
            "data": {
              "type": "webhooks",
              "id": "bc368e64-01aa-407e-b46e-3231809b1129"
            }
        }
        """
    out = [
        vec("fixture-valid", "valid", f"{f} (test_signature_validation_pass)", secret=key, headers=hd(sig), body=body,
            url=url),
        vec("fixture-escaped-valid", "valid", f"{f} (test_signature_validation_escaped_pass)", secret="signature-key",
            headers=hd("Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U="), body='{"data":{"type":"webhooks","id":">id<"}}',
            url="https://webhook.site/webhooks"),
        vec("fixture-url-mismatch", "invalid", f"{f} (test_signature_validation_url_mismatch)", secret=key,
            headers=hd(sig), body=body, url="https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9"),
        vec("fixture-invalid-signature-key", "invalid", f"{f} (test_signature_validation_invalid_signature_key)",
            secret="MCmhFRxGX82xMwg5FsaoQA", headers=hd(sig), body=body, url=url),
        vec("fixture-invalid-signature-header", "invalid", f"{f} (test_signature_validation_invalid_signature_header)",
            secret=key, headers=hd("1z2n3DEJJiUPKcPzQo1ftvbxGdw="), body=body, url=url),
        vec("fixture-body-formatted", "invalid", f"{f} (test_signature_validation_body_formatted)", secret=key,
            headers=hd(sig), body=formatted, url=url),
        vec("fixture-body-byte-changed", "invalid", "DERIVED: fixture-valid with one body byte changed", secret=key,
            headers=hd(sig), body=flip(body), url=url),
        vec("fixture-second-secret", "valid", "DERIVED: fixture-valid with two keys configured, the second signed",
            secrets=["MCmhFRxGX82xMwg5FsaoQA", key], headers=hd(sig), body=body, url=url),
    ]
    # hookbox's own URL: {public_url}/hooks/{source}.
    own_url = PUBLIC_URL + "/hooks/square"
    own_key = "hookbox-square-signature-key-Q1"
    own_body = compact({"merchant_id": "6SSW7HV8K2ST5", "type": "payment.updated",
                        "event_id": "13b867cf-db3d-4b1c-90b6-2f32a9d78124", "created_at": "2025-12-03T07:59:58Z",
                        "data": {"type": "payment", "id": "hYy9pRFVxpDsO1FB05SunFWUe9JZY",
                                 "object": {"payment": {"id": "hYy9pRFVxpDsO1FB05SunFWUe9JZY", "status": "COMPLETED",
                                                        "amount_money": {"amount": 100, "currency": "USD"}}}}})
    own_sig = b64("sha256", own_key, own_url + own_body)
    assert verify_signature(request_body=own_body, signature_header=own_sig, signature_key=own_key,
                            notification_url=own_url)
    out += [
        vec("hookbox-public-url-valid", "valid",
            f"COMPUTED: base64 HMAC-SHA256 of public_url + /hooks/square + body, per {DOCS['square']}", secret=own_key,
            headers=hd(own_sig), body=own_body, url=own_url),
        vec("hookbox-trailing-slash-url", "invalid", "DERIVED: hookbox-public-url-valid verified with a trailing '/'",
            secret=own_key, headers=hd(own_sig), body=own_body, url=own_url + "/"),
    ]
    return out


def square_check(v):
    from square.utils.webhooks_helper import verify_signature

    h = {k.lower(): val for k, val in v["headers"].items()}
    return any(verify_signature(request_body=v["body"], signature_header=h["x-square-hmacsha256-signature"],
                                signature_key=s, notification_url=v["url"]) for s in secrets_of(v))


# ------------------------------------------------------------------ HubSpot v3
def hubspot():
    from hubspot.utils.signature import Signature

    f = MIRROR["hubspot"]
    secret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"
    body = "{'example_field':'example_value'}"
    url = "https://www.example.com/webhook_uri"
    ts = "1693657560000"
    sig = "K36dawei4A+QBNolUOqo7s91KQDWQ5MXZ/QufNYuk/Y="
    now = int(ts) // 1000

    def hd(s, t):
        return {"Content-Type": "application/json", "X-HubSpot-Signature-v3": s, "X-HubSpot-Request-Timestamp": t}

    out = [
        vec("fixture-v3-valid", "valid", f"{f} (test_get_signature__v3; evaluated 10 s after its timestamp)",
            secret=secret, headers=hd(sig, ts), body=body, url=url, method="POST", now=now + 10),
        vec("fixture-v3-stale-301s", "invalid",
            f"DERIVED: {f} test_get_signature__v3 evaluated 301 s later (MAX_ALLOWED_TIMESTAMP = 300)",
            secret=secret, headers=hd(sig, ts), body=body, url=url, method="POST", now=now + 301),
        vec("fixture-v3-byte-changed", "invalid", "DERIVED: fixture-v3-valid, one body byte changed", secret=secret,
            headers=hd(sig, ts), body=flip(body), url=url, method="POST", now=now + 10),
        vec("fixture-v3-wrong-secret", "invalid", "DERIVED: fixture-v3-valid, secret ending in z", secret=secret[:-1] + "z",
            headers=hd(sig, ts), body=body, url=url, method="POST", now=now + 10),
        vec("fixture-v3-timestamp-changed", "invalid", "DERIVED: fixture-v3-valid, timestamp header + 1 ms",
            secret=secret, headers=hd(sig, str(int(ts) + 1)), body=body, url=url, method="POST", now=now + 10),
        vec("fixture-v3-second-secret", "valid", "DERIVED: fixture-v3-valid with two secrets, the second signed",
            secrets=["zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz", secret], headers=hd(sig, ts), body=body, url=url,
            method="POST", now=now + 10),
    ]
    lib = lib_version("hubspot-api-client")
    own_url = PUBLIC_URL + "/hooks/hubspot"
    own_secret = "8b1d9c3e-0f4a-4b6c-9d2e-7a5f3c1b0e98"
    own_body = compact([{"eventId": 1703257234, "subscriptionId": 2961011, "portalId": 62515, "appId": 1160452,
                         "occurredAt": (NOW - 3) * 1000, "subscriptionType": "contact.propertyChange", "attemptNumber": 0,
                         "objectId": 123456, "propertyName": "firstname", "propertyValue": "Ada",
                         "changeSource": "CRM_UI"}])
    own_ts = str((NOW - 2) * 1000)
    own_sig = Signature.get_signature(own_secret, own_body, "v3", own_url, "POST", own_ts)
    out += [
        vec("hookbox-public-url-valid", "valid",
            f"COMPUTED: Signature.get_signature(..., 'v3') of {lib} over POST + public_url/hooks/hubspot + body + timestamp",
            secret=own_secret, headers=hd(own_sig, own_ts), body=own_body, url=own_url, method="POST", now=NOW),
        vec("hookbox-method-get", "invalid", "DERIVED: hookbox-public-url-valid verified with method GET",
            secret=own_secret, headers=hd(own_sig, own_ts), body=own_body, url=own_url, method="GET", now=NOW),
        vec("hookbox-future-301s", "invalid",
            "DERIVED: hookbox-public-url-valid evaluated 301 s before its timestamp (hookbox rejects both directions; the library only checks age)",
            secret=own_secret, headers=hd(own_sig, own_ts), body=own_body, url=own_url, method="POST",
            now=NOW - 2 - 301, library_check=False),
    ]
    return out


def hubspot_check(v):
    from hubspot.utils.signature import Signature

    h = {k.lower(): val for k, val in v["headers"].items()}
    return any(Signature.is_valid(h["x-hubspot-signature-v3"], s, v["body"], v["url"], v["method"], "v3",
                                  h["x-hubspot-request-timestamp"]) for s in secrets_of(v))


# ------------------------------------------------------------------ plain body HMACs (no library)
def body_hmac(provider, alg, header, enc, prefix, secret, body, extra_headers, ts_header=None, ts_value=None,
              signed=None, now=NOW, tolerance=None, extra=(), ts_secs=None):
    """Vectors for `signature over the body (or a template)`: valid, second secret, byte changed, wrong secret,
    missing header, and a stale timestamp when the scheme has one. `signed(body, ts)` builds the signed bytes."""
    signed = signed or (lambda b, t: b)
    enc_fn = hx if enc == "hex" else b64

    def sig_for(s, b, t=ts_value):
        return prefix + enc_fn(alg, s, signed(b, t))

    def hd(sig, t=ts_value):
        h = dict(extra_headers)
        h[header] = sig
        if ts_header:
            h[ts_header] = str(t)
        return h

    src = f"COMPUTED: {'hex' if enc == 'hex' else 'base64'} HMAC-{alg.upper()} per {DOCS[provider]}"
    kw = {"now": now} if ts_header or tolerance else {}
    good = sig_for(secret, body)
    out = [
        vec("valid", "valid", src, secret=secret, headers=hd(good), body=body, **kw),
        vec("second-secret", "valid", "DERIVED: valid, with two secrets configured; the second signed",
            secrets=["an-old-rotated-secret", secret], headers=hd(good), body=body, **kw),
        vec("body-byte-changed", "invalid", "DERIVED: valid, with one body byte changed", secret=secret,
            headers=hd(good), body=flip(body), **kw),
        vec("wrong-secret", "invalid", "DERIVED: valid, verified with another secret", secret=secret + "x",
            headers=hd(good), body=body, **kw),
        vec("signature-missing", "invalid", "DERIVED: valid, without the signature header", secret=secret,
            headers={k: val for k, val in hd(good).items() if k != header}, body=body, **kw),
    ]
    out.append(vec("trailing-newline-added", "invalid", "DERIVED: valid, with '\\n' appended to the body (raw bytes)",
                   secret=secret, headers=hd(good), body=body + "\n", **kw))
    if prefix:
        out.append(vec("prefix-missing", "invalid", f"DERIVED: valid, without the '{prefix}' prefix", secret=secret,
                       headers=hd(good[len(prefix):]), body=body, **kw))
    if ts_header and tolerance:
        out += [
            vec(f"stale-{tolerance + 1}s", "invalid",
                f"DERIVED: valid, evaluated {tolerance + 1} s after its timestamp (tolerance {tolerance} s)",
                secret=secret, headers=hd(good), body=body, now=(ts_secs or now) + tolerance + 1),
            vec("timestamp-changed", "invalid", "DERIVED: valid, with the timestamp header changed and the same signature",
                secret=secret, headers=hd(good, ts_value + 1 if isinstance(ts_value, int) else ts_value + "x"),
                body=body, now=now),
        ]
    for e in extra:
        out.append(e(sig_for, hd, src))
    return out


def intercom():
    secret = "hookbox-intercom-client-secret"
    body = compact({"type": "notification_event", "app_id": "ab12cd34",
                    "data": {"type": "notification_event_data",
                             "item": {"type": "conversation", "id": "1911149811", "created_at": NOW - 10,
                                      "state": "open"}},
                    "links": {}, "id": "notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3",
                    "topic": "conversation.user.created", "delivery_status": "pending", "delivery_attempts": 1,
                    "delivered_at": 0, "first_sent_at": NOW - 5, "created_at": NOW - 6, "self": None})
    return body_hmac("intercom", "sha1", "X-Hub-Signature", "hex", "sha1=", secret, body,
                     {"Content-Type": "application/json", "User-Agent": "Intercom-Webhook/1.0"})


def linear():
    secret = "lin_wh_hookbox_test_secret_0123456789"
    ts_ms = (NOW - 1) * 1000
    body = compact({"action": "create", "type": "Comment",
                    "data": {"id": "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9", "createdAt": "2025-12-03T07:59:59.084Z",
                             "body": "Indeed, I think this is definitely an improvement over the previous version.",
                             "issueId": "539068e2-ae88-4d09-bd75-22eb4a59612f",
                             "userId": "aacdca22-6266-4c0a-ab3c-8fa70a26765c"},
                    "url": "https://linear.app/issue/LIN-1778/foo-bar#comment-77217de3",
                    "createdAt": "2025-12-03T07:59:59.084Z", "organizationId": "8f6a3c0e-2b1d-4e5f-9a7b-6c5d4e3f2a1b",
                    "webhookTimestamp": ts_ms, "webhookId": "000042e3-d123-4980-b49f-8e140eef9329"})
    extra = {"Content-Type": "application/json", "Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72",
             "Linear-Event": "Comment", "User-Agent": "Linear-Webhook"}
    out = body_hmac("linear", "sha256", "Linear-Signature", "hex", "", secret, body, extra,
                    ts_header="Linear-Timestamp", ts_value=ts_ms, now=NOW - 1, tolerance=60, ts_secs=NOW - 1)
    for v in out:
        if v["name"] == "timestamp-changed":
            # Linear signs only the body: a changed Linear-Timestamp header alone does not break the signature.
            v["expect"] = "valid"
            v["source"] = ("DERIVED: valid, Linear-Timestamp + 1 ms: Linear signs the body only, so the header is "
                           "not covered; webhookTimestamp in the signed body is what hookbox checks")
    out.append(vec("stale-61s-future", "invalid",
                   "DERIVED: valid, evaluated 61 s before webhookTimestamp (the SDK checks |now - ts| > 60 s)",
                   secret=secret, headers=dict(out[0]["headers"]), body=body, now=NOW - 1 - 61))
    nots = json.loads(body)
    del nots["webhookTimestamp"]
    nots = compact(nots)
    out.append(vec("body-without-webhookTimestamp", "invalid",
                   "DERIVED: a correctly signed body without webhookTimestamp (the SDK requires the signed timestamp)",
                   secret=secret, headers=dict(out[0]["headers"], **{"Linear-Signature": hx("sha256", secret, nots)}),
                   body=nots, now=NOW - 1))
    out.append(vec("exactly-60s", "valid", "DERIVED: valid, evaluated exactly 60 s after webhookTimestamp",
                   secret=secret, headers=dict(out[0]["headers"]), body=body, now=NOW - 1 + 60))
    for v in out:
        v["source"] += f"; {MIRROR['linear']} (verify, 60 s)"
    return out


def zoom():
    secret = "hookbox_zoom_secret_token_1234"
    ts = NOW - 1
    body = compact({"event": "meeting.started", "event_ts": (NOW - 1) * 1000,
                    "payload": {"account_id": "D8cJuqWVQ623CI4Q8yQK0Q",
                                "object": {"id": "85678901234", "uuid": "4444AAAiAAAAAiAiAiiAii==",
                                           "host_id": "x1yCzABCDEfg23HiJKl4mN", "topic": "My Meeting", "type": 2,
                                           "start_time": "2025-12-03T07:59:59Z", "timezone": "UTC",
                                           "duration": 60}}})
    out = body_hmac("zoom", "sha256", "x-zm-signature", "hex", "v0=", secret, body,
                    {"Content-Type": "application/json", "x-zm-trackingid": "v=2.0;clid=aw1;rid=WEB_1f2e3d"},
                    ts_header="x-zm-request-timestamp", ts_value=ts, signed=lambda b, t: f"v0:{t}:{b}", now=NOW,
                    tolerance=300, ts_secs=ts)
    plain = "qgg8vlvZRS6UYooatFL8Aw"
    cbody = compact({"payload": {"plainToken": plain}, "event_ts": (NOW - 1) * 1000, "event": "endpoint.url_validation"})
    csig = "v0=" + hx("sha256", secret, f"v0:{ts}:{cbody}")
    out.append(vec("url-validation-challenge", "valid",
                   "COMPUTED: a signed endpoint.url_validation; challenge_response is Zoom's required answer "
                   "{plainToken, encryptedToken = hex HMAC-SHA256(secret token, plainToken)}, as @zoom/rivet's "
                   "hashUrlValidationEvent computes it",
                   secret=secret, headers={"Content-Type": "application/json", "x-zm-signature": csig,
                                           "x-zm-request-timestamp": str(ts)},
                   body=cbody, now=NOW,
                   challenge_response={"plainToken": plain, "encryptedToken": hx("sha256", secret, plain)}))
    return out


def mailgun():
    key = "key-hookbox-mailgun-signing-0123456789"
    token = "2f8d4e6a0b1c3d5e7f9a1b3c5d7e9f0a2b4c6d8e0f1a2b3c4d"
    ts = str(NOW - 2)

    def body_for(t, tok, sig, status="delivered"):
        return compact({"signature": {"timestamp": t, "token": tok, "signature": sig},
                        "event-data": {"id": "CPgfbmQMTCKtHW6uIWtuVe", "timestamp": float(NOW - 3),
                                       "event": status, "recipient": "alice@example.com",
                                       "message": {"headers": {"message-id": "20251203075957.1.ABCDEF@mg.example.com"}},
                                       "delivery-status": {"code": 250, "message": "OK"}}})

    good = hx("sha256", key, ts + token)
    src = (f"COMPUTED: hex HMAC-SHA256 of signature.timestamp + signature.token (both in the JSON body), per "
           f"{DOCS['mailgun']}")
    H = {"Content-Type": "application/json"}
    b = body_for(ts, token, good)
    return [
        vec("valid", "valid", src, secret=key, headers=H, body=b, now=NOW),
        vec("second-secret", "valid", "DERIVED: valid with two signing keys, the second signed",
            secrets=["key-an-old-signing-key", key], headers=H, body=b, now=NOW),
        vec("event-data-changed-still-valid", "valid",
            "DERIVED: valid with event-data.event 'failed' instead of 'delivered': Mailgun signs only timestamp+token, "
            "never the event data", secret=key, headers=H, body=body_for(ts, token, good, "failed"), now=NOW),
        vec("token-byte-changed", "invalid", "DERIVED: valid with one byte of signature.token changed", secret=key,
            headers=H, body=body_for(ts, flip(token), good), now=NOW),
        vec("timestamp-changed", "invalid", "DERIVED: valid with signature.timestamp + 1", secret=key, headers=H,
            body=body_for(str(NOW - 1), token, good), now=NOW),
        vec("wrong-secret", "invalid", "DERIVED: valid verified with another key", secret=key + "x", headers=H,
            body=b, now=NOW),
        vec("stale-301s", "invalid",
            "DERIVED: valid evaluated 301 s after signature.timestamp (hookbox's tolerance_secs = 300; the SDK's "
            "default max_age_seconds is 900)", secret=key, headers=H, body=b, now=NOW - 2 + 301, library_check=False),
        vec("stale-901s", "invalid", "DERIVED: valid evaluated 901 s later (beyond the SDK's 900 s too)", secret=key,
            headers=H, body=b, now=NOW - 2 + 901),
        vec("signature-missing", "invalid", "DERIVED: the signature object without 'signature'", secret=key, headers=H,
            body=compact({"signature": {"timestamp": ts, "token": token}, "event-data": {"event": "delivered"}}),
            now=NOW, library_check=False),
    ]


def mailgun_check(v):
    from mailgun.security import SecurityGuard

    s = json.loads(v["body"])["signature"]
    return any(SecurityGuard.verify_webhook(k, s["token"], s["timestamp"], s["signature"]) for k in secrets_of(v))


def lemonsqueezy():
    secret = "hookbox-lemon-signing-secret"
    body = compact({"meta": {"event_name": "order_created", "custom_data": {"customer_id": 25},
                             "webhook_id": "8d8b4c7e-2a1f-4b3e-9c5d-6e7f8a9b0c1d", "test_mode": True},
                    "data": {"type": "orders", "id": "1", "attributes": {"store_id": 1, "customer_id": 1,
                                                                         "identifier": "104e18a2-d755-4d4b-80c4-a6c1dcbe1c10",
                                                                         "order_number": 1, "status": "paid",
                                                                         "total": 999, "currency": "USD"}}})
    return body_hmac("lemonsqueezy", "sha256", "X-Signature", "hex", "", secret, body,
                     {"Content-Type": "application/json", "X-Event-Name": "order_created"})


def typeform():
    secret = "hookbox-typeform-secret"
    body = compact({"event_id": "01HZX5N8PQKZ2D3E4F5G6H7J8K", "event_type": "form_response",
                    "form_response": {"form_id": "lT4Z3j", "token": "a3a12ec67a1365927098a606107fac15",
                                      "submitted_at": "2025-12-03T07:59:58Z", "landed_at": "2025-12-03T07:59:12Z",
                                      "definition": {"id": "lT4Z3j", "title": "Webhooks example"},
                                      "answers": [{"type": "text", "text": "Ada",
                                                   "field": {"id": "DlXFaesGBpoF", "type": "short_text"}}]}})
    return body_hmac("typeform", "sha256", "Typeform-Signature", "base64", "sha256=", secret, body,
                     {"Content-Type": "application/json", "User-Agent": "Typeform Webhooks"})


def calendly():
    secret = "hookbox-calendly-signing-key"
    t = NOW - 2
    body = compact({"created_at": "2025-12-03T07:59:58.000000Z", "created_by": "https://api.calendly.com/users/AAAAAAAAAAAAAAAA",
                    "event": "invitee.created",
                    "payload": {"uri": "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA",
                                "email": "test@example.com", "name": "John Doe", "status": "active",
                                "event": "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2"}})

    def hd_t(sig_for, hd, src):
        s1 = hx("sha256", secret, f"{t}.{body}")
        s2 = hx("sha256", "an-old-rotated-secret", f"{t}.{body}")
        return vec("two-v1-entries", "valid", "DERIVED: two v1= entries, the second made with the configured key",
                   secret=secret, headers={"Content-Type": "application/json",
                                           "Calendly-Webhook-Signature": f"t={t},v1={s2},v1={s1}"}, body=body, now=NOW)

    out = body_hmac("calendly", "sha256", "Calendly-Webhook-Signature", "hex", "", secret, body,
                    {"Content-Type": "application/json"}, signed=lambda b, _t: f"{t}.{b}", now=NOW, tolerance=180,
                    extra=(hd_t,))
    # The timestamp lives inside the signature header: t=<unix>,v1=<hex>.
    for v in out:
        hv = v["headers"].get("Calendly-Webhook-Signature")
        if hv is not None and not hv.startswith("t="):
            v["headers"]["Calendly-Webhook-Signature"] = f"t={t},v1={hv}"
    out += [
        vec("stale-181s", "invalid", "DERIVED: valid, evaluated 181 s after t (Calendly's docs: 3 minutes)",
            secret=secret, headers=out[0]["headers"], body=body, now=t + 181),
        vec("t-changed", "invalid", "DERIVED: valid with t + 1 and the same v1", secret=secret,
            headers={"Content-Type": "application/json",
                     "Calendly-Webhook-Signature": out[0]["headers"]["Calendly-Webhook-Signature"].replace(f"t={t}", f"t={t + 1}")},
            body=body, now=NOW),
    ]
    return out


def vercel():
    secret = "hookbox-vercel-integration-secret"
    body = compact({"id": "uev_d4A2bQk3vKz7yXw9", "type": "deployment.succeeded", "createdAt": (NOW - 2) * 1000,
                    "region": "iad1",
                    "payload": {"deployment": {"id": "dpl_2euZBFqxYdDMDG1jTrHFnNZ2eUVa", "name": "my-app",
                                               "url": "my-app-abc123.vercel.app"},
                                "project": {"id": "prj_12HKQaOmR5t5Uy6vdcQsNIiZgHGB"},
                                "team": {"id": "team_a1b2c3"}, "target": "production"}})
    return body_hmac("vercel", "sha1", "x-vercel-signature", "hex", "", secret, body,
                     {"Content-Type": "application/json"})


def bitbucket():
    secret = "hookbox-bitbucket-secret"
    body = compact({"push": {"changes": [{"new": {"type": "branch", "name": "main",
                                                  "target": {"hash": "709d658dc5b6d6afcd46049c2f332ee3f515a67d"}}}]},
                    "repository": {"type": "repository", "full_name": "team/repo",
                                   "uuid": "{3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b}"},
                    "actor": {"type": "user", "display_name": "Ada"}})
    return body_hmac("bitbucket", "sha256", "X-Hub-Signature", "hex", "sha256=", secret, body,
                     {"Content-Type": "application/json", "X-Event-Key": "repo:push",
                      "X-Request-UUID": "a3b6c2e1-4f5d-4a7b-8c9d-0e1f2a3b4c5d",
                      "X-Hook-UUID": "{f7e6d5c4-b3a2-4190-8f7e-6d5c4b3a2190}", "X-Attempt-Number": "1"})


def razorpay():
    import razorpay as rp

    f = MIRROR["razorpay"]
    raw = open(os.path.join(HERE, "fixtures", "razorpay_fake_payment_authorized_webhook.json"), encoding="utf-8").read()
    sig = "d60e67fd884556c045e9be7dad57903e33efc7172c17c6e3ef77db42d2b366e9"
    H = {"Content-Type": "application/json", "X-Razorpay-Signature": sig, "X-Razorpay-Event-Id": "HSufWHPhvBJ4Qn"}
    out = [
        vec("fixture-valid", "valid", f"{f} (test_verify_webhook_signature; body {MIRROR['razorpay_body']}, "
            "secret = the test client's key_secret)", secret="key_secret", headers=H, body=raw),
        vec("fixture-second-secret", "valid", "DERIVED: fixture-valid with two secrets, the second signed",
            secrets=["another_secret", "key_secret"], headers=H, body=raw),
        vec("fixture-body-byte-changed", "invalid", "DERIVED: fixture-valid with one body byte changed",
            secret="key_secret", headers=H, body=flip(raw)),
        vec("fixture-trailing-newline-dropped", "invalid", "DERIVED: fixture-valid without its final newline",
            secret="key_secret", headers=H, body=raw.rstrip("\n")),
        vec("fixture-wrong-secret", "invalid", "DERIVED: fixture-valid verified with 'key_id' (the key id, not the secret)",
            secret="key_id", headers=H, body=raw),
        vec("fixture-test-signature", "invalid", f"{f} (test_verify_webhook_signature_with_exception: 'test_signature')",
            secret="key_secret", headers=dict(H, **{"X-Razorpay-Signature": "test_signature"}), body=raw),
    ]
    del rp
    return out


def razorpay_check(v):
    import razorpay as rp

    client = rp.Client(auth=("key_id", "key_secret"))
    h = {k.lower(): val for k, val in v["headers"].items()}
    for s in secrets_of(v):
        try:
            if client.utility.verify_webhook_signature(v["body"], h["x-razorpay-signature"], s):
                return True
        except Exception:
            pass
    return False


def pagerduty():
    secret = "hookbox-pagerduty-signing-secret"
    body = compact({"event": {"id": "5ac64822-4adc-4fda-ade0-410becf0de4f", "event_type": "incident.priority_updated",
                              "resource_type": "incident", "occurred_at": "2025-12-03T07:59:58.166Z",
                              "agent": {"html_url": "https://acme.pagerduty.com/users/PLH1HKV", "id": "PLH1HKV",
                                        "type": "user_reference"},
                              "data": {"id": "PGR0VU2", "type": "incident", "title": "A little bump in the road",
                                       "html_url": "https://acme.pagerduty.com/incidents/PGR0VU2",
                                       "number": 2, "status": "triggered", "urgency": "high"}}})

    def rotation(sig_for, hd, src):
        return vec("two-signatures-rotation", "valid",
                   "DERIVED: 'v1=<old>,v1=<new>' as PagerDuty sends during a secret rotation; the second matches",
                   secret=secret, headers={"Content-Type": "application/json",
                                           "X-PagerDuty-Signature": sig_for("an-old-rotated-secret", body) + "," + sig_for(secret, body)},
                   body=body)

    def unknown_version(sig_for, hd, src):
        return vec("v2-entry-ignored", "invalid", "DERIVED: the right HMAC labelled 'v2=' (only v1 is defined)",
                   secret=secret, headers={"Content-Type": "application/json",
                                           "X-PagerDuty-Signature": "v2=" + sig_for(secret, body)[3:]}, body=body)

    return body_hmac("pagerduty", "sha256", "X-PagerDuty-Signature", "hex", "v1=", secret, body,
                     {"Content-Type": "application/json", "X-Webhook-Id": "PXXXXXX",
                      "X-Webhook-Subscription": "PY1OQIA"}, extra=(rotation, unknown_version))


def twitch():
    secret = "hookbox-twitch-eventsub-secret"
    msg_id = "befa7b53-d79d-478f-86b9-120f112b044e"
    ts_text = "2025-12-03T07:59:58.123456789Z"
    body = compact({"subscription": {"id": "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", "type": "channel.follow",
                                     "version": "2", "status": "enabled", "cost": 0,
                                     "condition": {"broadcaster_user_id": "1337", "moderator_user_id": "1337"},
                                     "transport": {"method": "webhook", "callback": PUBLIC_URL + "/hooks/twitch"},
                                     "created_at": "2025-12-01T00:00:00.000000000Z"},
                    "event": {"user_id": "1234", "user_login": "cool_user", "user_name": "Cool_User",
                              "broadcaster_user_id": "1337", "broadcaster_user_login": "cooler_user",
                              "broadcaster_user_name": "Cooler_User", "followed_at": "2025-12-03T07:59:57.000000Z"}})

    def signed(b, t, i=msg_id):
        return f"{i}{t}{b}"

    def hdr(b, t=ts_text, i=msg_id, s=secret, kind="notification"):
        return {"Content-Type": "application/json", "Twitch-Eventsub-Message-Id": i,
                "Twitch-Eventsub-Message-Retry": "0", "Twitch-Eventsub-Message-Type": kind,
                "Twitch-Eventsub-Message-Signature": "sha256=" + hx("sha256", s, signed(b, t, i)),
                "Twitch-Eventsub-Message-Timestamp": t, "Twitch-Eventsub-Subscription-Type": "channel.follow",
                "Twitch-Eventsub-Subscription-Version": "2"}

    src = f"COMPUTED: 'sha256=' + hex HMAC-SHA256 of message id + timestamp (RFC 3339 text) + body, per {DOCS['twitch']}"
    challenge = "pogchamp-kappa-360noscope-vohiyo"
    cbody = compact({"challenge": challenge,
                     "subscription": {"id": "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", "status": "webhook_callback_verification_pending",
                                      "type": "channel.follow", "version": "2",
                                      "condition": {"broadcaster_user_id": "1337", "moderator_user_id": "1337"},
                                      "transport": {"method": "webhook", "callback": PUBLIC_URL + "/hooks/twitch"},
                                      "created_at": "2025-12-03T07:59:58.000000000Z", "cost": 0}})
    good = hdr(body)
    return [
        vec("notification-valid", "valid", src, secret=secret, headers=good, body=body, now=NOW),
        vec("second-secret", "valid", "DERIVED: notification-valid with two secrets, the second signed",
            secrets=["an-old-rotated-secret", secret], headers=good, body=body, now=NOW),
        vec("body-byte-changed", "invalid", "DERIVED: notification-valid, one body byte changed", secret=secret,
            headers=good, body=flip(body), now=NOW),
        vec("wrong-secret", "invalid", "DERIVED: notification-valid verified with another secret", secret=secret + "x",
            headers=good, body=body, now=NOW),
        vec("message-id-changed", "invalid", "DERIVED: notification-valid with another Twitch-Eventsub-Message-Id",
            secret=secret, headers=dict(good, **{"Twitch-Eventsub-Message-Id": msg_id[:-1] + "f"}), body=body, now=NOW),
        vec("timestamp-text-changed", "invalid",
            "DERIVED: notification-valid with the timestamp written with 6 fraction digits (the exact text is signed)",
            secret=secret, headers=dict(good, **{"Twitch-Eventsub-Message-Timestamp": "2025-12-03T07:59:58.123456Z"}),
            body=body, now=NOW),
        vec("stale-601s", "invalid",
            "DERIVED: notification-valid evaluated 601 s after its timestamp (Twitch: reject older than 10 minutes)",
            secret=secret, headers=good, body=body, now=NOW - 2 + 601),
        vec("exactly-600s", "valid", "DERIVED: evaluated 600 s after the timestamp's whole second (07:59:58)",
            secret=secret, headers=good, body=body, now=NOW - 2 + 600),
        vec("callback-verification-challenge", "valid",
            "COMPUTED: a signed webhook_callback_verification; challenge_response is the body Twitch requires "
            "(the challenge as text/plain, status 200)",
            secret=secret, headers=hdr(cbody, kind="webhook_callback_verification"), body=cbody, now=NOW,
            challenge_response=challenge),
    ]


def sentry():
    secret = "hookbox-sentry-client-secret-0123456789abcdef"
    body = compact({"action": "created", "installation": {"uuid": "a8e5d37a-696c-4c54-adb5-b3f28d64c7de"},
                    "data": {"issue": {"id": "1170820242", "shortId": "SENTRY-1", "title": "ZeroDivisionError",
                                       "project": {"id": "1", "slug": "front-end"}}},
                    "actor": {"type": "application", "id": "sentry", "name": "Sentry"}})
    return body_hmac("sentry", "sha256", "Sentry-Hook-Signature", "hex", "", secret, body,
                     {"Content-Type": "application/json", "Request-ID": "3b1f6d9a-2c4e-4f8a-9b7d-1e5c3a2f4d6b",
                      "Sentry-Hook-Resource": "issue", "Sentry-Hook-Timestamp": str(NOW - 2)})


def notion():
    secret = "secret_hookboxNotionVerificationToken0123456789"
    body = compact({"id": "367cba44-b6f3-4c92-81e7-6a2e9659efd4", "timestamp": "2025-12-03T07:59:58.000Z",
                    "workspace_id": "13950b26-c203-4f3b-b97d-93ec06319565", "workspace_name": "Quantify Labs",
                    "subscription_id": "29d75c0d-5546-4414-8459-7b7a92f1fc4b",
                    "integration_id": "0ef2e755-4912-8096-91c1-00376a88a5ca", "type": "page.created",
                    "authors": [{"id": "c7c11cca-1d73-471d-9b6e-bdef51470190", "type": "person"}],
                    "attempt_number": 1, "entity": {"id": "153104cd-477e-809d-8dc4-ff2d96ae3090", "type": "page"},
                    "data": {"parent": {"id": "13950b26-c203-4f3b-b97d-93ec06319565", "type": "space"}}})
    return body_hmac("notion", "sha256", "X-Notion-Signature", "hex", "sha256=", secret, body,
                     {"Content-Type": "application/json"})


def woocommerce():
    secret = "hookbox-woocommerce-secret"
    body = compact({"id": 727, "parent_id": 0, "status": "processing", "currency": "USD", "total": "29.35",
                    "date_created": "2025-12-03T07:59:58", "customer_id": 0,
                    "billing": {"first_name": "John", "last_name": "Doe", "email": "john.doe@example.com"},
                    "line_items": [{"id": 315, "name": "Woo Single #1", "product_id": 93, "quantity": 2,
                                    "total": "6.00"}]})
    return body_hmac("woocommerce", "sha256", "X-WC-Webhook-Signature", "base64", "", secret, body,
                     {"Content-Type": "application/json", "X-WC-Webhook-Source": "https://shop.example.com/",
                      "X-WC-Webhook-Topic": "order.created", "X-WC-Webhook-Resource": "order",
                      "X-WC-Webhook-Event": "created", "X-WC-Webhook-ID": "13",
                      "X-WC-Webhook-Delivery-ID": "8f14e45fceea167a5a36dedd4bea2543"})


def dropbox():
    secret = "hookboxdropboxappsecret"
    body = compact({"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},
                    "delta": {"users": [12345678]}})
    out = body_hmac("dropbox", "sha256", "X-Dropbox-Signature", "hex", "", secret, body,
                    {"Content-Type": "application/json"})
    out.append(vec("verification-challenge-get", "valid",
                   "COMPUTED: Dropbox's verification request is GET ?challenge=<text>, unsigned; the answer echoes the "
                   "challenge (Content-Type text/plain, X-Content-Type-Options: nosniff)",
                   secret=secret, method="GET", url=PUBLIC_URL + "/hooks/dropbox?challenge=8vJ3xZqR2mN5pL7t",
                   headers={}, body="", challenge_response="8vJ3xZqR2mN5pL7t", library_check=False))
    return out


def asana():
    # The secret is the X-Hook-Secret of the handshake that created the webhook.
    secret = "3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e"
    body = compact({"events": [{"user": {"gid": "1198989287389523", "resource_type": "user"},
                                "created_at": "2025-12-03T07:59:58.424Z", "action": "changed",
                                "resource": {"gid": "1204312345678901", "resource_type": "task"},
                                "parent": None, "change": {"field": "completed", "action": "changed"}}]})
    return body_hmac("asana", "sha256", "X-Hook-Signature", "hex", "", secret, body,
                     {"Content-Type": "application/json; charset=utf-8"})


def resend():
    from svix.webhooks import Webhook as Svix

    secret = "whsec_" + base64.b64encode(hashlib.sha256(b"hookbox resend test secret").digest()[:24]).decode()
    msg_id = "msg_2ZsHQK9pX1mJbYvW8cT4uN6rA3e"
    body = compact({"type": "email.delivered", "created_at": "2025-12-03T07:59:58.000Z",
                    "data": {"created_at": "2025-12-03T07:59:50.000Z", "email_id": "56761188-7520-42d8-8898-ff6fc54ce618",
                             "from": "Acme <onboarding@resend.dev>", "to": ["delivered@resend.dev"],
                             "subject": "Sending this example"}})
    ts = NOW - 2
    sig = Svix(secret).sign(msg_id, dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc), body)
    old = Svix("whsec_" + base64.b64encode(b"an-old-rotated-resend-key!!!").decode()).sign(
        msg_id, dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc), body)
    lib = lib_version("svix")

    def hd(s, t=ts):
        return {"Content-Type": "application/json", "svix-id": msg_id, "svix-timestamp": str(t), "svix-signature": s}

    src = f"COMPUTED: Webhook.sign of {lib} (Resend delivers through Svix), per {DOCS['resend']}"
    return [
        vec("valid", "valid", src, secret=secret, headers=hd(sig), body=body, now=NOW),
        vec("two-signatures", "valid", "DERIVED: 'v1,<old> v1,<new>' (rotation); the second matches", secret=secret,
            headers=hd(f"{old} {sig}"), body=body, now=NOW),
        vec("second-secret", "valid", "DERIVED: valid with two secrets configured, the second signed",
            secrets=["whsec_" + base64.b64encode(b"an-old-rotated-resend-key!!!").decode(), secret], headers=hd(sig),
            body=body, now=NOW),
        vec("body-byte-changed", "invalid", "DERIVED: valid, one body byte changed", secret=secret, headers=hd(sig),
            body=flip(body), now=NOW),
        vec("wrong-secret", "invalid", "DERIVED: valid verified with another whsec_ secret",
            secret="whsec_" + base64.b64encode(b"another-resend-secret-xyz").decode(), headers=hd(sig), body=body,
            now=NOW),
        vec("stale-301s", "invalid", "DERIVED: valid evaluated 301 s after svix-timestamp (tolerance 300 s)",
            secret=secret, headers=hd(sig), body=body, now=ts + 301),
    ]


def resend_check(v):
    import resend as rs

    h = {k.lower(): val for k, val in v["headers"].items()}
    for s in secrets_of(v):
        try:
            rs.Webhooks.verify({"payload": v["body"], "webhook_secret": s,
                                "headers": {"id": h["svix-id"], "timestamp": h["svix-timestamp"],
                                            "signature": h["svix-signature"]}})
            return True
        except Exception:
            pass
    return False


def postmark():
    cred = "postmark-hooks:Xq7-hookbox-Basic-Pass"
    body = compact({"RecordType": "Delivery", "ServerID": 23, "MessageStream": "outbound",
                    "MessageID": "00000000-0000-0000-0000-000000000000", "Recipient": "john@example.com",
                    "Tag": "welcome-email", "DeliveredAt": "2025-12-03T07:59:58Z", "Details": "Test delivery webhook details",
                    "Metadata": {"a_key": "a_value"}})

    def auth(c):
        return {"Content-Type": "application/json", "Authorization": "Basic " + base64.b64encode(c.encode()).decode()}

    src = f"COMPUTED: HTTP Basic credentials in the webhook URL (https://user:pass@host/...), per {DOCS['postmark']}"
    return [
        vec("valid", "valid", src, secret=cred, headers=auth(cred), body=body),
        vec("second-secret", "valid", "DERIVED: two user:password secrets, the second matches",
            secrets=["postmark-hooks:old-password", cred], headers=auth(cred), body=body),
        vec("body-changed-still-valid", "valid",
            "DERIVED: one body byte changed; Basic auth does not sign the body", secret=cred, headers=auth(cred),
            body=flip(body)),
        vec("wrong-password", "invalid", "DERIVED: password with one character changed", secret=cred,
            headers=auth(cred[:-1] + "x"), body=body),
        vec("wrong-user", "invalid", "DERIVED: user with one character changed", secret=cred,
            headers=auth("postmark-hookz" + cred[len("postmark-hooks"):]), body=body),
        vec("scheme-bearer", "invalid", "DERIVED: the same base64 under 'Bearer'", secret=cred,
            headers={"Content-Type": "application/json", "Authorization": "Bearer " + base64.b64encode(cred.encode()).decode()},
            body=body),
        vec("scheme-lowercase", "valid", "DERIVED: 'basic' in lower case (RFC 7617: the scheme is case-insensitive)",
            secret=cred, headers={"Content-Type": "application/json",
                                  "Authorization": "basic " + base64.b64encode(cred.encode()).decode()}, body=body),
        vec("missing", "invalid", "DERIVED: no Authorization header", secret=cred,
            headers={"Content-Type": "application/json"}, body=body),
        vec("not-base64", "invalid", "DERIVED: Authorization 'Basic !!!'", secret=cred,
            headers={"Content-Type": "application/json", "Authorization": "Basic !!!"}, body=body),
    ]


# ------------------------------------------------------------------ GitHub, form-encoded
def github_form():
    """GitHub's default content type: the JSON event in a `payload` form field; signed as sent."""
    secret = "hookbox-github-form-secret"
    event = compact({"zen": "Keep it logically awesome.", "hook_id": 123456789,
                     "repository": {"id": 35129377, "full_name": "octo-org/hello-world"},
                     "sender": {"login": "octocat", "id": 583231}})
    body = urllib.parse.urlencode({"payload": event})
    sig = "sha256=" + hx("sha256", secret, body)
    hd = {"Content-Type": "application/x-www-form-urlencoded", "X-GitHub-Event": "ping",
          "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Hook-ID": "123456789",
          "X-Hub-Signature-256": sig}
    params = {"payload": [event]}
    src = ("COMPUTED: 'sha256=' + hex HMAC-SHA256 of the raw form body, per "
           "https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries (content type "
           "application/x-www-form-urlencoded sends the JSON as the `payload` field)")
    tampered = body.replace("awesome", "awesomf")
    return [
        vec("form-valid", "valid", src, secret=secret, headers=hd, body=body, params=params),
        vec("form-byte-changed", "invalid", "DERIVED: form-valid, one byte of the encoded body changed", secret=secret,
            headers=hd, body=tampered, params={"payload": [urllib.parse.parse_qs(tampered)["payload"][0]]}),
        vec("form-wrong-secret", "invalid", "DERIVED: form-valid verified with another secret", secret=secret + "x",
            headers=hd, body=body, params=params),
        vec("form-signed-as-json-body", "invalid",
            "DERIVED: the signature of the decoded JSON, sent with the form body (the raw bytes are what is signed)",
            secret=secret, headers=dict(hd, **{"X-Hub-Signature-256": "sha256=" + hx("sha256", secret, event)}),
            body=body, params=params),
    ]


# ------------------------------------------------------------------ main
NPM_CONFIRMED = {
    "linear.json": "@linear/sdk@98.0.0 LinearWebhookClient.verify (confirm.mjs)",
    "discord.json": "discord-interactions@4.4.0 verifyKey (confirm.mjs)",
    "sendgrid.json": "@sendgrid/eventwebhook@8.0.0 verifySignature (confirm.mjs)",
    "square.json": "square@46.0.0 WebhooksHelper.verifySignature (confirm.mjs)",
    "github-form.json": "@octokit/webhooks-methods@6.0.0 verify (confirm.mjs)",
}


def write(name, vectors):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(vectors, f, indent=2, ensure_ascii=True)
        f.write("\n")
    nv = sum(v["expect"] == "valid" for v in vectors)
    print(f"{name}: {len(vectors)} ({nv} valid / {len(vectors) - nv} invalid)")


def main():
    plan = [
        ("gitlab.json", gitlab, None, None),
        ("sendgrid.json", sendgrid, sendgrid_check, "sendgrid"),
        ("discord.json", discord, discord_check, "discord-interactions"),
        ("standard-webhooks-v1a.json", standard_webhooks_v1a, stdwh_v1_check, "standardwebhooks"),
        ("square.json", square, square_check, "squareup"),
        ("hubspot.json", hubspot, hubspot_check, "hubspot-api-client"),
        ("intercom.json", intercom, None, None),
        ("linear.json", linear, None, None),
        ("zoom.json", zoom, None, None),
        ("mailgun.json", mailgun, mailgun_check, "mailgun"),
        ("lemonsqueezy.json", lemonsqueezy, None, None),
        ("typeform.json", typeform, None, None),
        ("calendly.json", calendly, None, None),
        ("vercel.json", vercel, None, None),
        ("bitbucket.json", bitbucket, None, None),
        ("razorpay.json", razorpay, razorpay_check, "razorpay"),
        ("pagerduty.json", pagerduty, None, None),
        ("twitch.json", twitch, None, None),
        ("sentry.json", sentry, None, None),
        ("notion.json", notion, None, None),
        ("woocommerce.json", woocommerce, None, None),
        ("dropbox.json", dropbox, None, None),
        ("asana.json", asana, None, None),
        ("resend.json", resend, resend_check, "resend"),
        ("postmark.json", postmark, None, None),
        ("github-form.json", github_form, None, None),
    ]
    only = set(sys.argv[1:])
    for fname, build, check, dist in plan:
        if only and fname not in only:
            continue
        vectors = build()
        names = [v["name"] for v in vectors]
        assert len(names) == len(set(names)), f"{fname}: duplicate names"
        if check:
            label = lib_version(dist)
            if dist == "standardwebhooks":
                import cryptography
                label += f" (v1 entries) + cryptography=={cryptography.__version__} Ed25519 (v1a entries)"
            confirm(fname, vectors, check, label)
        for v in vectors:
            v.pop("library_check", None)
            # generate/confirm.mjs runs these through the npm library too (it skips only the stale
            # vectors of libraries that check no age, which have no Python confirmation either).
            if fname in NPM_CONFIRMED and (fname in ("linear.json", "square.json", "github-form.json") or "checked_with" in v):
                v.setdefault("checked_with", []).append(NPM_CONFIRMED[fname])
        write(fname, vectors)
    # twilio.json: today's twilio-python vectors stay first and unchanged; ours are appended.
    if not only or "twilio.json" in only:
        path = os.path.join(OUT, "twilio.json")
        existing = [v for v in json.load(open(path, encoding="utf-8")) if not v["name"].startswith("hookbox-")]
        for v in existing:
            v.pop("checked_with", None)
        vectors = existing + twilio_extra()
        confirm("twilio.json", vectors, twilio_check, lib_version("twilio"))
        write("twilio.json", vectors)


if __name__ == "__main__":
    main()
