//! Test support shared by the scheme files: the vector runner and the properties every scheme
//! must have (round trip, tamper, rotation, clock skew, hostile headers), written once so each
//! scheme is held to the same checks.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

use super::{AuthError, Scheme, SecretKey};

/// A fixed "now" for tests that need one.
pub const NOW: i64 = 1_700_000_000;

/// `now` for vectors of schemes without a timestamp (the file gives none; it must not matter).
const NO_TIMESTAMP_NOW: i64 = 0;

/// One entry of an `app/tests/vectors/*.json` file (format in the README beside them).
#[derive(Deserialize)]
pub struct Vector {
    pub name: String,
    #[serde(default)]
    pub secret: Option<String>,
    /// Several configured secrets: any one verifies.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// A public-key scheme's key, or several (any one verifies).
    #[serde(default)]
    pub public_key: Option<String>,
    #[serde(default)]
    pub public_keys: Vec<String>,
    pub headers: BTreeMap<String, String>,
    pub body: String,
    pub now: Option<i64>,
    /// The URL the sender signed (URL-signing schemes).
    #[serde(default)]
    pub url: Option<String>,
    /// The request's method, where it is signed or not POST.
    #[serde(default)]
    pub method: Option<String>,
    /// What a registration challenge is answered with (such a vector is the preset's, not the
    /// signature's).
    #[serde(default)]
    pub challenge_response: Option<serde_json::Value>,
    pub expect: String,
    pub source: String,
}

impl Vector {
    /// The configured secrets: `secrets`, else the one `secret`.
    pub fn all_secrets(&self) -> Vec<&str> {
        if self.secrets.is_empty() {
            self.secret.iter().map(String::as_str).collect()
        } else {
            self.secrets.iter().map(String::as_str).collect()
        }
    }

    /// The configured public keys: `public_keys`, else the one `public_key`.
    pub fn all_public_keys(&self) -> Vec<&str> {
        if self.public_keys.is_empty() {
            self.public_key.iter().map(String::as_str).collect()
        } else {
            self.public_keys.iter().map(String::as_str).collect()
        }
    }

    /// Its headers as a request carries them.
    pub fn header_map(&self) -> HeaderMap {
        header_map(&self.headers)
    }

    /// The Unix time to evaluate it at (`0` where the scheme has no timestamp: it must not
    /// matter).
    pub fn now(&self) -> i64 {
        self.now.unwrap_or(NO_TIMESTAMP_NOW)
    }
}

/// Runs every vector in the file at `path` through `verify` and fails listing each one whose
/// outcome differs from its `expect`, with its name and source; `verify` answers `None` for a
/// vector that is not its to run. Returns how many vectors ran.
pub fn run_vectors_with(
    path: &str,
    verify: impl Fn(&Vector) -> Option<Result<(), String>>,
) -> usize {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read {path}: {err}"));
    let vectors: Vec<Vector> =
        serde_json::from_str(&text).unwrap_or_else(|err| panic!("cannot parse {path}: {err}"));
    assert!(!vectors.is_empty(), "{path} holds no vectors");

    let mut mismatches = Vec::new();
    let mut ran = 0;
    for v in &vectors {
        let Some(outcome) = verify(v) else {
            continue;
        };
        ran += 1;
        let want_valid = match v.expect.as_str() {
            "valid" => true,
            "invalid" => false,
            other => panic!("{}: unknown expect {other:?}", v.name),
        };
        if outcome.is_ok() != want_valid {
            mismatches.push(format!(
                "  {} (expect {}, got {:?})\n    source: {}",
                v.name, v.expect, outcome, v.source
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} vectors in {path} disagree:\n{}",
        mismatches.len(),
        vectors.len(),
        mismatches.join("\n")
    );
    assert!(ran > 0, "no vector of {path} was run");
    ran
}

/// [`run_vectors_with`] through `scheme`.
pub fn run_vectors(scheme: Scheme, path: &str, tolerance_secs: u64) -> usize {
    run_vectors_with(path, |v| {
        let keys = v
            .all_secrets()
            .into_iter()
            .map(|secret| scheme.parse_secret(secret))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| format!("secret refused: {err}"));
        Some(keys.and_then(|keys| {
            scheme
                .verify(
                    &v.header_map(),
                    v.body.as_bytes(),
                    &keys,
                    tolerance_secs,
                    v.now(),
                )
                .map_err(|err| err.to_string())
        }))
    })
}

fn header_map(headers: &BTreeMap<String, String>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("vector header name");
        let value = HeaderValue::from_str(value).expect("vector header value");
        map.append(name, value);
    }
    map
}

