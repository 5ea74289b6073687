//! `hookbox check-config`, run as the real binary: no database, every problem listed with its
//! file, source and key, a non-zero exit on problems, and a summary that never shows a secret.

use std::path::Path;
use std::process::{Command, Output};

const STRIPE_SECRET: &str = "whsec_check-config-stripe-secret";
const STRIPE_SECRET_OLD: &str = "whsec_check-config-stripe-previous";
const SHOPIFY_SECRET: &str = "shpss_check-config-shopify-secret";
const ORDERS_SECRET: &str = "check-config-orders-secret";

/// Runs `hookbox check-config [file]` in `dir` with only these environment variables, and a
/// database URL that nothing listens on: checking must not need one.
fn check_config(dir: &Path, file: Option<&Path>, vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookbox"));
    command
        .arg("check-config")
        .current_dir(dir)
        .env_clear()
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .envs(vars.iter().copied());
    if let Some(file) = file {
        command.arg(file);
    }
    command.output().expect("hookbox runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_valid_file_is_summarised_without_its_secrets() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("sources.toml");
    std::fs::write(
        &file,
        r#"
[[sources]]
name = "payments"
preset = "stripe"
secrets_env = ["STRIPE_SECRET", "STRIPE_SECRET_OLD"]

[[sources]]
name = "shop"
preset = "shopify"
secrets_env = ["SHOPIFY_SECRET"]

[[sources]]
name = "orders"
scheme = "hmac-sha256"
secrets_env = ["ORDERS_SECRET"]
"#,
    )
    .expect("write the config");
    let vars = [
        ("STRIPE_SECRET", STRIPE_SECRET),
        ("STRIPE_SECRET_OLD", STRIPE_SECRET_OLD),
        ("SHOPIFY_SECRET", SHOPIFY_SECRET),
        ("ORDERS_SECRET", ORDERS_SECRET),
    ];
    let config_var = file.to_str().expect("a UTF-8 path");

    let given = check_config(dir.path(), Some(&file), &vars);
    let from_env = check_config(
        dir.path(),
        None,
        &[vars.as_slice(), &[("HOOKBOX_CONFIG", config_var)]].concat(),
    );

    let expected = format!(
        "{path}: valid, 3 sources (max_body_bytes 1048576, retention_days 90)
source payments: preset stripe, scheme stripe, dedup, secrets from STRIPE_SECRET, STRIPE_SECRET_OLD, tolerance 300 s
  checks: Stripe: HMAC-SHA256 of the timestamp and body, hex, as v1 in Stripe-Signature, its timestamp within 5 minutes of hookbox's clock
  event_id /id, object_id /data/object/id, event_type /type
source shop: preset shopify, scheme shopify, dedup, secrets from SHOPIFY_SECRET
  checks: Shopify: HMAC-SHA256 of the body, base64, in X-Shopify-Hmac-Sha256; no timestamp is signed, so a captured request stays valid
  event_id [\"header:x-shopify-event-id\", \"header:x-shopify-webhook-id\"], object_id -, event_type header:x-shopify-topic
source orders: scheme hmac-sha256, snapshot, secrets from ORDERS_SECRET, tolerance 300 s
  checks: HMAC-SHA256 of the timestamp and body, hex, in X-Hookbox-Signature (t=…,v1=…), its timestamp within 5 minutes of hookbox's clock
  event_id /event_id, object_id /object_id, revision /revision, snapshot /snapshot, event_type /type
DATABASE_URL: postgres://***@127.0.0.1:1/none
LEPTOS_SITE_ADDR: 127.0.0.1:3000
LEPTOS_SITE_ROOT: target/site
HOOKBOX_DB_POOL_SIZE: default, HOOKBOX_DASHBOARD_POOL_SIZE: default
HOOKBOX_SESSION_HOURS: 12, HOOKBOX_COOKIE_SECURE: unset
HOOKBOX_SHUTDOWN_GRACE_SECS: 30, HOOKBOX_FORWARD_POLL_MS: 500
HOOKBOX_LOG_FORMAT: text, HOOKBOX_ALLOW_UNSIGNED: unset, HOOKBOX_ADMIN_PASSWORD: unset
HOOKBOX_TRUSTED_PROXIES: none (client address = TCP peer)
",
        path = file.display()
    );
    for output in [&given, &from_env] {
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert_eq!(text(&output.stdout), expected);
        for secret in [
            STRIPE_SECRET,
            STRIPE_SECRET_OLD,
            SHOPIFY_SECRET,
            ORDERS_SECRET,
        ] {
            assert!(!text(&output.stdout).contains(secret));
            assert!(!text(&output.stderr).contains(secret));
        }
    }
}

#[test]
fn every_problem_is_listed_with_file_source_and_key() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("hookbox.toml");
    std::fs::write(
        &file,
        r#"
[server]
max_body_bytes = 0

[[sources]]
name = "payments"
preset = "stripe"
secrets_env = ["STRIPE_SECRET", "STRIPE_SECRET_OLD"]

[[sources]]
name = "clerk"
preset = "clerk"
secrets_env = ["CLERK_SECRET"]
event_id = []
colour = "blue"
"#,
    )
    .expect("write the config");
    let bad_whsec = "whsec_!!not-base64-but-secret";

    let output = check_config(
        dir.path(),
        None,
        &[
            ("STRIPE_SECRET", STRIPE_SECRET),
            ("CLERK_SECRET", bad_whsec),
        ],
    );

    let f = file.file_name().and_then(|n| n.to_str()).expect("name");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stdout), "", "no summary for an invalid file");
    assert_eq!(
        text(&output.stderr),
        format!(
            "{f}: server.max_body_bytes: must be at least 1
{f}: source payments: secrets_env: environment variable STRIPE_SECRET_OLD is unset or empty
{f}: source clerk: colour: unknown key (known: name, preset, scheme, secrets_env, tolerance_secs, rate_limit_per_sec, retention_days, body_retention_days, mode, event_id, object_id, revision, snapshot, event_type, forward, token_header, token_query, public_keys_env, algorithm, signature_header, signature_prefix, signature_separator, signature_encoding, signed, timestamp_header, timestamp_prefix, timestamp_field, timestamp_unit, secret_encoding, secret_prefix)
{f}: source clerk: secrets_env: the secret in CLERK_SECRET: secret is not whsec_ followed by standard base64
{f}: source clerk: event_id: must name at least one place
hookbox: {f} has 5 problems
"
        )
    );
    assert!(!text(&output.stderr).contains("but-secret"));
}

