//! Provider presets over HTTP: each provider's signed delivery is accepted, its retry is a
//! duplicate, a tampered one is 401, and both secrets of a rotation verify. Slack's URL
//! verification is answered, `hookbox send` is accepted by every preset, and no configured
//! secret ever reaches a log line, an answer or the archive.
//!
//! This module holds the fixtures: one source per preset with its secrets, each provider's
//! delivery and how it signs it.
//!
//! - `deliveries`: signed deliveries, retries, tampering, rotation, replayed bodies under new
//!   ids, and Slack's URL verification.
//! - `body_signed`: Mailgun's and Linear's signature parts in the body; Dropbox's GET challenge.
//! - `forms`: form-encoded bodies (Twilio, GitHub's form content type), searched by their fields.
//! - `handshakes`: Asana's and Notion's secret handed over unsigned, for a waiting operator.
//! - `send`: `hookbox send` against every preset.
//! - `secrets`: no secret in the logs, the answers or the archive.

use crate::support::*;
use app::config::Config;
use app::schemes::Scheme;
use std::path::Path;

mod body_signed;
mod deliveries;
mod forms;
mod handshakes;
mod presets;
mod public_keys;
mod recipes;
mod secrets;
mod send;

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