/// A valid configured secret for `scheme` whose key bytes derive from `seed`.
pub fn secret_for(scheme: Scheme, seed: &str) -> String {
    match scheme {
        Scheme::StandardWebhooks => format!("whsec_{}", STANDARD.encode(format!("{seed}-key"))),
        _ => format!("{seed}-key"),
    }
}

fn key_for(scheme: Scheme, seed: &str) -> SecretKey {
    scheme
        .parse_secret(&secret_for(scheme, seed))
        .expect("test secret is valid")
}

/// The headers `scheme` produces for `body` at `now`, as a request would carry them.
pub fn signed_headers(scheme: Scheme, key: &SecretKey, body: &[u8], now: i64) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in scheme.sign(key, "msg_2test", body, now) {
        map.append(name, HeaderValue::from_str(&value).expect("signed value"));
    }
    map
}

const BODY: &[u8] = b"{\"event_id\":\"event-3\",\"object_id\":\"order-1\",\"revision\":3}";

pub fn round_trip(scheme: Scheme) {
    let key = key_for(scheme, "round-trip");
    for body in [
        BODY,
        b"",
        "h\u{e9}llo \u{2665}\n".as_bytes(),
        &[0xff, 0x00, 0x80],
    ] {
        let headers = signed_headers(scheme, &key, body, NOW);
        assert!(!headers.is_empty(), "{scheme:?} signs with headers");
        assert_eq!(
            scheme.verify(&headers, body, std::slice::from_ref(&key), 300, NOW),
            Ok(()),
            "{scheme:?} round trip of {body:?}"
        );
    }
}

pub fn tampered_body_fails(scheme: Scheme) {
    let key = key_for(scheme, "tamper");
    let headers = signed_headers(scheme, &key, BODY, NOW);
    let mut tampered = BODY.to_vec();
    tampered[30] ^= 1;
    let mut with_newline = BODY.to_vec();
    with_newline.push(b'\n');
    for body in [
        &tampered[..],
        &with_newline[..],
        &BODY[..BODY.len() - 1],
        b"",
    ] {
        let got = scheme.verify(&headers, body, std::slice::from_ref(&key), 300, NOW);
        assert!(
            matches!(got, Err(AuthError::NoMatchingSignature { secrets: 1, .. })),
            "{scheme:?} accepted a changed body: {got:?}"
        );
    }
}

pub fn rotation_second_key_matches(scheme: Scheme) {
    let old = key_for(scheme, "old");
    let new = key_for(scheme, "new");
    let headers = signed_headers(scheme, &new, BODY, NOW);
    assert_eq!(
        scheme.verify(&headers, BODY, &[old.clone(), new.clone()], 300, NOW),
        Ok(()),
        "{scheme:?}: the second key should match"
    );
    let got = scheme.verify(&headers, BODY, std::slice::from_ref(&old), 300, NOW);
    assert!(
        matches!(got, Err(AuthError::NoMatchingSignature { .. })),
        "{scheme:?}: the first key alone must not match: {got:?}"
    );
    // What the refused-requests log records: how many signatures against how many secrets.
    let other = key_for(scheme, "other");
    let got = scheme.verify(&headers, BODY, &[old.clone(), other.clone()], 300, NOW);
    assert!(
        matches!(got, Err(AuthError::NoMatchingSignature { secrets: 2, .. })),
        "{scheme:?}: {got:?}"
    );
    let cause = got.expect_err("no match").to_string();
    assert!(cause.contains("none of 2 secrets"), "{scheme:?}: {cause}");
    assert_eq!(
        scheme.verify(&headers, BODY, &[old, other, new], 300, NOW),
        Ok(()),
        "{scheme:?}: any position"
    );
}