#[test]
fn without_a_file_there_is_nothing_to_check() {
    let dir = tempfile::tempdir().expect("temporary folder");

    let none = check_config(dir.path(), None, &[]);
    let missing = check_config(dir.path(), Some(Path::new("absent.toml")), &[]);

    assert_eq!(none.status.code(), Some(1));
    assert_eq!(
        text(&none.stderr),
        "hookbox: no config file to check: give FILE, set HOOKBOX_CONFIG or create ./hookbox.toml\n"
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).starts_with("absent.toml: cannot be read: "),
        "{}",
        text(&missing.stderr)
    );
}

#[test]
fn deployment_settings_are_reported_and_every_bad_value_is_named() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("hookbox.toml");
    std::fs::write(
        &file,
        "[[sources]]\nname = \"orders\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"ORDERS_SECRET\"]\n",
    )
    .expect("write the config");

    let good = check_config(
        dir.path(),
        Some(&file),
        &[
            ("ORDERS_SECRET", ORDERS_SECRET),
            ("HOOKBOX_TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.7"),
        ],
    );
    let bad = check_config(
        dir.path(),
        Some(&file),
        &[
            ("ORDERS_SECRET", ORDERS_SECRET),
            ("HOOKBOX_TRUSTED_PROXIES", "10.0.0.0/8, lb.internal"),
            ("HOOKBOX_SESSION_HOURS", "twelve"),
            ("HOOKBOX_COOKIE_SECURE", "yes"),
        ],
    );
    // `serve` refuses to start on the same value, before it touches the database.
    let serve = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .arg("serve")
        .current_dir(dir.path())
        .env_clear()
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .env("ORDERS_SECRET", ORDERS_SECRET)
        .env("HOOKBOX_TRUSTED_PROXIES", "lb.internal")
        .output()
        .expect("hookbox runs");

    assert!(good.status.success(), "{}", text(&good.stderr));
    assert!(
        text(&good.stdout).contains("HOOKBOX_TRUSTED_PROXIES: 10.0.0.0/8, 192.168.1.7/32"),
        "{}",
        text(&good.stdout)
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("HOOKBOX_TRUSTED_PROXIES: \"lb.internal\" is not an IP address"),
        "{}",
        text(&bad.stderr)
    );
    for named in [
        "HOOKBOX_SESSION_HOURS must be a whole number from 1 to 8784, not \"twelve\"",
        "HOOKBOX_COOKIE_SECURE must be \"1\" or unset, not \"yes\"",
    ] {
        assert!(text(&bad.stderr).contains(named), "{}", text(&bad.stderr));
    }
    assert!(
        text(&bad.stderr).contains("has 3 problems"),
        "{}",
        text(&bad.stderr)
    );
    assert!(!serve.status.success());
    let stderr = text(&serve.stderr);
    assert!(stderr.contains("\"lb.internal\""), "{stderr}");
    assert!(!stderr.contains("connect to the database"), "{stderr}");
}

