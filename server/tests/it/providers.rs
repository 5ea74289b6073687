//! Provider presets over HTTP: each provider's signed delivery is accepted, its retry is a
//! duplicate, a tampered one is 401, and both secrets of a rotation verify. Slack's URL
//! verification is answered, `hookbox send` is accepted by every preset, and no configured
//! secret ever reaches a log line, an answer or the archive.

use crate::support::*;
use app::config::Config;
use app::envelope::FieldRef;
use app::schemes::Scheme;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};

const STRIPE: [&str; 2] = [
    "whsec_stripe-signing-secret-current",
    "whsec_stripe-signing-secret-previous",
];
const GITHUB: [&str; 2] = [
    "github-webhook-secret-current",
    "github-webhook-secret-previous",
];
const PADDLE: [&str; 2] = [
    "pdl_ntfset_paddle-secret-current",
    "pdl_ntfset_paddle-secret-previous",
];
const SHOPIFY: [&str; 2] = [
    "shpss_shopify-secret-current",
    "shpss_shopify-secret-previous",
];
const SLACK: [&str; 2] = [
    "slack-signing-secret-current",
    "slack-signing-secret-previous",
];
/// `whsec_` + base64 of "svix-endpoint-key-current" / "…-previous".
const SVIX: [&str; 2] = [
    "whsec_c3ZpeC1lbmRwb2ludC1rZXktY3VycmVudA==",
    "whsec_c3ZpeC1lbmRwb2ludC1rZXktcHJldmlvdXM=",
];
/// `whsec_` + base64 of "clerk-endpoint-key-current" / "…-previous".
const CLERK: [&str; 2] = [
    "whsec_Y2xlcmstZW5kcG9pbnQta2V5LWN1cnJlbnQ=",
    "whsec_Y2xlcmstZW5kcG9pbnQta2V5LXByZXZpb3Vz",
];

/// One source per preset, each with a current and a previous secret.
const CONFIG: &str = r#"
[[sources]]
name = "stripe"
preset = "stripe"
secrets_env = ["STRIPE_SECRET", "STRIPE_SECRET_OLD"]

[[sources]]
name = "github"
preset = "github"
secrets_env = ["GITHUB_SECRET", "GITHUB_SECRET_OLD"]

[[sources]]
name = "paddle"
preset = "paddle"
secrets_env = ["PADDLE_SECRET", "PADDLE_SECRET_OLD"]

[[sources]]
name = "shopify"
preset = "shopify"
secrets_env = ["SHOPIFY_SECRET", "SHOPIFY_SECRET_OLD"]

[[sources]]
name = "slack"
preset = "slack"
secrets_env = ["SLACK_SECRET", "SLACK_SECRET_OLD"]

[[sources]]
name = "svix"
preset = "svix"
secrets_env = ["SVIX_SECRET", "SVIX_SECRET_OLD"]

[[sources]]
name = "clerk"
preset = "clerk"
secrets_env = ["CLERK_SECRET", "CLERK_SECRET_OLD"]
"#;

fn providers_config() -> Config {
    let env = |name: &str| {
        let (provider, index) = match name.strip_suffix("_SECRET_OLD") {
            Some(provider) => (provider, 1),
            None => (name.strip_suffix("_SECRET")?, 0),
        };
        let secrets = match provider {
            "STRIPE" => STRIPE,
            "GITHUB" => GITHUB,
            "PADDLE" => PADDLE,
            "SHOPIFY" => SHOPIFY,
            "SLACK" => SLACK,
            "SVIX" => SVIX,
            "CLERK" => CLERK,
            _ => return None,
        };
        Some(secrets[index].to_string())
    };
    Config::parse(CONFIG, Path::new("providers.toml"), &env).expect("the providers config is valid")
}

fn every_secret() -> Vec<&'static str> {
    [STRIPE, GITHUB, PADDLE, SHOPIFY, SLACK, SVIX, CLERK]
        .into_iter()
        .flatten()
        .collect()
}

