//! Who may do what: server functions refuse anonymous callers and viewers cannot replay,
//! sign-in (its throttle, its redirect to a local path), sessions that expire or are revoked,
//! cross-site refusal, and signature headers redacted for viewers.

use super::*;
use app::headers::HeaderClass;

const READ_FUNCTIONS: &[(&str, &[(&str, &str)])] = &[
    ("me", &[]),
    ("overview", &[]),
    ("events", &[]),
    ("event", &[("id", "1")]),
    ("object", &[("source", "shop"), ("object_id", "order-1")]),
    ("audit", &[]),
    ("problems", &[]),
];
const OPERATOR_FUNCTIONS: &[(&str, &[(&str, &str)])] = &[
    ("replay", &[("id", "1"), ("confirm", "false")]),
    ("bulk_replay", &[]),
    (
        "problem_state",
        &[
            ("source", "shop"),
            ("outcome", "invalid"),
            ("class", "x"),
            ("state", "ignored"),
        ],
    ),
];

/// `args` as the form takes them.
fn pairs<'a>(args: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    args.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[tokio::test]
async fn every_server_function_refuses_anonymous_callers_and_viewers_cannot_replay() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    with_user(&app, "vera", Role::Viewer).await;
    let viewer = sign_in(&app, "vera", PASSWORD)
        .await
        .expect("viewer signs in");
    // The functions' `id` is the delivery's (an id carries its day on PostgreSQL).
    let id = scalar(&app.db, "SELECT min(id) FROM webhook_events", vec![])
        .await
        .expect("the delivery")
        .to_string();
    let of = |args: &[(&'static str, &'static str)]| -> Vec<(&'static str, String)> {
        args.iter()
            .map(|&(k, v)| (k, if k == "id" { id.clone() } else { v.to_string() }))
            .collect()
    };

    for (endpoint, args) in READ_FUNCTIONS.iter().chain(OPERATOR_FUNCTIONS) {
        let (status, body) = call(&app, None, endpoint, &pairs(&of(args))).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "anonymous {endpoint}: {body}"
        );
    }
    for (endpoint, args) in READ_FUNCTIONS {
        let (status, body) = call(&app, Some(&viewer), endpoint, &pairs(&of(args))).await;
        assert_eq!(status, StatusCode::OK, "viewer {endpoint}: {body}");
    }
    for (endpoint, args) in OPERATOR_FUNCTIONS {
        let (status, body) = call(&app, Some(&viewer), endpoint, &pairs(&of(args))).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "viewer {endpoint}: {body}");
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        1,
        "nothing was replayed"
    );
}

#[tokio::test]
async fn anonymous_pages_redirect_to_the_sign_in_page() {
    let app = spawn_app(Backend::Sqlite).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");

    let response = client
        .get(app.url("/events?status=failed"))
        .send()
        .await
        .expect("answer");

    assert!(response.status().is_redirection());
    assert_eq!(
        response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok()),
        Some("/login?next=%2Fevents%3Fstatus%3Dfailed")
    );
    let login = client.get(app.url("/login")).send().await.expect("answer");
    assert_eq!(login.status(), StatusCode::OK);
}

#[tokio::test]
async fn failed_sign_ins_are_throttled_per_user() {
    let app = spawn_app(Backend::Postgres).await;
    with_user(&app, "olga", Role::Operator).await;

    for attempt in 0..auth::MAX_FAILURES_PER_USER {
        let (status, _) = sign_in(&app, "olga", "wrong password")
            .await
            .expect_err("wrong password");
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    let (status, message) = sign_in(&app, "olga", PASSWORD)
        .await
        .expect_err("throttled even when right");

    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(message.contains("Too many failed sign-ins"), "{message}");
    assert_eq!(
        count(&app.db, "SELECT CAST(COALESCE(SUM(failed), 0) AS BIGINT) FROM sign_in_failures WHERE name = 'olga'").await,
        auth::MAX_FAILURES_PER_USER
    );
}

#[tokio::test]
async fn sessions_expire_and_can_be_revoked() {
    let app = spawn_app(Backend::Postgres).await;
    with_user(&app, "vera", Role::Viewer).await;
    let expiring = sign_in(&app, "vera", PASSWORD).await.expect("sign in");
    assert_eq!(
        call(&app, Some(&expiring), "me", &[]).await.0,
        StatusCode::OK
    );
    // The only session so far reaches its expiry.
    sea_orm::ConnectionTrait::execute_unprepared(
        &app.db.dashboard,
        "UPDATE sessions SET expires_at = now() - interval '1 second'",
    )
    .await
    .expect("expire the session");
    let revoked = sign_in(&app, "vera", PASSWORD)
        .await
        .expect("sign in again");
    assert_eq!(
        call(&app, Some(&revoked), "me", &[]).await.0,
        StatusCode::OK
    );

    auth::revoke_session(&app.db, revoked.trim_start_matches("hookbox_session="))
        .await
        .expect("revoke");

    assert_eq!(
        call(&app, Some(&expiring), "me", &[]).await.0,
        StatusCode::UNAUTHORIZED,
        "expired"
    );
    assert_eq!(
        call(&app, Some(&revoked), "me", &[]).await.0,
        StatusCode::UNAUTHORIZED,
        "revoked"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM sessions WHERE token_hash LIKE 'hookbox%'"
        )
        .await,
        0,
        "only hashes are stored"
    );
}

