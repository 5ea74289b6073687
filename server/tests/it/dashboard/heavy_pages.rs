//! The object and event pages over what a sender can make heavy: wide, deep and large
//! snapshots and bodies. Their comparisons and layouts are bounded (in changes, depth, size,
//! time) and run off the async workers, so deliveries sent meanwhile are answered.
#![allow(clippy::unwrap_used)]

use super::*;
use sea_orm::{ConnectionTrait, Statement};
use std::time::Duration;

/// The test configuration with bodies of up to 1 MB.
fn large_bodies_config() -> app::config::Config {
    app::config::Config::parse(
        &CONFIG.replace("max_body_bytes = 65536", "max_body_bytes = 1048576"),
        std::path::Path::new("test.toml"),
        &test_env,
    )
    .unwrap()
}

/// `n` deliveries to other objects, sent while something else runs: each must be answered
/// (applied) within a generous deadline.
fn deliveries_meanwhile(app: &TestApp, tag: &str, n: usize) -> tokio::task::JoinHandle<()> {
    let app = app.clone_handle();
    let tag = tag.to_string();
    tokio::spawn(async move {
        for i in 0..n {
            let body = event(&format!("{tag}-{i}"), &format!("{tag}-o{i}"), 1, "{}");
            let answer = tokio::time::timeout(Duration::from_secs(5), app.send("shop", &body))
                .await
                .unwrap_or_else(|_| panic!("delivery {i} was not answered within 5 s"));
            assert_eq!(answer.outcome(), "applied", "{answer:?}");
        }
    })
}

/// A wide snapshot: `fields` fields, each `value`.
fn wide(fields: usize, value: usize) -> String {
    let fields: Vec<String> = (0..fields).map(|i| format!("\"f{i}\":{value}")).collect();
    format!("{{{}}}", fields.join(","))
}

both_backends!(the_object_page_compares_wide_deep_and_large_revisions_within_bounds_while_deliveries_are_answered);
async fn the_object_page_compares_wide_deep_and_large_revisions_within_bounds_while_deliveries_are_answered(
    backend: Backend,
) {
    use app::db::objects::PAGE_MAX_CHANGES;
    use app::present::{DIFF_MAX_CHANGES, DIFF_MAX_DEPTH};
    let app = spawn_app_with(backend, large_bodies_config()).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    // 30 revisions of 8,000 fields, every field changed each time; then a deep one and one
    // larger than a diff compares.
    let mut revision = 0;
    for value in 0..30 {
        revision += 1;
        let answer = app
            .send(
                "shop",
                &event(&format!("w{revision}"), "big", revision, &wide(8000, value)),
            )
            .await;
        assert_eq!(answer.outcome(), "applied", "{answer:?}");
    }
    let deep = |v: u32| format!("{}{v}{}", "{\"a\":".repeat(120), "}".repeat(120));
    for (snapshot, id) in [
        (deep(1), "deep-1"),
        (deep(2), "deep-2"),
        (format!("{{\"note\":\"{}\"}}", "x".repeat(300_000)), "large"),
    ] {
        revision += 1;
        let answer = app
            .send("shop", &event(id, "big", revision, &snapshot))
            .await;
        assert_eq!(answer.outcome(), "applied", "{id}: {answer:?}");
    }

    let page = {
        let app = app.clone_handle();
        let cookie = cookie.clone();
        tokio::spawn(async move {
            call(
                &app,
                Some(&cookie),
                "object",
                &[("source", "shop"), ("object_id", "big")],
            )
            .await
        })
    };
    let meanwhile = deliveries_meanwhile(&app, "during-object", 10);
    meanwhile.await.unwrap();
    let (status, body) = page.await.unwrap();

    assert_eq!(status, StatusCode::OK, "{backend:?}: {body}");
    let history: serde_json::Value = serde_json::from_str(&body).unwrap();
    let revisions = history["revisions"].as_array().unwrap();
    assert_eq!(revisions.len(), 33);
    let changes = |r: &serde_json::Value| r["changes"].as_array().unwrap().len();
    let note = |r: &serde_json::Value| r["changes_note"].as_str().unwrap_or("").to_string();
    // Greatest first: the large one is not compared, the deep one is compared down to the cap.
    assert_eq!(changes(&revisions[0]), 0);
    assert!(
        note(&revisions[0]).starts_with("not compared: a snapshot is larger"),
        "{}",
        note(&revisions[0])
    );
    let deep_change = &revisions[1]["changes"][0];
    assert_eq!(deep_change["path"], "/a".repeat(DIFF_MAX_DEPTH));
    assert!(deep_change["after"].as_str().unwrap().chars().count() <= 201);
    let total: usize = revisions.iter().map(changes).sum();
    assert!(total <= PAGE_MAX_CHANGES, "{total} changes on one page");
    assert!(revisions.iter().all(|r| changes(r) <= DIFF_MAX_CHANGES));
    assert!(
        note(&revisions[3]).contains("more changes not shown"),
        "{}",
        note(&revisions[3])
    );
    assert!(
        revisions
            .iter()
            .any(|r| note(r).starts_with("not compared: the page")),
        "the page's budget ended the comparisons"
    );

    let (status, html) = page_html(&app, &cookie, "/objects/shop/big").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"changes-note\""));
    assert!(html.len() < 4 * 1024 * 1024, "{} bytes of page", html.len());
}