/// A delivery as the provider sends it, before signing, and the identity hookbox must read.
struct Delivery {
    body: String,
    /// The provider's headers other than the signature.
    headers: Vec<(String, String)>,
    event_id: String,
    object_id: Option<String>,
    event_type: String,
}

struct Provider {
    source: &'static str,
    scheme: Scheme,
    /// Current, previous.
    secrets: [&'static str; 2],
    /// The provider's delivery of the event with this id suffix.
    delivery: fn(&str) -> Delivery,
    /// A change to the body a forger might make: (from, to).
    tamper: (&'static str, &'static str),
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

const STRIPE_PROVIDER: Provider = Provider {
    source: "stripe",
    scheme: Scheme::Stripe,
    secrets: STRIPE,
    delivery: |n| Delivery {
        body: format!(
            r#"{{"id":"evt_3Mt{n}","object":"event","type":"payment_intent.succeeded","livemode":false,"data":{{"object":{{"id":"pi_3Mt{n}","object":"payment_intent","amount":2000,"currency":"usd"}}}}}}"#
        ),
        headers: Vec::new(),
        event_id: format!("evt_3Mt{n}"),
        object_id: Some(format!("pi_3Mt{n}")),
        event_type: "payment_intent.succeeded".into(),
    },
    tamper: ("\"amount\":2000", "\"amount\":1"),
};

const GITHUB_PROVIDER: Provider = Provider {
    source: "github",
    scheme: Scheme::Github,
    secrets: GITHUB,
    delivery: |n| Delivery {
        body: format!(
            r#"{{"action":"opened","number":7{n},"pull_request":{{"id":1,"state":"open"}},"repository":{{"full_name":"octo/hello"}}}}"#
        ),
        headers: headers(&[
            (
                "X-GitHub-Delivery",
                &format!("72d3162e-cc78-11e3-81ab-4c9367dc095{n}"),
            ),
            ("X-GitHub-Event", "pull_request"),
            ("X-GitHub-Hook-ID", "292430182"),
        ]),
        event_id: format!("72d3162e-cc78-11e3-81ab-4c9367dc095{n}"),
        object_id: None,
        event_type: "pull_request".into(),
    },
    tamper: ("\"opened\"", "\"closed\""),
};

const PADDLE_PROVIDER: Provider = Provider {
    source: "paddle",
    scheme: Scheme::Paddle,
    secrets: PADDLE,
    delivery: |n| Delivery {
        body: format!(
            r#"{{"event_id":"evt_01hv8x{n}","event_type":"transaction.completed","occurred_at":"2024-04-12T10:18:49.621022Z","notification_id":"ntf_01hv8x{n}","data":{{"id":"txn_01hv8x{n}","status":"completed"}}}}"#
        ),
        headers: Vec::new(),
        event_id: format!("evt_01hv8x{n}"),
        object_id: Some(format!("txn_01hv8x{n}")),
        event_type: "transaction.completed".into(),
    },
    tamper: ("\"completed\"}", "\"refunded\"}"),
};

/// Shopify sends the newer event id and the older webhook id; the event id wins.
const SHOPIFY_PROVIDER: Provider = Provider {
    source: "shopify",
    scheme: Scheme::Shopify,
    secrets: SHOPIFY,
    delivery: |n| Delivery {
        body: format!(
            r#"{{"id":82098291194615450{n},"admin_graphql_api_id":"gid://shopify/Order/82098291194615450{n}","financial_status":"paid","total_price":"199.00"}}"#
        ),
        headers: headers(&[
            (
                "X-Shopify-Event-Id",
                &format!("98880550-7158-44d4-b7cd-2c97c8a091b{n}"),
            ),
            (
                "X-Shopify-Webhook-Id",
                &format!("b54557e4-bdd9-4b37-8a5f-bf7d70bcd04{n}"),
            ),
            ("X-Shopify-Topic", "orders/paid"),
            ("X-Shopify-Shop-Domain", "example.myshopify.com"),
            ("X-Shopify-API-Version", "2025-01"),
        ]),
        event_id: format!("98880550-7158-44d4-b7cd-2c97c8a091b{n}"),
        object_id: None,
        event_type: "orders/paid".into(),
    },
    tamper: ("\"199.00\"", "\"0.00\""),
};

const SLACK_PROVIDER: Provider = Provider {
    source: "slack",
    scheme: Scheme::Slack,
    secrets: SLACK,
    delivery: |n| Delivery {
        body: format!(
            r#"{{"token":"XXYYZZ","team_id":"T123ABC456","api_app_id":"A123ABC456","event":{{"type":"app_mention","user":"U123ABC456","text":"<@U0LAN0Z89> deploy?","channel":"C123ABC456","ts":"1515449522.00001{n}"}},"type":"event_callback","event_id":"Ev123ABC45{n}","event_time":1515449522}}"#
        ),
        headers: Vec::new(),
        event_id: format!("Ev123ABC45{n}"),
        object_id: None,
        event_type: "app_mention".into(),
    },
    tamper: ("deploy?", "deploy!"),
};

const SVIX_PROVIDER: Provider = Provider {
    source: "svix",
    scheme: Scheme::StandardWebhooks,
    secrets: SVIX,
    delivery: |n| Delivery {
        body: format!(
            r#"{{"type":"invoice.paid","data":{{"id":"inv_2Xk{n}","amount_cents":4200}}}}"#
        ),
        headers: Vec::new(),
        event_id: format!("msg_2Xk{n}"),
        object_id: Some(format!("inv_2Xk{n}")),
        event_type: "invoice.paid".into(),
    },
    tamper: ("4200", "42"),
};

const CLERK_PROVIDER: Provider = Provider {
    source: "clerk",
    scheme: Scheme::StandardWebhooks,
    secrets: CLERK,
    delivery: |n| Delivery {
        body: format!(
            r#"{{"data":{{"id":"user_29w83sxmDNGwOuEthce5gg56Fc{n}","first_name":"Example","email_addresses":[]}},"object":"event","type":"user.created","timestamp":1654012591835}}"#
        ),
        headers: Vec::new(),
        event_id: format!("msg_29w83sxmDNGwOuEthce5gg56Fc{n}"),
        object_id: Some(format!("user_29w83sxmDNGwOuEthce5gg56Fc{n}")),
        event_type: "user.created".into(),
    },
    tamper: ("Example", "Mallory"),
};

const ALL_PROVIDERS: [Provider; 7] = [
    STRIPE_PROVIDER,
    GITHUB_PROVIDER,
    PADDLE_PROVIDER,
    SHOPIFY_PROVIDER,
    SLACK_PROVIDER,
    SVIX_PROVIDER,
    CLERK_PROVIDER,
];

/// The headers the provider sends: its signature made with `secret` now, and its own headers.
/// Svix and Clerk send the `svix-*` header family, with the event id as `svix-id`.
fn signed(p: &Provider, secret: &str, d: &Delivery) -> Vec<(String, String)> {
    let key = p.scheme.parse_secret(secret).expect("test secret");
    let mut headers: Vec<(String, String)> = p
        .scheme
        .sign(&key, &d.event_id, d.body.as_bytes(), now())
        .into_iter()
        .map(|(name, value)| (name.as_str().replacen("webhook-", "svix-", 1), value))
        .collect();
    headers.extend(d.headers.iter().cloned());
    headers
}

async fn deliver(app: &TestApp, p: &Provider, secret: &str, d: &Delivery) -> Answer {
    app.post(p.source, &signed(p, secret, d), d.body.clone().into_bytes())
        .await
}

/// (event_id, object_id, event_type, status, outcome) of a source's archive rows, oldest first.
async fn archive_rows(app: &TestApp, source: &str) -> Vec<Vec<Option<String>>> {
    texts(
        &app.db,
        "SELECT event_id, object_id, event_type, status, outcome FROM webhook_events WHERE source = $1 ORDER BY id",
        vec![source.into()],
    )
    .await
}

fn row(d: &Delivery, status: &str, outcome: &str) -> Vec<Option<String>> {
    vec![
        Some(d.event_id.clone()),
        d.object_id.clone(),
        Some(d.event_type.clone()),
        Some(status.into()),
        Some(outcome.into()),
    ]
}

async fn a_signed_delivery_is_accepted_once_and_both_secrets_verify(p: Provider) {
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;
    let first = (p.delivery)("1");
    let second = (p.delivery)("2");
    let [current, previous] = p.secrets;
    let forged = first.body.replacen(p.tamper.0, p.tamper.1, 1);
    assert_ne!(
        forged, first.body,
        "{}: the tamper changes the body",
        p.source
    );

    let accepted = deliver(&app, &p, current, &first).await;
    let retried = deliver(&app, &p, current, &first).await;
    let tampered = app
        .post(p.source, &signed(&p, current, &first), forged.into_bytes())
        .await;
    let rotated = deliver(&app, &p, previous, &second).await;

    let source = p.source;
    assert_eq!(
        (accepted.status, accepted.body),
        (
            200,
            json!({"status": "accepted", "event_id": first.event_id})
        ),
        "{source}: first delivery"
    );
    assert_eq!(
        (retried.status, retried.body),
        (
            200,
            json!({"status": "duplicate", "event_id": first.event_id, "idempotent": true})
        ),
        "{source}: retry"
    );
    assert_eq!(
        (tampered.status, tampered.body),
        (401, json!({"status": "unauthorized"})),
        "{source}: tampered"
    );
    assert_eq!(
        (rotated.status, rotated.body),
        (
            200,
            json!({"status": "accepted", "event_id": second.event_id})
        ),
        "{source}: signed with the previous secret"
    );
    assert_eq!(
        archive_rows(&app, source).await,
        [
            row(&first, "processed", "accepted"),
            row(&first, "skipped", "duplicate"),
            row(&second, "processed", "accepted"),
        ],
        "{source}: the tampered delivery is not archived"
    );
    let claimed = texts(
        &app.db,
        "SELECT event_id FROM webhook_inbox WHERE source = $1 ORDER BY event_id",
        vec![source.into()],
    )
    .await;
    assert_eq!(
        claimed,
        [
            vec![Some(first.event_id.clone())],
            vec![Some(second.event_id.clone())]
        ],
        "{source}"
    );
    let bodies = texts(
        &app.db,
        "SELECT convert_from(body, 'UTF8') FROM webhook_events WHERE source = $1 AND outcome = 'accepted' ORDER BY id",
        vec![source.into()],
    )
    .await;
    assert_eq!(
        bodies,
        [
            vec![Some(first.body.clone())],
            vec![Some(second.body.clone())]
        ],
        "{source}: the raw bytes are archived"
    );
}

#[tokio::test]
async fn stripe_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(STRIPE_PROVIDER).await;
}

#[tokio::test]
async fn github_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(GITHUB_PROVIDER).await;
}

