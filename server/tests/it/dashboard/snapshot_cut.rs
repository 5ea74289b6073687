//! The object page's current snapshot, cut like an event's body: at first its start only
//! (`present::SHOWN_MAX_BYTES` or `SHOWN_MAX_LINES`) with its size stated and a "Show all" link;
//! whole with `?snapshot=all` (`whole_snapshot`), bounded by the body limit ingest admits.
#![allow(clippy::unwrap_used)]

use super::*;
use app::db::dialect::Dialect;
use app::present::{SHOWN_MAX_BYTES, SHOWN_MAX_LINES};

/// The test configuration with bodies of up to 1 MiB.
fn large_bodies_config() -> app::config::Config {
    app::config::Config::parse(
        &CONFIG.replace("max_body_bytes = 65536", "max_body_bytes = 1048576"),
        std::path::Path::new("test.toml"),
        &test_env,
    )
    .unwrap()
}

/// The object's snapshot as stored (PostgreSQL's `jsonb` spells it its own way), in bytes.
async fn stored_bytes(app: &TestApp, object_id: &str) -> u64 {
    let dialect = Dialect::of(app.db.backend());
    let sql = format!(
        "SELECT CAST({} AS BIGINT) FROM object_state WHERE object_id = $1",
        dialect.text_bytes(&dialect.json_text("snapshot"))
    );
    scalar(&app.db, &sql, vec![object_id.into()]).await.unwrap() as u64
}

/// The `object` server function's answer for `shop`'s `object_id`.
async fn history(app: &TestApp, cookie: &str, object_id: &str, whole: bool) -> serde_json::Value {
    let mut args = vec![("source", "shop"), ("object_id", object_id)];
    if whole {
        args.push(("whole_snapshot", "true"));
    }
    let (status, body) = call(app, Some(cookie), "object", &args).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_str(&body).unwrap()
}

both_backends!(an_object_page_cuts_a_large_snapshot_states_its_size_and_shows_it_whole_on_request);
async fn an_object_page_cuts_a_large_snapshot_states_its_size_and_shows_it_whole_on_request(
    backend: Backend,
) {
    let app = spawn_app_with(backend, large_bodies_config()).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    // Five lines of 30,000 bytes: past the bytes a page shows at first.
    let fields: Vec<String> = (0..5)
        .map(|i| format!(r#""f{i}":"{}""#, i.to_string().repeat(30_000)))
        .collect();
    let wide = format!("{{{}}}", fields.join(","));
    // 3,000 short lines: past the lines a page shows at first.
    let items: Vec<String> = (1..=3000).map(|i| i.to_string()).collect();
    let long = format!(r#"{{"items":[{}]}}"#, items.join(","));
    for (object_id, snapshot) in [
        ("wide", &wide),
        ("long", &long),
        ("small", &"{\"a\":1}".to_string()),
    ] {
        let answer = app
            .send(
                "shop",
                &event(&format!("e-{object_id}"), object_id, 1, snapshot),
            )
            .await;
        assert_eq!(answer.outcome(), "applied", "{object_id}: {answer:?}");
    }

    // Cut at a line's end within the bytes: the first two fields, not the third.
    let cut = history(&app, &cookie, "wide", false).await;
    let shown = cut["current_snapshot"].as_str().unwrap();
    assert_eq!(cut["snapshot_cut"], true);
    assert!(
        shown.len() <= SHOWN_MAX_BYTES,
        "{} bytes shown",
        shown.len()
    );
    assert!(
        shown.contains(r#""f1": "111"#) && !shown.contains(r#""f2""#),
        "{backend:?}"
    );
    let bytes = stored_bytes(&app, "wide").await;
    assert!(bytes > 150_000);
    assert_eq!(cut["snapshot_bytes"], bytes);
    let whole = history(&app, &cookie, "wide", true).await;
    assert_eq!(whole["snapshot_cut"], false);
    let all = whole["current_snapshot"].as_str().unwrap();
    assert!(all.starts_with(shown) && all.contains(&format!(r#""f4": "{}""#, "4".repeat(30_000))));
    assert_eq!(whole["snapshot_bytes"], bytes);

    // Cut at a line count.
    let cut = history(&app, &cookie, "long", false).await;
    assert_eq!(cut["snapshot_cut"], true);
    let shown = cut["current_snapshot"].as_str().unwrap();
    assert_eq!(shown.lines().count(), SHOWN_MAX_LINES);
    let whole = history(&app, &cookie, "long", true).await;
    assert!(whole["current_snapshot"].as_str().unwrap().lines().count() > 3000);

    // Small: whole, nothing to offer.
    let small = history(&app, &cookie, "small", false).await;
    assert_eq!(small["snapshot_cut"], false);
    assert_eq!(small["snapshot_bytes"], stored_bytes(&app, "small").await);

    // The pages: the size as stored and a link to the whole, which has no link.
    let (status, html) = page(&app, Some(&cookie), "/objects/shop/wide").await;
    assert_eq!(status, StatusCode::OK);
    let html = html.replace("<!>", "");
    assert!(
        html.contains(r#"href="/objects/shop/wide?snapshot=all""#),
        "{backend:?}"
    );
    let size = format!("Show all ({} KiB)", bytes.div_ceil(1024));
    assert!(html.contains(&size), "{backend:?}: {size}");
    assert!(html.contains("Only the start of the snapshot is shown."));
    assert!(
        !html.contains(&"4".repeat(30_000)),
        "the end is not on the page"
    );
    let (status, html) = page(&app, Some(&cookie), "/objects/shop/wide?snapshot=all").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&"4".repeat(30_000)) && !html.contains("Show all ("));
    assert!(
        (html.len() as u64) < 4 * bytes + 64 * 1024,
        "{backend:?}: a {bytes} byte snapshot made a {} byte page",
        html.len()
    );
    let (_, html) = page(&app, Some(&cookie), "/objects/shop/small").await;
    assert!(html.contains("data-testid=\"snapshot\"") && !html.contains("Show all ("));
}
