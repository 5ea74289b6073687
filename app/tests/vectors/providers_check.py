"""Independent reference verifiers for issue 24's provider files (imported by check_vectors.py).

Written from the algorithms in README.md, not from generate/generate.py: standard library only,
except `cryptography` for the public-key schemes (Ed25519 for Discord and Standard Webhooks v1a,
ECDSA P-256 for SendGrid). Each verifier tries every configured secret or key (`secrets` /
`public_keys` lists, else `secret` / `public_key`), as hookbox does.
"""
import base64
import binascii
import calendar
import hashlib
import hmac
import json
import re
import urllib.parse

TOLERANCE = 300  # hookbox's default tolerance_secs, both directions


def _secrets(v):
    if v.get("secrets"):
        return v["secrets"]
    return [v["secret"]] if v.get("secret") else []


def _keys(v):
    if v.get("public_keys"):
        return v["public_keys"]
    return [v["public_key"]] if v.get("public_key") else []


def _h(v):
    return {k.lower(): val for k, val in v["headers"].items()}


def _body(v):
    return v["body"].encode("utf-8")


def _mac(alg, key, msg):
    return hmac.new(key.encode("utf-8") if isinstance(key, str) else key, msg, getattr(hashlib, alg)).digest()


def _eq(a, b):
    return hmac.compare_digest(a.encode() if isinstance(a, str) else a, b.encode() if isinstance(b, str) else b)


def _fresh(now, ts, tolerance=TOLERANCE):
    return abs(now - ts) <= tolerance


def _b64(b):
    return base64.b64encode(b).decode()


# ------------------------------------------------------------------ tokens and Basic auth
def gitlab(v):
    got = _h(v).get("x-gitlab-token")
    return got is not None and any(_eq(got, s) for s in _secrets(v))


def postmark(v):
    auth = _h(v).get("authorization", "")
    scheme, _, cred = auth.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        decoded = base64.b64decode(cred.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return any(_eq(decoded, s) for s in _secrets(v))


# ------------------------------------------------------------------ one HMAC of the body in a header
def _body_hmac(header, alg, enc, prefix=""):
    def verify(v):
        got = _h(v).get(header)
        if got is None or not got.startswith(prefix):
            return False
        got = got[len(prefix):]
        for s in _secrets(v):
            d = _mac(alg, s, _body(v))
            if _eq(d.hex() if enc == "hex" else _b64(d), got):
                return True
        return False

    return verify


intercom = _body_hmac("x-hub-signature", "sha1", "hex", "sha1=")
lemonsqueezy = _body_hmac("x-signature", "sha256", "hex")
typeform = _body_hmac("typeform-signature", "sha256", "base64", "sha256=")
vercel = _body_hmac("x-vercel-signature", "sha1", "hex")
bitbucket = _body_hmac("x-hub-signature", "sha256", "hex", "sha256=")
razorpay = _body_hmac("x-razorpay-signature", "sha256", "hex")
sentry = _body_hmac("sentry-hook-signature", "sha256", "hex")
notion = _body_hmac("x-notion-signature", "sha256", "hex", "sha256=")
woocommerce = _body_hmac("x-wc-webhook-signature", "sha256", "base64")
asana = _body_hmac("x-hook-signature", "sha256", "hex")
_dropbox_post = _body_hmac("x-dropbox-signature", "sha256", "hex")


def dropbox(v):
    if v.get("method") == "GET":
        # The verification request: unsigned, answered by echoing ?challenge=.
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(v["url"]).query)
        return "challenge" in q and v.get("challenge_response") == q["challenge"][0]
    return _dropbox_post(v)


def pagerduty(v):
    got = _h(v).get("x-pagerduty-signature")
    if not got:
        return False
    sigs = [e.strip()[3:] for e in got.split(",") if e.strip().startswith("v1=")]
    return any(_eq(_mac("sha256", s, _body(v)).hex(), sig) for s in _secrets(v) for sig in sigs)


def linear(v):
    got = _h(v).get("linear-signature")
    if not got or not any(_eq(_mac("sha256", s, _body(v)).hex(), got) for s in _secrets(v)):
        return False
    ts = json.loads(v["body"]).get("webhookTimestamp")  # ms, inside the signed body
    return isinstance(ts, int) and abs(v["now"] * 1000 - ts) <= 60_000


# ------------------------------------------------------------------ timestamped templates
def zoom(v):
    h = _h(v)
    sig, ts = h.get("x-zm-signature"), h.get("x-zm-request-timestamp")
    if not sig or not ts or not ts.isdigit() or not _fresh(v["now"], int(ts)):
        return False
    ok = any(_eq("v0=" + _mac("sha256", s, f"v0:{ts}:".encode() + _body(v)).hex(), sig) for s in _secrets(v))
    if ok and "challenge_response" in v:
        plain = json.loads(v["body"])["payload"]["plainToken"]
        want = {"plainToken": plain, "encryptedToken": _mac("sha256", _secrets(v)[0], plain.encode()).hex()}
        ok = v["challenge_response"] == want
    return ok


def hubspot(v):
    h = _h(v)
    sig, ts = h.get("x-hubspot-signature-v3"), h.get("x-hubspot-request-timestamp")
    if not sig or not ts or not ts.isdigit() or not _fresh(v["now"] * 1000, int(ts), TOLERANCE * 1000):
        return False
    msg = (v["method"] + v["url"]).encode() + _body(v) + ts.encode()
    return any(_eq(_b64(_mac("sha256", s, msg)), sig) for s in _secrets(v))