#[tokio::test]
async fn paddle_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(PADDLE_PROVIDER).await;
}

#[tokio::test]
async fn shopify_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(SHOPIFY_PROVIDER).await;
}

#[tokio::test]
async fn slack_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(SLACK_PROVIDER).await;
}

#[tokio::test]
async fn svix_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(SVIX_PROVIDER).await;
}

#[tokio::test]
async fn clerk_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(CLERK_PROVIDER).await;
}

/// GitHub and Shopify sign the body alone, not their delivery-id headers: a captured delivery
/// re-posted with fresh ids verifies. It is recorded as a duplicate of the event that first
/// carried that body (the archive row names it), never as a new event; the provider's own
/// redelivery (same id) stays an ordinary duplicate, and another body is a new event.
async fn a_signed_body_under_a_new_delivery_id_is_a_duplicate_of_its_first_event(
    p: Provider,
    backend: Backend,
) {
    let app = spawn_app_with(backend, providers_config()).await;
    let first = (p.delivery)("1");
    let other = (p.delivery)("2");
    let current = p.secrets[0];

    let accepted = deliver(&app, &p, current, &first).await;
    let mut forged_headers = signed(&p, current, &first);
    for (name, value) in &mut forged_headers {
        if name.ends_with("-Delivery") || (name.ends_with("-Id") && name.starts_with("X-Shopify")) {
            *value = format!("forged-{name}");
        }
    }
    let forged_id = forged_headers
        .iter()
        .find(|(name, _)| name == "X-GitHub-Delivery" || name == "X-Shopify-Event-Id")
        .map(|(_, value)| value.clone())
        .expect("a delivery id header");
    let replayed = app
        .post(p.source, &forged_headers, first.body.clone().into_bytes())
        .await;
    let redelivered = deliver(&app, &p, current, &first).await;
    let new_event = deliver(&app, &p, current, &other).await;

    let source = p.source;
    assert_eq!(accepted.outcome(), "accepted", "{backend:?} {source}");
    assert_eq!(
        (replayed.status, replayed.body),
        (
            200,
            json!({"status": "duplicate", "event_id": first.event_id, "idempotent": true, "delivered_as": forged_id})
        ),
        "{backend:?} {source}: the replay under a new id"
    );
    assert_eq!(redelivered.outcome(), "duplicate", "{backend:?} {source}");
    assert_eq!(new_event.outcome(), "accepted", "{backend:?} {source}");
    assert_eq!(
        archive_rows(&app, source).await,
        [
            row(&first, "processed", "accepted"),
            row(&first, "skipped", "duplicate"),
            row(&first, "skipped", "duplicate"),
            row(&other, "processed", "accepted"),
        ],
        "{backend:?} {source}: the replay's archive row names the original event"
    );
    let replay_error = texts(
        &app.db,
        "SELECT error_message FROM webhook_events WHERE source = $1 ORDER BY id",
        vec![source.into()],
    )
    .await;
    let message = replay_error[1][0].clone().unwrap_or_default();
    assert!(
        message.contains(&first.event_id) && message.contains("replay"),
        "{backend:?} {source}: {message}"
    );
    assert_eq!(replay_error[2][0], None, "{backend:?} {source}");
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id FROM webhook_inbox WHERE source = $1 ORDER BY event_id",
            vec![source.into()],
        )
        .await,
        [
            vec![Some(first.event_id.clone())],
            vec![Some(other.event_id.clone())]
        ],
        "{backend:?} {source}: no event under the forged id"
    );
}

