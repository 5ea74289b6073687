//! `scheme = "hmac"`: a recipe is read from the source's keys, and every problem of one stops
//! start-up naming the source and the key.

#![allow(clippy::unwrap_used)]

use super::tests::{parse, problem};
use super::*;
use crate::schemes::recipe::{Algorithm, Encoding, Part, TimeUnit, TimestampAt};
use crate::schemes::{Recipe, Scheme};

const LEMON: &str = r#"
[[sources]]
name = "lemon"
scheme = "hmac"
secrets_env = ["LEMON_SECRET", "LEMON_SECRET_OLD"]
algorithm = "sha256"
signature_header = "X-Signature"
signed = ["body"]
"#;

/// Every problem of `text` as (source, key, message).
fn problems(text: &str, vars: &[(&str, &str)]) -> Vec<(String, String, String)> {
    let ConfigErrors(problems) = parse(text, vars).expect_err("problems");
    problems
        .into_iter()
        .map(|p| {
            (
                p.source_name.unwrap_or_default(),
                p.key.unwrap_or_default(),
                p.message,
            )
        })
        .collect()
}

#[test]
fn a_recipe_is_read_with_its_defaults() {
    let config = parse(
        LEMON,
        &[("LEMON_SECRET", "one"), ("LEMON_SECRET_OLD", "two")],
    )
    .unwrap();
    let lemon = config.source("lemon").unwrap();
    assert_eq!(lemon.scheme, Scheme::Hmac);
    assert_eq!(
        lemon.recipe,
        Some(Recipe {
            algorithm: Algorithm::Sha256,
            signature_header: "x-signature".into(),
            signature_separator: None,
            signature_prefix: String::new(),
            signature_encoding: Encoding::Hex,
            signed: vec![Part::Body],
            timestamp: None,
            secret_encoding: crate::schemes::recipe::SecretEncoding::Utf8,
            secret_prefix: String::new(),
        })
    );
    assert_eq!(lemon.keys.len(), 2);
    assert_eq!(
        lemon.auth().describe(lemon.tolerance_secs),
        "HMAC-SHA256 of the body, hex, in x-signature; no timestamp is signed, so a captured request stays valid"
    );
    assert_eq!(lemon.auth().signature_headers(), ["x-signature"]);
    assert!(lemon.auth().signs_body_only());

    let stamped = parse(
        r#"
[server]
public_url = "https://hooks.example.com/"

[[sources]]
name = "hub"
scheme = "hmac"
secrets_env = ["HUB"]
algorithm = "sha512"
signature_header = "X-Sig"
signature_separator = ","
signature_prefix = "v1="
signature_encoding = "base64"
timestamp_prefix = "t="
timestamp_unit = "ms"
signed = ["method", "url", "timestamp", "literal:.", "header:X-Id", "body"]
secret_encoding = "base64"
secret_prefix = "whsec_"
tolerance_secs = 60
"#,
        &[("HUB", "whsec_c2VjcmV0")],
    )
    .unwrap();
    assert_eq!(
        stamped.server.public_url.as_deref(),
        Some("https://hooks.example.com")
    );
    let hub = stamped.source("hub").unwrap();
    let recipe = hub.recipe.as_ref().unwrap();
    assert_eq!(
        recipe.timestamp,
        Some((TimestampAt::Entry("t=".into()), TimeUnit::Milliseconds))
    );
    assert_eq!(recipe.signature_separator, Some(','));
    assert_eq!(recipe.signed[4], Part::Header("x-id".into()));
    assert!(hub.auth().has_timestamp());
    assert!(!hub.auth().signs_body_only());
    assert_eq!(
        hub.auth().describe(60),
        "HMAC-SHA512 of the method + the URL + the timestamp + \".\" + x-id + the body, base64, in x-sig after \"v1=\"; the timestamp as \"t=\", its timestamp within 1 minute of hookbox's clock"
    );
}

