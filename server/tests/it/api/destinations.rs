//! The destinations through the API: listed with their backlog, their deliveries by status,
//! paused and resumed, dead deliveries retried one by one or by filter under the count guard,
//! each action audited with the token's name; viewers cannot act, limited tokens see none.

use super::*;

const CONFIG: &str = r#"
[[destinations]]
name = "orders-app"
url = "http://user:pw@127.0.0.1:9/orders"
secret_env = "DESTINATION_SECRET"

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app"]
"#;

both_backends!(an_operators_token_pauses_a_destination_and_retries_its_dead_deliveries);
async fn an_operators_token_pauses_a_destination_and_retries_its_dead_deliveries(backend: Backend) {
    let config =
        app::config::Config::parse(CONFIG, std::path::Path::new("d.toml"), &test_env).unwrap();
    let app = spawn_app_with(backend, config).await;
    let operator = token(&app, "ops-script", Role::Operator, &[]).await;
    let viewer = token(&app, "ci-check", Role::Viewer, &[]).await;
    let limited = token(&app, "shop-only", Role::Operator, &["shop"]).await;
    // Paused first, so the forwarder leaves the rows as they are.
    let (status, _) = post(&app, &viewer, "/api/v1/destinations/orders-app/pause", "").await;
    assert_eq!(status, 403);
    let (status, paused) = post(&app, &operator, "/api/v1/destinations/orders-app/pause", "").await;
    assert_eq!(
        (status, paused["changed"].as_bool()),
        (200, Some(true)),
        "{paused}"
    );
    for i in 0..3 {
        let id = format!("evt-{i}");
        app.send("shop", &event(&id, &id, 1, "{}")).await;
    }
    let (status, _, list) = get(&app, Some(&viewer), "/api/v1/destinations").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"][0]["name"], "orders-app");
    assert_eq!(list["data"][0]["pending"], 3);
    let (status, _, one) = get(&app, Some(&viewer), "/api/v1/destinations?limit=1").await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        one["next_cursor"].is_null(),
        list["data"].as_array().unwrap().len() == 1,
        "{one}"
    );
    assert!(
        !list.to_string().contains("pw@"),
        "the URL's credentials are redacted: {list}"
    );
    let (status, _, _) = get(&app, Some(&limited), "/api/v1/destinations").await;
    assert_eq!(status, 404, "a limited token sees no destination");

    execute(
        &app.db,
        "UPDATE forward_deliveries SET status = 'dead',
             last_status_code = CASE event_id WHEN 'evt-1' THEN 422 ELSE 503 END
         WHERE event_id <> 'evt-0'",
        vec![],
    )
    .await;
    let (status, _, dead) = get(
        &app,
        Some(&viewer),
        "/api/v1/destinations/orders-app/deliveries?status=dead",
    )
    .await;
    assert_eq!(status, 200, "{dead}");
    assert_eq!(dead["data"].as_array().unwrap().len(), 2);

    let path = "/api/v1/destinations/orders-app/retry";
    let (status, dry) = post(&app, &operator, path, r#"{"dry_run":true}"#).await;
    assert_eq!((status, dry["count"].as_i64()), (200, Some(2)), "{dry}");
    assert_eq!(
        dry["by_answer"],
        serde_json::json!([{"class": "refused", "count": 1}, {"class": "failed", "count": 1}]),
        "the retry says what the deliveries were answered: {dry}"
    );
    let (status, problem) = post(&app, &operator, path, r#"{"expected_count":5}"#).await;
    assert_eq!(
        (status, problem["actual_count"].as_u64()),
        (409, Some(2)),
        "{problem}"
    );
    let (status, done) = post(&app, &operator, path, r#"{"expected_count":2}"#).await;
    assert_eq!(
        (status, done["retried"].as_bool()),
        (200, Some(true)),
        "{done}"
    );
    // One delivery that is not dead cannot be retried.
    let pending = scalar(
        &app.db,
        "SELECT id FROM forward_deliveries WHERE event_id = 'evt-0'",
        vec![],
    )
    .await
    .unwrap();
    let (status, _) = post(
        &app,
        &operator,
        &format!("/api/v1/destinations/orders-app/deliveries/{pending}/retry"),
        "",
    )
    .await;
    assert_eq!(status, 409);
    let (status, _) = post(&app, &operator, "/api/v1/destinations/nowhere/pause", "").await;
    assert_eq!(status, 404);
    let actors = texts(
        &app.db,
        "SELECT DISTINCT actor FROM audit_log WHERE action IN ('pause_destination', 'bulk_retry_forward')",
        vec![],
    )
    .await;
    assert_eq!(actors, [[Some("token ops-script".to_string())]]);
}