both_backends!(a_github_body_replayed_under_a_new_delivery_id_is_a_duplicate);
async fn a_github_body_replayed_under_a_new_delivery_id_is_a_duplicate(backend: Backend) {
    a_signed_body_under_a_new_delivery_id_is_a_duplicate_of_its_first_event(
        GITHUB_PROVIDER,
        backend,
    )
    .await;
}

both_backends!(a_shopify_body_replayed_under_new_ids_is_a_duplicate);
async fn a_shopify_body_replayed_under_new_ids_is_a_duplicate(backend: Backend) {
    a_signed_body_under_a_new_delivery_id_is_a_duplicate_of_its_first_event(
        SHOPIFY_PROVIDER,
        backend,
    )
    .await;
}

both_backends!(a_svix_id_other_than_the_signed_webhook_id_is_refused);
/// The svix and clerk presets read the event id from `svix-id`, while the signature may cover
/// `webhook-id`: a request carrying both with different values is refused, so one captured
/// delivery cannot become new events under invented `svix-id`s.
async fn a_svix_id_other_than_the_signed_webhook_id_is_refused(backend: Backend) {
    let app = spawn_app_with(backend, providers_config()).await;
    for p in [SVIX_PROVIDER, CLERK_PROVIDER] {
        let d = (p.delivery)("1");
        let key = p.scheme.parse_secret(p.secrets[0]).expect("secret");
        // Signed over webhook-id, as a Standard Webhooks sender signs.
        let mut headers: Vec<(String, String)> = p
            .scheme
            .sign(&key, &d.event_id, d.body.as_bytes(), now())
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect();
        let genuine = app
            .post(p.source, &headers, d.body.clone().into_bytes())
            .await;
        headers.push(("svix-id".into(), "msg_forged_1".into()));
        let forged = app
            .post(p.source, &headers, d.body.clone().into_bytes())
            .await;
        // The same id under both names is what some senders send: still the one event.
        headers.pop();
        headers.push(("svix-id".into(), d.event_id.clone()));
        let twins = app
            .post(p.source, &headers, d.body.clone().into_bytes())
            .await;

        assert_eq!(genuine.outcome(), "accepted", "{backend:?} {}", p.source);
        assert_eq!(
            (forged.status, forged.body),
            (401, json!({"status": "unauthorized"})),
            "{backend:?} {}",
            p.source
        );
        assert_eq!(twins.outcome(), "duplicate", "{backend:?} {}", p.source);
        assert_eq!(
            texts(
                &app.db,
                "SELECT event_id FROM webhook_inbox WHERE source = $1",
                vec![p.source.into()],
            )
            .await,
            [vec![Some(d.event_id.clone())]],
            "{backend:?} {}: only the signed id is an event",
            p.source
        );
    }
}

