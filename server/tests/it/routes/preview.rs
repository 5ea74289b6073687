//! A route's `match` is `/events`' own containment on the same rows (nested objects, arrays,
//! numbers by value, duplicate keys); the API lists the routes a token sees and previews one,
//! refusing what is wrong with a 4xx naming it, within a payload search's bounds.

use super::*;
use app::model::{EventFilter, Role};

/// Snapshots exercising what containment compares.
const SNAPSHOTS: &[&str] = &[
    r#"{"status":"paid","total":10.50,"tags":["a","b"],"lines":[{"sku":"x","n":1},{"sku":"y","n":2}]}"#,
    r#"{"status":"paid","total":10.5}"#,
    r#"{"status":"open","total":"10.5"}"#,
    r#"{"status":"paid","nested":{"deep":{"x":[1,[2,3]]}}}"#,
    r#"{"flag":true,"n":1}"#,
    r#"{"flag":1,"n":1.0}"#,
    r#"{"tags":"a"}"#,
    r#"{"lines":[]}"#,
    r#"{"status":"paid","status":"open"}"#,
    r#"{"big":12345678901234567890,"small":1e-3}"#,
];

const PATTERNS: &[&str] = &[
    r#"{"snapshot":{"status":"paid"}}"#,
    r#"{"snapshot":{"status":"open"}}"#,
    r#"{"snapshot":{"total":10.5}}"#,
    r#"{"snapshot":{"total":"10.5"}}"#,
    r#"{"snapshot":{"tags":["a"]}}"#,
    r#"{"snapshot":{"tags":"a"}}"#,
    r#"{"snapshot":{"tags":[]}}"#,
    r#"{"snapshot":{"lines":[{"sku":"y"}]}}"#,
    r#"{"snapshot":{"lines":[{"sku":"y","n":1}]}}"#,
    r#"{"snapshot":{"lines":[]}}"#,
    r#"{"snapshot":{"nested":{"deep":{"x":[[3]]}}}}"#,
    r#"{"snapshot":{"nested":{"deep":{"x":[3]}}}}"#,
    r#"{"snapshot":{"flag":true}}"#,
    r#"{"snapshot":{"n":1}}"#,
    r#"{"snapshot":{"big":12345678901234567890}}"#,
    r#"{"snapshot":{"small":0.001}}"#,
    r#"{"type":"order.paid"}"#,
    r#"{"snapshot":{}}"#,
];

both_backends!(a_routes_match_finds_exactly_what_the_events_match_finds_on_the_same_rows);
async fn a_routes_match_finds_exactly_what_the_events_match_finds_on_the_same_rows(
    backend: Backend,
) {
    let config = routed_config(
        "http://127.0.0.1:9/b",
        "http://127.0.0.1:9/w",
        "http://127.0.0.1:9/a",
    );
    let app = spawn_app_with(backend, config).await;
    for (i, snapshot) in SNAPSHOTS.iter().enumerate() {
        let body = typed(
            &format!("e{i}"),
            &format!("o{i}"),
            1,
            "order.paid",
            snapshot,
        );
        assert_eq!(
            app.send("shop", &body).await.outcome(),
            "applied",
            "{snapshot}"
        );
    }
    for pattern in PATTERNS {
        let filter = EventFilter {
            source: Some("shop".into()),
            r#match: Some(pattern.to_string()),
            tz: Some("UTC".into()),
            ..EventFilter::default()
        };
        let page = app::db::events::find_events(
            &app.db,
            &filter,
            None,
            100,
            "olga",
            std::time::Duration::from_secs(30),
        )
        .await
        .unwrap();
        let mut by_events: Vec<i64> = page.rows.iter().map(|r| r.id).collect();
        by_events.sort();
        let conditions = app::routing::Conditions {
            event_types: None,
            matches: Some(app::routing::parse_match(pattern).unwrap()),
        };
        let previews = app::db::routes::preview(
            &app.db,
            "olga",
            &[("shop", &conditions)],
            100,
            std::time::Duration::from_secs(30),
        )
        .await
        .unwrap();
        let preview = &previews[0];
        let mut by_route = preview.matched_ids.clone();
        by_route.sort();
        assert_eq!(by_route, by_events, "{backend:?}: {pattern}");
        assert_eq!(preview.considered as usize, SNAPSHOTS.len());
        assert_eq!(preview.matched + preview.unmatched, preview.considered);
    }
}