/// Timestamped schemes refuse a signature 10 minutes old or ahead; the others carry no time
/// and so must not care.
pub fn clock_skew(scheme: Scheme) {
    let key = key_for(scheme, "skew");
    let keys = std::slice::from_ref(&key);
    for signed_at in [NOW - 600, NOW + 600] {
        let headers = signed_headers(scheme, &key, BODY, signed_at);
        let got = scheme.verify(&headers, BODY, keys, 300, NOW);
        if scheme.has_timestamp() {
            assert_eq!(
                got,
                Err(AuthError::TimestampOutOfTolerance {
                    age_secs: NOW - signed_at,
                    tolerance_secs: 300
                }),
                "{scheme:?} signed at {signed_at}"
            );
            let side = if signed_at < NOW { "older" } else { "newer" };
            assert_eq!(
                got.expect_err("skewed").to_string(),
                format!("timestamp 300 s {side} than the tolerance of 300 s allows")
            );
        } else {
            assert_eq!(got, Ok(()), "{scheme:?} has no timestamp");
        }
    }
    // The boundary is inclusive, and extreme clocks neither overflow nor pass.
    let headers = signed_headers(scheme, &key, BODY, NOW - 300);
    assert_eq!(scheme.verify(&headers, BODY, keys, 300, NOW), Ok(()));
    let headers = signed_headers(scheme, &key, BODY, NOW);
    for now in [i64::MIN, i64::MAX, -1, 0] {
        let got = scheme.verify(&headers, BODY, keys, 300, now);
        assert_eq!(got.is_ok(), !scheme.has_timestamp(), "{scheme:?} at {now}");
        assert_eq!(
            scheme.verify(&headers, BODY, keys, u64::MAX, now),
            Ok(()),
            "{scheme:?} with unlimited tolerance at {now}"
        );
    }
}

