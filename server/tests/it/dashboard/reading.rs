//! Pages a person reads at a glance: every time in the viewer's zone (the zone cookie), the
//! events filter's days in that zone, JSON shown with its characters decoded while the raw
//! bytes stay exact, a long body cut with a way to see it whole, and a lost session said plainly.
#![allow(clippy::unwrap_used)]

use super::*;
use sea_orm::{ConnectionTrait, Statement};

const LA: &str = "hookbox_tz=America/Los_Angeles";

/// Moves a delivery's received time (a sender cannot choose it).
async fn received_at(app: &TestApp, event_id: &str, at: &str) {
    let at = chrono::DateTime::parse_from_rfc3339(at)
        .unwrap()
        .with_timezone(&chrono::Utc);
    let done = app
        .db
        .writer
        .execute_raw(Statement::from_sql_and_values(
            app.db.backend(),
            "UPDATE webhook_events SET received_at = $1 WHERE event_id = $2",
            vec![at.into(), event_id.into()],
        ))
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 1);
}

async fn delivery_id(app: &TestApp, event_id: &str) -> i64 {
    scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = $1",
        vec![event_id.into()],
    )
    .await
    .unwrap()
}

/// A page as a browser gets it, without Leptos's hydration markers (`<!>`).
async fn read(app: &TestApp, cookie: &str, path: &str) -> (StatusCode, String) {
    let (status, html) = page(app, Some(cookie), path).await;
    (status, html.replace("<!>", ""))
}

/// The event ids of an `/api/events` answer.
fn listed(body: &str) -> Vec<String> {
    let page: serde_json::Value = serde_json::from_str(body).unwrap();
    page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event_id"].as_str().unwrap().to_string())
        .collect()
}

