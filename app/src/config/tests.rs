//! The config file's parser: every key, every problem named.
use super::destinations;
use super::*;
use crate::envelope::{Field, FieldRef, Mapping, Mode};
use crate::providers::{ALL_PRESETS, Preset};
use crate::schemes::Scheme;

pub(super) fn parse(text: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    Config::parse(text, Path::new("hookbox.toml"), &env)
}

/// The only problem of a file that must have exactly one.
pub(super) fn problem(text: &str, vars: &[(&str, &str)]) -> ConfigError {
    let ConfigErrors(mut problems) = parse(text, vars).expect_err("a problem");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.remove(0)
}

fn where_(e: &ConfigError) -> (Option<&str>, Option<&str>) {
    (e.source_name.as_deref(), e.key.as_deref())
}

fn spelled(field: &Option<Field>) -> String {
    field.as_ref().map(Field::to_string).unwrap_or_default()
}

#[test]
fn a_minimal_source_gets_the_snapshot_envelope() {
    let config = parse(
        "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n",
        &[("S", "s3cret")],
    )
    .expect("valid");
    let shop = config.source("shop").expect("declared");
    assert_eq!(shop.mapping, Mapping::snapshot_envelope());
    assert_eq!(shop.keys.len(), 1);
    assert_eq!(shop.secrets_env, ["S"]);
    assert_eq!(shop.preset, None);
    assert_eq!(config.server, ServerSettings::default());
}

#[test]
fn errors_name_file_source_and_key() {
    let e = problem(
        "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"MISSING\"]\n",
        &[],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source shop: secrets_env: environment variable MISSING is unset or empty"
    );
    let e = problem(
        "[[sources]]\nname = \"Shop!\"\nscheme = \"none\"\n",
        &[("HOOKBOX_ALLOW_UNSIGNED", "1")],
    );
    assert_eq!(where_(&e), (Some("Shop!"), Some("name")));
    let e = problem("[[sources]]\nname = \"dev\"\nscheme = \"none\"\n", &[]);
    assert_eq!(where_(&e), (Some("dev"), Some("scheme")));
    assert!(
        parse(
            "[[sources]]\nname = \"dev\"\nscheme = \"none\"\n",
            &[("HOOKBOX_ALLOW_UNSIGNED", "1")]
        )
        .is_ok()
    );
    let e = problem(
        "[[sources]]\nname = \"a\"\nscheme = \"none\"\nevent_id = \"id\"\n",
        &[("HOOKBOX_ALLOW_UNSIGNED", "1")],
    );
    assert_eq!(where_(&e), (Some("a"), Some("event_id")));
    let e = problem("[server]\nmax_body_bytes = 0\n", &[]);
    assert_eq!(where_(&e), (None, Some("server.max_body_bytes")));
    let e = problem("[server]\nmax_bytes = 1\n", &[]);
    assert_eq!(where_(&e), (None, Some("server.max_bytes")));
    assert!(e.message.starts_with("unknown key"), "{e}");
    let e = problem(
        "[[sources]]\nscheme = \"none\"\n",
        &[("HOOKBOX_ALLOW_UNSIGNED", "1")],
    );
    assert_eq!(e.to_string(), "hookbox.toml: source #1: name: is required");
}

#[test]
fn every_problem_in_a_file_is_reported() {
    let text = r#"
[server]
retention_days = "forever"
colour = "blue"

[[sources]]
name = "stripe"
preset = "stripe"
secrets_env = ["STRIPE_SECRET", "STRIPE_OLD"]
tolerance_secs = -5

[[sources]]
name = "stripe"
scheme = "carrier-pigeon"
secrets_env = ["PIGEON"]
mode = "sometimes"
event_id = ["/id", "nowhere"]

[[sources]]
name = "gh"
preset = "github"
secrets_env = "GH_SECRET"
revision = "/rev"
"#;
    let ConfigErrors(problems) =
        parse(text, &[("STRIPE_SECRET", "whsec_x")]).expect_err("problems");

    let found: Vec<(Option<&str>, Option<&str>)> = problems.iter().map(where_).collect();
    assert_eq!(
        found,
        [
            (None, Some("server.colour")),
            (None, Some("server.retention_days")),
            (Some("stripe"), Some("secrets_env")),
            (Some("stripe"), Some("tolerance_secs")),
            (Some("stripe"), Some("name")),
            (Some("stripe"), Some("scheme")),
            (Some("stripe"), Some("secrets_env")),
            (Some("stripe"), Some("mode")),
            (Some("stripe"), Some("event_id")),
            (Some("gh"), Some("secrets_env")),
            (Some("gh"), Some("revision")),
        ],
        "{problems:#?}"
    );
    let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages[1],
        "hookbox.toml: server.retention_days: must be an integer, not a string"
    );
    assert_eq!(
        messages[2],
        "hookbox.toml: source stripe: secrets_env: environment variable STRIPE_OLD is unset or empty"
    );
    assert_eq!(
        messages[4],
        "hookbox.toml: source stripe: name: is declared twice"
    );
    assert_eq!(
        messages[9],
        "hookbox.toml: source gh: secrets_env: must be a list of strings, not a string"
    );
    assert_eq!(
        ConfigErrors(problems).to_string().lines().count(),
        11,
        "one problem per line"
    );
}