#[tokio::test]
async fn an_older_shopify_delivery_is_identified_by_its_webhook_id() {
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;
    let mut old_style = (SHOPIFY_PROVIDER.delivery)("3");
    old_style
        .headers
        .retain(|(name, _)| name != "X-Shopify-Event-Id");
    let webhook_id = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043";
    old_style.event_id = webhook_id.into();
    let mut unidentified = (SHOPIFY_PROVIDER.delivery)("4");
    unidentified
        .headers
        .retain(|(name, _)| !name.ends_with("-Id"));

    let accepted = deliver(&app, &SHOPIFY_PROVIDER, SHOPIFY[0], &old_style).await;
    let missing = deliver(&app, &SHOPIFY_PROVIDER, SHOPIFY[0], &unidentified).await;

    assert_eq!(
        (accepted.status, accepted.body),
        (200, json!({"status": "accepted", "event_id": webhook_id}))
    );
    assert_eq!(missing.status, 422, "{:?}", missing.body);
    assert_eq!(
        missing.body["reason"],
        "event_id (header x-shopify-event-id or header x-shopify-webhook-id) is missing"
    );
    assert_eq!(
        archive_rows(&app, "shopify").await,
        [
            row(&old_style, "processed", "accepted"),
            vec![
                None,
                None,
                Some("orders/paid".into()),
                Some("failed".into()),
                Some("invalid".into())
            ],
        ]
    );
}