#[test]
fn a_bad_recipe_stops_start_up_naming_the_source_and_each_key() {
    let text = r#"
[[sources]]
name = "lemon"
scheme = "hmac"
secrets_env = ["LEMON_SECRET"]
algorithm = "md5"
signature_header = "X-Signature"
signed = ["url", "timestamp"]
secret_encoding = "hex"
"#;
    let found = problems(text, &[("LEMON_SECRET", "not hex")]);
    let keys: Vec<(&str, &str)> = found
        .iter()
        .map(|(source, key, _)| (source.as_str(), key.as_str()))
        .collect();
    assert_eq!(keys, [("lemon", "algorithm")], "{found:#?}");
    assert_eq!(
        found[0].2,
        "unknown algorithm \"md5\": sha1, sha256 or sha512"
    );

    // With a known algorithm, the rules between keys and the secret are checked.
    let text = text.replace("\"md5\"", "\"sha256\"");
    let found = problems(&text, &[("LEMON_SECRET", "not hex")]);
    let messages: Vec<String> = found
        .iter()
        .map(|(source, key, message)| format!("{source}: {key}: {message}"))
        .collect();
    assert_eq!(
        messages,
        [
            "lemon: signed: does not contain \"body\": the signature would not cover what is delivered",
            "lemon: signed: contains \"timestamp\" but no timestamp_header or timestamp_prefix says where it is",
            "lemon: signed: contains \"url\" but [server] public_url is not set: the URL the sender signs cannot be known behind a proxy",
        ],
        "{found:#?}"
    );
    let fixed = text.replace("[\"url\", \"timestamp\"]", "[\"body\"]");
    let e = problem(&fixed, &[("LEMON_SECRET", "not hex")]);
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source lemon: secrets_env: the secret in LEMON_SECRET: secret is not hex"
    );
    assert!(
        !e.to_string().contains("not hex\""),
        "the secret is never echoed"
    );

    // A recipe key beside another scheme would be ignored: it is named.
    let e = problem(
        "[[sources]]\nname = \"shop\"\nscheme = \"stripe\"\nsecrets_env = [\"S\"]\nalgorithm = \"sha1\"\n",
        &[("S", "s3cret")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source shop: algorithm: is a recipe key: it applies only with scheme = \"hmac\""
    );
    // The required keys.
    let found = problems(
        "[[sources]]\nname = \"bare\"\nscheme = \"hmac\"\nsecrets_env = [\"S\"]\n",
        &[("S", "s3cret")],
    );
    let keys: Vec<&str> = found.iter().map(|(_, key, _)| key.as_str()).collect();
    assert_eq!(
        keys,
        ["algorithm", "signature_header", "signed"],
        "{found:#?}"
    );
}

#[test]
fn public_url_is_an_origin() {
    for (url, wrong) in [
        ("hooks.example.com", "is not a URL"),
        ("ftp://hooks.example.com", "is not an http or https URL"),
        (
            "https://hooks.example.com/hooks",
            "has a path, query or fragment",
        ),
        (
            "https://hooks.example.com/?a=1",
            "has a path, query or fragment",
        ),
    ] {
        let e = problem(&format!("[server]\npublic_url = \"{url}\"\n"), &[]);
        assert_eq!(e.key.as_deref(), Some("server.public_url"), "{url}");
        assert!(e.message.contains(wrong), "{url}: {}", e.message);
    }
}