#[test]
fn a_toml_syntax_error_names_its_line() {
    let e = problem("[[sources]]\nname = \"a\"\nscheme = \n", &[]);
    assert_eq!(where_(&e), (None, None));
    assert!(e.to_string().starts_with("hookbox.toml: line 3: "), "{e}");
}

#[test]
fn a_preset_sets_scheme_mode_and_mapping() {
    let config = parse(
        "[[sources]]\nname = \"payments\"\npreset = \"stripe\"\nsecrets_env = [\"S\", \"S_OLD\"]\n",
        &[("S", "whsec_new"), ("S_OLD", "whsec_old")],
    )
    .expect("valid");
    let source = config.source("payments").expect("declared");

    assert_eq!(source.preset, Some(Preset::Stripe));
    assert_eq!(source.scheme, Scheme::Stripe);
    assert_eq!(source.mapping, Preset::Stripe.mapping());
    assert_eq!(source.mapping.mode, Mode::Dedup);
    assert_eq!(source.keys.len(), 2);
    assert_eq!(source.tolerance_secs, DEFAULT_TOLERANCE_SECS);
}

#[test]
fn every_preset_is_a_complete_source() {
    for preset in ALL_PRESETS {
        let (secret, keys_key) = match preset.scheme() {
            Scheme::StandardWebhooks => ("whsec_c2VjcmV0", "secrets_env"),
            Scheme::Discord => (
                "537ff99cf7c1dc81a05ec179609d7cc7580c083c180e45db8bf3067993620263",
                "public_keys_env",
            ),
            Scheme::Sendgrid => (
                "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAESogOL/8AsmQFV9u64GxQjUYYl7C9NwhmgQFhOGHCl2qRJ8y/Ox08TkymbFRtNrArAh91PP/HTtI3pjPHChEFGA==",
                "public_keys_env",
            ),
            Scheme::Basic => ("user:secret", "secrets_env"),
            _ => ("secret", "secrets_env"),
        };
        let text = format!(
            "[server]\npublic_url = \"https://hooks.example.com\"\n[[sources]]\nname = \"p\"\npreset = \"{}\"\n{keys_key} = [\"S\"]\n",
            preset.name()
        );
        let config = parse(&text, &[("S", secret)]).expect("valid");
        let source = config.source("p").expect("declared");
        assert_eq!(
            (source.scheme, &source.mapping, &source.recipe),
            (preset.scheme(), &preset.mapping(), &preset.recipe()),
            "{preset:?}"
        );
        assert_eq!(
            source.recipe.is_some(),
            preset.scheme() == Scheme::Hmac,
            "{preset:?}: a recipe exactly where the scheme is one"
        );
    }
}

#[test]
fn any_preset_key_can_be_overridden() {
    let config = parse(
        r#"
[[sources]]
name = "shop"
preset = "shopify"
secrets_env = ["S"]
object_id = "/admin_graphql_api_id"
event_type = []
tolerance_secs = 60

[[sources]]
name = "clerk"
preset = "clerk"
secrets_env = ["W"]
event_id = "header:svix-id"
object_id = []

[[sources]]
name = "orders"
preset = "paddle"
scheme = "hmac-sha256"
mode = "snapshot"
secrets_env = ["S"]
"#,
        &[("S", "secret"), ("W", "whsec_c2VjcmV0")],
    )
    .expect("valid");

    let shop = config.source("shop").expect("declared");
    assert_eq!(
        shop.mapping.event_id.to_string(),
        r#"["header:x-shopify-event-id", "header:x-shopify-webhook-id"]"#
    );
    assert_eq!(spelled(&shop.mapping.object_id), "/admin_graphql_api_id");
    assert_eq!(shop.mapping.event_type, None, "an empty list unmaps");
    assert_eq!(shop.tolerance_secs, 60);
    let clerk = config.source("clerk").expect("declared");
    assert_eq!(clerk.mapping.event_id.to_string(), "header:svix-id");
    assert_eq!(clerk.mapping.object_id, None);
    assert_eq!(spelled(&clerk.mapping.event_type), "/type");
    let orders = config.source("orders").expect("declared");
    assert_eq!(orders.scheme, Scheme::HmacSha256);
    assert_eq!(orders.mapping.mode, Mode::Snapshot);
    assert_eq!(spelled(&orders.mapping.object_id), "/data/id");
    assert_eq!(spelled(&orders.mapping.revision), "/revision");
    assert_eq!(spelled(&orders.mapping.snapshot), "/snapshot");
    assert_eq!(orders.mapping.event_id.to_string(), "/event_id");
}

