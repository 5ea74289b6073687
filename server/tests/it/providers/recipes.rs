//! `scheme = "hmac"` over HTTP, on both backends: a delivery signed as the source's recipe says
//! is applied, and its retry a duplicate; one changed byte, a stale timestamp and the URL as a
//! proxy saw it are refused 401 with the precise cause in the refused-requests log; the second
//! secret verifies; `hookbox send` signs with the recipe.

#![allow(clippy::unwrap_used)]

use super::*;
use app::schemes::Request;

const RECIPES: &str = r#"
[server]
public_url = "https://hooks.example.com"

[[sources]]
name = "lemon"
scheme = "hmac"
secrets_env = ["LEMON_SECRET", "LEMON_SECRET_OLD"]
algorithm = "sha256"
signature_header = "X-Signature"
signed = ["body"]

[[sources]]
name = "hub"
scheme = "hmac"
secrets_env = ["HUB_SECRET"]
algorithm = "sha512"
signature_header = "X-Hub-Sig"
signature_encoding = "base64"
timestamp_header = "X-Hub-Time"
timestamp_unit = "ms"
signed = ["method", "url", "literal:\n", "timestamp", "literal:\n", "header:X-Hub-Id", "literal:\n", "body"]
"#;

fn recipes_config() -> Config {
    let env = |name: &str| match name {
        "LEMON_SECRET" => Some("lemon-current".to_string()),
        "LEMON_SECRET_OLD" => Some("lemon-previous".to_string()),
        "HUB_SECRET" => Some("hub-secret".to_string()),
        _ => None,
    };
    Config::parse(RECIPES, Path::new("recipes.toml"), &env).expect("the recipes are valid")
}

