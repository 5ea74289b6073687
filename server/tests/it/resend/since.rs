//! Every delivery of a destination delivered since a time, sent again: the count shown is what
//! is sent, pending deliveries and revisions a greater one makes pointless are left out, running
//! it again takes nothing twice, one re-send creates at most its bound, and two at once are
//! refused, never doubled.

use super::*;
use crate::charts::kolkata;
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};

/// The `resend_since` arguments for `since` and an optional confirmation.
fn args<'a>(since: &'a str, confirmation: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut args = vec![("name", "orders-app"), ("since", since)];
    if let Some(c) = confirmation {
        args.push(("confirmation", c));
    }
    args
}

both_backends!(
    every_delivery_since_a_time_is_counted_then_sent_again_leaving_out_pending_and_superseded
);
async fn every_delivery_since_a_time_is_counted_then_sent_again_leaving_out_pending_and_superseded(
    backend: Backend,
) {
    let (app, receiver, operator, viewer) = forwarding_app(backend, "[60]").await;
    delivered(&app, "e0", "order-0", 1, 1).await;
    let since = chrono::Utc::now().to_rfc3339();
    delivered(&app, "e1", "order-1", 1, 2).await;
    delivered(&app, "e2", "order-2", 1, 3).await;
    delivered(&app, "e3", "order-1", 2, 4).await;
    delivered(&app, "e6", "order-5", 1, 5).await;
    // The application goes down: order-3 and revision 2 of order-2 wait (pending).
    *receiver.down.lock().unwrap() = true;
    app.send("shop", &event("e4", "order-3", 1, "{}")).await;
    app.send("shop", &event("e5", "order-2", 2, "{}")).await;
    crate::forwarder::wait_for_count(&app.db, "SELECT count(*) FROM forward_attempts", 7).await;

    let (status, _) = call(&app, &viewer, "resend_since", &args(&since, None)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a viewer may not re-send");

    // The count: e3 (order-1's newest revision) and e6. Not e0 (before), e1 (revision 2 of
    // order-1 was delivered), e2 (revision 2 of order-2 waits), e4 and e5 (pending).
    let (status, body) = call(&app, &operator, "resend_since", &args(&since, None)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let counted = json(&body);
    assert_eq!(counted["matched"], 2, "{counted}");
    assert_eq!(counted["more"], false);
    assert_eq!(counted["resent"], false);
    assert_eq!(counted["confirmation"], "resend 2");
    let scope = counted["scope"].as_str().unwrap().to_string();
    assert!(
        scope.starts_with("orders-app, delivered since ") && scope.ends_with("(UTC)"),
        "{scope}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_deliveries").await,
        7,
        "counting creates nothing"
    );

    let (status, body) = call(
        &app,
        &operator,
        "resend_since",
        &args(&since, Some("resend 3")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.contains("type \\\"resend 2\\\" to confirm")
            || body.contains("type \"resend 2\" to confirm"),
        "{body}"
    );

    *receiver.down.lock().unwrap() = false;
    let before = receiver.got().len();
    let (status, body) = call(
        &app,
        &operator,
        "resend_since",
        &args(&since, Some("resend 2")),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let done = json(&body);
    assert_eq!(
        (done["matched"].as_i64(), done["resent"].as_bool()),
        (Some(2), Some(true))
    );
    let got = receiver.wait_for(before + 2).await;
    let mut sent: Vec<(String, i64)> = got[before..]
        .iter()
        .map(|r| {
            let body = json(&r.body);
            (
                body["event_id"].as_str().unwrap().to_string(),
                body["revision"].as_i64().unwrap(),
            )
        })
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [("e3".to_string(), 2), ("e6".to_string(), 1)],
        "what was counted is what was sent"
    );
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id FROM forward_deliveries WHERE resend_of IS NOT NULL ORDER BY event_id",
            vec![]
        )
        .await,
        [vec![Some("e3".to_string())], vec![Some("e6".to_string())]]
    );
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE resend_of IS NOT NULL AND status = 'delivered'",
        2,
    )
    .await;

    // Again: what the last run sent is not taken twice.
    let (_, body) = call(&app, &operator, "resend_since", &args(&since, None)).await;
    assert_eq!(json(&body)["matched"], 0, "{body}");
    assert_eq!(
        audited(&app).await,
        [vec![
            Some("olga".to_string()),
            Some("orders-app".to_string()),
            Some("done".to_string()),
            Some(format!("2 deliveries of {scope}")),
        ]]
    );

    // A local time is read in the viewer's zone, and said in it.
    let local = (chrono::Utc::now() - chrono::Duration::hours(1))
        .with_timezone(&kolkata())
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    let in_kolkata = format!("{operator}; hookbox_tz=Asia%2FKolkata");
    let (status, body) = call(&app, &in_kolkata, "resend_since", &args(&local, None)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let counted = json(&body);
    assert!(
        counted["scope"]
            .as_str()
            .unwrap()
            .ends_with(":00 (Asia/Kolkata)"),
        "{counted}"
    );
    assert_eq!(
        counted["matched"], 1,
        "e0 alone: the copies are re-sends made since, their originals no longer the newest: {counted}"
    );
    let (status, body) = call(&app, &operator, "resend_since", &args("last tuesday", None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.contains("since: \\\"last tuesday\\\" is not a date")
            || body.contains("since: \"last tuesday\" is not a date"),
        "{body}"
    );
}

both_backends!(one_resend_creates_at_most_its_bound_and_the_next_takes_the_rest);
async fn one_resend_creates_at_most_its_bound_and_the_next_takes_the_rest(backend: Backend) {
    use app::db::destinations::resend::RESEND_LIMIT;
    let (app, _receiver, operator, _viewer) = forwarding_app(backend, "[60]").await;
    let now = chrono::Utc::now();
    // Paused, so the copies wait instead of reaching the receiver.
    let db = &app.db;
    db.dashboard
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO forward_destinations (destination, paused_at, paused_by) VALUES ('orders-app', $1, 'test')",
            vec![now.into()],
        ))
        .await
        .unwrap();
    let rows = RESEND_LIMIT + 1;
    let numbers = match backend {
        Backend::Postgres => format!("SELECT g AS n FROM generate_series(1, {rows}) g"),
        Backend::Sqlite => format!(
            "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {rows}) SELECT n FROM g"
        ),
    };
    db.dashboard
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            format!(
                "INSERT INTO forward_deliveries (destination, source, event_id, status, attempts,
                     next_attempt_at, delivered_at, created_at, received_at, payload)
                 SELECT 'orders-app', 'shop', 'seed-' || n, 'delivered', 1, $1, $1, $1, $1, '{{}}'
                 FROM ({numbers}) s"
            ),
            vec![now.into()],
        ))
        .await
        .unwrap();
    let since = (now - chrono::Duration::seconds(1)).to_rfc3339();

    let (status, body) = call(&app, &operator, "resend_since", &args(&since, None)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let counted = json(&body);
    assert_eq!(counted["matched"], RESEND_LIMIT, "{counted}");
    assert_eq!(counted["more"], true);
    assert_eq!(counted["limit"], RESEND_LIMIT);
    let confirmation = format!("resend {RESEND_LIMIT}");
    assert_eq!(counted["confirmation"], confirmation.as_str());
    if backend == Backend::Postgres {
        assert_eq!(
            count(
                db,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            .await,
            0,
            "the count's transaction ended before its answer: its lock would refuse the confirmation"
        );
    }

    let (status, body) = call(
        &app,
        &operator,
        "resend_since",
        &args(&since, Some(&confirmation)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(json(&body)["matched"], RESEND_LIMIT);
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM forward_deliveries WHERE resend_of IS NOT NULL"
        )
        .await,
        RESEND_LIMIT,
        "one re-send creates at most its bound"
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM forward_deliveries WHERE resend_of IS NULL
               AND id NOT IN (SELECT resend_of FROM forward_deliveries WHERE resend_of IS NOT NULL)"
        )
        .await,
        1,
        "the one delivered last is left for the next run"
    );

    let (_, body) = call(&app, &operator, "resend_since", &args(&since, None)).await;
    let rest = json(&body);
    assert_eq!(
        (rest["matched"].as_i64(), rest["more"].as_bool()),
        (Some(1), Some(false)),
        "{rest}"
    );
}

#[tokio::test]
async fn a_resend_to_a_destination_another_one_holds_is_refused_not_doubled() {
    let (app, _receiver, operator, _viewer) = forwarding_app(Backend::Postgres, "[60]").await;
    delivered(&app, "e1", "order-1", 1, 1).await;
    let since = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    // Another re-send of orders-app under way: its transaction holds the destination's lock.
    let other = app.db.writer.begin().await.unwrap();
    other
        .execute_unprepared(
            "SELECT pg_advisory_xact_lock(hashtextextended('resend/orders-app', 0))",
        )
        .await
        .unwrap();
    let (status, body) = call(
        &app,
        &operator,
        "resend_since",
        &args(&since, Some("resend 1")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("another re-send to orders-app is under way"),
        "{body}"
    );
    other.rollback().await.unwrap();
    let (status, body) = call(
        &app,
        &operator,
        "resend_since",
        &args(&since, Some("resend 1")),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE resend_of IS NOT NULL"
        )
        .await,
        1
    );
}