#[tokio::test]
async fn slack_url_verification_is_answered_after_its_signature_and_not_archived() {
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;
    let challenge = body_only(
        r#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#,
    );
    let stripe_challenge = body_only(r#"{"type":"url_verification","challenge":"c"}"#);

    let answered = deliver(&app, &SLACK_PROVIDER, SLACK[1], &challenge).await;
    let unsigned = app
        .post("slack", &[], challenge.body.clone().into_bytes())
        .await;
    let wrong_secret = deliver(&app, &SLACK_PROVIDER, "not-the-secret", &challenge).await;
    let not_slack = deliver(&app, &STRIPE_PROVIDER, STRIPE[0], &stripe_challenge).await;

    assert_eq!(
        (answered.status, answered.body),
        (
            200,
            json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
        )
    );
    assert_eq!(
        (unsigned.status, unsigned.body),
        (401, json!({"status": "unauthorized"}))
    );
    assert_eq!(wrong_secret.status, 401);
    assert_eq!(
        (not_slack.status, not_slack.body["status"].as_str()),
        (422, Some("invalid")),
        "only Slack sources answer a challenge"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE source = 'slack'"
        )
        .await,
        0,
        "the handshake is not an event"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        0
    );
}

/// A delivery that is only a body (no provider headers, no readable identity).
fn body_only(body: &str) -> Delivery {
    Delivery {
        body: body.into(),
        headers: Vec::new(),
        event_id: String::new(),
        object_id: None,
        event_type: String::new(),
    }
}