/// The headers `source`'s recipe sends for `body` with `secret`, signed over `url` at `at`.
fn signed(
    config: &Config,
    source: &str,
    secret: &str,
    url: &str,
    extra: &[(&str, &str)],
    body: &str,
    at: i64,
) -> Vec<(String, String)> {
    let source = config.source(source).expect("declared");
    let key = source.auth().parse_secret(secret).expect("secret");
    let mut headers = http::HeaderMap::new();
    for (name, value) in extra {
        headers.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    let request = Request {
        method: "POST",
        query: None,
        url: Some(url),
        headers: &headers,
        body: body.as_bytes(),
    };
    let mut sent: Vec<(String, String)> = extra
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    for (name, value) in source.auth().sign(&key, "unused", &request, at) {
        sent.push((name.to_string(), value));
    }
    sent
}

/// The refused-requests log's causes for `source`, once it holds `n` (the log is written
/// behind the answers).
async fn causes(app: &TestApp, source: &str, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let rows = texts(
            &app.db,
            "SELECT cause FROM rejected_requests WHERE source = $1 ORDER BY id",
            vec![source.into()],
        )
        .await;
        let found: Vec<String> = rows.into_iter().filter_map(|r| r[0].clone()).collect();
        if found.len() >= n {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "{source}: {found:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

both_backends!(a_delivery_signed_as_its_recipe_says_is_applied_and_each_forgery_refused);
async fn a_delivery_signed_as_its_recipe_says_is_applied_and_each_forgery_refused(
    backend: Backend,
) {
    let config = recipes_config();
    let app = spawn_app_with(backend, recipes_config()).await;
    let lemon_url = "https://hooks.example.com/hooks/lemon";
    let first = event("lemon-1", "order-1", 1, r#"{"total":10}"#);
    let second = event("lemon-2", "order-1", 2, r#"{"total":12}"#);

    let current = signed(
        &config,
        "lemon",
        "lemon-current",
        lemon_url,
        &[],
        &first,
        now(),
    );
    let accepted = app
        .post("lemon", &current, first.clone().into_bytes())
        .await;
    assert_eq!(accepted.outcome(), "applied", "{:?}", accepted.body);
    let retried = app
        .post("lemon", &current, first.clone().into_bytes())
        .await;
    assert_eq!(retried.outcome(), "duplicate", "{:?}", retried.body);
    let changed = first.replacen("10", "11", 1);
    let tampered = app.post("lemon", &current, changed.into_bytes()).await;
    assert_eq!(tampered.status, 401);
    assert_eq!(tampered.body, serde_json::json!({"status": "unauthorized"}));
    let previous = signed(
        &config,
        "lemon",
        "lemon-previous",
        lemon_url,
        &[],
        &second,
        now(),
    );
    let rotated = app
        .post("lemon", &previous, second.clone().into_bytes())
        .await;
    assert_eq!(rotated.outcome(), "applied", "the second secret verifies");
    assert_eq!(current_revision(&app.db, "lemon", "order-1").await, Some(2));
    assert_eq!(
        causes(&app, "lemon", 1).await,
        ["the signature matches none of 2 secrets"]
    );

    // The URL, the method, a header and a timestamp in milliseconds.
    let hub_url = "https://hooks.example.com/hooks/hub?team=7";
    let body = event("hub-1", "ticket-1", 1, "{}");
    let id = [("X-Hub-Id", "delivery-1")];
    let good = signed(&config, "hub", "hub-secret", hub_url, &id, &body, now());
    let post = |headers: Vec<(String, String)>, query: &'static str, body: String| {
        let app = app.clone_handle();
        async move {
            let mut request = app
                .client
                .post(app.url(&format!("/hooks/hub{query}")))
                .body(body);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request.send().await.expect("answered").status().as_u16()
        }
    };
    assert_eq!(post(good.clone(), "?team=7", body.clone()).await, 200);
    assert_eq!(
        texts(
            &app.db,
            "SELECT outcome FROM webhook_events WHERE source = 'hub'",
            vec![]
        )
        .await,
        [[Some("applied".to_string())]]
    );
    // Another query string is another URL; so is the address the proxy forwarded to.
    assert_eq!(post(good.clone(), "?team=8", body.clone()).await, 401);
    let proxied = signed(
        &config,
        "hub",
        "hub-secret",
        &app.url("/hooks/hub?team=7"),
        &id,
        &body,
        now(),
    );
    assert_eq!(post(proxied, "?team=7", body.clone()).await, 401);
    let other_id = good
        .iter()
        .map(|(n, v)| match n.as_str() {
            "X-Hub-Id" => (n.clone(), "delivery-2".to_string()),
            _ => (n.clone(), v.clone()),
        })
        .collect();
    assert_eq!(post(other_id, "?team=7", body.clone()).await, 401);
    let stale = signed(
        &config,
        "hub",
        "hub-secret",
        hub_url,
        &id,
        &body,
        now() - 301,
    );
    assert_eq!(post(stale, "?team=7", body.clone()).await, 401);
    let hub_causes = causes(&app, "hub", 4).await;
    assert_eq!(
        hub_causes[..3],
        ["the signature matches none of 1 secret"; 3]
    );
    assert!(
        hub_causes[3].starts_with("timestamp ")
            && hub_causes[3].ends_with("older than the tolerance of 300 s allows"),
        "{hub_causes:?}"
    );
}

both_backends!(hookbox_send_signs_with_the_recipe);
async fn hookbox_send_signs_with_the_recipe(backend: Backend) {
    let config = recipes_config();
    let app = spawn_app_with(backend, recipes_config()).await;
    for (source, extra) in [("lemon", vec![]), ("hub", vec![("X-Hub-Id", "d-9")])] {
        let body = event(&format!("{source}-sent"), "o-1", 1, "{}");
        let extra: Vec<_> = extra
            .into_iter()
            .map(|(n, v)| server::send::parse_header(&format!("{n}:{v}")).unwrap())
            .collect();
        let url = format!("https://hooks.example.com/hooks/{source}");
        let headers = server::send::delivery_headers(
            config.source(source).unwrap(),
            body.as_bytes(),
            &extra,
            Some(&url),
            now(),
        );
        let pairs: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let answer = app.post(source, &pairs, body.into_bytes()).await;
        assert_eq!(answer.outcome(), "applied", "{source}: {:?}", answer.body);
    }
}