both_backends!(the_events_filter_takes_days_in_its_zone_and_pages_show_times_in_the_viewers);
async fn the_events_filter_takes_days_in_its_zone_and_pages_show_times_in_the_viewers(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    for id in ["late-evening", "early-morning"] {
        assert_eq!(app.send("shop", &event(id, id, 1, "{}")).await.status, 200);
    }
    // 23:30 in Los Angeles on Nov 30 (Dec 1 in UTC), and 23:30 there on Nov 29.
    received_at(&app, "late-evening", "2026-12-01T07:30:00Z").await;
    received_at(&app, "early-morning", "2026-11-30T07:30:00Z").await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.unwrap();
    let day = |tz: &'static str| [("from", "2026-11-30"), ("to", "2026-11-30"), ("tz", tz)];

    let (status, body) = call(&app, Some(&cookie), "events", &day("America/Los_Angeles")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(listed(&body), ["late-evening"], "{backend:?}");
    let (_, body) = call(&app, Some(&cookie), "events", &day("UTC")).await;
    assert_eq!(listed(&body), ["early-morning"], "{backend:?}");
    // The API without a zone: UTC days.
    let (_, body) = call(&app, Some(&cookie), "events", &day("")).await;
    assert_eq!(listed(&body), ["early-morning"], "{backend:?}");
    // What the day means, in UTC.
    let (status, body) = call(
        &app,
        Some(&cookie),
        "filter_range",
        &day("America/Los_Angeles"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        serde_json::json!(["2026-11-30T08:00:00+00:00", "2026-12-01T08:00:00+00:00"])
    );
    // The export link's filter, the same way.
    let response = app
        .client
        .get(app.url(
            "/export/events?format=ndjson&from=2026-11-30&to=2026-11-30&tz=America%2FLos_Angeles",
        ))
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let exported = response.text().await.unwrap();
    assert!(exported.contains("\"late-evening\"") && !exported.contains("\"early-morning\""));

    // A zone that is not one, or too long: a 400 naming `tz`, from every endpoint.
    for endpoint in ["events", "filter_range", "bulk_replay"] {
        let (status, body) = call(&app, Some(&cookie), endpoint, &day("Mars/Olympus_Mons")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{endpoint}: {body}");
        assert!(
            body.contains("tz: \\\"Mars/Olympus_Mons\\\" is not a time zone"),
            "{body}"
        );
    }
    let long = "A/".repeat(200);
    let (status, body) = call(&app, Some(&cookie), "events", &[("tz", long.as_str())]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("tz: longer than 256 bytes"), "{body}");

    // The page, for a viewer whose cookie names Los Angeles: the URL's dates are days there,
    // every time is written there, and the top bar says so.
    let viewer = format!("{cookie}; {LA}");
    let (status, html) = read(&app, &viewer, "/events?from=2026-11-30&to=2026-11-30").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("late-evening") && !html.contains("early-morning"),
        "{backend:?}"
    );
    assert!(
        html.contains(r#"<meta name="hookbox-zone" content="America/Los_Angeles">"#),
        "the zone for the browser"
    );
    assert!(html.contains("Times in <strong>America/Los_Angeles</strong>"));
    assert!(html.contains("Show UTC</button>"));
    let time = tag_with(&html, "time", &["2026-12-01T07:30:00"]).unwrap();
    assert!(
        time.contains(r#"title="2026-12-01 07:30:00 UTC""#),
        "{time}"
    );
    assert!(html.contains(">2026-11-30 23:30:00</time>"), "{time}");
    let hidden = tag_with(&html, "input", &[r#"name="tz""#]).unwrap();
    assert!(
        hidden.contains(r#"value="America/Los_Angeles""#),
        "{hidden}"
    );
    // No cookie: UTC, and the switch offers the browser's zone.
    let (_, html) = read(&app, &cookie, "/events").await;
    assert!(html.contains("Times in <strong>UTC</strong>"));
    assert!(html.contains("Show local time</button>"));
    assert!(html.contains(">2026-12-01 07:30:00</time>"));
    // A cookie naming no zone is UTC.
    let (_, html) = read(&app, &format!("{cookie}; hookbox_tz=Nowhere"), "/events").await;
    assert!(html.contains("Times in <strong>UTC</strong>") && !html.contains("Nowhere"));
}

both_backends!(an_event_page_shows_its_body_decoded_and_cut_and_copies_the_bytes_as_received);
async fn an_event_page_shows_its_body_decoded_and_cut_and_copies_the_bytes_as_received(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    // 3,000 items: laid out, more lines than a page shows at first.
    let items: Vec<String> = (1..=3000).map(|i| i.to_string()).collect();
    let snapshot = format!(
        r#"{{"city":"M\u00fcnchen","note":"\u202e","items":[{}]}}"#,
        items.join(",")
    );
    let sent = event("munich", "order-munich", 1, &snapshot);
    assert_eq!(app.send("shop", &sent).await.status, 200);
    let id = delivery_id(&app, "munich").await.to_string();
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();

    let (status, body) = call(&app, Some(&cookie), "event", &[("id", &id)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let detail: serde_json::Value = serde_json::from_str(&body).unwrap();
    let shown = detail["body"].as_str().unwrap();
    assert!(shown.contains(r#""city": "München""#), "decoded");
    assert!(
        shown.contains(r#""note": "\u202e""#),
        "an invisible character stays escaped"
    );
    assert_eq!(detail["body_cut"], true);
    assert_eq!(shown.lines().count(), app::present::SHOWN_MAX_LINES);
    // The copy button's bytes and the curl command: as received.
    assert_eq!(detail["raw_body"], sent.as_str());
    assert_eq!(detail["body_bytes"], sent.len());
    assert!(
        detail["curl"]
            .as_str()
            .unwrap()
            .contains(r#""city":"M\u00fcnchen""#)
    );

    let (_, body) = call(
        &app,
        Some(&cookie),
        "event",
        &[("id", &id), ("whole_body", "true")],
    )
    .await;
    let whole: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(whole["body_cut"], false);
    assert!(whole["body"].as_str().unwrap().lines().count() > 3000);

    let (status, html) = read(&app, &cookie, &format!("/events/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("München"));
    assert!(html.contains(&format!(r#"href="/events/{id}?body=all""#)));
    let size = format!("Show all ({} KiB)", sent.len().div_ceil(1024));
    assert!(html.contains(&size), "the size as received: {size}");
    assert!(!html.contains("2999,\n"), "the end is not shown");
    let (_, html) = read(&app, &cookie, &format!("/events/{id}?body=all")).await;
    assert!(!html.contains("Show all (") && html.contains("2999,\n"));

    // The object's snapshot, decoded the same way.
    let (status, html) = read(&app, &cookie, "/objects/shop/order-munich").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("München"),
        "{backend:?}: the snapshot decoded"
    );
}

#[tokio::test]
async fn an_ended_session_is_said_the_same_way_by_every_reading_endpoint() {
    let app = spawn_app(Backend::Sqlite).await;
    for (endpoint, args) in [
        ("events", &[][..]),
        ("event", &[("id", "1")][..]),
        ("filter_range", &[("from", "2026-11-30")][..]),
    ] {
        let (status, body) = call(&app, Some("hookbox_session=ended"), endpoint, args).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{endpoint}: {body}");
        let error: app::error::DashboardError = serde_json::from_str(&body).unwrap();
        assert!(error.needs_sign_in(), "{endpoint}: {body}");
        assert_eq!(error.to_string(), "Your session has ended. Sign in again.");
    }
}
