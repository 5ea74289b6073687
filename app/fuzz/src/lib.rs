//! What the fuzz targets run. The parsers are compiled from app's own source files (they need
//! only `http`, `hmac`, `sha2`, `subtle`, `base64` and `hex`), so fuzzing builds neither the web
//! stack nor the database drivers with coverage instrumentation.
//!
//! Besides "no panic, no hang", each target checks properties that must hold for any input.

#![allow(dead_code)]

#[path = "../../src/json/mod.rs"]
pub mod json;

#[path = "../../src/envelope/mod.rs"]
pub mod envelope;

#[path = "../../src/schemes/mod.rs"]
pub mod schemes;

use envelope::{Field, FieldRef, Mapping, Mode, parse_envelope};
use http::{HeaderMap, HeaderName, HeaderValue};
use schemes::Scheme;

/// The mappings a source can have: the snapshot envelope, a provider-style one with nested
/// pointers, and a dedup one with the event id in a header (falling back to the body).
fn mapping(selector: u8) -> Mapping {
    let at = |spec: &str| Some(Field::from(FieldRef::parse(spec).expect("a valid place")));
    match selector % 3 {
        0 => Mapping::snapshot_envelope(),
        1 => Mapping {
            mode: Mode::Snapshot,
            event_id: FieldRef::parse("/id").expect("pointer").into(),
            object_id: at("/data/object/id"),
            revision: at("/data/object/version"),
            snapshot: at("/data/object"),
            event_type: at("/type"),
        },
        _ => Mapping {
            mode: Mode::Dedup,
            event_id: Field::from(FieldRef::parse("header:x-event-id").expect("header"))
                .or(FieldRef::parse("/event_id").expect("pointer")),
            object_id: at("/object/id"),
            revision: None,
            snapshot: None,
            event_type: at("header:x-event-type"),
        },
    }
}

