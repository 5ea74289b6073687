//! Recipes: the built-in HMAC schemes written as recipes pass those schemes' vectors, each
//! provider whose signature is a plain recipe passes its own, and a bad recipe is refused naming
//! its key.

#![allow(clippy::unwrap_used)]

use super::super::testkit::run_auth_vectors;
use super::*;

/// A recipe from `pairs` of keys and values, and its `signed` list.
fn recipe(pairs: &[(&'static str, &str)], signed: &[&str]) -> Recipe {
    read(pairs, Some(signed)).expect("a valid recipe")
}

fn read(
    pairs: &[(&'static str, &str)],
    signed: Option<&[&str]>,
) -> Result<Recipe, Vec<RecipeProblem>> {
    Recipe::read(
        |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_string())
        },
        signed.map(|list| list.iter().map(|s| (*s).to_string()).collect()),
    )
}

/// Runs `file`'s vectors through `recipe`.
fn vectors(recipe: &Recipe, file: &str, tolerance_secs: u64) -> usize {
    let auth = crate::schemes::Auth {
        scheme: crate::schemes::Scheme::Hmac,
        recipe: Some(recipe),
        token_header: None,
        token_query: None,
        public_keys: &[],
    };
    run_auth_vectors(auth, file, tolerance_secs)
}

const BODY: [&str; 1] = ["body"];

#[test]
fn the_builtin_hmac_schemes_as_recipes_pass_their_vectors() {
    let stripe = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "Stripe-Signature"),
            ("signature_separator", ","),
            ("signature_prefix", "v1="),
            ("timestamp_prefix", "t="),
        ],
        &["timestamp", "literal:.", "body"],
    );
    assert!(vectors(&stripe, "stripe.json", 300) >= 20);
    let github = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-Hub-Signature-256"),
            ("signature_prefix", "sha256="),
        ],
        &BODY,
    );
    assert!(vectors(&github, "github.json", 300) >= 10);
    let paddle = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "Paddle-Signature"),
            ("signature_separator", ";"),
            ("signature_prefix", "h1="),
            ("timestamp_prefix", "ts="),
        ],
        &["timestamp", "literal::", "body"],
    );
    assert!(vectors(&paddle, "paddle.json", 5) >= 20);
    let shopify = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-Shopify-Hmac-Sha256"),
            ("signature_encoding", "base64"),
        ],
        &BODY,
    );
    assert_eq!(vectors(&shopify, "shopify.json", 300), 5);
    let slack = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-Slack-Signature"),
            ("signature_prefix", "v0="),
            ("timestamp_header", "X-Slack-Request-Timestamp"),
        ],
        &["literal:v0:", "timestamp", "literal::", "body"],
    );
    assert_eq!(vectors(&slack, "slack.json", 300), 7);
    let standard = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "webhook-signature"),
            ("signature_separator", " "),
            ("signature_prefix", "v1,"),
            ("signature_encoding", "base64"),
            ("timestamp_header", "webhook-timestamp"),
            ("secret_encoding", "base64"),
            ("secret_prefix", "whsec_"),
        ],
        &[
            "header:webhook-id",
            "literal:.",
            "timestamp",
            "literal:.",
            "body",
        ],
    );
    assert!(vectors(&standard, "standard-webhooks.json", 300) >= 20);
}

