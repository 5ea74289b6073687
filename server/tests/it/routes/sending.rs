//! Who is sent what: routes by event type and content beside `forward`, each destination once;
//! why each destination was or was not sent a delivery; a destination's view of an object only
//! moves forward under a filter; three processes on one PostgreSQL send each delivery once.

use super::*;
use crate::forwarder::wait_for_count;
use std::sync::Arc;
use std::time::Duration;

both_backends!(each_destination_is_sent_what_its_routes_match_and_a_forward_one_everything_once);
async fn each_destination_is_sent_what_its_routes_match_and_a_forward_one_everything_once(
    backend: Backend,
) {
    let ([billing, warehouse, analytics], [b, w, a]) = receivers().await;
    let app = spawn_app_with(backend, routed_config(&b, &w, &a)).await;
    let paid = r#"{"status":"paid","total":10}"#;
    let sent = [
        (
            "created",
            typed("created", "o1", 1, "order.created", r#"{"status":"open"}"#),
        ),
        ("paid", typed("paid", "o2", 1, "order.paid", paid)),
        ("shipped", typed("shipped", "o3", 1, "order.shipped", paid)),
        ("refund", typed("refund", "o4", 1, "refund.created", paid)),
        (
            "invoice",
            typed(
                "invoice",
                "o5",
                1,
                "invoice.paid",
                r#"{"status":"paid","lines":[1]}"#,
            ),
        ),
        ("untyped", event("untyped", "o6", 1, paid)),
    ];
    for (_, body) in &sent {
        assert_eq!(
            app.send("shop", body).await.outcome(),
            "applied",
            "{backend:?}"
        );
    }
    // A duplicate is forwarded to no one, whatever it matches.
    assert_eq!(app.send("shop", &sent[1].1).await.outcome(), "duplicate");

    let expected = pairs(&[
        ("analytics", "created"),
        ("analytics", "paid"),
        ("analytics", "shipped"),
        ("analytics", "refund"),
        ("analytics", "invoice"),
        ("analytics", "untyped"),
        ("billing", "paid"),
        ("billing", "shipped"),
        ("billing", "invoice"),
        ("warehouse", "shipped"),
    ]);
    assert_eq!(forward_pairs(&app.db).await, expected, "{backend:?}");
    billing.wait_for(3).await;
    warehouse.wait_for(1).await;
    analytics.wait_for(6).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        10,
    )
    .await;
    let mut got: Vec<String> = got_events(&billing).into_iter().map(|(e, _)| e).collect();
    got.sort();
    assert_eq!(got, ["invoice", "paid", "shipped"], "{backend:?}");
    assert_eq!(got_events(&warehouse), [("shipped".to_string(), 1)]);
    assert_eq!(
        analytics.got().len(),
        6,
        "analytics is sent each delivery once"
    );
}