/// The header a source reads its event id from, as `hookbox send` filled it in.
fn sent_event_id(config: &Config, source: &str, sent: &http::HeaderMap) -> Option<String> {
    let source = config.source(source)?;
    source
        .mapping
        .event_id
        .places()
        .iter()
        .find_map(|place| match place {
            FieldRef::Header(name) => sent.get(name)?.to_str().ok().map(str::to_string),
            FieldRef::Pointer(_) => None,
        })
}

fn as_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                v.to_str().expect("generated headers are ASCII").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn hookbox_send_is_accepted_by_every_preset() {
    let config = providers_config();
    let app = spawn_app_with(Backend::Postgres, config.clone()).await;

    for p in ALL_PROVIDERS {
        let d = (p.delivery)("5");
        let source = config.source(p.source).expect("declared");
        let sent = server::send::delivery_headers(source, d.body.as_bytes(), &[], now());

        let answer = app
            .post(p.source, &as_pairs(&sent), d.body.clone().into_bytes())
            .await;

        let expected_id = sent_event_id(&config, p.source, &sent).unwrap_or(d.event_id.clone());
        assert_eq!(
            (answer.status, answer.body),
            (200, json!({"status": "accepted", "event_id": expected_id})),
            "{}",
            p.source
        );
        let stored = texts(
            &app.db,
            "SELECT event_id FROM webhook_events WHERE source = $1",
            vec![p.source.into()],
        )
        .await;
        assert_eq!(stored, [vec![Some(expected_id)]], "{}", p.source);
    }
}

#[tokio::test]
async fn hookbox_send_headers_set_the_provider_ids() {
    let config = providers_config();
    let app = spawn_app_with(Backend::Postgres, config.clone()).await;
    let header = |text: &str| server::send::parse_header(text).expect("NAME:VALUE");
    let github = config.source("github").expect("declared");
    let svix = config.source("svix").expect("declared");
    let body = r#"{"type":"invoice.paid","data":{"id":"inv_9"}}"#;

    let github_sent = server::send::delivery_headers(
        github,
        body.as_bytes(),
        &[
            header("X-GitHub-Delivery: 9a1d2c3e-0000-4000-8000-000000000001"),
            header("X-GitHub-Event: push"),
        ],
        now(),
    );
    let svix_sent = server::send::delivery_headers(
        svix,
        body.as_bytes(),
        &[header("svix-id: msg_chosen")],
        now(),
    );
    let github_answer = app
        .post("github", &as_pairs(&github_sent), body.as_bytes().to_vec())
        .await;
    let svix_answer = app
        .post("svix", &as_pairs(&svix_sent), body.as_bytes().to_vec())
        .await;

    assert_eq!(
        github_answer.body,
        json!({"status": "accepted", "event_id": "9a1d2c3e-0000-4000-8000-000000000001"})
    );
    assert_eq!(
        svix_answer.body,
        json!({"status": "accepted", "event_id": "msg_chosen"}),
        "the given id is the signed webhook-id"
    );
    let stored = texts(
        &app.db,
        "SELECT source, event_id, object_id, event_type FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;
    let text = |s: &str| Some(s.to_string());
    assert_eq!(
        stored,
        [
            vec![
                text("github"),
                text("9a1d2c3e-0000-4000-8000-000000000001"),
                None,
                text("push")
            ],
            vec![
                text("svix"),
                text("msg_chosen"),
                text("inv_9"),
                text("invoice.paid")
            ],
        ]
    );
}

/// A `tracing` writer appending to a shared buffer.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).into_owned()
    }
}

