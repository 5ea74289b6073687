//! What an anonymous browser can make single sign-on spend: started flows are bounded per client
//! (429 past them, the rows stay few), a flood of callbacks naming no flow is a count per client
//! and minute (no audit row each), and the password form is gone but for break-glass accounts.
#![allow(clippy::unwrap_used)]

use super::hostile::Hostile;
use super::{browser, callback, spawn};
use crate::support::{Backend, both_backends, count};
use app::auth::oidc::MAX_FLOWS_PER_CLIENT;

both_backends!(a_flood_of_starts_and_forged_callbacks_costs_a_bounded_number_of_rows);
async fn a_flood_of_starts_and_forged_callbacks_costs_a_bounded_number_of_rows(backend: Backend) {
    let provider = Hostile::spawn().await;
    let app = spawn(backend, &provider.issuer, "").await;
    let mut statuses = Vec::new();
    for _ in 0..(MAX_FLOWS_PER_CLIENT + 15) {
        let response = browser()
            .get(app.url("/auth/oidc/start?next=/"))
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
        if response.status() == reqwest::StatusCode::TOO_MANY_REQUESTS {
            assert!(response.headers().contains_key("retry-after"));
            let text = response.text().await.unwrap();
            assert!(text.contains("Too many sign-ins started"), "{text}");
        }
    }
    let started = statuses.iter().filter(|s| **s == 303).count() as i64;
    assert_eq!(started, MAX_FLOWS_PER_CLIENT, "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        15,
        "{statuses:?}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM sign_in_flows").await,
        MAX_FLOWS_PER_CLIENT
    );
    // Expired flows are deleted by the next start: the client may start again.
    app::clock::advance(std::time::Duration::from_secs(
        app::auth::oidc::FLOW_MINUTES as u64 * 60 + 1,
    ));
    let again = browser()
        .get(app.url("/auth/oidc/start?next=/"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), reqwest::StatusCode::SEE_OTHER);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM sign_in_flows").await,
        1
    );

    // Forged callbacks: never a flow, never the provider, never an audit row each.
    let forging = std::time::Instant::now();
    for i in 0..300 {
        let state = if i % 3 == 0 {
            "x".repeat(5000)
        } else {
            format!("forged-{i}")
        };
        let landed = callback(
            &app,
            &format!("code=c&state={state}"),
            Some("hookbox_sign_in=v"),
        )
        .await;
        assert_eq!(landed.location, "/login?sso=expired");
    }
    // Hostile query strings: a parameter twice, a huge query; each a clear refusal, no 5xx.
    let doubled = callback(&app, "state=a&state=b&code=c", None).await;
    assert_eq!(doubled.location, "/login?sso=expired");
    let huge = callback(&app, &format!("code={}", "c".repeat(20_000)), None).await;
    assert!(
        huge.status.is_redirection() || huge.status.is_client_error(),
        "{huge:?}"
    );
    assert_eq!(provider.token_requests(), 0);
    assert_eq!(count(&app.db, "SELECT count(*) FROM audit_log").await, 0);
    assert!(
        count(&app.db, "SELECT count(*) FROM sign_in_failures").await
            <= forging.elapsed().as_secs() as i64 / 60 + 2,
        "one row per client and minute"
    );
    assert!(
        count(
            &app.db,
            "SELECT CAST(sum(failed) AS BIGINT) FROM sign_in_failures"
        )
        .await
            >= 300
    );
}

#[tokio::test]
async fn with_password_sign_in_off_only_break_glass_accounts_use_the_form() {
    let provider = Hostile::spawn().await;
    let app = spawn(
        Backend::Sqlite,
        &provider.issuer,
        "password_login = false\nbreak_glass = [\"admin\"]",
    )
    .await;
    for name in ["admin", "olga"] {
        app::auth::add_user(
            &app.db,
            name,
            crate::support::PASSWORD,
            app::model::Role::Operator,
        )
        .await
        .unwrap();
    }
    let sign_in = |name: &'static str| {
        let app = &app;
        async move {
            let response = app
                .client
                .post(app.url("/api/login"))
                .header("Accept", "application/json")
                .form(&[
                    ("name", name),
                    ("password", crate::support::PASSWORD),
                    ("next", "/"),
                ])
                .send()
                .await
                .unwrap();
            let status = response.status();
            let cookie = crate::support::session_cookie(response.headers());
            (status, cookie, response.text().await.unwrap())
        }
    };
    let (_, cookie, _) = sign_in("admin").await;
    assert!(
        cookie.is_some(),
        "the break-glass account signs in with its password"
    );
    let (status, cookie, body) = sign_in("olga").await;
    assert_eq!(cookie, None, "another local account does not");
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED, "{body}");
    let wrong = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[
            ("name", "admin"),
            ("password", "a wrong password"),
            ("next", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(
        (wrong.status(), wrong.text().await.unwrap()),
        (status, body),
        "the same answer as a wrong password"
    );
    // The page offers single sign-on, and keeps the form folded away for break-glass accounts.
    let (status, ways) = crate::support::call(&app, "", "sign_in_options", &[]).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&ways).unwrap(),
        serde_json::json!({ "single_sign_on": true, "password_login": false })
    );
}
