//! Tokens, scopes and the reads of sources, events and objects.

use super::*;
use server::api::TOKEN_REQUESTS_PER_SEC;

both_backends!(a_token_reads_what_its_role_and_sources_allow_and_nothing_else);
async fn a_token_reads_what_its_role_and_sources_allow_and_nothing_else(backend: Backend) {
    let app = spawn_app(backend).await;
    let snapshot = r#"{"status":"paid","ledger_id":12345678901234567890,"total":0.10}"#;
    assert_eq!(
        app.send("shop", &event("evt_1", "order-1", 3, snapshot))
            .await
            .outcome(),
        "applied"
    );
    let dedup = r#"{"repository":{"id":"repo-9"}}"#;
    let gh = app
        .send_bytes("gh", dedup.as_bytes(), &[("X-Delivery-Id", "d-1")])
        .await;
    assert_eq!(gh.outcome(), "accepted");
    let (shop_id, gh_id) = (newest(&app, "shop").await, newest(&app, "gh").await);
    let all = token(&app, "support-tool", Role::Viewer, &[]).await;
    let shop_only = token(&app, "shop-script", Role::Viewer, &["shop"]).await;
    assert!(all.starts_with("hbt_") && all.len() == 4 + 43, "{all}");

    // Sources: each token sees its own.
    let (status, content_type, sources) = get(&app, Some(&shop_only), "/api/v1/sources").await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    let names: Vec<&str> = sources["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shop"]);
    assert_eq!(sources["next_cursor"], serde_json::Value::Null);
    let (_, _, sources) = get(&app, Some(&all), "/api/v1/sources").await;
    assert_eq!(sources["data"].as_array().unwrap().len(), 4);
    // Paged like every list: three, then the fourth, in the same order.
    let (_, _, first) = get(&app, Some(&all), "/api/v1/sources?limit=3").await;
    assert_eq!(first["data"].as_array().unwrap().len(), 3, "{first}");
    let next = first["next_cursor"].as_str().unwrap();
    let (_, _, second) = get(
        &app,
        Some(&all),
        &format!("/api/v1/sources?limit=3&cursor={next}"),
    )
    .await;
    assert_eq!(second["next_cursor"], serde_json::Value::Null);
    let walked: Vec<serde_json::Value> = first["data"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["data"].as_array().unwrap())
        .cloned()
        .collect();
    assert_eq!(&walked, sources["data"].as_array().unwrap());
    let (status, _, problem) = get(&app, Some(&all), "/api/v1/sources?cursor=nowhere").await;
    assert_eq!(status, 400, "{problem}");

    // An event: its body embedded exactly as sent, the headers a viewer may see.
    let (status, _, shown) =
        get(&app, Some(&shop_only), &format!("/api/v1/events/{shop_id}")).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(
        (
            shown["source"].as_str(),
            shown["event_id"].as_str(),
            shown["revision"].as_i64(),
            shown["outcome"].as_str()
        ),
        (Some("shop"), Some("evt_1"), Some(3), Some("applied"))
    );
    let raw = app
        .client
        .get(app.url(&format!("/api/v1/events/{shop_id}")))
        .bearer_auth(&shop_only)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        raw.contains("12345678901234567890") && raw.contains("0.10"),
        "{raw}"
    );
    assert_eq!(shown["headers"]["x-hookbox-signature"], "[redacted]");
    // Another source's event is 404 for the limited token, as if it did not exist.
    let (status, content_type, problem) =
        get(&app, Some(&shop_only), &format!("/api/v1/events/{gh_id}")).await;
    assert_eq!(
        (status, content_type.as_str()),
        (404, "application/problem+json")
    );
    assert_eq!(problem["status"], 404);
    assert_eq!(problem["detail"], format!("there is no delivery {gh_id}"));
    assert!(
        problem["request_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    let (status, _, _) = get(&app, Some(&shop_only), "/api/v1/events/999999").await;
    assert_eq!(status, 404);
    let (status, _, shown) = get(&app, Some(&all), &format!("/api/v1/events/{gh_id}")).await;
    assert_eq!(
        (status, shown["body"]["repository"]["id"].as_str()),
        (200, Some("repo-9"))
    );

    // An object's current revision, with the event that carried it.
    let (status, _, object) = get(
        &app,
        Some(&shop_only),
        "/api/v1/sources/shop/objects/order-1",
    )
    .await;
    assert_eq!(status, 200, "{object}");
    assert_eq!(
        (
            object["revision"].as_i64(),
            object["event_id"].as_str(),
            object["snapshot"]["status"].as_str()
        ),
        (Some(3), Some("evt_1"), Some("paid"))
    );
    let (status, _, _) = get(&app, Some(&shop_only), "/api/v1/sources/gh/objects/repo-9").await;
    assert_eq!(status, 404, "another source's object");
    let (status, _, _) = get(&app, Some(&all), "/api/v1/sources/shop/objects/order-404").await;
    assert_eq!(status, 404);

    // Its accepted revisions, greatest first, a page at a time.
    for revision in [1, 5, 4] {
        let id = format!("evt_r{revision}");
        app.send("shop", &event(&id, "order-1", revision, "{}"))
            .await;
    }
    let mut revisions = Vec::new();
    let mut path = "/api/v1/sources/shop/objects/order-1/revisions?limit=2".to_string();
    loop {
        let (status, _, page) = get(&app, Some(&shop_only), &path).await;
        assert_eq!(status, 200, "{page}");
        for row in page["data"].as_array().unwrap() {
            revisions.push(row["revision"].as_i64().unwrap());
        }
        match page["next_cursor"].as_str() {
            Some(next) => {
                path =
                    format!("/api/v1/sources/shop/objects/order-1/revisions?limit=2&cursor={next}")
            }
            None => break,
        }
    }
    assert_eq!(revisions, [5, 4, 3, 1]);
    let (status, _, _) = get(
        &app,
        Some(&shop_only),
        "/api/v1/sources/gh/objects/x/revisions",
    )
    .await;
    assert_eq!(status, 404);

    // An unknown query parameter is named.
    let (status, _, problem) = get(&app, Some(&all), "/api/v1/sources?colour=blue").await;
    assert_eq!(status, 400);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("unknown query parameter \"colour\"; this endpoint takes cursor, limit"),
        "{problem}"
    );
}

