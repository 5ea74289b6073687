//! One write path: every outcome through each way a delivery is recorded (the webhook route's
//! one statement on PostgreSQL or one script on SQLite, a caller's transaction, a replay of a
//! stored delivery) gives the same answer and leaves the same rows, on both backends.

use crate::support::*;
use app::config::Config;
use app::db::Db;
use app::envelope::parse_envelope;
use app::ingest::{self, Outcome, Received};
use sea_orm::{ConnectionTrait, Statement};
use std::path::Path;

const CONFIG: &str = r#"
[[destinations]]
name = "orders-app"
url = "http://127.0.0.1:9/orders"
secret_env = "DESTINATION_SECRET"

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app"]

[[sources]]
name = "dd"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
mode = "dedup"
event_id = "header:X-Delivery-Id"
object_id = "/repository/id"
forward = ["orders-app"]

[[sources]]
name = "gh"
scheme = "github"
secrets_env = ["SHOP_SECRET"]
mode = "dedup"
event_id = "header:X-GitHub-Delivery"
forward = ["orders-app"]
"#;

fn config() -> Config {
    Config::parse(CONFIG, Path::new("write_path.toml"), &test_env).expect("valid config")
}

/// One delivery: its source, its identity header (dedup sources) and its body.
#[derive(Clone, Copy)]
struct Delivery {
    source: &'static str,
    header: Option<(&'static str, &'static str)>,
    body: &'static str,
}

const fn shop(body: &'static str) -> Delivery {
    Delivery {
        source: "shop",
        header: None,
        body,
    }
}

const fn dedup(id: &'static str, body: &'static str) -> Delivery {
    Delivery {
        source: "dd",
        header: Some(("x-delivery-id", id)),
        body,
    }
}

const fn github(id: &'static str, body: &'static str) -> Delivery {
    Delivery {
        source: "gh",
        header: Some(("x-github-delivery", id)),
        body,
    }
}

const E1: &str = r#"{"event_id":"e1","object_id":"o1","revision":1,"snapshot":{"a":1}}"#;
const E1_SPACED: &str = r#"{"event_id":"e1", "object_id":"o1", "revision":1, "snapshot":{"a": 1}}"#;
const E1_OTHER: &str = r#"{"event_id":"e1","object_id":"o1","revision":1,"snapshot":{"a":2}}"#;
const E2_SAME_REVISION: &str =
    r#"{"event_id":"e2","object_id":"o1","revision":1,"snapshot":{"b":1}}"#;
const E2: &str = r#"{"event_id":"e2","object_id":"o1","revision":2,"snapshot":{"a":2}}"#;
const NO_REVISION: &str = r#"{"event_id":"e9","object_id":"o1","snapshot":{"a":1}}"#;
const PUSH: &str = r#"{"repository":{"id":"r1"},"ref":"main"}"#;
const PUSH_OTHER: &str = r#"{"repository":{"id":"r1"},"ref":"dev"}"#;