#[tokio::test]
async fn state_changing_calls_from_another_site_are_refused() {
    let app = spawn_app(Backend::Sqlite).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    let cross = app
        .client
        .post(app.url("/api/replay"))
        .header("Cookie", &cookie)
        .header("Origin", "https://evil.example")
        .form(&[("id", "1"), ("confirm", "true")])
        .send()
        .await
        .expect("answer");
    let fetch_site = app
        .client
        .post(app.url("/api/replay"))
        .header("Cookie", &cookie)
        .header("Sec-Fetch-Site", "cross-site")
        .form(&[("id", "1"), ("confirm", "true")])
        .send()
        .await
        .expect("answer");

    assert_eq!(
        (cross.status(), fetch_site.status()),
        (StatusCode::FORBIDDEN, StatusCode::FORBIDDEN)
    );
}

#[tokio::test]
async fn a_sign_in_form_posted_without_javascript_redirects_only_to_a_local_path() {
    let app = spawn_app(Backend::Sqlite).await;
    with_user(&app, "vera", Role::Viewer).await;
    let client = no_redirects();
    let cases = [
        ("/\t/evil.example", "/"),
        ("/\n/evil.example", "/"),
        ("/ok\r\nSet-Cookie: hookbox_session=stolen", "/"),
        ("//evil.example", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
        ("/%2F/evil.example", "/"),
        ("/%09/evil.example", "/"),
        ("/events?q=%0D%0Ax", "/"),
        ("/caf\u{e9}", "/"),
        ("", "/"),
        (
            "/events?status=failed&source=crm",
            "/events?status=failed&source=crm",
        ),
    ];
    for (next, expected) in cases {
        // What a browser sends for the form before the wasm has loaded.
        let response = client
            .post(app.url("/api/login"))
            .header("Accept", "text/html,application/xhtml+xml")
            .form(&[("name", "vera"), ("password", PASSWORD), ("next", next)])
            .send()
            .await
            .unwrap_or_else(|e| panic!("next {next:?}: no answer ({e})"));
        let status = response.status();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let signed_in = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.starts_with("hookbox_session="));
        assert_eq!(status, StatusCode::FOUND, "next {next:?}");
        assert_eq!(location.as_deref(), Some(expected), "next {next:?}");
        assert!(signed_in, "next {next:?}: signed in");
        assert!(
            response.headers().get("x-injected").is_none(),
            "next {next:?}"
        );
    }
}