#[test]
fn a_token_source_names_its_header_and_basic_takes_user_password() {
    let e = problem(
        "[[sources]]\nname = \"gl\"\nscheme = \"token\"\nsecrets_env = [\"S\"]\n",
        &[("S", "glwt-1")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source gl: token_header: is required with scheme = \"token\" (or token_query)"
    );
    for (line, why) in [
        (
            "scheme = \"stripe\"\ntoken_query = \"key\"",
            "token_query: applies only with scheme = \"token\"",
        ),
        (
            "scheme = \"token\"\ntoken_header = \"X-T\"\ntoken_query = \"a b\"",
            "token_query: \"a b\" is not a query parameter name (letters, digits, _ and -)",
        ),
        (
            "scheme = \"twilio\"",
            "scheme: twilio signs the URL the sender posts to: set [server] public_url, since hookbox cannot see it behind a proxy",
        ),
    ] {
        let e = problem(
            &format!("[[sources]]\nname = \"q\"\n{line}\nsecrets_env = [\"S\"]\n"),
            &[("S", "s3cret")],
        );
        assert!(e.to_string().contains(why), "{line}: {e}");
    }
    let e = problem(
        "[[sources]]\nname = \"shop\"\nscheme = \"stripe\"\nsecrets_env = [\"S\"]\ntoken_header = \"X-T\"\n",
        &[("S", "s3cret")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source shop: token_header: applies only with scheme = \"token\""
    );
    let config = parse(
        "[[sources]]\nname = \"gl\"\npreset = \"gitlab\"\nsecrets_env = [\"S\"]\n",
        &[("S", "glwt-1")],
    )
    .unwrap();
    let gitlab = config.source("gl").unwrap();
    assert_eq!(gitlab.token_header.as_deref(), Some("x-gitlab-token"));
    assert_eq!(
        gitlab.auth().describe(300),
        "a shared token in x-gitlab-token, equal to a secret; nothing is signed, so a captured request stays valid"
    );
    let e = problem(
        "[[sources]]\nname = \"pm\"\nscheme = \"basic\"\nsecrets_env = [\"S\"]\n",
        &[("S", "no colon")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source pm: secrets_env: the secret in S: secret is not user:password"
    );
}

#[test]
fn public_keys_are_read_for_their_scheme_and_a_bad_one_stops_start_up_naming_it() {
    let text = r#"
[[sources]]
name = "stdwh"
scheme = "standard-webhooks"
secrets_env = ["STDWH_SECRET"]
public_keys_env = ["STDWH_PUBLIC_KEY"]
"#;
    let good = "whpk_Wt+q6hwenv+i22xieiDnqkg+I5QIzC3v45i9fjjGJFs=";
    let config = parse(
        text,
        &[
            ("STDWH_SECRET", "whsec_c2VjcmV0"),
            ("STDWH_PUBLIC_KEY", good),
        ],
    )
    .unwrap();
    let source = config.source("stdwh").unwrap();
    assert_eq!((source.keys.len(), source.public_keys.len()), (1, 1));
    // Public keys alone are enough for a public-key scheme.
    let keys_only = text.replace("secrets_env = [\"STDWH_SECRET\"]\n", "");
    assert!(parse(&keys_only, &[("STDWH_PUBLIC_KEY", good)]).is_ok());
    let e = problem(
        text,
        &[
            ("STDWH_SECRET", "whsec_c2VjcmV0"),
            (
                "STDWH_PUBLIC_KEY",
                "whpk_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==",
            ),
        ],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source stdwh: public_keys_env: the public key in STDWH_PUBLIC_KEY decodes to 31 bytes, not the 32 of an Ed25519 key"
    );
    let e = problem("[[sources]]\nname = \"d\"\npreset = \"discord\"\n", &[]);
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source d: public_keys_env: must name at least one environment variable: scheme discord verifies public keys"
    );
    let e = problem(
        "[[sources]]\nname = \"shop\"\nscheme = \"stripe\"\nsecrets_env = [\"S\"]\npublic_keys_env = [\"K\"]\n",
        &[("S", "s3cret"), ("K", good)],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source shop: public_keys_env: scheme stripe verifies no public keys"
    );
}

#[test]
fn the_bodys_digest_can_only_name_an_event() {
    let e = problem(
        "[[sources]]\nname = \"lemon\"\npreset = \"lemonsqueezy\"\nsecrets_env = [\"S\"]\nobject_id = \"body:sha256\"\n",
        &[("S", "s3cret")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source lemon: object_id: body:sha256 can only be an event_id"
    );
    let config = parse(
        "[[sources]]\nname = \"lemon\"\npreset = \"lemonsqueezy\"\nsecrets_env = [\"S\"]\n",
        &[("S", "s3cret")],
    )
    .unwrap();
    assert_eq!(
        config.source("lemon").unwrap().mapping.event_id.to_string(),
        "body:sha256"
    );
}
