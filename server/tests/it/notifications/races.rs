//! A failure and the change that would close its cause, at once (PostgreSQL): the failure holds
//! its cause's row shared until it commits, so a replay resolving the cause's last other failure
//! waits for it (proven with `pg_blocking_pids`) and then counts it: the cause stays open, and
//! no `problem.resolved` is recorded for a cause with an open failure.

use super::*;
use app::model::Role;

#[tokio::test]
async fn a_replay_resolving_a_cause_waits_for_a_failure_of_it_in_flight_and_counts_it() {
    let (_receiver, url) = Receiver::start(vec![]).await;
    let app = broken(Backend::Postgres, &url, 0).await;
    let ids = failures(&app, "r", 1).await;
    let fixed = fixed(&app, &url, 0).await;
    let token = token(&fixed, "fixer", Role::Operator, &[]).await;

    // A second failure of the cause, in a transaction held open before its commit.
    let broken_config = config(false, "", &[]);
    let source = broken_config.source("crm").expect("crm");
    let body = crm_body("in-flight");
    let headers = http::HeaderMap::new();
    let received = app::ingest::Received {
        source: "crm",
        headers_json: "{}",
        body: body.as_bytes(),
        body_fields: None,
        received_at: chrono::Utc::now(),
        replay_of: None,
        replayed_by: None,
        signed_body_digest: None,
        forward_to: &[],
    };
    let invalid = app::envelope::parse_envelope(&source.mapping, &headers, body.as_bytes())
        .expect_err("crm is broken");
    let txn = app::ingest::begin(&app.db).await.unwrap();
    app::ingest::record_invalid_in(&txn, &received, &invalid)
        .await
        .unwrap();
    let holder = backend_pid(&txn).await;

    let path = format!("/api/v1/events/{}/replay", ids[0]);
    let replay = post(&fixed, &token, &path, "{}");
    let commit = async {
        wait_until_blocked_by(&app.db, holder).await;
        txn.commit().await.unwrap();
    };
    let ((status, answer), ()) = tokio::join!(replay, commit);
    assert_eq!(status, 200, "{answer}");

    assert_eq!(
        texts(
            &app.db,
            "SELECT CASE WHEN open THEN 'open' ELSE 'closed' END, CAST(changes AS TEXT) FROM problems WHERE source = 'crm'",
            vec![]
        )
        .await,
        vec![vec![Some("open".into()), Some("1".into())]],
        "the cause keeps its one open failure: no change"
    );
    assert_eq!(
        texts(
            &app.db,
            "SELECT event FROM notifications WHERE source = 'crm' ORDER BY id",
            vec![]
        )
        .await,
        vec![vec![Some("problem.opened".into())]]
    );
}
