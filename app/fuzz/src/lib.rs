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