#[test]
fn providers_whose_signature_is_a_plain_recipe_pass_their_vectors() {
    let of_body = |header: &str, algorithm: &str, prefix: &str, encoding: &str| {
        let pairs = [
            ("algorithm", algorithm),
            ("signature_header", header),
            ("signature_prefix", prefix),
            ("signature_encoding", encoding),
        ];
        recipe(&pairs, &BODY)
    };
    for (file, recipe) in [
        (
            "lemonsqueezy.json",
            of_body("X-Signature", "sha256", "", "hex"),
        ),
        (
            "typeform.json",
            of_body("Typeform-Signature", "sha256", "sha256=", "base64"),
        ),
        (
            "vercel.json",
            of_body("x-vercel-signature", "sha1", "", "hex"),
        ),
        (
            "bitbucket.json",
            of_body("X-Hub-Signature", "sha256", "sha256=", "hex"),
        ),
        (
            "intercom.json",
            of_body("X-Hub-Signature", "sha1", "sha1=", "hex"),
        ),
        (
            "sentry.json",
            of_body("Sentry-Hook-Signature", "sha256", "", "hex"),
        ),
        (
            "notion.json",
            of_body("X-Notion-Signature", "sha256", "sha256=", "hex"),
        ),
        (
            "woocommerce.json",
            of_body("X-WC-Webhook-Signature", "sha256", "", "base64"),
        ),
        (
            "razorpay.json",
            of_body("X-Razorpay-Signature", "sha256", "", "hex"),
        ),
        (
            "dropbox.json",
            of_body("X-Dropbox-Signature", "sha256", "", "hex"),
        ),
        (
            "asana.json",
            of_body("X-Hook-Signature", "sha256", "", "hex"),
        ),
    ] {
        assert!(vectors(&recipe, file, 300) >= 4, "{file}");
    }
    let pagerduty = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-PagerDuty-Signature"),
            ("signature_separator", ","),
            ("signature_prefix", "v1="),
        ],
        &BODY,
    );
    assert!(vectors(&pagerduty, "pagerduty.json", 300) >= 8);
    let calendly = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "Calendly-Webhook-Signature"),
            ("signature_separator", ","),
            ("signature_prefix", "v1="),
            ("timestamp_prefix", "t="),
        ],
        &["timestamp", "literal:.", "body"],
    );
    assert!(vectors(&calendly, "calendly.json", 180) >= 8);
    let square = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "x-square-hmacsha256-signature"),
            ("signature_encoding", "base64"),
        ],
        &["url", "body"],
    );
    assert!(vectors(&square, "square.json", 300) >= 8);
    let hubspot = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-HubSpot-Signature-v3"),
            ("signature_encoding", "base64"),
            ("timestamp_header", "X-HubSpot-Request-Timestamp"),
            ("timestamp_unit", "ms"),
        ],
        &["method", "url", "body", "timestamp"],
    );
    assert!(vectors(&hubspot, "hubspot.json", 300) >= 8);
    let zoom = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "x-zm-signature"),
            ("signature_prefix", "v0="),
            ("timestamp_header", "x-zm-request-timestamp"),
        ],
        &["literal:v0:", "timestamp", "literal::", "body"],
    );
    assert!(vectors(&zoom, "zoom.json", 300) >= 5);
    let twitch = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "Twitch-Eventsub-Message-Signature"),
            ("signature_prefix", "sha256="),
            ("timestamp_header", "Twitch-Eventsub-Message-Timestamp"),
            ("timestamp_unit", "rfc3339"),
        ],
        &["header:Twitch-Eventsub-Message-Id", "timestamp", "body"],
    );
    assert!(vectors(&twitch, "twitch.json", 600) >= 7);
    // Linear's timestamp is a field of the signed body, read once the signature verifies.
    let linear = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "Linear-Signature"),
            ("timestamp_field", "/webhookTimestamp"),
            ("timestamp_unit", "ms"),
        ],
        &BODY,
    );
    assert_eq!(vectors(&linear, "linear.json", 60), 11);
}

#[test]
fn every_preset_recipe_is_the_one_its_vectors_pass() {
    use crate::providers::Preset;
    for (preset, file, tolerance) in [
        (Preset::Linear, "linear.json", 60),
        (Preset::Dropbox, "dropbox.json", 300),
        (Preset::Asana, "asana.json", 300),
    ] {
        let recipe = preset.recipe().expect("a recipe preset");
        assert_eq!(preset.tolerance_secs().unwrap_or(300), tolerance);
        assert!(vectors(&recipe, file, tolerance) >= 6, "{file}");
    }
}

#[test]
fn what_a_recipe_signs_verifies_and_one_changed_byte_does_not() {
    let recipe = recipe(
        &[
            ("algorithm", "sha512"),
            ("signature_header", "X-Signature"),
            ("signature_separator", ","),
            ("signature_prefix", "v1="),
            ("timestamp_prefix", "t="),
            ("signature_encoding", "base64"),
        ],
        &[
            "method",
            "literal: ",
            "url",
            "literal:\n",
            "timestamp",
            "literal:.",
            "body",
        ],
    );
    let key = recipe.parse_secret("a-secret").unwrap();
    let mut headers = HeaderMap::new();
    let unsigned = Request {
        method: "POST",
        query: None,
        url: Some("https://hooks.example.com/hooks/lemon"),
        headers: &HeaderMap::new(),
        body: b"{}",
    };
    for (name, value) in recipe.sign(&key, &unsigned, 1_700_000_000) {
        headers.insert(name, value.parse().unwrap());
    }
    let value = headers["x-signature"].to_str().unwrap().to_string();
    assert!(value.starts_with("t=1700000000,v1="), "{value}");
    let check = |body: &'static [u8], now: i64| {
        let req = Request {
            method: "POST",
            query: None,
            url: Some("https://hooks.example.com/hooks/lemon"),
            headers: &headers,
            body,
        };
        recipe.verify(&req, std::slice::from_ref(&key), 300, now)
    };
    assert_eq!(check(b"{}", 1_700_000_000), Ok(()));
    assert!(matches!(
        check(b"{ }", 1_700_000_000),
        Err(AuthError::NoMatchingSignature {
            signatures: 1,
            secrets: 1
        })
    ));
    assert!(matches!(
        check(b"{}", 1_700_000_301),
        Err(AuthError::TimestampOutOfTolerance { .. })
    ));
}

