//! The tests every scheme shares: names, secrets, error texts, and the helpers of `shared.rs`.

use super::shared::{check_tolerance, parse_stamped, parse_unix};
use super::testkit::*;
use super::*;

#[test]
fn names_round_trip() {
    for scheme in ALL_SCHEMES {
        assert_eq!(Scheme::from_name(scheme.name()), Some(scheme));
    }
    assert_eq!(
        Scheme::from_name("standard-webhooks"),
        Some(Scheme::StandardWebhooks)
    );
    assert_eq!(Scheme::from_name("hmac-sha256"), Some(Scheme::HmacSha256));
    assert_eq!(Scheme::from_name("none"), Some(Scheme::None));
    for unknown in ["", "Stripe", "svix", "twilio-sms", "github-sha1", " stripe"] {
        assert_eq!(Scheme::from_name(unknown), None, "{unknown:?}");
    }
}

#[test]
fn timestamped_schemes() {
    let timestamped: Vec<_> = ALL_SCHEMES
        .into_iter()
        .filter(Scheme::has_timestamp)
        .collect();
    assert_eq!(
        timestamped,
        [
            Scheme::StandardWebhooks,
            Scheme::Stripe,
            Scheme::Paddle,
            Scheme::Slack,
            Scheme::HmacSha256
        ]
    );
}

#[test]
fn none_scheme_accepts_everything_and_signs_nothing() {
    let key = Scheme::None
        .parse_secret("")
        .expect("none takes any secret");
    assert!(Scheme::None.sign(&key, "id", b"body", NOW).is_empty());
    assert_eq!(
        Scheme::None.verify(&HeaderMap::new(), b"body", &[], 0, i64::MIN),
        Ok(())
    );
}

#[test]
fn raw_secrets_are_validated() {
    for scheme in ALL_SCHEMES {
        if matches!(scheme, Scheme::StandardWebhooks | Scheme::None) {
            continue;
        }
        assert!(scheme.parse_secret("").is_err(), "{scheme:?}");
        let err = scheme
            .parse_secret(" hunter2-secret\n")
            .expect_err("white space is refused");
        assert!(!err.contains("hunter2"), "{err}");
        // The whole string is the key, whsec_ included (Stripe).
        assert!(scheme.parse_secret("whsec_dGVzdA==").is_ok());
    }
}

#[test]
fn secret_debug_is_redacted() {
    for scheme in ALL_SCHEMES {
        let secret = secret_for(scheme, "correct-horse-battery");
        let key = scheme.parse_secret(&secret).expect("valid secret");
        let shown = format!("{key:?} {key:#?} {:?}", std::slice::from_ref(&key));
        assert!(!shown.contains("correct-horse"), "{shown}");
        assert!(!shown.contains("99, 111"), "{shown}"); // the bytes of "co"
        assert_eq!(format!("{key:?}"), "SecretKey(..)");
    }
}

#[test]
fn errors_display_fixed_text() {
    let errors = [
        AuthError::MissingHeader("webhook-id".into()),
        AuthError::Malformed("no timestamp"),
        AuthError::TimestampOutOfTolerance {
            age_secs: -5,
            tolerance_secs: 0,
        },
        AuthError::NoMatchingSignature {
            signatures: 3,
            secrets: 1,
        },
    ];
    for err in &errors {
        let text = err.to_string();
        assert!(!text.is_empty());
        let _: &dyn std::error::Error = err;
    }
    assert_eq!(
        AuthError::MissingHeader("webhook-id".into()).to_string(),
        "missing header webhook-id"
    );
    // The refused-requests log's precise causes.
    assert_eq!(
        errors[2].to_string(),
        "timestamp 5 s newer than the tolerance of 0 s allows"
    );
    assert_eq!(
        errors[3].to_string(),
        "none of 3 signatures matches any of 1 secret"
    );
    assert_eq!(
        AuthError::TimestampOutOfTolerance {
            age_secs: i64::MIN,
            tolerance_secs: u64::MAX,
        }
        .to_string(),
        "timestamp 0 s newer than the tolerance of 18446744073709551615 s allows"
    );
}