async fn page_html(app: &TestApp, cookie: &str, path: &str) -> (StatusCode, String) {
    page(app, Some(cookie), path).await
}

/// Archives `body` as a delivery (written directly: bodies larger than any limit a deployment
/// had); its id.
async fn archived_body(app: &TestApp, event_id: &str, body: &[u8]) -> i64 {
    app.db
        .writer
        .execute_raw(Statement::from_sql_and_values(
            app.db.backend(),
            "INSERT INTO webhook_events (source, event_id, status, outcome, headers, body, received_at)
             VALUES ('shop', $1, 'processed', 'applied', '{}', $2, $3)",
            vec![
                event_id.into(),
                body.to_vec().into(),
                chrono::Utc::now().into(),
            ],
        ))
        .await
        .unwrap();
    scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = $1",
        vec![event_id.into()],
    )
    .await
    .unwrap()
}

both_backends!(
    the_event_page_lays_out_a_large_or_deep_body_within_bounds_while_deliveries_are_answered
);
async fn the_event_page_lays_out_a_large_or_deep_body_within_bounds_while_deliveries_are_answered(
    backend: Backend,
) {
    use app::present::PRETTY_MAX_INDENT;
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    // 0.88 MB, 127 levels deep: laid out in full, 440,000 lines of 254 spaces.
    let huge = format!(
        "{}{}1{}",
        "[".repeat(127),
        "1,".repeat(440_000),
        "]".repeat(127)
    );
    let huge_id = archived_body(&app, "huge", huge.as_bytes()).await;
    // Deep but small: laid out, indented at most PRETTY_MAX_INDENT levels.
    let deep = format!("{}1{}", "{\"a\":[".repeat(60), "]}".repeat(60));
    let deep_id = archived_body(&app, "deep", deep.as_bytes()).await;

    let detail = {
        let app = app.clone_handle();
        let cookie = cookie.clone();
        tokio::spawn(async move {
            call(
                &app,
                Some(&cookie),
                "event",
                &[("id", &huge_id.to_string()), ("whole_body", "true")],
            )
            .await
        })
    };
    let meanwhile = deliveries_meanwhile(&app, "during-event", 10);
    meanwhile.await.unwrap();
    let (status, body) = detail.await.unwrap();

    assert_eq!(status, StatusCode::OK, "{backend:?}");
    let detail: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(detail["body_is_json"], true);
    assert_eq!(
        detail["body"],
        huge.as_str(),
        "above the size, the body as received"
    );
    let (status, html) = page(&app, Some(&cookie), &format!("/events/{huge_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.len() < 8 * huge.len(),
        "{backend:?}: a {} byte body made a {} byte page",
        huge.len(),
        html.len()
    );

    let (status, body) = call(
        &app,
        Some(&cookie),
        "event",
        &[("id", &deep_id.to_string())],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let detail: serde_json::Value = serde_json::from_str(&body).unwrap();
    let laid_out = detail["body"].as_str().unwrap();
    assert!(laid_out.lines().count() > 100, "laid out: {laid_out}");
    let widest = laid_out
        .lines()
        .map(|l| l.len() - l.trim_start().len())
        .max()
        .unwrap();
    assert_eq!(widest, 2 * PRETTY_MAX_INDENT);
}
