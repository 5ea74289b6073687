//! The overview and the alert metrics count open problems and open failures, not failed rows:
//! resolved failures, failed replays and ignored causes are left out.

use super::*;

both_backends!(the_overview_and_the_metrics_count_open_problems_and_failures);
async fn the_overview_and_the_metrics_count_open_problems_and_failures(backend: Backend) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "m", 3).await;
    bad_revision(&app, "m-zero").await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    let conflict = app
        .send("shop", &event("e1-other", "order-1", 1, "{}"))
        .await;
    assert_eq!(conflict.outcome(), "reused_revision");
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    // A failed replay (no new failure), then one resolved after the fix, and the reused
    // revision's cause ignored.
    replay(&app, &cookie, failed[0], true).await;
    let fixed = fixed(&app).await;
    let (_, resolved) = replay(&fixed, &cookie, failed[1], false).await;
    assert_eq!(resolved["outcome"], "applied");
    let (status, _) = call_json(
        &fixed,
        &cookie,
        "problem_state",
        &[
            ("source", "shop"),
            ("outcome", "reused_revision"),
            ("class", "object revision is already held by another event"),
            ("state", "ignored"),
            ("confirm", "1"),
            ("reason", "the shop's test sender reuses revisions"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, overview) = call_json(&fixed, &cookie, "overview", &[]).await;
    let metrics = fixed
        .client
        .get(fixed.url("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let html = super::page(&fixed, &cookie, "/").await;

    assert_eq!(status, StatusCode::OK, "{overview}");
    assert_eq!(
        overview["problems"],
        serde_json::json!({"problems": 2, "failures": 3}),
        "{backend:?}: crm's two causes, 2 + 1 failures; not the resolved one, the failed replay or the ignored cause"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE status = 'failed'"
        )
        .await,
        6,
        "six failed rows in all"
    );
    let gauge = |name: &str, source: &str| {
        let prefix = format!("{name}{{source=\"{source}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .map(|n| n.trim().parse::<f64>().expect("a number") as i64)
    };
    assert_eq!(
        gauge("hookbox_open_failures", "crm"),
        Some(3),
        "{backend:?}: {metrics}"
    );
    assert_eq!(gauge("hookbox_open_problems", "crm"), Some(2));
    assert_eq!(
        gauge("hookbox_open_failures", "shop"),
        Some(0),
        "ignored, and every configured source is there"
    );
    assert_eq!(gauge("hookbox_open_problems", "sw"), Some(0));
    assert!(
        html.contains("data-testid=\"open-problems\""),
        "{backend:?}: the overview's panel"
    );
}

both_backends!(the_overviews_newest_failures_leave_out_resolved_ones);
async fn the_overviews_newest_failures_leave_out_resolved_ones(backend: Backend) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "n", 3).await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    let fixed = fixed(&app).await;
    let (_, resolved) = replay(&fixed, &cookie, failed[1], false).await;
    assert_eq!(resolved["outcome"], "applied");

    let (status, overview) = call_json(&fixed, &cookie, "overview", &[]).await;
    let html = super::page(&fixed, &cookie, "/").await;

    assert_eq!(status, StatusCode::OK, "{overview}");
    let listed: Vec<i64> = overview["newest_failures"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|row| row["id"].as_i64())
        .collect();
    assert_eq!(
        listed,
        vec![failed[2], failed[0]],
        "{backend:?}: the one a replay resolved is not listed as needing anyone"
    );
    assert!(html.contains("Newest open failures"), "{backend:?}");
    assert!(
        !html.contains(&format!("data-id=\"{}\"", failed[1])),
        "{backend:?}: not on the page either"
    );
}