def calendly(v):
    got = _h(v).get("calendly-webhook-signature", "")
    t, v1 = None, []
    for part in got.split(","):
        k, _, val = part.partition("=")
        if k == "t":
            t = val
        elif k == "v1":
            v1.append(val)
    if not t or not t.isdigit() or not v1 or not _fresh(v["now"], int(t), 180):
        return False
    msg = f"{t}.".encode() + _body(v)
    return any(_eq(_mac("sha256", s, msg).hex(), sig) for s in _secrets(v) for sig in v1)


_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?Z$")


def twitch(v):
    h = _h(v)
    mid, ts, sig = (h.get("twitch-eventsub-message-" + n) for n in ("id", "timestamp", "signature"))
    if not mid or not ts or not sig:
        return False
    m = _RFC3339.match(ts)
    if not m:
        return False
    secs = calendar.timegm(tuple(int(x) for x in m.groups()[:6])) + float(m.group(7) or 0)
    if abs(v["now"] - secs) > 600:  # Twitch: reject messages older than 10 minutes
        return False
    msg = (mid + ts).encode() + _body(v)
    ok = any(_eq("sha256=" + _mac("sha256", s, msg).hex(), sig) for s in _secrets(v))
    if ok and h.get("twitch-eventsub-message-type") == "webhook_callback_verification":
        ok = v.get("challenge_response") == json.loads(v["body"])["challenge"]
    return ok


def mailgun(v):
    try:
        sig = json.loads(v["body"])["signature"]
        ts, token, got = sig["timestamp"], sig["token"], sig["signature"]
    except (KeyError, TypeError, ValueError):
        return False
    if not str(ts).isdigit() or not _fresh(v["now"], int(ts)):
        return False
    return any(_eq(_mac("sha256", s, f"{ts}{token}".encode()).hex(), got) for s in _secrets(v))


def square(v):
    got = _h(v).get("x-square-hmacsha256-signature")
    return bool(got) and any(_eq(_b64(_mac("sha256", s, v["url"].encode() + _body(v))), got) for s in _secrets(v))


def resend(v):
    h = _h(v)
    mid, ts, sigs = h.get("svix-id"), h.get("svix-timestamp"), h.get("svix-signature")
    if not mid or not ts or not sigs or not ts.isdigit() or not _fresh(v["now"], int(ts)):
        return False
    msg = f"{mid}.{ts}.".encode() + _body(v)
    for s in _secrets(v):
        key = base64.b64decode(s[len("whsec_"):] if s.startswith("whsec_") else s)
        want = _b64(_mac("sha256", key, msg))
        if any(e.startswith("v1,") and _eq(e[3:], want) for e in sigs.split(" ")):
            return True
    return False


# ------------------------------------------------------------------ public keys
def _ed25519_verify(raw_key, sig, msg):
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if len(raw_key) != 32 or len(sig) != 64:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(raw_key).verify(sig, msg)
        return True
    except InvalidSignature:
        return False


def discord(v):
    h = _h(v)
    sig, ts = h.get("x-signature-ed25519"), h.get("x-signature-timestamp")
    if not sig or not ts or not ts.isdigit() or not _fresh(v["now"], int(ts)):
        return False
    try:
        sig_bytes = bytes.fromhex(sig)
    except ValueError:
        return False
    return any(_ed25519_verify(bytes.fromhex(k), sig_bytes, ts.encode() + _body(v)) for k in _keys(v))


def standard_webhooks_v1a(v):
    h = _h(v)
    mid, ts, sigs = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
    if not mid or not ts or not sigs or not ts.isdigit() or not _fresh(v["now"], int(ts)):
        return False
    msg = f"{mid}.{ts}.".encode() + _body(v)
    for entry in sigs.split(" "):
        version, _, sig = entry.partition(",")
        if version == "v1":
            for s in _secrets(v):
                key = base64.b64decode(s[len("whsec_"):])
                if _eq(_b64(_mac("sha256", key, msg)), sig):
                    return True
        elif version == "v1a":
            for k in _keys(v):
                assert k.startswith("whpk_"), "a v1a key is whpk_<base64>"
                if _ed25519_verify(base64.b64decode(k[5:]), base64.b64decode(sig), msg):
                    return True
    return False


def _p256_key(text):
    from cryptography.hazmat.primitives.serialization import load_der_public_key, load_pem_public_key

    if "BEGIN PUBLIC KEY" in text:
        return load_pem_public_key(text.encode())
    return load_der_public_key(base64.b64decode(text))


def sendgrid(v):
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    h = _h(v)
    sig, ts = h.get("x-twilio-email-event-webhook-signature"), h.get("x-twilio-email-event-webhook-timestamp")
    if not sig or not ts or not ts.isdigit() or not _fresh(v["now"], int(ts)):
        return False
    for k in _keys(v):
        try:
            _p256_key(k).verify(base64.b64decode(sig), ts.encode() + _body(v), ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            pass
    return False


PROVIDER_FILES = {
    "gitlab.json": gitlab,
    "sendgrid.json": sendgrid,
    "discord.json": discord,
    "standard-webhooks-v1a.json": standard_webhooks_v1a,
    "square.json": square,
    "hubspot.json": hubspot,
    "intercom.json": intercom,
    "linear.json": linear,
    "zoom.json": zoom,
    "mailgun.json": mailgun,
    "lemonsqueezy.json": lemonsqueezy,
    "typeform.json": typeform,
    "calendly.json": calendly,
    "vercel.json": vercel,
    "bitbucket.json": bitbucket,
    "razorpay.json": razorpay,
    "pagerduty.json": pagerduty,
    "twitch.json": twitch,
    "sentry.json": sentry,
    "notion.json": notion,
    "woocommerce.json": woocommerce,
    "dropbox.json": dropbox,
    "asana.json": asana,
    "resend.json": resend,
    "postmark.json": postmark,
}