both_backends!(the_event_page_says_for_each_destination_why_it_was_or_was_not_sent);
async fn the_event_page_says_for_each_destination_why_it_was_or_was_not_sent(backend: Backend) {
    let config = routed_config(
        "http://127.0.0.1:9/b",
        "http://127.0.0.1:9/w",
        "http://127.0.0.1:9/a",
    );
    let app = spawn_app_with(backend, config.clone()).await;
    let created = typed("created", "o1", 1, "order.created", r#"{"status":"open"}"#);
    app.send("shop", &created).await;
    app.send("shop", &created).await;
    let rows = texts(
        &app.db,
        "SELECT CAST(id AS TEXT), outcome FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;
    let verdicts = |id: i64| {
        let db = app.db.clone();
        let config = config.clone();
        async move {
            let stored = app::db::events::stored_delivery(&db, id)
                .await
                .unwrap()
                .unwrap();
            let forwarded = app::db::destinations::produced_by(&db, &[id])
                .await
                .unwrap();
            let sent_to: Vec<String> = forwarded.iter().map(|f| f.destination.clone()).collect();
            let source = config.source("shop").unwrap();
            app::db::routes::verdicts(
                config.plan(source),
                stored.row.outcome,
                &app::routing::Delivery {
                    event_type: stored.row.event_type.as_deref(),
                    body_fields: stored.body_fields.as_deref(),
                    body: &stored.body,
                },
                &sent_to,
            )
            .into_iter()
            .map(|v| (v.destination, v.sent, v.why))
            .collect::<Vec<_>>()
        }
    };
    let id = |i: usize| rows[i][0].clone().unwrap().parse::<i64>().unwrap();
    assert_eq!(
        verdicts(id(0)).await,
        vec![
            (
                "analytics".into(),
                true,
                "the source forwards everything to it".into()
            ),
            (
                "billing".into(),
                false,
                "route paid: match: /snapshot/status is not \"paid\"".into()
            ),
            (
                "warehouse".into(),
                false,
                "route shipped: event type order.created matches none of order.shipped".into()
            ),
        ],
        "{backend:?}"
    );
    assert_eq!(rows[1][1].as_deref(), Some("duplicate"));
    assert_eq!(
        verdicts(id(1)).await[0],
        (
            "analytics".into(),
            false,
            "not sent: a delivery that is duplicate is never forwarded".into()
        )
    );
}

both_backends!(
    a_revision_that_does_not_match_supersedes_nothing_and_a_destinations_view_only_moves_forward
);
async fn a_revision_that_does_not_match_supersedes_nothing_and_a_destinations_view_only_moves_forward(
    backend: Backend,
) {
    let ([billing, _warehouse, analytics], [b, w, a]) = receivers().await;
    let app = spawn_app_with(backend, routed_config(&b, &w, &a)).await;
    let actor = app::db::destinations::Actor {
        name: "olga",
        address: "127.0.0.1",
    };
    app::db::destinations::set_paused(&app.db, "billing", true, &actor)
        .await
        .unwrap();
    let paid = r#"{"status":"paid"}"#;
    let open = r#"{"status":"open"}"#;
    // o1: paid at 1, then open at 2: billing's last match stays 1 and is still sent.
    app.send("shop", &typed("o1-1", "o1", 1, "order.paid", paid))
        .await;
    app.send("shop", &typed("o1-2", "o1", 2, "order.updated", open))
        .await;
    // o2: paid at 2 and again at 3, then open at 4: 3 supersedes 2; 4 supersedes nothing.
    app.send("shop", &typed("o2-a", "o2", 2, "order.paid", paid))
        .await;
    app.send("shop", &typed("o2-b", "o2", 3, "order.paid", paid))
        .await;
    app.send("shop", &typed("o2-c", "o2", 4, "order.updated", open))
        .await;
    // A late paid revision of o2 (1, never seen) is stale: sent to no one.
    let late = app
        .send("shop", &typed("o2-late", "o2", 1, "order.paid", paid))
        .await;
    assert_eq!(late.outcome(), "stale", "{backend:?}");
    // analytics (forward) is sent each object's greatest revision as it goes, superseding.
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE destination = 'analytics' AND status IN ('delivered', 'superseded')",
        5,
    )
    .await;
    assert!(billing.got().is_empty(), "billing is paused");

    app::db::destinations::set_paused(&app.db, "billing", false, &actor)
        .await
        .unwrap();
    billing.wait_for(2).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE destination = 'billing' AND status IN ('delivered', 'superseded')",
        3,
    )
    .await;
    let mut got = got_events(&billing);
    got.sort();
    assert_eq!(
        got,
        [("o1-1".to_string(), 1), ("o2-b".to_string(), 3)],
        "{backend:?}: the greatest matching revision of each object, once"
    );
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id, status FROM forward_deliveries WHERE destination = 'billing' ORDER BY id",
            vec![]
        )
        .await,
        vec![
            vec![Some("o1-1".into()), Some("delivered".into())],
            vec![Some("o2-a".into()), Some("superseded".into())],
            vec![Some("o2-b".into()), Some("delivered".into())],
        ]
    );
    // Per object, analytics saw revisions only go up.
    let seen = got_events(&analytics);
    for object in ["o1", "o2"] {
        let revisions: Vec<i64> = seen
            .iter()
            .filter(|(e, _)| e.starts_with(object))
            .map(|(_, r)| *r)
            .collect();
        assert!(
            revisions.windows(2).all(|w| w[0] < w[1]),
            "{object}: {revisions:?}"
        );
    }
}

#[tokio::test]
async fn on_postgresql_three_processes_send_each_routed_delivery_to_each_destination_once() {
    let ([billing, warehouse, analytics], [b, w, a]) = receivers().await;
    let (db, _) = fresh_postgres(&cluster_url()).await;
    let config = routed_config(&b, &w, &a);
    let mut processes = Vec::new();
    for _ in 0..3 {
        processes.push(
            spawn_app_on_with_state(db.clone(), config.clone(), |state| {
                let mut settings = (*state.settings).clone();
                settings.forward_poll = Duration::from_millis(50);
                state.settings = Arc::new(settings);
            })
            .await,
        );
    }
    let mut sends = Vec::new();
    for n in 0..30 {
        let process = processes[n % 3].clone_handle();
        let kind = ["order.paid", "order.shipped", "order.created"][n % 3];
        let status = if n % 2 == 0 { "paid" } else { "open" };
        let body = typed(
            &format!("e{n}"),
            &format!("o{n}"),
            1,
            kind,
            &format!(r#"{{"status":"{status}"}}"#),
        );
        sends.push(tokio::spawn(async move {
            process.send("shop", &body).await.outcome().to_string()
        }));
    }
    for send in sends {
        assert_eq!(send.await.unwrap(), "applied");
    }
    // billing: paid orders of any type here (all are order.*) with status paid: even n.
    let billing_expected: Vec<String> = (0..30)
        .filter(|n| n % 2 == 0)
        .map(|n| format!("e{n}"))
        .collect();
    let warehouse_expected: Vec<String> = (0..30)
        .filter(|n| n % 3 == 1)
        .map(|n| format!("e{n}"))
        .collect();
    billing.wait_for(billing_expected.len()).await;
    warehouse.wait_for(warehouse_expected.len()).await;
    analytics.wait_for(30).await;
    wait_for_count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        (billing_expected.len() + warehouse_expected.len() + 30) as i64,
    )
    .await;
    // Nothing more arrives after every row is delivered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sorted = |r: &Receiver| {
        let mut ids: Vec<String> = got_events(r).into_iter().map(|(e, _)| e).collect();
        ids.sort();
        ids
    };
    let mut b_expected = billing_expected.clone();
    b_expected.sort();
    let mut w_expected = warehouse_expected.clone();
    w_expected.sort();
    let mut a_expected: Vec<String> = (0..30).map(|n| format!("e{n}")).collect();
    a_expected.sort();
    assert_eq!(sorted(&billing), b_expected);
    assert_eq!(sorted(&warehouse), w_expected);
    assert_eq!(sorted(&analytics), a_expected);
}