/// Values no sender produces: each must give `Err` in any authentication header, never a panic.
fn hostile_values() -> Vec<Vec<u8>> {
    let mut values: Vec<Vec<u8>> = [
        "",
        " ",
        "\t",
        "garbage",
        "=",
        ",",
        ";",
        ",,,",
        "==",
        "v1,",
        "v1=",
        "t=",
        "t,,",
        "ts=;h1=",
        "sha256=",
        "v0=",
        "t=1,v1=",
        "t=99999999999999999999999,v1=00",
        "ts=-5;h1=00",
        "v1,!!!!",
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        "sha256=zz",
        "-1",
        "+1700000000",
        "1700000000.0",
        "01700000000",
        "9223372036854775808",
        "\u{0}",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    values.push("a".repeat(100_000).into_bytes());
    values.push("9".repeat(5_000).into_bytes());
    values.push("v1,AAAA ".repeat(10_000).into_bytes());
    values.push("t=1,".repeat(10_000).into_bytes());
    values.push("v1=00,".repeat(10_000).into_bytes());
    values.push("h1=00;".repeat(10_000).into_bytes());
    values.push(" ".repeat(50_000).into_bytes());
    values.push("\u{fc}ber \u{2665}".as_bytes().to_vec()); // UTF-8, not ASCII
    values.push(vec![0xff, 0xfe, 0x80, 0x81]); // obs-text, not UTF-8
    values.push(b"v1,\xe9\xe9".to_vec());
    values
}

/// Replaces, removes and repeats each of `names` in an otherwise valid request.
pub fn hostile_headers_fail(scheme: Scheme, names: &[&'static str]) {
    let key = key_for(scheme, "hostile");
    let keys = std::slice::from_ref(&key);
    let valid = signed_headers(scheme, &key, BODY, NOW);
    assert_eq!(scheme.verify(&valid, BODY, keys, 300, NOW), Ok(()));

    assert!(
        scheme
            .verify(&HeaderMap::new(), BODY, keys, 300, NOW)
            .is_err()
    );
    for &name in names {
        let mut missing = valid.clone();
        missing.remove(name);
        assert!(
            matches!(
                scheme.verify(&missing, BODY, keys, 300, NOW),
                Err(AuthError::MissingHeader(_))
            ),
            "{scheme:?} without {name}"
        );

        for value in hostile_values() {
            // HeaderValue refuses control characters other than tab; those never reach us.
            let Ok(value) = HeaderValue::from_bytes(&value) else {
                continue;
            };
            let mut replaced = valid.clone();
            replaced.insert(name, value.clone());
            assert!(
                scheme.verify(&replaced, BODY, keys, 300, NOW).is_err(),
                "{scheme:?} accepted {name}: {value:?}"
            );

            let mut repeated = valid.clone();
            repeated.append(name, value);
            assert!(
                scheme.verify(&repeated, BODY, keys, 300, NOW).is_err(),
                "{scheme:?} accepted a repeated {name}"
            );
        }
    }
}

/// Random header values built from the schemes' own separators and keywords: never a panic,
/// never a pass. A fixed-seed generator keeps the test reproducible without a `rand` crate.
pub fn fuzz_headers(scheme: Scheme, names: &[&'static str]) {
    const PIECES: [&str; 24] = [
        "t",
        "ts",
        "v0",
        "v1",
        "v1a",
        "h1",
        "h2",
        "sha256",
        "=",
        ",",
        ";",
        " ",
        ".",
        ":",
        "0",
        "1700000000",
        "-",
        "+",
        "ab",
        "ff",
        "==",
        "/",
        "\u{e9}",
        "AAAA",
    ];
    let key = key_for(scheme, "fuzz");
    let keys = std::slice::from_ref(&key);
    let valid = signed_headers(scheme, &key, BODY, NOW);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(state >> 33).unwrap_or(0)
    };
    for _ in 0..2_000 {
        let mut headers = valid.clone();
        for &name in names {
            if next() % 3 == 0 {
                continue; // keep the valid value of this one
            }
            let mut value = String::new();
            for _ in 0..next() % 12 {
                value.push_str(PIECES[next() % PIECES.len()]);
            }
            let Ok(value) = HeaderValue::from_bytes(value.as_bytes()) else {
                continue;
            };
            headers.insert(name, value);
        }
        if headers == valid {
            continue;
        }
        let now = [NOW, i64::MIN, i64::MAX, 0][next() % 4];
        assert!(
            scheme.verify(&headers, BODY, keys, 300, now).is_err(),
            "{scheme:?} accepted {headers:?} at {now}"
        );
    }
}

/// The tests every scheme has, in a scheme's `mod tests`: `scheme_tests!(SCHEME, &NAMES);`,
/// `NAMES` being the headers that carry its signature (and its id and timestamp, if signed).
macro_rules! scheme_tests {
    ($scheme:expr, $names:expr) => {
        #[test]
        fn a_signed_body_round_trips() {
            $crate::schemes::testkit::round_trip($scheme);
        }

        #[test]
        fn a_changed_body_is_refused() {
            $crate::schemes::testkit::tampered_body_fails($scheme);
        }

        #[test]
        fn the_signing_key_matches_in_any_position_of_a_rotation() {
            $crate::schemes::testkit::rotation_second_key_matches($scheme);
        }

        #[test]
        fn clock_skew_is_refused_when_the_scheme_signs_a_timestamp() {
            $crate::schemes::testkit::clock_skew($scheme);
        }

        #[test]
        fn hostile_headers_are_refused_without_a_panic() {
            $crate::schemes::testkit::hostile_headers_fail($scheme, $names);
        }

        #[test]
        fn random_headers_never_pass() {
            $crate::schemes::testkit::fuzz_headers($scheme, $names);
        }
    };
}
pub(crate) use scheme_tests;

/// Runs `file`'s vectors (in `app/tests/vectors/`) through `auth`, with each vector's secrets,
/// public keys, method and URL; a challenge vector is the preset's, not the signature's.
pub fn run_auth_vectors(auth: super::Auth<'_>, file: &str, tolerance_secs: u64) -> usize {
    let path = format!("{}/tests/vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    run_vectors_with(&path, |v: &Vector| {
        if v.challenge_response.is_some() {
            return None;
        }
        let keys = v
            .all_secrets()
            .into_iter()
            .map(|secret| auth.parse_secret(secret))
            .collect::<Result<Vec<_>, _>>();
        let public_keys = v
            .all_public_keys()
            .into_iter()
            .map(|key| super::public_key::parse_public_key(auth.scheme, key))
            .collect::<Result<Vec<_>, _>>();
        let (keys, public_keys) = match (keys, public_keys) {
            (Ok(keys), Ok(public_keys)) => (keys, public_keys),
            (Err(why), _) | (_, Err(why)) => return Some(Err(format!("key refused: {why}"))),
        };
        let headers = v.header_map();
        let request = super::Request {
            method: v.method.as_deref().unwrap_or("POST"),
            query: None,
            url: v.url.as_deref(),
            headers: &headers,
            body: v.body.as_bytes(),
        };
        let auth = super::Auth {
            public_keys: &public_keys,
            ..auth
        };
        Some(
            auth.verify(&request, &keys, tolerance_secs, v.now())
                .map_err(|e| e.to_string()),
        )
    })
}