#[tokio::test]
async fn the_sign_in_page_carries_next_in_its_server_html() {
    let app = spawn_app(Backend::Sqlite).await;

    let (status, html) = page(&app, None, "/login?next=/events%3Fstatus%3Dfailed").await;
    let (_, hostile) = page(&app, None, "/login?next=%2F%09%2Fevil.example").await;

    assert_eq!(status, StatusCode::OK);
    let hidden = tag_with(&html, "input", &[r#"name="next""#]).expect("a next field");
    assert!(
        hidden.contains(r#"value="/events?status=failed""#),
        "{hidden}"
    );
    let hidden = tag_with(&hostile, "input", &[r#"name="next""#]).expect("a next field");
    assert!(hidden.contains(r#"value="/""#), "{hidden}");
}

/// The stored value of each signature header of a delivery.
async fn stored_signatures(app: &TestApp, id: i64) -> Vec<(String, String)> {
    let headers = texts(
        &app.db,
        "SELECT headers::text FROM webhook_events WHERE id = $1",
        vec![id.into()],
    )
    .await;
    let json: serde_json::Value =
        serde_json::from_str(headers[0][0].as_deref().unwrap_or("{}")).expect("headers JSON");
    json.as_object()
        .expect("an object")
        .iter()
        // Without a source: what any scheme reads as its signature.
        .filter(|(name, _)| app::headers::classify(name, None) == HeaderClass::Signature)
        .map(|(name, value)| (name.clone(), value.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// The headers of an `event` answer.
fn answered_headers(body: &str) -> Vec<(String, String)> {
    let json: serde_json::Value = serde_json::from_str(body).expect("an event as JSON");
    serde_json::from_value(json["headers"].clone()).expect("headers")
}

#[tokio::test]
async fn a_viewer_sees_signature_headers_redacted_and_an_operator_sees_them() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    app.send("sw", &event("e2", "order-2", 1, "{}")).await;
    with_user(&app, "vera", Role::Viewer).await;
    with_user(&app, "olga", Role::Operator).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.expect("sign in");
    let operator = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let ids = texts(
        &app.db,
        "SELECT CAST(id AS TEXT) FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;

    for row in ids {
        let id = row[0].clone().expect("an id");
        let signatures = stored_signatures(&app, id.parse().expect("an id")).await;
        assert!(!signatures.is_empty(), "delivery {id} was signed");
        let (status, as_viewer) = call(&app, Some(&viewer), "event", &[("id", &id)]).await;
        assert_eq!(status, StatusCode::OK, "{as_viewer}");
        let (status, as_operator) = call(&app, Some(&operator), "event", &[("id", &id)]).await;
        assert_eq!(status, StatusCode::OK, "{as_operator}");
        let (_, viewer_page) = page(&app, Some(&viewer), &format!("/events/{id}")).await;

        let shown_to_viewer = answered_headers(&as_viewer);
        let shown_to_operator = answered_headers(&as_operator);
        for (name, value) in &signatures {
            assert!(!as_viewer.contains(value.as_str()), "{name}: {as_viewer}");
            assert!(!viewer_page.contains(value.as_str()), "{name} on the page");
            assert!(
                shown_to_viewer.contains(&(name.clone(), "[redacted]".to_string())),
                "{name}: {shown_to_viewer:?}"
            );
            assert!(
                shown_to_operator.contains(&(name.clone(), value.clone())),
                "{name}: {shown_to_operator:?}"
            );
        }
        // Everything else is shown to both alike.
        let unsigned = |headers: &[(String, String)]| {
            headers
                .iter()
                .filter(|(n, _)| !signatures.iter().any(|(s, _)| s == n))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(unsigned(&shown_to_viewer), unsigned(&shown_to_operator));
    }
}

/// Credentials a sender may put in headers, under names no list of suspicious name parts
/// catches, each with a value found nowhere else.
const SECRET_HEADERS: &[(&str, &str)] = &[
    ("x-api-key", "apikey-s3cret-1"),
    ("x-gitlab-token", "gitlab-s3cret-2"),
    ("x-pwd", "pwd-s3cret-3"),
    ("verif-hash", "verifhash-s3cret-4"),
    ("x-jwt", "jwt-s3cret-5"),
    ("authorization", "Bearer authz-s3cret-6"),
    ("proxy-authorization", "Basic proxyauthz-s3cret-7"),
    ("x-authorization-token", "xauthz-s3cret-8"),
    ("cookie", "session=cookie-s3cret-9"),
];

/// The stored headers of delivery `id` as text.
async fn stored_headers(app: &TestApp, id: &str) -> String {
    let sql = match app.db.backend() {
        sea_orm::DatabaseBackend::Postgres => {
            "SELECT headers::text FROM webhook_events WHERE id = $1"
        }
        _ => "SELECT headers FROM webhook_events WHERE id = $1",
    };
    let id: i64 = id.parse().expect("an id");
    texts(&app.db, sql, vec![id.into()]).await[0][0]
        .clone()
        .expect("headers")
}

both_backends!(secret_headers_never_reach_the_archive_a_viewer_or_a_curl_command);
async fn secret_headers_never_reach_the_archive_a_viewer_or_a_curl_command(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut extra: Vec<(&str, &str)> = SECRET_HEADERS.to_vec();
    extra.push(("user-agent", "GitLab/17.0"));
    let answer = app
        .send_bytes("shop", event("e1", "order-1", 1, "{}").as_bytes(), &extra)
        .await;
    assert_eq!(answer.outcome(), "applied", "{:?}", answer.body);
    with_user(&app, "vera", Role::Viewer).await;
    with_user(&app, "olga", Role::Operator).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.expect("sign in");
    let operator = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let id = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .expect("archived")
        .to_string();

    // The archive keeps each one's size only.
    let stored = stored_headers(&app, &id).await;
    let parsed: serde_json::Value = serde_json::from_str(&stored).expect("JSON");
    for (name, value) in SECRET_HEADERS {
        assert!(!stored.contains(value), "{name} archived: {stored}");
        assert_eq!(
            parsed[name],
            format!("[redacted, {} bytes]", value.len()),
            "{stored}"
        );
    }
    assert_eq!(parsed["user-agent"], "GitLab/17.0");
    let signature = parsed["x-hookbox-signature"]
        .as_str()
        .expect("the signature is archived")
        .to_string();

    // A row archived before the classification, holding a credential as received.
    let legacy = r#"{"content-type":"application/json","x-api-key":"legacy-s3cret-10","x-custom":"legacy-s3cret-11"}"#;
    let update = match backend {
        Backend::Postgres => "UPDATE webhook_events SET headers = CAST($1 AS jsonb) WHERE id = $2",
        Backend::Sqlite => "UPDATE webhook_events SET headers = $1 WHERE id = $2",
    };
    let answer = app
        .send_bytes("shop", event("e2", "order-2", 1, "{}").as_bytes(), &[])
        .await;
    assert_eq!(answer.outcome(), "applied", "{:?}", answer.body);
    let legacy_id = scalar(&app.db, "SELECT max(id) FROM webhook_events", vec![])
        .await
        .expect("archived");
    sea_orm::ConnectionTrait::execute_raw(
        &app.db.dashboard,
        sea_orm::Statement::from_sql_and_values(
            app.db.backend(),
            update,
            vec![legacy.into(), legacy_id.into()],
        ),
    )
    .await
    .expect("write a legacy row");
    let legacy_id = legacy_id.to_string();

    for (who, cookie) in [("viewer", viewer.as_str()), ("operator", operator.as_str())] {
        for id in [&id, &legacy_id] {
            let (status, detail) = call(&app, Some(cookie), "event", &[("id", id)]).await;
            assert_eq!(status, StatusCode::OK, "{detail}");
            let (status, html) = page(&app, Some(cookie), &format!("/events/{id}")).await;
            assert_eq!(status, StatusCode::OK);
            for shown in [&detail, &html] {
                assert!(
                    !shown.contains("s3cret"),
                    "{who} sees a secret of {id}: {shown}"
                );
            }
            let detail: serde_json::Value = serde_json::from_str(&detail).expect("JSON");
            let curl = detail["curl"].as_str().expect("a curl command");
            assert!(!curl.contains("[redacted"), "{who}: {curl}");
            let headers = answered_headers(&detail.to_string());
            if id == &legacy_id {
                assert!(
                    headers.contains(&("x-api-key".into(), "[redacted, 16 bytes]".into())),
                    "{headers:?}"
                );
                continue;
            }
            for (name, value) in SECRET_HEADERS {
                assert!(
                    headers.contains(&(
                        name.to_string(),
                        format!("[redacted, {} bytes]", value.len())
                    )),
                    "{who}: {name}: {headers:?}"
                );
                assert!(!curl.contains(name), "{who}'s curl resends {name}: {curl}");
            }
            assert!(curl.contains("user-agent: GitLab/17.0"), "{curl}");
            // The signature: the operator's to see and resend, never the viewer's.
            let operator_only = who == "operator";
            assert_eq!(curl.contains(&signature), operator_only, "{who}: {curl}");
            assert_eq!(html.contains(&signature), operator_only, "{who}");
            assert_eq!(
                headers.contains(&("x-hookbox-signature".into(), signature.clone())),
                operator_only,
                "{who}: {headers:?}"
            );
        }
    }
}

both_backends!(destination_urls_are_shown_without_credentials_or_password_parameters);
async fn destination_urls_are_shown_without_credentials_or_password_parameters(backend: Backend) {
    let text = format!(
        "{CONFIG}
[[destinations]]
name = \"orders-app\"
url = \"https://app:pw%2Fs3cret%23@orders.example:8443/in?tenant=acme&token=tok-s3cret&sig=sig-s3cret#frag-s3cret\"
secret_env = \"DESTINATION_SECRET\"
"
    );
    let config = app::config::Config::parse(&text, std::path::Path::new("test.toml"), &test_env)
        .expect("config");
    let app = spawn_app_with(backend, config).await;
    with_user(&app, "vera", Role::Viewer).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.expect("sign in");

    let (status, listed) = call(&app, Some(&viewer), "destinations", &[]).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let (status, html) = page(&app, Some(&viewer), "/destinations").await;
    assert_eq!(status, StatusCode::OK);
    let (status, detail) = page(&app, Some(&viewer), "/destinations/orders-app").await;
    assert_eq!(status, StatusCode::OK);
    for shown in [&listed, &html, &detail] {
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(!shown.contains("app:pw"), "{shown}");
    }
    assert!(
        listed.contains("https://***@orders.example:8443/in?tenant=acme&token=***&sig=***"),
        "{listed}"
    );
}