#[test]
fn a_bad_recipe_is_refused_naming_each_key() {
    let problems = read(
        &[
            ("algorithm", "md5"),
            ("signature_header", "X Bad"),
            ("signature_encoding", "base32"),
            ("secret_encoding", "rot13"),
            ("timestamp_unit", "minutes"),
            ("signature_separator", ",,"),
        ],
        Some(&["body", "cookie"]),
    )
    .unwrap_err();
    let keys: Vec<&str> = problems.iter().map(|(key, _)| *key).collect();
    assert_eq!(
        keys,
        [
            "algorithm",
            "signature_header",
            "signature_encoding",
            "signature_separator",
            "timestamp_unit",
            "secret_encoding",
            "signed"
        ],
        "{problems:?}"
    );
    assert!(
        problems[0].1.contains("unknown algorithm \"md5\""),
        "{problems:?}"
    );
    let missing = read(&[], None).unwrap_err();
    assert_eq!(
        missing,
        [
            (
                "algorithm",
                "is required with scheme = \"hmac\"".to_string()
            ),
            (
                "signature_header",
                "is required with scheme = \"hmac\"".to_string()
            ),
            ("signed", "is required with scheme = \"hmac\"".to_string()),
        ]
    );
    // The rules between keys.
    let no_body = recipe(
        &[("algorithm", "sha256"), ("signature_header", "X-S")],
        &["method"],
    );
    assert_eq!(no_body.check(true)[0].0, "signed");
    let url = recipe(
        &[("algorithm", "sha256"), ("signature_header", "X-S")],
        &["url", "body"],
    );
    assert!(url.check(true).is_empty());
    assert!(url.check(false)[0].1.contains("public_url is not set"));
    let stamp = recipe(
        &[("algorithm", "sha256"), ("signature_header", "X-S")],
        &["timestamp", "body"],
    );
    assert!(
        stamp.check(true)[0]
            .1
            .contains("no timestamp_header or timestamp_prefix")
    );
    // Secrets that do not decode.
    let b64 = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-S"),
            ("secret_encoding", "base64"),
        ],
        &BODY,
    );
    assert_eq!(
        b64.parse_secret("not base64!").unwrap_err(),
        "secret is not base64"
    );
    let hex = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-S"),
            ("secret_encoding", "hex"),
        ],
        &BODY,
    );
    assert_eq!(hex.parse_secret("zz").unwrap_err(), "secret is not hex");
}

#[test]
fn a_recipe_in_words() {
    let recipe = recipe(
        &[("algorithm", "sha256"), ("signature_header", "X-Signature")],
        &BODY,
    );
    assert_eq!(
        recipe.to_string(),
        "HMAC-SHA256 of the body, hex, in x-signature"
    );
}

#[test]
fn an_rfc3339_timestamp_is_signed_as_sent_and_checked_within_the_tolerance() {
    let recipe = recipe(
        &[
            ("algorithm", "sha256"),
            ("signature_header", "X-Sig"),
            ("signature_prefix", "sha256="),
            ("timestamp_header", "X-Time"),
            ("timestamp_unit", "rfc3339"),
        ],
        &["header:X-Id", "timestamp", "body"],
    );
    let key = recipe.parse_secret("a-secret").unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("x-id", "delivery-1".parse().unwrap());
    let unsigned = Request {
        method: "POST",
        query: None,
        url: None,
        headers: &headers.clone(),
        body: b"{}",
    };
    for (name, value) in recipe.sign(&key, &unsigned, 1_764_748_798) {
        headers.insert(name, value.parse().unwrap());
    }
    assert_eq!(headers["x-time"], "2025-12-03T07:59:58.000000000Z");
    let signed = Request {
        headers: &headers,
        ..unsigned
    };
    let verify = |now| recipe.verify(&signed, std::slice::from_ref(&key), 600, now);
    assert_eq!(verify(1_764_748_798 + 600), Ok(()));
    assert!(matches!(
        verify(1_764_748_798 + 601),
        Err(AuthError::TimestampOutOfTolerance { .. })
    ));
}
