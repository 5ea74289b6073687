//! Body expiry: past its source's `body_retention_days` an archive row keeps its ids, outcome
//! and the SHA-256 and size of its body, and loses its body and headers (null on PostgreSQL);
//! a younger duplicate that referred to that body keeps it; what a run would expire is counted
//! the same way; a second run finds nothing; the API, the event page and the export say the
//! body expired, and a replay of the row is refused with that reason.

use super::*;
use app::maintenance::expiry::{BodyPolicy, due, expire_bodies};
use app::maintenance::purge::{BySource, Cutoffs};
use app::model::Role;
use sea_orm::TransactionTrait;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// `shop` keeps bodies 7 days, every other source 20 (`crm` included: 30 days is not its own).
fn policy() -> BodyPolicy {
    BodyPolicy {
        default_days: Some(20),
        own: BTreeMap::from([("shop".to_string(), 7)]),
    }
}

/// What the archive holds of a row: its event, outcome, body's length, whether its headers are
/// there, its digest and size, and whether it refers to another's body.
async fn row_of(db: &Db, id: i64) -> Vec<Option<String>> {
    texts(
        db,
        "SELECT event_id, outcome, CAST(length(body) AS TEXT),
                CASE WHEN headers IS NULL THEN 'null' ELSE CAST(headers AS TEXT) END,
                body_sha256, CAST(body_bytes AS TEXT),
                CASE WHEN body_expired_at IS NULL THEN 'kept' ELSE 'expired' END,
                CAST(body_of AS TEXT)
         FROM webhook_events WHERE id = $1",
        vec![id.into()],
    )
    .await
    .remove(0)
}

fn sha256_hex(body: &str) -> String {
    hex::encode(Sha256::digest(body.as_bytes()))
}