#[test]
fn fields_may_list_alternatives() {
    let config = parse(
        "[[sources]]\nname = \"a\"\nscheme = \"github\"\nsecrets_env = [\"S\"]\nmode = \"dedup\"\nevent_id = [\"header:X-A\", \"/id\"]\n",
        &[("S", "secret")],
    )
    .expect("valid");
    let places = config.sources[0].mapping.event_id.places().to_vec();
    assert_eq!(places, [FieldRef::header("x-a"), FieldRef::pointer("/id")]);

    let e = problem(
        "[[sources]]\nname = \"a\"\nscheme = \"github\"\nsecrets_env = [\"S\"]\nevent_id = []\n",
        &[("S", "secret")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source a: event_id: must name at least one place"
    );
    let e = problem(
        "[[sources]]\nname = \"a\"\nscheme = \"github\"\nsecrets_env = [\"S\"]\nsnapshot = [\"/s\", \"header:X-S\"]\n",
        &[("S", "secret")],
    );
    assert_eq!(where_(&e), (Some("a"), Some("snapshot")));
    let e = problem(
        "[[sources]]\nname = \"a\"\nscheme = \"github\"\nsecrets_env = [\"S\"]\nobject_id = []\n",
        &[("S", "secret")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source a: object_id: is required in snapshot mode"
    );
}

#[test]
fn unknown_presets_and_schemes_are_named() {
    let e = problem(
        "[[sources]]\nname = \"a\"\npreset = \"nosuchprovider\"\nsecrets_env = [\"S\"]\n",
        &[("S", "secret")],
    );
    assert_eq!(where_(&e), (Some("a"), Some("preset")));
    assert!(
        e.message
            .contains("stripe, github, paddle, shopify, slack, clerk, svix"),
        "{e}"
    );
    let e = problem(
        "[[sources]]\nname = \"a\"\nsecrets_env = [\"S\"]\n",
        &[("S", "secret")],
    );
    assert_eq!(
        e.to_string(),
        "hookbox.toml: source a: scheme: is required (or a preset)"
    );
}

#[test]
fn secret_values_never_appear_in_errors() {
    let e = problem(
        "[[sources]]\nname = \"sw\"\nscheme = \"standard-webhooks\"\nsecrets_env = [\"S\"]\n",
        &[("S", "whsec_!!!not-base64-topsecret")],
    );
    assert!(!e.to_string().contains("topsecret"), "{e}");
    // A secret pasted into the file instead of a variable name is not echoed either.
    for text in [
        "[[sources]]\nname = \"a\"\npreset = \"stripe\"\nsecrets_env = [\"whsec_topsecret/+=\"]\n",
        "[[sources]]\nname = \"a\"\npreset = \"stripe\"\nsecrets_env = \"whsec_topsecret\"\n",
        "[[sources]]\nname = \"a\"\npreset = \"stripe\"\nsecrets_env = [\"S\"]\nscheme = [\"topsecret\"]\n",
    ] {
        let e = problem(text, &[("S", "secret")]);
        assert_eq!(
            where_(&e),
            (
                Some("a"),
                Some(if text.contains("scheme =") {
                    "scheme"
                } else {
                    "secrets_env"
                })
            )
        );
        assert!(!e.to_string().contains("topsecret"), "{e}");
    }
}

const DESTINATION_SECRET: &str = "whsec_ZGVzdGluYXRpb24ta2V5";

#[test]
fn destinations_are_read_and_sources_forward_to_them() {
    let config = parse(
        r#"
[[destinations]]
name = "orders-app"
url = "http://127.0.0.1:9000/hookbox"
secret_env = "ORDERS_APP_SECRET"
rate_limit_per_sec = 100

[[destinations]]
name = "audit-app"
url = "https://audit.example/in"
secret_env = "AUDIT_APP_SECRET"
timeout_secs = 5
retry_schedule_secs = [1, 2]

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["S"]
forward = ["orders-app", "audit-app"]
"#,
        &[
            ("S", "s3cret"),
            ("ORDERS_APP_SECRET", DESTINATION_SECRET),
            ("AUDIT_APP_SECRET", DESTINATION_SECRET),
        ],
    )
    .expect("valid");
    let [orders, audit] = config.destinations.as_slice() else {
        panic!("two destinations: {:?}", config.destinations);
    };
    assert_eq!(orders.timeout_secs, destinations::DEFAULT_TIMEOUT_SECS);
    assert_eq!(
        orders.retry_schedule_secs,
        destinations::DEFAULT_RETRY_SCHEDULE_SECS
    );
    assert_eq!(orders.rate_limit_per_sec, Some(100));
    assert_eq!(
        (audit.timeout_secs, audit.retry_schedule_secs.clone()),
        (5, vec![1, 2])
    );
    assert_eq!(
        config.source("shop").expect("shop").forward,
        ["orders-app", "audit-app"]
    );
}

#[test]
fn every_destination_problem_names_the_destination_and_the_key() {
    let ConfigErrors(problems) = parse(
        r#"
[[destinations]]
name = "bad-app"
url = "ftp://example/in"
secret_env = "MISSING_SECRET"
retry_schedule_secs = []
color = "blue"

[[destinations]]
name = "no-secret"
url = "http://127.0.0.1:9000/"
secret_env = "NOT_WHSEC"

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["S"]
forward = ["bad-app", "nowhere", "nowhere"]
"#,
        &[("S", "s3cret"), ("NOT_WHSEC", "not base64!")],
    )
    .expect_err("problems");
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    for expected in [
        "destinations.bad-app.color: unknown key",
        "destinations.bad-app.url: \"ftp://example/in\" must start with http:// or https://",
        "destinations.bad-app.secret_env: environment variable MISSING_SECRET is unset or empty",
        "destinations.bad-app.retry_schedule_secs: must not be empty",
        "destinations.no-secret.secret_env: the secret in NOT_WHSEC:",
        "source shop: forward: unknown destination \"bad-app\"",
        "source shop: forward: unknown destination \"nowhere\"",
    ] {
        assert!(
            shown.iter().any(|p| p.contains(expected)),
            "{expected:?} missing from {shown:#?}"
        );
    }
    assert!(
        !shown.iter().any(|p| p.contains("not base64!")),
        "a secret is never shown: {shown:#?}"
    );
}

#[test]
fn a_destination_url_is_parsed_as_the_url_crate_reads_it_and_an_ambiguous_one_refused() {
    let config_with = |url: &str| {
        format!(
            "[[destinations]]\nname = \"app\"\nurl = \"{url}\"\nsecret_env = \"D\"\n\n[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n"
        )
    };
    let vars = [("S", "s3cret"), ("D", DESTINATION_SECRET)];
    for url in [
        "https://user:pw/s3cret@app.example/in",
        "https://user:pw#s3cret@app.example/in",
        "https://user:pw?s3cret@app.example/in",
        "https://user:1234/s3cret@app.example/in",
        "https://app.example/in?mail=s3cret@example.com",
        "ftp://user:s3cret@app.example/in",
        "https://user:s3cret@/in",
    ] {
        let e = problem(&config_with(url), &vars);
        assert_eq!(
            where_(&e),
            (None, Some("destinations.app.url")),
            "{url}: {e}"
        );
        assert!(!e.to_string().contains("s3cret"), "{url}: {e}");
    }
    let e = problem(&config_with("https://user:pw/s3cret@app.example/in"), &vars);
    assert!(e.to_string().contains("percent-encode"), "{e}");
    // Encoded, the same passwords are fine; the URL is kept as written, for the forwarder.
    for url in [
        "https://user:pw%2Fs3cret@app.example/in",
        "https://user:pw%23s%3F3cret@app.example/in",
        "https://user:pw@s3cret@app.example/in",
        "https://app.example/in?mail=s3cret%40example.com",
    ] {
        let config = parse(&config_with(url), &vars).unwrap_or_else(|e| panic!("{url}: {e:?}"));
        assert_eq!(config.destinations[0].url, url);
        let shown = settings::redact_url(url);
        assert!(!shown.contains("user") && !shown.contains("pw"), "{shown}");
    }
}

#[test]
fn a_source_keeps_its_archive_its_own_days_or_the_servers() {
    let config = parse(
        "[server]\nretention_days = 30\n\
         [[sources]]\nname = \"payments\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\nretention_days = 400\n\
         [[sources]]\nname = \"chat\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n",
        &[("S", "s3cret")],
    )
    .expect("valid");
    assert_eq!(
        config.source("payments").expect("declared").retention_days,
        Some(400)
    );
    assert_eq!(
        config.source("chat").expect("declared").retention_days,
        None
    );
    assert_eq!(config.server.retention_days, 30);

    let e = problem(
        "[[sources]]\nname = \"chat\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\nretention_days = 0\n",
        &[("S", "s3cret")],
    );
    assert_eq!(where_(&e), (Some("chat"), Some("retention_days")), "{e}");
    assert!(e.to_string().contains("at least 1"), "{e}");
}