both_backends!(a_missing_unknown_revoked_or_expired_token_is_401);
async fn a_missing_unknown_revoked_or_expired_token_is_401(backend: Backend) {
    let app = spawn_app(backend).await;
    let revoked = token(&app, "old-script", Role::Viewer, &[]).await;
    let expired = token(&app, "trial", Role::Operator, &[]).await;
    assert!(
        app::auth::tokens::revoke_token(&app.db, "old-script", "olga")
            .await
            .unwrap()
    );
    execute(
        &app.db,
        "UPDATE api_tokens SET expires_at = $1 WHERE name = 'trial'",
        vec![(chrono::Utc::now() - chrono::Duration::seconds(1)).into()],
    )
    .await;
    let forged = format!("hbt_{}", "A".repeat(43));
    for (token, detail) in [
        (None, "no token: send Authorization: Bearer <token>"),
        (
            Some(forged.as_str()),
            "the token is not one of this hookbox's",
        ),
        (Some(revoked.as_str()), "the token was revoked"),
        (Some(expired.as_str()), "the token has expired"),
    ] {
        let (status, content_type, problem) = get(&app, token, "/api/v1/sources").await;
        assert_eq!(
            (status, content_type.as_str(), problem["detail"].as_str()),
            (401, "application/problem+json", Some(detail))
        );
    }
    // The audit log names who made and revoked tokens; no token is stored, only its hash.
    let audited = texts(
        &app.db,
        "SELECT actor, action, target FROM audit_log ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(
        audited,
        [
            ["olga", "add_token", "old-script"],
            ["olga", "add_token", "trial"],
            ["olga", "revoke_token", "old-script"]
        ]
        .map(|row| row.map(|v| Some(v.to_string())))
    );
    let mut stored = String::new();
    for sql in [
        "SELECT name, token_hash, role FROM api_tokens",
        "SELECT actor, action, target, detail FROM audit_log",
    ] {
        for row in texts(&app.db, sql, vec![]).await {
            stored.extend(row.into_iter().flatten());
        }
    }
    for secret in [&revoked, &expired] {
        assert!(!stored.contains(secret.as_str()), "a token is stored");
        assert!(!stored.contains(&secret[4..]), "a token is stored");
    }
}

both_backends!(each_token_is_held_to_its_rate);
async fn each_token_is_held_to_its_rate(backend: Backend) {
    let app = spawn_app(backend).await;
    let busy = token(&app, "busy", Role::Viewer, &[]).await;
    let calm = token(&app, "calm", Role::Viewer, &[]).await;
    // All at once: more than a second's worth before the bucket can refill.
    let burst = (0..TOKEN_REQUESTS_PER_SEC * 2).map(|_| {
        app.client
            .get(app.url("/api/v1/sources"))
            .bearer_auth(&busy)
            .send()
    });
    let answers = futures::future::join_all(burst).await;
    let statuses: Vec<u16> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().status().as_u16())
        .collect();
    let retry_after = answers
        .iter()
        .filter_map(|a| a.as_ref().unwrap().headers().get("retry-after").cloned())
        .next();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_eq!(retry_after.unwrap(), "1");
    let (status, _, _) = get(&app, Some(&calm), "/api/v1/sources").await;
    assert_eq!(status, 200, "another token has its own rate");
}