/// The forms a secret could leak in: as configured, in hex, and for the Standard Webhooks
/// secrets the base64 part and the decoded key.
fn secret_forms() -> Vec<String> {
    let hex = |text: &str| text.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let mut forms = Vec::new();
    for secret in every_secret() {
        forms.push(secret.to_string());
        forms.push(hex(secret));
        if let Some(encoded) = secret.strip_prefix("whsec_") {
            forms.push(encoded.trim_end_matches('=').to_string());
        }
    }
    for key in [
        "svix-endpoint-key-current",
        "svix-endpoint-key-previous",
        "clerk-endpoint-key-current",
        "clerk-endpoint-key-previous",
    ] {
        forms.push(key.to_string());
        forms.push(hex(key));
    }
    forms
}

// The default (current-thread) runtime runs the server's tasks on this thread, so the
// subscriber set as this thread's default sees every event the server logs.
#[tokio::test]
async fn secrets_never_appear_in_logs_answers_or_the_archive() {
    let logs = CapturedLogs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    let _capture = tracing::subscriber::set_default(subscriber);
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;

    let mut answers = Vec::new();
    for p in ALL_PROVIDERS {
        let d = (p.delivery)("6");
        answers.push(deliver(&app, &p, p.secrets[0], &d).await);
        answers.push(deliver(&app, &p, p.secrets[1], &d).await);
        let forged = d.body.replacen(p.tamper.0, p.tamper.1, 1);
        answers.push(
            app.post(p.source, &signed(&p, p.secrets[0], &d), forged.into_bytes())
                .await,
        );
        answers.push(deliver(&app, &p, "whsec_bm90LXRoZS1zZWNyZXQ=", &d).await);
        answers.push(app.post(p.source, &[], d.body.into_bytes()).await);
    }
    let no_id = body_only(r#"{"object":"event","type":"charge.failed"}"#);
    answers.push(deliver(&app, &STRIPE_PROVIDER, STRIPE[0], &no_id).await);
    let challenge = body_only(r#"{"type":"url_verification","challenge":"abc"}"#);
    answers.push(deliver(&app, &SLACK_PROVIDER, SLACK[0], &challenge).await);

    let outcomes: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(
        outcomes,
        [[200, 200, 401, 401, 401]; 7]
            .into_iter()
            .flatten()
            .chain([422, 200])
            .collect::<Vec<u16>>(),
        "every case was exercised"
    );
    let logged = logs.text();
    assert!(
        logged.contains("delivery recorded")
            && logged.contains("authentication failed")
            && logged.contains("handshake"),
        "the server's log lines are captured: {logged}"
    );
    let answered: String = answers.iter().map(|a| a.body.to_string()).collect();
    let mut archived = String::new();
    for sql in [
        "SELECT t::text, encode(t.body, 'escape') FROM webhook_events t",
        "SELECT t::text FROM webhook_inbox t",
        "SELECT t::text FROM object_state t",
    ] {
        for row in texts(&app.db, sql, vec![]).await {
            archived.extend(row.into_iter().flatten());
        }
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        15,
        "7 accepted, 7 duplicates, 1 invalid"
    );
    for form in secret_forms() {
        assert!(!logged.contains(&form), "a secret ({form}) is in the logs");
        assert!(
            !answered.contains(&form),
            "a secret ({form}) is in an answer"
        );
        assert!(
            !archived.contains(&form),
            "a secret ({form}) is in the archive"
        );
    }
}
