//! `/tokens`: an operator makes an API token through the page's server function (answered once,
//! `hbt_…`), sees it listed without it, the token reads `/api/v1`, the operator revokes it and
//! the API answers 401; a viewer is refused the page and its functions and nothing is stored;
//! the audit log names the operator, never the token.
#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::Value as Json;

fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

async fn stored_tokens(app: &TestApp) -> i64 {
    scalar(&app.db, "SELECT count(*) FROM api_tokens", vec![])
        .await
        .unwrap()
}

both_backends!(tokens_page_an_operator_adds_lists_and_revokes_a_token);
async fn tokens_page_an_operator_adds_lists_and_revokes_a_token(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "olga", Role::Operator).await;
    let operator = sign_in(&app, "olga", PASSWORD).await.unwrap();

    // The page and its link in the top bar, for operators.
    let (status, html) = page(&app, Some(&operator), "/tokens").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("API tokens") && html.contains("Add a token"));
    assert!(html.contains(r#"href="/tokens""#), "the top bar links it");
    let (status, list) = call(&app, Some(&operator), "tokens", &[]).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let list = json(&list);
    assert_eq!(list["tokens"], Json::Array(vec![]));
    assert_eq!(
        list["sources"],
        serde_json::json!(["shop", "sw", "gh", "limited"])
    );

    // Added: answered once, as hbt_ and its secret.
    let (status, made) = call(
        &app,
        Some(&operator),
        "add_token",
        &[
            ("name", "support-tool"),
            ("role", "viewer"),
            ("sources[0]", "shop"),
            ("expires_in_days", "30"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{made}");
    let secret = json(&made).as_str().unwrap().to_string();
    assert!(
        secret.starts_with("hbt_") && secret.len() == 4 + 43,
        "{secret}"
    );

    // Listed, without it.
    let (status, listed) = call(&app, Some(&operator), "tokens", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !listed.contains(&secret[4..]),
        "the list never shows a token"
    );
    let row = &json(&listed)["tokens"][0];
    assert_eq!(
        (
            row["name"].as_str(),
            row["role"].as_str(),
            row["state"].as_str()
        ),
        (Some("support-tool"), Some("Viewer"), Some("live"))
    );
    assert_eq!(row["sources"], serde_json::json!(["shop"]));
    assert!(row["expires_at"].is_string() && row["revoked_at"].is_null());
    let (_, html) = page(&app, Some(&operator), "/tokens").await;
    assert!(html.contains("support-tool") && !html.contains(&secret[4..]));

    // It reads the API: the sources it is limited to.
    let (status, _, sources) = get(&app, Some(&secret), "/api/v1/sources").await;
    assert_eq!(status, 200, "{sources}");
    assert_eq!(sources["data"][0]["name"], "shop");
    assert_eq!(sources["data"].as_array().unwrap().len(), 1);

    // Refused in words: its name again, an unknown source, a name that cannot be, a bad expiry.
    for (args, words) in [
        (
            vec![("name", "support-tool"), ("role", "viewer")],
            "a token named support-tool exists",
        ),
        (
            vec![("name", "x"), ("role", "viewer"), ("sources[0]", "nope")],
            "source nope: no source of that name is configured",
        ),
        (
            vec![("name", "two words"), ("role", "viewer")],
            "is not a token name",
        ),
        (
            vec![("name", "y"), ("role", "viewer"), ("expires_in_days", "0")],
            "expires in days: a whole number from 1 to 3650",
        ),
        (
            vec![("name", "z"), ("role", "admin")],
            "role: viewer or operator",
        ),
    ] {
        let (status, body) = call(&app, Some(&operator), "add_token", &args).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body.contains(words), "{body}");
    }
    assert_eq!(stored_tokens(&app).await, 1);

    // Revoked: the API answers 401, the list says so, and it cannot be revoked twice.
    let (status, body) = call(
        &app,
        Some(&operator),
        "revoke_token",
        &[("name", "support-tool")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, problem) = get(&app, Some(&secret), "/api/v1/sources").await;
    assert_eq!(
        (status, problem["detail"].as_str()),
        (401, Some("the token was revoked"))
    );
    let (_, listed) = call(&app, Some(&operator), "tokens", &[]).await;
    let row = &json(&listed)["tokens"][0];
    assert_eq!(row["state"], "revoked");
    assert!(row["revoked_at"].is_string());
    let (status, body) = call(
        &app,
        Some(&operator),
        "revoke_token",
        &[("name", "support-tool")],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // The audit log: the operator made and revoked it; the token is nowhere in it.
    let audited = texts(
        &app.db,
        "SELECT actor, action, target, detail FROM audit_log
          WHERE action IN ('add_token', 'revoke_token') ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert_eq!(
        audited
            .iter()
            .map(|row| (row[0].clone(), row[1].clone(), row[2].clone()))
            .collect::<Vec<_>>(),
        [
            (
                Some("olga".to_string()),
                Some("add_token".to_string()),
                Some("support-tool".to_string())
            ),
            (
                Some("olga".to_string()),
                Some("revoke_token".to_string()),
                Some("support-tool".to_string())
            ),
        ]
    );
    let mut stored = String::new();
    for sql in [
        "SELECT actor, action, target, detail FROM audit_log",
        "SELECT name, token_hash, role FROM api_tokens",
    ] {
        for row in texts(&app.db, sql, vec![]).await {
            stored.extend(row.into_iter().flatten());
        }
    }
    assert!(!stored.contains(&secret[4..]), "a token is stored");
}

both_backends!(tokens_page_a_viewer_is_refused_and_nothing_is_stored);
async fn tokens_page_a_viewer_is_refused_and_nothing_is_stored(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app::auth::tokens::add_token(&app.db, "ci", Role::Viewer, &[], None, "olga", &[])
        .await
        .unwrap();

    let (status, body) = call(
        &app,
        Some(&viewer),
        "add_token",
        &[("name", "mine"), ("role", "operator")],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("OperatorsOnly"), "{body}");
    let (status, _) = call(&app, Some(&viewer), "tokens", &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(&app, Some(&viewer), "revoke_token", &[("name", "ci")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &app,
        None,
        "add_token",
        &[("name", "anon"), ("role", "viewer")],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(stored_tokens(&app).await, 1, "nothing was made");
    assert_eq!(
        scalar(
            &app.db,
            "SELECT count(*) FROM api_tokens WHERE revoked_at IS NOT NULL",
            vec![]
        )
        .await,
        Some(0),
        "nothing was revoked"
    );
    assert_eq!(
        texts(
            &app.db,
            "SELECT actor FROM audit_log WHERE action IN ('add_token', 'revoke_token')",
            vec![]
        )
        .await,
        [[Some("olga".to_string())]]
    );

    // The page says so (403), and the top bar does not offer it.
    let (status, html) = page(&app, Some(&viewer), "/tokens").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(html.contains("this needs the operator role"), "{html}");
    let (_, html) = page(&app, Some(&viewer), "/audit").await;
    assert!(!html.contains(r#"href="/tokens""#), "no link for viewers");
}