#[test]
fn a_url_s_credentials_and_password_parameters_are_never_printed() {
    const PASSWORD: &str = "pw-s3cret";
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("hookbox.toml");
    let destination = |name: &str, url: &str| {
        format!(
            "[[destinations]]\nname = \"{name}\"\nurl = \"{url}\"\nsecret_env = \"DEST_SECRET\"\n\n"
        )
    };
    let sources = "[[sources]]\nname = \"orders\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"ORDERS_SECRET\"]\n";
    let vars = [
        ("ORDERS_SECRET", ORDERS_SECRET),
        ("DEST_SECRET", "whsec_ZGVzdGluYXRpb24ta2V5"),
    ];

    // A password holding '/', '#' or '?' as typed: each refused, naming the destination.
    let ambiguous = [
        ("slash", format!("https://app:{PASSWORD}/x@app.example/in")),
        ("hash", format!("https://app:{PASSWORD}#x@app.example/in")),
        ("query", format!("https://app:{PASSWORD}?x@app.example/in")),
        (
            "port-like",
            "https://app:8443/pw-s3cret@app.example/in".to_string(),
        ),
    ];
    let text_of: String = ambiguous
        .iter()
        .map(|(name, url)| destination(name, url))
        .collect::<String>()
        + sources;
    std::fs::write(&file, text_of).expect("write the config");
    let refused = check_config(dir.path(), Some(&file), &vars);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = text(&refused.stderr);
    for (name, _) in &ambiguous {
        assert!(
            stderr.contains(&format!("destinations.{name}.url: ")),
            "{name}: {stderr}"
        );
    }
    assert!(stderr.contains("%2F"), "{stderr}");
    assert!(stderr.contains("has 4 problems"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
    assert!(!text(&refused.stdout).contains("s3cret"));

    // Percent-encoded, they are what they say, and the summary shows no credentials, no
    // password parameter (of a destination or of DATABASE_URL), no fragment.
    let encoded = destination(
        "encoded",
        "https://app:pw%2Fs3cret%23%3F@app.example:8443/in?tenant=acme&token=tok-s3cret#frag-s3cret",
    ) + sources;
    std::fs::write(&file, encoded).expect("write the config");
    let database_url =
        "postgres://hookbox:db-s3cret@db.example/hookbox?sslmode=require&password=qp-s3cret";
    let valid = check_config(
        dir.path(),
        Some(&file),
        &[vars.as_slice(), &[("DATABASE_URL", database_url)]].concat(),
    );
    assert!(valid.status.success(), "{}", text(&valid.stderr));
    let stdout = text(&valid.stdout);
    assert!(
        stdout.contains(
            "destination encoded: https://***@app.example:8443/in?tenant=acme&token=***, secret from DEST_SECRET"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "DATABASE_URL: postgres://***@db.example/hookbox?sslmode=require&password=***\n"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cret"), "{stdout}");
    assert!(!stdout.contains("app:"), "{stdout}");
    assert!(!stdout.contains("hookbox:"), "{stdout}");

    // A DATABASE_URL whose password holds a '/' is refused, and not shown either.
    let bad_database = check_config(
        dir.path(),
        Some(&file),
        &[
            vars.as_slice(),
            &[(
                "DATABASE_URL",
                "postgres://hookbox:db/s3cret@db.example/hookbox",
            )],
        ]
        .concat(),
    );
    assert_eq!(bad_database.status.code(), Some(1));
    let stderr = text(&bad_database.stderr);
    assert!(stderr.contains("DATABASE_URL "), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
    assert!(!text(&bad_database.stdout).contains("s3cret"));
}

#[test]
fn routes_are_listed_and_a_bad_one_is_named() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("hookbox.toml");
    let head = r#"
[[destinations]]
name = "billing"
url = "http://127.0.0.1:9000/billing"
secret_env = "BILLING_SECRET"

[[sources]]
name = "orders"
scheme = "hmac-sha256"
secrets_env = ["ORDERS_SECRET"]
"#;
    let vars = [
        ("ORDERS_SECRET", ORDERS_SECRET),
        ("BILLING_SECRET", "whsec_ZGVzdGluYXRpb24ta2V5"),
    ];
    std::fs::write(
        &file,
        format!(
            r#"{head}
[[routes]]
name = "paid-orders"
source = "orders"
destination = "billing"
event_types = ["order.*"]
match = {{ snapshot = {{ status = "paid" }} }}
"#
        ),
    )
    .expect("write the config");
    let output = check_config(dir.path(), None, &vars);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains(
            "route paid-orders: orders → billing, event types order.*, match {\"snapshot\":{\"status\":\"paid\"}}\n"
        ),
        "{}",
        text(&output.stdout)
    );

    std::fs::write(
        &file,
        format!(
            r#"{head}
[[routes]]
name = "paid-orders"
source = "orders"
destination = "biling"
event_types = ["order.{{paid,shipped}}"]
match = "status=paid"
"#
        ),
    )
    .expect("write the config");
    let output = check_config(dir.path(), None, &vars);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "hookbox.toml: routes.paid-orders.destination: unknown destination \"biling\" (declared: billing)
hookbox.toml: routes.paid-orders.event_types: glob \"order.{paid,shipped}\" holds '{': only * is a wildcard (any run of characters, dots too)
hookbox.toml: routes.paid-orders.match: not JSON: unexpected character at byte 0
hookbox: hookbox.toml has 3 problems
"
    );
}