/// `hookbox token add|list|revoke`, as processes on the test's database.
#[tokio::test]
async fn the_token_command_prints_a_token_once_lists_and_revokes_it() {
    let app = spawn_app(Backend::Postgres).await;
    let url = app.test_db.as_ref().unwrap().url.clone();
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("hookbox.toml");
    std::fs::write(&config_file, CONFIG).unwrap();
    let hookbox = |args: &[&str]| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_hookbox"));
        command
            .args(args)
            .env("DATABASE_URL", &url)
            .env("HOOKBOX_CONFIG", &config_file);
        for name in ["SHOP_SECRET", "SHOP_SECRET_OLD", "SW_SECRET"] {
            command.env(name, test_env(name).unwrap());
        }
        async move { command.output().await.unwrap() }
    };
    let made = hookbox(&["token", "add", "ci", "--role", "viewer", "--source", "shop"]).await;
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let stdout = String::from_utf8(made.stdout).unwrap();
    let token = stdout.trim_end().lines().last().unwrap().to_string();
    assert!(token.starts_with("hbt_"), "{stdout}");
    let (status, _, sources) = get(&app, Some(&token), "/api/v1/sources").await;
    assert_eq!(
        (status, sources["data"][0]["name"].as_str()),
        (200, Some("shop"))
    );

    let unknown = hookbox(&["token", "add", "x", "--role", "viewer", "--source", "nope"]).await;
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("--source nope: no source of that name")
    );
    let listed = String::from_utf8(hookbox(&["token", "list"]).await.stdout).unwrap();
    assert!(listed.starts_with("ci\tviewer\tlive\tshop\t"), "{listed}");
    assert!(
        !listed.contains(&token[4..]),
        "the list never shows a token"
    );

    let revoked = hookbox(&["token", "revoke", "ci"]).await;
    assert!(revoked.status.success());
    let (status, _, _) = get(&app, Some(&token), "/api/v1/sources").await;
    assert_eq!(status, 401);
    let again = hookbox(&["token", "revoke", "ci"]).await;
    assert!(!again.status.success(), "no live token of that name");
}

both_backends!(a_tokens_last_use_is_written_at_most_once_a_minute);
async fn a_tokens_last_use_is_written_at_most_once_a_minute(backend: Backend) {
    let app = spawn_app(backend).await;
    let script = token(&app, "script", Role::Viewer, &[]).await;
    let last_used = || async {
        app::auth::tokens::list_tokens(&app.db)
            .await
            .unwrap()
            .into_iter()
            .find(|t| t.name == "script")
            .unwrap()
            .last_used_at
    };
    let set_last_used = |at: chrono::DateTime<chrono::Utc>| {
        let db = app.db.clone();
        async move {
            sea_orm::ConnectionTrait::execute_raw(
                &db.writer,
                sea_orm::Statement::from_sql_and_values(
                    db.backend(),
                    "UPDATE api_tokens SET last_used_at = $1 WHERE name = 'script'",
                    vec![at.into()],
                ),
            )
            .await
            .unwrap();
        }
    };
    assert_eq!(last_used().await, None, "never used yet");
    let before = chrono::Utc::now() - chrono::Duration::seconds(1);
    assert_eq!(get(&app, Some(&script), "/api/v1/sources").await.0, 200);
    let first = last_used().await.expect("the first call is written");
    assert!(first >= before, "{first} {before}");

    // 30 seconds ago: a call now does not write it again.
    let recent = chrono::Utc::now() - chrono::Duration::seconds(30);
    set_last_used(recent).await;
    assert_eq!(get(&app, Some(&script), "/api/v1/sources").await.0, 200);
    let kept = last_used().await.unwrap();
    assert!(
        (kept - recent).num_milliseconds().abs() < 1000,
        "{kept} {recent}"
    );

    // 61 seconds ago: the next call writes the time of that call.
    set_last_used(chrono::Utc::now() - chrono::Duration::seconds(61)).await;
    let before = chrono::Utc::now() - chrono::Duration::seconds(1);
    assert_eq!(get(&app, Some(&script), "/api/v1/sources").await.0, 200);
    assert!(last_used().await.unwrap() >= before);
}
