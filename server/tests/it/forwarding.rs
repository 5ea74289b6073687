//! The transactional outbox: what ingest hands on to the operator's application. A delivery
//! that applies or accepts writes one `forward_deliveries` row per destination of its source, in
//! its own transaction; nothing else does.

use crate::support::*;
use sea_orm::{ConnectionTrait, TransactionTrait};
use std::path::Path;

const FORWARDING: &str = r#"
[server]
max_body_bytes = 65536

[[destinations]]
name = "orders-app"
url = "http://127.0.0.1:9/orders"
secret_env = "DESTINATION_SECRET"

[[destinations]]
name = "audit-app"
url = "http://127.0.0.1:9/audit"
secret_env = "DESTINATION_SECRET"

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app", "audit-app"]

[[sources]]
name = "gh"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
mode = "dedup"
event_id = "header:X-Delivery-Id"
forward = ["audit-app"]

[[sources]]
name = "sw"
scheme = "standard-webhooks"
secrets_env = ["SW_SECRET"]
"#;

fn forwarding_config() -> app::config::Config {
    app::config::Config::parse(FORWARDING, Path::new("forwarding.toml"), &test_env)
        .expect("the forwarding config is valid")
}

/// (destination, event_id, revision, status, payload) of every forward row, in order.
async fn forward_rows(db: &app::db::Db) -> Vec<Vec<Option<String>>> {
    let revision = match db.backend() {
        sea_orm::DatabaseBackend::Postgres => "revision::text",
        _ => "CAST(revision AS TEXT)",
    };
    texts(
        db,
        &format!(
            "SELECT destination, event_id, {revision}, status, payload FROM forward_deliveries ORDER BY id"
        ),
        vec![],
    )
    .await
}

fn row(
    destination: &str,
    event_id: &str,
    revision: Option<&str>,
    payload: &str,
) -> Vec<Option<String>> {
    vec![
        Some(destination.into()),
        Some(event_id.into()),
        revision.map(str::to_string),
        Some("pending".into()),
        Some(payload.into()),
    ]
}