/// Every outcome: the deliveries before it, the delivery under test, the answer expected.
fn cases() -> Vec<(&'static str, Vec<Delivery>, Delivery, Outcome)> {
    vec![
        (
            "applied",
            vec![],
            shop(E1),
            Outcome::Applied { revision: 1 },
        ),
        (
            "stale",
            vec![shop(E2)],
            shop(E1),
            Outcome::Stale {
                revision: 1,
                current_revision: 2,
            },
        ),
        ("duplicate", vec![shop(E1)], shop(E1), Outcome::Duplicate),
        (
            "duplicate with other white space",
            vec![shop(E1)],
            shop(E1_SPACED),
            Outcome::Duplicate,
        ),
        (
            "reused event id",
            vec![shop(E1)],
            shop(E1_OTHER),
            Outcome::ReusedEventId,
        ),
        (
            "reused revision",
            vec![shop(E1)],
            shop(E2_SAME_REVISION),
            Outcome::ReusedRevision {
                existing_event_id: Some("e1".into()),
            },
        ),
        ("accepted", vec![], dedup("d1", PUSH), Outcome::Accepted),
        (
            "a dedup source's duplicate, content ignored",
            vec![dedup("d1", PUSH)],
            dedup("d1", PUSH_OTHER),
            Outcome::Duplicate,
        ),
        (
            "a signed body replayed under another delivery id",
            vec![github("g1", PUSH)],
            github("g2", PUSH),
            Outcome::ReplayedBody {
                original_event_id: "g1".into(),
            },
        ),
        (
            "invalid",
            vec![shop(E1)],
            shop(NO_REVISION),
            Outcome::Invalid {
                reason: String::new(),
            },
        ),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// `ingest::apply_delivery`: the webhook route's statement (PostgreSQL) or script (SQLite).
    Route,
    /// `ingest::apply_in` inside a transaction the caller commits.
    Transaction,
    /// `ingest::replay::replay` of a stored delivery.
    Replay,
}

fn headers_json(delivery: &Delivery) -> String {
    let mut headers = serde_json::Map::new();
    if let Some((name, value)) = delivery.header {
        headers.insert(name.into(), value.into());
    }
    serde_json::Value::Object(headers).to_string()
}

/// Records `delivery` through `path`: its outcome, with an invalid one's reason left out.
async fn record(db: &Db, config: &Config, delivery: &Delivery, path: Way) -> Outcome {
    let source = config.source(delivery.source).expect("configured");
    let headers_json = headers_json(delivery);
    if path == Way::Replay {
        // A stored delivery to replay: archived as it arrived, before its cause was fixed.
        let id = scalar(
            db,
            "INSERT INTO webhook_events (source, status, outcome, error_message, headers, body, received_at)
             VALUES ($1, 'failed', 'invalid', 'planted', $2, $3, $4) RETURNING id",
            vec![
                delivery.source.into(),
                if db.backend() == sea_orm::DatabaseBackend::Postgres {
                    sea_orm::Value::Json(Some(Box::new(
                        serde_json::from_str(&headers_json).expect("json"),
                    )))
                } else {
                    headers_json.clone().into()
                },
                sea_orm::Value::Bytes(Some(delivery.body.as_bytes().to_vec())),
                chrono::Utc::now().into(),
            ],
        )
        .await
        .expect("planted");
        let stored = app::db::events::stored_delivery(db, id)
            .await
            .expect("read")
            .expect("stored");
        let recorded = ingest::replay::replay(db, config, &stored, "olga", false)
            .await
            .expect("replayed");
        return without_reason(recorded.outcome);
    }
    let mut headers = http::HeaderMap::new();
    if let Some((name, value)) = delivery.header {
        headers.insert(name, value.parse().expect("header"));
    }
    let received = Received {
        source: &source.name,
        headers_json: &headers_json,
        body: delivery.body.as_bytes(),
        body_fields: app::envelope::form_document(&headers, delivery.body.as_bytes()),
        received_at: chrono::Utc::now(),
        replay_of: None,
        replayed_by: None,
        signed_body_digest: source
            .auth()
            .replay_digest(&headers, delivery.body.as_bytes()),
        forward_to: &source.forward,
    };
    let parsed = parse_envelope(&source.mapping, &headers, delivery.body.as_bytes());
    let mode = source.mapping.mode;
    let recorded = match path {
        Way::Route => match &parsed {
            Ok(envelope) => ingest::apply_delivery(db, mode, &received, envelope).await,
            Err(invalid) => ingest::record_invalid(db, &received, invalid).await,
        },
        _ => {
            let txn = ingest::begin(db).await.expect("begin");
            let recorded = match &parsed {
                Ok(envelope) => ingest::apply_in(&txn, mode, &received, envelope).await,
                Err(invalid) => ingest::record_invalid_in(&txn, &received, invalid).await,
            };
            txn.commit().await.expect("commit");
            recorded
        }
    };
    without_reason(recorded.expect("recorded").outcome)
}

fn without_reason(outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::Invalid { .. } => Outcome::Invalid {
            reason: String::new(),
        },
        other => other,
    }
}