#[test]
fn unix_timestamps_are_strict() {
    assert_eq!(parse_unix("1614265330"), Some(1_614_265_330));
    assert_eq!(parse_unix("0"), Some(0));
    assert_eq!(parse_unix("9223372036854775807"), Some(i64::MAX));
    for bad in [
        "",
        " 1",
        "1 ",
        "+1",
        "-1",
        "01",
        "1e9",
        "1.0",
        "0x10",
        "9223372036854775808",
        "99999999999999999999999999",
        "١٢",
    ] {
        assert_eq!(parse_unix(bad), None, "{bad:?}");
    }
}

#[test]
fn tolerance_is_symmetric_inclusive_and_overflow_free() {
    assert!(check_tolerance(100, 400, 300).is_ok());
    assert!(check_tolerance(700, 400, 300).is_ok());
    assert!(check_tolerance(99, 400, 300).is_err());
    assert!(check_tolerance(701, 400, 300).is_err());
    assert!(check_tolerance(i64::MAX, i64::MIN, u64::MAX).is_ok());
    assert!(check_tolerance(i64::MAX, i64::MIN, 300).is_err());
    assert!(check_tolerance(0, i64::MIN, 0).is_err());
}

#[test]
fn stamped_header_parsing() {
    let parsed = parse_stamped("t=5,v1=a,v0=b,,x,v1=", ',', "t", "v1").expect("parses");
    assert_eq!(parsed.timestamp, 5);
    assert_eq!(parsed.timestamp_text, "5");
    assert_eq!(parsed.signatures, ["a", ""]);
    for bad in [
        "",
        "t",
        "t=",
        "t=1",
        "v1=a",
        "t=1,t=1,v1=a",
        "t=x,v1=a",
        "t=-1,v1=a",
    ] {
        assert!(
            matches!(
                parse_stamped(bad, ',', "t", "v1"),
                Err(AuthError::Malformed(_))
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn missing_or_odd_keys_never_match() {
    for scheme in ALL_SCHEMES {
        if scheme == Scheme::None {
            continue;
        }
        let key = scheme
            .parse_secret(&secret_for(scheme, "k1"))
            .expect("valid");
        let headers = signed_headers(scheme, &key, b"{}", NOW);
        let got = scheme.verify(&headers, b"{}", &[], 300, NOW);
        assert!(
            matches!(got, Err(AuthError::NoMatchingSignature { secrets: 0, .. })),
            "{scheme:?} with no keys: {got:?}"
        );
    }
}

#[test]
fn every_scheme_describes_what_it_checks() {
    assert_eq!(
        Scheme::HmacSha256.describe(300),
        "HMAC-SHA256 of the timestamp and body, hex, in X-Hookbox-Signature (t=…,v1=…), \
         its timestamp within 5 minutes of hookbox's clock"
    );
    assert!(
        Scheme::Paddle
            .describe(5)
            .ends_with("within 5 seconds of hookbox's clock")
    );
    assert!(
        Scheme::Stripe
            .describe(3600)
            .ends_with("within 1 hour of hookbox's clock")
    );
    assert!(
        Scheme::Slack
            .describe(90)
            .ends_with("within 90 seconds of hookbox's clock")
    );
    for scheme in ALL_SCHEMES {
        let words = scheme.describe(300);
        // Each names the header it reads the signature from, and a tolerance only if it has one.
        for header in scheme.signature_headers() {
            assert!(
                words.to_lowercase().contains(header),
                "{scheme:?} does not name {header}: {words}"
            );
        }
        assert_eq!(
            words.contains("5 minutes"),
            scheme.has_timestamp(),
            "{scheme:?}: {words}"
        );
    }
}