both_backends!(
    applied_and_accepted_deliveries_are_forwarded_to_each_destination_and_nothing_else_is
);
async fn applied_and_accepted_deliveries_are_forwarded_to_each_destination_and_nothing_else_is(
    backend: Backend,
) {
    let app = spawn_app_with(backend, forwarding_config()).await;
    // The snapshot exactly as sent: a 20-digit integer and 0.1 must arrive as they are.
    let exact = r#"{"total": 12345678901234567890, "rate": 0.1}"#;

    let applied = app.send("shop", &event("e2", "order-1", 2, exact)).await;
    let duplicate = app.send("shop", &event("e2", "order-1", 2, exact)).await;
    let stale = app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    let reused = app.send("shop", &event("e9", "order-1", 2, "{}")).await;
    let conflict = app
        .send("shop", &event("e2", "order-1", 2, r#"{"other":1}"#))
        .await;
    let invalid = app.send("shop", r#"{"event_id":"e3"}"#).await;
    let unforwarded = app.send("sw", &event("s1", "order-9", 1, "{}")).await;
    let dedup_body = r#"{"action":"opened","n":1}"#;
    let accepted = app
        .send_bytes("gh", dedup_body.as_bytes(), &[("X-Delivery-Id", "d-1")])
        .await;
    let dedup_again = app
        .send_bytes("gh", dedup_body.as_bytes(), &[("X-Delivery-Id", "d-1")])
        .await;

    let outcomes: Vec<&str> = [
        &applied,
        &duplicate,
        &stale,
        &reused,
        &conflict,
        &invalid,
        &unforwarded,
        &accepted,
        &dedup_again,
    ]
    .iter()
    .map(|a| a.outcome())
    .collect();
    assert_eq!(
        outcomes,
        [
            "applied",
            "duplicate",
            "stale",
            "reused_revision",
            "reused_event_id",
            "invalid",
            "applied",
            "accepted",
            "duplicate"
        ],
        "{backend:?}"
    );
    assert_eq!(
        forward_rows(&app.db).await,
        [
            row("orders-app", "e2", Some("2"), exact),
            row("audit-app", "e2", Some("2"), exact),
            row("audit-app", "d-1", None, dedup_body),
        ],
        "{backend:?}: one row per destination of an applied or accepted delivery, nothing for the rest"
    );
    // Each row names the archive row that produced it.
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries f JOIN webhook_events e ON e.id = f.archive_id
             WHERE e.event_id = f.event_id AND e.outcome IN ('applied', 'accepted')"
        )
        .await,
        3,
        "{backend:?}"
    );
}

both_backends!(a_forward_row_commits_with_its_delivery_or_not_at_all);
async fn a_forward_row_commits_with_its_delivery_or_not_at_all(backend: Backend) {
    let app = spawn_app_with(backend, forwarding_config()).await;
    // The outbox refuses one event's rows, as a full disk or a broken constraint would.
    let refuse = match backend {
        Backend::Postgres => {
            "ALTER TABLE forward_deliveries ADD CONSTRAINT test_refuses CHECK (event_id <> 'refused')"
        }
        Backend::Sqlite => {
            "CREATE TRIGGER test_refuses BEFORE INSERT ON forward_deliveries
             WHEN NEW.event_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        }
    };
    app.db
        .writer
        .execute_unprepared(refuse)
        .await
        .expect("add the refusal");

    let refused = app
        .send("shop", &event("refused", "order-1", 1, "{}"))
        .await;
    let fine = app.send("shop", &event("fine", "order-1", 2, "{}")).await;

    assert_eq!(refused.status, 422, "{backend:?}: {:?}", refused.body);
    assert_eq!(fine.outcome(), "applied", "{backend:?}");
    // Neither the claim nor the projection of the refused delivery survived without its rows.
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_inbox WHERE event_id = 'refused'"
        )
        .await,
        0,
        "{backend:?}"
    );
    assert_eq!(current_revision(&app.db, "shop", "order-1").await, Some(2));
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE event_id = 'fine'"
        )
        .await,
        2,
        "{backend:?}"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE event_id = 'refused'"
        )
        .await,
        0,
        "{backend:?}"
    );
}

/// A delivery with nowhere to go never names the outbox: while a transaction holds
/// `forward_deliveries` whole (as the drop of a day of it does), a delivery of a source that
/// forwards nowhere is answered, and one of a source that forwards waits until it is released.
#[tokio::test]
async fn a_delivery_with_nowhere_to_go_does_not_wait_for_the_outboxs_lock() {
    let app = spawn_app_with(Backend::Postgres, forwarding_config()).await;
    let holder = app.db.writer.begin().await.expect("begin");
    holder
        .execute_unprepared("LOCK TABLE forward_deliveries IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("lock");
    let holder_pid = backend_pid(&holder).await;

    let unforwarded = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        app.send("sw", &event("s1", "order-9", 1, "{}")),
    )
    .await
    .expect("answered while the outbox is locked");
    assert_eq!(unforwarded.status, 200, "{:?}", unforwarded.body);
    assert_eq!(unforwarded.outcome(), "applied");

    let body = event("e1", "order-1", 1, "{}");
    let (forwarded, ()) = tokio::join!(app.send("shop", &body), async {
        wait_until_statement_blocked_by(&app.db, holder_pid, "WITH claim AS").await;
        holder.rollback().await.expect("release");
    });
    assert_eq!(forwarded.status, 200, "{:?}", forwarded.body);
    assert_eq!(forwarded.outcome(), "applied");
    assert_eq!(
        texts(
            &app.db,
            "SELECT destination, event_id FROM forward_deliveries ORDER BY destination",
            vec![],
        )
        .await,
        vec![
            vec![Some("audit-app".to_string()), Some("e1".to_string())],
            vec![Some("orders-app".to_string()), Some("e1".to_string())],
        ]
    );
    assert_eq!(current_revision(&app.db, "sw", "order-9").await, Some(1));
}