/// Input: a mapping selector byte, then `x-event-id value \0 body` (or just the body).
pub fn envelope(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (header, body) = match rest.iter().position(|b| *b == 0) {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let mut headers = HeaderMap::new();
    if let Some(value) = header.and_then(|h| HeaderValue::from_bytes(h).ok()) {
        headers.insert("x-event-id", value.clone());
        headers.insert("x-event-type", value);
    }
    let mapping = mapping(selector);
    match parse_envelope(&mapping, &headers, body) {
        Ok(envelope) => {
            assert!(
                !envelope.event_id.is_empty(),
                "an accepted event id is never empty"
            );
            if let Some(snapshot) = &envelope.snapshot {
                // The stored text is a JSON value whose canonical form is the one recorded.
                let node = json::parse(&snapshot.raw).expect("the stored snapshot text parses");
                assert_eq!(node.canonical(), snapshot.canonical());
                canonical_is_a_fixpoint(snapshot.canonical());
            }
            if mapping.mode == Mode::Snapshot {
                assert!(envelope.revision.is_some_and(|r| r.get() >= 1));
            }
        }
        Err(invalid) => {
            assert!(
                matches!(invalid.status().as_u16(), 400 | 422),
                "{invalid:?}"
            );
            assert!(!invalid.reason.is_empty());
        }
    }
    if let Ok(text) = std::str::from_utf8(body) {
        json_text(text);
    }
}

/// The JSON reader alone: whatever it accepts, its canonical form parses to itself.
pub fn json_text(text: &str) {
    if let Ok(node) = json::parse(text) {
        canonical_is_a_fixpoint(&node.canonical());
    }
}

fn canonical_is_a_fixpoint(canonical: &str) {
    let again = json::parse(canonical).expect("a canonical form parses");
    assert_eq!(again.canonical(), canonical, "canonical form is not stable");
}

pub const NOW: i64 = 1_764_460_800;
const TOLERANCE_SECS: u64 = 300;
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Input: the values of the scheme's signature headers, one per line, then `\0` and the body.
///
/// A value `@` stands for what a real sender sends for this body, `@…` for that with `…`
/// appended, so the fuzzer reaches the parser's deeper states (a valid timestamp beside a bad
/// signature, a genuine signature among garbage) from short inputs.
/// Properties: never a panic; every header exactly as the sender sends it verifies; and a body
/// signed by the sender always verifies with its headers (and not with another key).
pub fn signature_headers(scheme: Scheme, data: &[u8]) {
    let (values, body) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let key = scheme
        .parse_secret(SECRET)
        .expect("the fuzz secret is valid");
    let genuine = scheme.sign(&key, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", body, NOW);
    assert!(!genuine.is_empty(), "every signing scheme sends headers");
    let keys = [key.clone()];

    let verify = |headers: &HeaderMap| scheme.verify(headers, body, &keys, TOLERANCE_SECS, NOW);
    let mut headers = HeaderMap::new();
    let mut all_genuine = true;
    for ((name, real), value) in genuine.iter().zip(values.split(|b| *b == b'\n')) {
        let value: Vec<u8> = match value.strip_prefix(b"@") {
            Some(suffix) => [real.as_bytes(), suffix].concat(),
            None => value.to_vec(),
        };
        all_genuine &= value == real.as_bytes();
        if let Ok(value) = HeaderValue::from_bytes(&value) {
            headers.append(name.clone(), value);
        }
    }
    let verdict = verify(&headers);
    let covered = values.split(|b| *b == b'\n').count() >= genuine.len();
    if all_genuine && covered {
        assert!(
            verdict.is_ok(),
            "the sender's own headers fail: {verdict:?}"
        );
    }

    let mut signed = HeaderMap::new();
    for (name, value) in &genuine {
        let value: HeaderValue = value.parse().expect("a signature header is a header value");
        signed.append(name.clone(), value);
    }
    assert!(verify(&signed).is_ok(), "a signed body fails to verify");
    let other = scheme
        .parse_secret("whsec_dGhpcyBpcyBhbm90aGVyIGtleQ")
        .expect("another key");
    let with_other = scheme.verify(&signed, body, &[other], TOLERANCE_SECS, NOW);
    assert!(with_other.is_err(), "another key verifies");
}

/// The header names a scheme signs with (for seeding the corpus).
pub fn signature_header_names(scheme: Scheme) -> Vec<HeaderName> {
    let key = scheme
        .parse_secret(SECRET)
        .expect("the fuzz secret is valid");
    scheme
        .sign(&key, "msg", b"", NOW)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// The recipe keys in the order [`recipe_read`] takes their values.
const RECIPE_TEXT_KEYS: [&str; 11] = [
    "algorithm",
    "signature_header",
    "signature_prefix",
    "signature_separator",
    "signature_encoding",
    "timestamp_header",
    "timestamp_prefix",
    "timestamp_field",
    "timestamp_unit",
    "secret_encoding",
    "secret_prefix",
];

/// Input: up to ten key values separated by `\0` (empty: absent), then the `signed` parts, one
/// per line. Properties: never a panic; a recipe read is read again, identical, from its own
/// spelling (what a preset's overrides rely on); its words name its header.
pub fn recipe_read(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut fields = text.split('\0');
    let values: Vec<Option<String>> = RECIPE_TEXT_KEYS
        .iter()
        .map(|_| fields.next().filter(|v| !v.is_empty()).map(str::to_string))
        .collect();
    let signed: Option<Vec<String>> = fields
        .next()
        .map(|list| list.split('\n').map(str::to_string).collect());
    let value_of = |key: &str| {
        RECIPE_TEXT_KEYS
            .iter()
            .position(|k| *k == key)
            .and_then(|i| values[i].clone())
    };
    let Ok(recipe) = schemes::Recipe::read(value_of, signed) else {
        return;
    };
    let again = schemes::Recipe::read(|key| recipe.spelled(key), Some(recipe.signed_spelled()))
        .expect("a recipe's own spelling reads");
    assert_eq!(again, recipe, "the spelling does not round-trip");
    assert!(recipe.to_string().contains(&recipe.signature_header));
    let _ = recipe.check(true);
}

/// The recipes [`recipe_verify`] picks from: one entry in a header, several entries with the
/// timestamp among them, and the method, URL, a header and a timestamp in milliseconds.
fn recipe(selector: u8) -> schemes::Recipe {
    let keys: &[(&str, &str)] = match selector % 3 {
        0 => &[
            ("algorithm", "sha1"),
            ("signature_header", "x-sig"),
            ("signature_prefix", "sha1="),
        ],
        1 => &[
            ("algorithm", "sha256"),
            ("signature_header", "x-sig"),
            ("signature_separator", ","),
            ("signature_prefix", "v1="),
            ("timestamp_prefix", "t="),
        ],
        _ => &[
            ("algorithm", "sha512"),
            ("signature_header", "x-sig"),
            ("signature_encoding", "base64"),
            ("timestamp_header", "x-time"),
            ("timestamp_unit", "ms"),
        ],
    };
    let signed = match selector % 3 {
        0 => vec!["body".to_string()],
        1 => vec!["timestamp".into(), "literal:.".into(), "body".into()],
        _ => vec![
            "method".into(),
            "url".into(),
            "header:x-id".into(),
            "timestamp".into(),
            "body".into(),
        ],
    };
    schemes::Recipe::read(
        |key| {
            keys.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        },
        Some(signed),
    )
    .expect("the fuzz recipes are valid")
}

/// Input: a selector byte, then `x-sig`, `x-time` and `x-id` values, one per line (`@` is what
/// the sender sends, `@…` that with `…` appended), then `\0` and the body. The same input also
/// goes, as headers, to the public-key verifiers (Standard Webhooks `v1a`, Discord, SendGrid)
/// and the token and Basic checks. Properties: never a panic; the recipe's own signature
/// verifies, and not with another key.
pub fn recipe_verify(data: &[u8]) {
    use schemes::{Auth, Request};
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (values, body) = match rest.iter().position(|b| *b == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let recipe = recipe(selector);
    let url = "https://hooks.example.com/hooks/fuzz?a=1";
    let key = recipe.parse_secret("fuzz-secret").expect("a secret");
    let mut base = HeaderMap::new();
    base.insert("x-id", HeaderValue::from_static("delivery-1"));
    let unsigned = Request {
        method: "POST",
        query: None,
        url: Some(url),
        headers: &base,
        body,
    };
    let genuine = recipe.sign(&key, &unsigned, NOW);
    let mut headers = HeaderMap::new();
    for (name, value) in ["x-sig", "x-time", "x-id"]
        .iter()
        .zip(values.split(|b| *b == b'\n'))
    {
        let real = genuine
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| (*name == "x-id").then(|| "delivery-1".to_string()))
            .unwrap_or_default();
        let value: Vec<u8> = match value.strip_prefix(b"@") {
            Some(suffix) => [real.as_bytes(), suffix].concat(),
            None => value.to_vec(),
        };
        if let Ok(value) = HeaderValue::from_bytes(&value) {
            headers.append(HeaderName::from_static(name), value);
        }
    }
    let request = Request {
        headers: &headers,
        ..unsigned
    };
    let _ = recipe.verify(&request, std::slice::from_ref(&key), TOLERANCE_SECS, NOW);

    let mut signed = base.clone();
    for (name, value) in &genuine {
        signed.insert(name.clone(), value.parse().expect("a header value"));
    }
    let signed_request = Request {
        headers: &signed,
        ..unsigned
    };
    assert!(
        recipe
            .verify(
                &signed_request,
                std::slice::from_ref(&key),
                TOLERANCE_SECS,
                NOW
            )
            .is_ok(),
        "the recipe's own signature fails"
    );
    let other = recipe.parse_secret("another-secret").expect("a secret");
    assert!(
        recipe
            .verify(&signed_request, &[other], TOLERANCE_SECS, NOW)
            .is_err(),
        "another key verifies"
    );

    // The same headers, renamed, to the schemes of public keys and shared secrets.
    let mut others = HeaderMap::new();
    for (i, name) in [
        "webhook-signature",
        "x-signature-ed25519",
        "x-twilio-email-event-webhook-signature",
        "authorization",
        "x-token",
    ]
    .iter()
    .enumerate()
    {
        if let Some(value) = values.split(|b| *b == b'\n').nth(i)
            && let Ok(value) = HeaderValue::from_bytes(value)
        {
            others.insert(HeaderName::from_static(name), value);
        }
    }
    for name in [
        "webhook-id",
        "webhook-timestamp",
        "x-signature-timestamp",
        "x-twilio-email-event-webhook-timestamp",
    ] {
        others.insert(name, HeaderValue::from_static("1764460800"));
    }
    let ed25519 = schemes::public_key::parse_public_key(
        Scheme::Discord,
        "537ff99cf7c1dc81a05ec179609d7cc7580c083c180e45db8bf3067993620263",
    )
    .expect("a key");
    let p256 = schemes::public_key::parse_public_key(
        Scheme::Sendgrid,
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAESogOL/8AsmQFV9u64GxQjUYYl7C9NwhmgQFhOGHCl2qRJ8y/Ox08TkymbFRtNrArAh91PP/HTtI3pjPHChEFGA==",
    )
    .expect("a key");
    let request = Request {
        headers: &others,
        ..unsigned
    };
    for (scheme, public_keys) in [
        (Scheme::StandardWebhooks, std::slice::from_ref(&ed25519)),
        (Scheme::Discord, std::slice::from_ref(&ed25519)),
        (Scheme::Sendgrid, std::slice::from_ref(&p256)),
        (Scheme::Basic, &[][..]),
        (Scheme::Token, &[][..]),
    ] {
        let auth = Auth {
            scheme,
            recipe: None,
            token_header: Some("x-token"),
            token_query: None,
            public_keys,
        };
        let _ = auth.verify(&request, std::slice::from_ref(&key), TOLERANCE_SECS, NOW);
    }
    // And arbitrary text as a public key of each scheme.
    if let Ok(text) = std::str::from_utf8(values) {
        for scheme in [Scheme::StandardWebhooks, Scheme::Discord, Scheme::Sendgrid] {
            let _ = schemes::public_key::parse_public_key(scheme, text);
        }
    }
}

/// Input: a selector byte, then a body. The body goes through the form reader, Twilio's
/// verifier (as a form, and as a JSON body whose hash the URL carries), Mailgun's and a recipe
/// whose timestamp is a field of the body. Properties: never a panic; a form reads as JSON
/// (what `jsonb` cannot hold aside); each verifier's own signature verifies, and not with
/// another key.
pub fn providers(data: &[u8]) {
    use schemes::{Auth, Request};
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    if let Some(fields) = envelope::fields_json(body) {
        match json::parse(&fields) {
            Ok(_) | Err(json::JsonError::Unsupported { .. }) => {}
            Err(e) => panic!("a form reads as invalid JSON {fields:?}: {e}"),
        }
    }
    let key = Scheme::Twilio.parse_secret("fuzz-token").expect("a secret");
    let other = Scheme::Twilio
        .parse_secret("another-token")
        .expect("a secret");
    let auth = |scheme| Auth {
        scheme,
        recipe: None,
        token_header: None,
        token_query: None,
        public_keys: &[],
    };
    let mut headers = HeaderMap::new();
    let url = if selector % 2 == 0 {
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(envelope::FORM_MEDIA_TYPE),
        );
        "https://hooks.example.com/hooks/twilio?x=1".to_string()
    } else {
        use sha2::Digest;
        format!(
            "https://hooks.example.com:443/hooks/twilio?bodySHA256={}",
            hex::encode(sha2::Sha256::digest(body))
        )
    };
    let request = Request {
        method: "POST",
        query: None,
        url: Some(&url),
        headers: &headers,
        body,
    };
    let twilio = auth(Scheme::Twilio);
    let _ = twilio.verify(&request, std::slice::from_ref(&key), TOLERANCE_SECS, NOW);
    let mut signed = headers.clone();
    for (name, value) in twilio.sign(&key, "msg", &request, NOW) {
        signed.insert(name, value.parse().expect("a header value"));
    }
    let signed_request = Request {
        headers: &signed,
        ..request
    };
    assert!(
        twilio
            .verify(
                &signed_request,
                std::slice::from_ref(&key),
                TOLERANCE_SECS,
                NOW
            )
            .is_ok(),
        "Twilio's own signature fails"
    );
    assert!(
        twilio
            .verify(&signed_request, &[other], TOLERANCE_SECS, NOW)
            .is_err(),
        "another Twilio token verifies"
    );
    // Mailgun reads its signature object out of whatever body comes.
    let _ = auth(Scheme::Mailgun).verify(&request, std::slice::from_ref(&key), TOLERANCE_SECS, NOW);
    // A recipe whose timestamp is a field of the body.
    let recipe = schemes::Recipe::read(
        |key| match key {
            "algorithm" => Some("sha256".into()),
            "signature_header" => Some("x-sig".into()),
            "timestamp_field" => Some("/ts".into()),
            "timestamp_unit" => Some(if selector % 3 == 0 { "ms" } else { "s" }.into()),
            _ => None,
        },
        Some(vec!["body".into()]),
    )
    .expect("a valid recipe");
    let _ = recipe.verify(&request, std::slice::from_ref(&key), TOLERANCE_SECS, NOW);
}
