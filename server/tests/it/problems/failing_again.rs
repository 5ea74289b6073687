//! A failure of a cause that is already open changes nothing of its problem and is archived in
//! one statement holding the problem's row shared; a failure arriving while a change closes
//! the cause waits for that change (proven with `pg_blocking_pids`), then finds the cause
//! closed and opens it again in a transaction of its own.

use super::*;

/// The cause of a revision reused by another event on `shop`, as `problems` keys it.
const REUSED: &str = "SELECT CASE WHEN open THEN 'open' ELSE 'closed' END, CAST(changes AS TEXT)
     FROM problems WHERE source = 'shop' AND outcome = 'reused_revision'";

both_backends!(a_failure_of_an_open_cause_leaves_its_problem_as_it_was);
async fn a_failure_of_an_open_cause_leaves_its_problem_as_it_was(backend: Backend) {
    let app = broken(backend).await;
    assert_eq!(
        app.send("shop", &event("e1", "order-1", 1, "{}"))
            .await
            .outcome(),
        "applied"
    );
    for (n, id) in ["e1-other", "e1-again", "e1-third"].iter().enumerate() {
        let answer = app.send("shop", &event(id, "order-1", 1, "{}")).await;
        assert_eq!(answer.outcome(), "reused_revision", "{id}");
        assert_eq!(
            texts(&app.db, REUSED, vec![]).await,
            vec![vec![Some("open".into()), Some("1".into())]],
            "{backend:?}: opened by the first failure, unchanged by the {} after it",
            n
        );
    }
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events
             WHERE source = 'shop' AND outcome = 'reused_revision' AND status = 'failed'
               AND error_class = 'object revision is already held by another event'"
        )
        .await,
        3,
        "{backend:?}: each failure archived with its cause"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM notifications WHERE source = 'shop'"
        )
        .await,
        1,
        "{backend:?}: one message, the cause's opening"
    );
}

#[tokio::test]
async fn a_failure_arriving_while_its_cause_is_closed_waits_then_opens_it_again() {
    let app = broken(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    let first = app
        .send("shop", &event("e1-other", "order-1", 1, "{}"))
        .await;
    assert_eq!(first.outcome(), "reused_revision");

    // A change deciding the cause closed, holding its row until it commits.
    let txn = app::ingest::begin(&app.db).await.expect("a transaction");
    let closing = sea_orm::Statement::from_string(
        sea_orm::DatabaseBackend::Postgres,
        "UPDATE problems SET open = false, changes = changes + 1
         WHERE source = 'shop' AND outcome = 'reused_revision'",
    );
    sea_orm::ConnectionTrait::execute_raw(&txn, closing)
        .await
        .expect("the cause closed");
    let holder = backend_pid(&txn).await;

    let body = event("e1-again", "order-1", 1, "{}");
    let again = app.send("shop", &body);
    let commit = async {
        wait_until_statement_blocked_by(&app.db, holder, "WITH problem AS").await;
        txn.commit().await.expect("the change committed");
    };
    let (answer, ()) = tokio::join!(again, commit);

    assert_eq!(answer.outcome(), "reused_revision");
    assert_eq!(
        texts(&app.db, REUSED, vec![]).await,
        vec![vec![Some("open".into()), Some("3".into())]],
        "opened, closed by the change it waited for, opened again by it"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events
             WHERE source = 'shop' AND outcome = 'reused_revision'"
        )
        .await,
        2,
        "both failures archived, once each"
    );
}