/// Every row the write path keeps, as text, in a stable order; the planted rows a replay reads
/// and the columns that name a path (when, replayed by whom) left out. `exact` keeps the stored
/// JSON text, which the two backends spell differently (`jsonb` against the text as sent).
async fn rows(db: &Db, exact: bool) -> Vec<Vec<Option<String>>> {
    let pg = db.backend() == sea_orm::DatabaseBackend::Postgres;
    let json = |column: &str| match (exact, pg) {
        (false, _) => "NULL".to_string(),
        (true, true) => format!("{column}::text"),
        (true, false) => column.to_string(),
    };
    let bytes = if pg {
        "octet_length(body)"
    } else {
        "length(body)"
    };
    let mut all = Vec::new();
    for sql in [
        format!(
            "SELECT 'inbox', source, event_id, object_id, CAST(revision AS TEXT), {}, \
             CASE WHEN signed_body_digest IS NULL THEN 'no digest' ELSE 'digest' END \
             FROM webhook_inbox ORDER BY source, event_id",
            json("snapshot")
        ),
        format!(
            "SELECT 'projection', source, object_id, CAST(revision AS TEXT), {} \
             FROM object_state ORDER BY source, object_id",
            json("snapshot")
        ),
        format!(
            "SELECT 'archive', source, event_id, object_id, CAST(revision AS TEXT), event_type, \
             status, outcome, CASE WHEN outcome = 'invalid' THEN 'reason' ELSE error_message END, \
             CASE WHEN body_of IS NULL THEN 'own body' ELSE 'refers to an earlier body' END, \
             CAST({bytes} AS TEXT) \
             FROM webhook_events WHERE error_message IS NULL OR error_message <> 'planted' ORDER BY id"
        ),
        "SELECT 'forward', destination, source, event_id, object_id, CAST(revision AS TEXT), \
         event_type, status, CAST(attempts AS TEXT), payload, \
         (SELECT e.outcome FROM webhook_events e WHERE e.id = archive_id) \
         FROM forward_deliveries ORDER BY id"
            .to_string(),
        // A failure's problem changed in its delivery's transaction, whatever the path.
        "SELECT 'problem', source, outcome, error_class, \
         CASE WHEN open THEN 'open' ELSE 'closed' END, CAST(changes AS TEXT) \
         FROM problems WHERE changes > 0 ORDER BY source, outcome, error_class"
            .to_string(),
        "SELECT 'notification', event, source FROM notifications ORDER BY id".to_string(),
    ] {
        all.extend(texts(db, &sql, vec![]).await);
    }
    all
}

both_backends!(every_outcome_is_the_same_answer_and_the_same_rows_on_every_path);
async fn every_outcome_is_the_same_answer_and_the_same_rows_on_every_path(backend: Backend) {
    let config = config();
    for (name, before, delivery, expected) in cases() {
        let mut seen: Vec<(Way, Vec<Vec<Option<String>>>)> = Vec::new();
        for path in [Way::Route, Way::Transaction, Way::Replay] {
            let test_db = test_db(backend).await;
            let db = &test_db.db;
            for earlier in &before {
                record(db, &config, earlier, Way::Route).await;
            }

            let outcome = record(db, &config, &delivery, path).await;

            assert_eq!(outcome, expected, "{backend:?}, {name}, {path:?}");
            seen.push((path, rows(db, true).await));
        }
        let (_, route) = &seen[0];
        for (path, rows) in &seen[1..] {
            // A replay that fails is no open failure of its own (the one it replays is): it
            // changes no problem.
            let route: Vec<_> = route
                .iter()
                .filter(|row| {
                    *path != Way::Replay
                        || !matches!(row[0].as_deref(), Some("problem" | "notification"))
                })
                .collect();
            let rows: Vec<_> = rows.iter().collect();
            assert_eq!(
                rows, route,
                "{backend:?}, {name}: {path:?} against the route"
            );
        }
    }
}

/// The same rows on PostgreSQL and on SQLite, stored JSON aside (each backend spells it its way).
#[tokio::test]
async fn every_outcome_leaves_the_same_rows_on_both_backends() {
    let config = config();
    for (name, before, delivery, _) in cases() {
        let mut seen = Vec::new();
        for backend in [Backend::Postgres, Backend::Sqlite] {
            let test_db = test_db(backend).await;
            let db = &test_db.db;
            for earlier in &before {
                record(db, &config, earlier, Way::Route).await;
            }
            record(db, &config, &delivery, Way::Route).await;
            seen.push(rows(db, false).await);
        }
        assert_eq!(seen[0], seen[1], "{name}: PostgreSQL against SQLite");
    }
}

// An outcome the vocabulary does not know, coming back from the database, is an error: never
// read as another outcome.
both_backends!(an_archive_row_with_an_unknown_outcome_is_an_error_when_read);
async fn an_archive_row_with_an_unknown_outcome_is_an_error_when_read(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let config = config();
    record(db, &config, &shop(E1), Way::Route).await;
    // The check constraint keeps such a row out of the table; a query can still answer one.
    let row = db
        .dashboard
        .query_one_raw(Statement::from_string(
            db.backend(),
            "SELECT 'teleported' AS outcome",
        ))
        .await
        .expect("query")
        .expect("row");

    let read = row.try_get::<app::model::OutcomeKind>("", "outcome");

    let error = read.expect_err("an unknown outcome is an error");
    assert!(format!("{error:?}").contains("teleported"), "{error:?}");
}