both_backends!(bodies_past_their_sources_retention_expire_and_the_record_stays);
async fn bodies_past_their_sources_retention_expire_and_the_record_stays(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let days = |n| Utc::now() - Duration::days(n);
    let shared = event("e-shared", "O-1", 1, r#"{"total":12}"#);
    let old = deliver_to(db, "shop", &shared, days(10), None).await;
    // The sender's retry of the same body, 8 days later: a reference to the old row's body.
    let retry = deliver_to(db, "shop", &shared, days(2), None).await;
    let crm = event("c-1", "C-1", 1, r#"{"n":1}"#);
    let crm_young = deliver_to(db, "crm", &crm, days(15), None).await;
    let gone = event("g-1", "G-1", 1, r#"{"n":2}"#);
    let gone_old = deliver_to(db, "gone", &gone, days(25), None).await;
    assert_eq!(
        row_of(db, retry.archive_id).await[7],
        Some(old.archive_id.to_string())
    );
    let expected: BySource = BTreeMap::from([("gone".to_string(), 1), ("shop".to_string(), 1)]);

    // Counted first, and nothing dropped by counting; a row the purge takes first is not counted.
    let keep_all = Cutoffs::from(DateTime::<Utc>::UNIX_EPOCH);
    let counted = due(db, &policy(), &keep_all, Utc::now())
        .await
        .expect("count");
    assert_eq!(counted, expected, "{backend:?}");
    let purging_gone = Cutoffs::from(days(24));
    let counted = due(db, &policy(), &purging_gone, Utc::now())
        .await
        .expect("count");
    assert_eq!(
        counted,
        BTreeMap::from([("shop".to_string(), 1)]),
        "{backend:?}"
    );

    // One row per transaction: the loop goes on across scopes.
    let expired = expire_bodies(db, &policy(), Utc::now(), 1)
        .await
        .expect("expire");

    assert_eq!(expired, expected, "{backend:?}");
    let (no_body, no_headers) = match backend {
        Backend::Postgres => (None, Some("null".to_string())),
        Backend::Sqlite => (Some("0".to_string()), Some("{}".to_string())),
    };
    assert_eq!(
        row_of(db, old.archive_id).await,
        vec![
            Some("e-shared".into()),
            Some("applied".into()),
            no_body.clone(),
            no_headers.clone(),
            Some(sha256_hex(&shared)),
            Some(shared.len().to_string()),
            Some("expired".into()),
            None
        ],
        "{backend:?}: the ids, outcome, digest and size stay"
    );
    let retry_row = row_of(db, retry.archive_id).await;
    assert_eq!(
        (&retry_row[2], &retry_row[6], &retry_row[7]),
        (&Some(shared.len().to_string()), &Some("kept".into()), &None),
        "{backend:?}: the retry, within its 7 days, holds the body itself now"
    );
    assert_eq!(
        row_of(db, crm_young.archive_id).await[6],
        Some("kept".into()),
        "{backend:?}: crm's 15-day-old body is within the 20 days of every other source"
    );
    assert_eq!(
        row_of(db, gone_old.archive_id).await[4],
        Some(sha256_hex(&gone))
    );

    // The domain's reader says so; a replay is refused with the reason and writes nothing.
    let stored = app::db::events::stored_delivery(db, old.archive_id)
        .await
        .expect("read")
        .expect("the row");
    let expired_body = stored.expired.clone().expect("expired");
    assert_eq!(
        (expired_body.sha256.as_str(), expired_body.bytes),
        (sha256_hex(&shared).as_str(), shared.len() as i64)
    );
    assert!(stored.body.is_empty() && stored.headers_json == "{}");
    let config = app::config::Config::parse("", std::path::Path::new("hookbox.toml"), &|_| None)
        .expect("an empty config");
    let before = count(db, "SELECT count(*) FROM webhook_events").await;
    let refused = app::ingest::replay::replay(db, &config, &stored, "alice", false).await;
    let Err(refusal) = refused else {
        panic!("{backend:?}: a replay of an expired body was not refused");
    };
    assert!(
        refusal.to_string().contains("body and headers expired at"),
        "{refusal}"
    );
    assert_eq!(
        count(db, "SELECT count(*) FROM webhook_events").await,
        before
    );
    let exported = app::db::export::rows(db, &[old.archive_id, retry.archive_id])
        .await
        .expect("export");
    let bodies: Vec<Option<usize>> = exported
        .iter()
        .map(|r| {
            r.body_expired_at
                .is_none()
                .then(|| r.body.as_ref().map_or(0, Vec::len))
        })
        .collect();
    assert_eq!(
        bodies,
        [Some(shared.len()), None],
        "{backend:?}: newest first"
    );

    // The next run starts where this one ended: nothing more is due.
    let again = expire_bodies(db, &policy(), Utc::now(), 1)
        .await
        .expect("expire");
    assert!(again.is_empty(), "{backend:?}: {again:?}");
}

both_backends!(the_api_and_the_event_page_say_when_the_body_expired);
async fn the_api_and_the_event_page_say_when_the_body_expired(backend: Backend) {
    let app = spawn_app(backend).await;
    let body = event("evt_1", "order-1", 2, r#"{"card":"4242"}"#);
    assert_eq!(app.send("shop", &body).await.outcome(), "applied");
    let id = crate::api::newest(&app, "shop").await;
    // A week and a day later, with bodies kept 7 days.
    let week_on = Utc::now() + Duration::days(8);
    let policy = BodyPolicy {
        default_days: Some(7),
        own: BTreeMap::new(),
    };
    let expired = expire_bodies(&app.db, &policy, week_on, 100)
        .await
        .expect("expire");
    assert_eq!(expired, BTreeMap::from([("shop".to_string(), 1)]));

    let viewer = token(&app, "support", Role::Viewer, &[]).await;
    let (status, _, answer) = get(&app, Some(&viewer), &format!("/api/v1/events/{id}")).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["body_expired_at"].is_string(), "{answer}");
    assert_eq!(answer["body_sha256"], sha256_hex(&body));
    assert_eq!(answer["body_bytes"], body.len());
    assert_eq!(answer["headers"], serde_json::Value::Null);
    assert!(answer.get("body").is_none() && answer.get("body_base64").is_none());
    assert_eq!(
        (answer["event_id"].as_str(), answer["outcome"].as_str()),
        (Some("evt_1"), Some("applied"))
    );

    let operator = token(&app, "retry-script", Role::Operator, &[]).await;
    let (status, problem) = post(
        &app,
        &operator,
        &format!("/api/v1/events/{id}/replay"),
        "{}",
    )
    .await;
    assert_eq!(status, 409, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("body and headers expired at")),
        "{problem}"
    );

    let cookie = signed_in(&app, "alice", Role::Operator).await;
    let response = app
        .client
        .get(app.url(&format!("/events/{id}")))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("the page answers");
    assert_eq!(response.status(), 200);
    let html = response.text().await.expect("the page").replace("<!>", "");
    assert!(html.contains(r#"data-testid="body-expired""#), "{html}");
    assert!(
        !html.contains(r#"data-testid="dry-run""#),
        "no replay is offered for a body that is gone"
    );
    assert!(html.contains(&sha256_hex(&body)));
    assert!(!html.contains("4242"), "the body is gone from the page");
    let (status, answer) = call(
        &app,
        &cookie,
        "replay",
        &[("id", &id.to_string()), ("confirm", "true")],
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    assert!(answer.contains("body and headers expired at"), "{answer}");
}

#[tokio::test]
async fn a_duplicate_arriving_while_its_original_is_purged_waits_and_keeps_its_own_body() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let body = event("e-race", "O-race", 1, r#"{"total":12}"#);
    let original = deliver(db, &body, Utc::now() - Duration::days(100), None).await;
    // The purge's batch takes the original and holds it, uncommitted.
    let purge = db.maintenance().begin().await.expect("begin");
    let purged = app::maintenance::purge::purge_batch(&purge, retention_cutoff(Utc::now(), 90), 10)
        .await
        .expect("purge batch");
    assert_eq!(purged, 1);
    let holder = backend_pid(&purge).await;

    // The sender's retry of the same body arrives meanwhile: it waits for the purge to end.
    let retry = {
        let (db, body) = (db.clone(), body.clone());
        tokio::spawn(async move { deliver(&db, &body, Utc::now(), None).await })
    };
    wait_until_blocked_by(db, holder).await;
    purge.commit().await.expect("commit the purge");
    let retry = retry.await.expect("the retry");

    let stored = texts(
        db,
        "SELECT CAST(length(body) AS TEXT), CAST(body_of AS TEXT), outcome FROM webhook_events
         WHERE id = $1",
        vec![retry.archive_id.into()],
    )
    .await;
    assert_eq!(
        stored,
        vec![vec![
            Some(body.len().to_string()),
            None,
            Some("duplicate".into())
        ]],
        "the retry keeps its own copy of the body, not a reference to the purged row {}",
        original.archive_id
    );
}