both_backends!(the_api_lists_the_routes_a_token_sees_and_previews_one_refusing_what_is_wrong);
async fn the_api_lists_the_routes_a_token_sees_and_previews_one_refusing_what_is_wrong(
    backend: Backend,
) {
    let config = routed_config(
        "http://127.0.0.1:9/b",
        "http://127.0.0.1:9/w",
        "http://127.0.0.1:9/a",
    );
    let app = spawn_app_with(backend, config).await;
    for (n, (kind, status)) in [
        ("order.paid", "paid"),
        ("order.created", "open"),
        ("refund.created", "paid"),
    ]
    .iter()
    .enumerate()
    {
        let body = typed(
            &format!("e{n}"),
            &format!("o{n}"),
            1,
            kind,
            &format!(r#"{{"status":"{status}"}}"#),
        );
        app.send("shop", &body).await;
    }
    let viewer = token(&app, "reader", Role::Viewer, &[]).await;
    let elsewhere = token(&app, "elsewhere", Role::Viewer, &["sw"]).await;

    let (status, _, listed) = get(&app, Some(&viewer), "/api/v1/routes").await;
    assert_eq!(status, 200, "{listed}");
    let names: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["paid", "shipped", "analytics-too"]);
    assert_eq!(
        listed["data"][0]["event_types"],
        serde_json::json!(["order.*", "invoice.paid"])
    );
    assert_eq!(
        listed["data"][0]["match"],
        serde_json::json!({"snapshot": {"status": "paid"}})
    );
    let (_, _, none) = get(&app, Some(&elsewhere), "/api/v1/routes").await;
    assert_eq!(
        none["data"],
        serde_json::json!([]),
        "a token of other sources sees none"
    );

    let (status, preview) = post(
        &app,
        &viewer,
        "/api/v1/routes/preview",
        r#"{"source":"shop","event_types":["order.*"],"match":{"snapshot":{"status":"paid"}},"limit":100}"#,
    )
    .await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["considered"], 3);
    assert_eq!(preview["matched"], 1);
    assert_eq!(preview["unmatched"], 2);
    assert_eq!(preview["matched_ids"].as_array().unwrap().len(), 1);
    let whys: Vec<&str> = preview["unmatched_examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["why"].as_str().unwrap())
        .collect();
    assert_eq!(
        whys,
        [
            "event type refund.created matches none of order.*",
            "match: /snapshot/status is not \"paid\"",
        ],
        "newest first"
    );

    let refused: &[(&str, u16, &str)] = &[
        (r#"{"event_types":["order.*"]}"#, 400, "source: required"),
        (
            r#"{"source":"shop","event_types":["order.[ab]"]}"#,
            400,
            "event_types: glob \"order.[ab]\" holds '['",
        ),
        (
            r#"{"source":"shop","event_types":[]}"#,
            400,
            "event_types: is empty",
        ),
        (
            r#"{"source":"shop","match":[1]}"#,
            400,
            "match: must be a JSON object",
        ),
        (
            r#"{"source":"shop","limit":0}"#,
            400,
            "limit: 0 is not between 1 and 10000",
        ),
        (
            r#"{"source":"shop","limit":10001}"#,
            400,
            "limit: 10001 is not between 1 and 10000",
        ),
        (r#"{"source":"shop","colour":"red"}"#, 400, "colour"),
        (
            r#"{"source":"nowhere"}"#,
            404,
            "there is no source \"nowhere\"",
        ),
    ];
    for (body, want, says) in refused {
        let (status, problem) = post(&app, &viewer, "/api/v1/routes/preview", body).await;
        assert_eq!(status, *want, "{backend:?} {body}: {problem}");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap_or_default()
                .contains(says),
            "{body}: {problem}"
        );
    }
    let (status, _) = post(
        &app,
        &elsewhere,
        "/api/v1/routes/preview",
        r#"{"source":"shop"}"#,
    )
    .await;
    assert_eq!(
        status, 404,
        "a token of other sources cannot preview this one"
    );

    // A preview takes a payload search's place: one per caller at once.
    let held = app::db::search_bounds::begin_search_as("token reader", "match").unwrap();
    let (status, problem) = post(
        &app,
        &viewer,
        "/api/v1/routes/preview",
        r#"{"source":"shop"}"#,
    )
    .await;
    assert_eq!(status, 429, "{problem}");
    drop(held);
    let (status, _) = post(
        &app,
        &viewer,
        "/api/v1/routes/preview",
        r#"{"source":"shop"}"#,
    )
    .await;
    assert_eq!(status, 200);
}
