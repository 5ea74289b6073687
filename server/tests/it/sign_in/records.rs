//! What sign-ins leave in the database: failed sign-ins are bounded counts, a row per client,
//! name and minute, not a row each; audit rows older than the retention are purged.

use super::*;
use app::model::Role;
use sea_orm::{ConnectionTrait, Statement};

both_backends!(audit_rows_older_than_the_audit_retention_are_purged);
async fn audit_rows_older_than_the_audit_retention_are_purged(backend: Backend) {
    let db = test_db(backend).await;
    let at = |days: i64| chrono::Utc::now() - chrono::Duration::days(days);
    for (actor, days) in [("old", 400), ("older", 800), ("recent", 10)] {
        auth::audit_on(
            &db.db.dashboard,
            auth::AuditEntry {
                actor,
                action: app::model::AuditAction::SignIn,
                target: None,
                outcome: "failed",
                detail: None,
                address: Some("127.0.0.1"),
            },
        )
        .await
        .expect("audit");
        db.db
            .dashboard
            .execute_raw(Statement::from_sql_and_values(
                db.db.backend(),
                "UPDATE audit_log SET at = $1 WHERE actor = $2",
                vec![at(days).into(), actor.into()],
            ))
            .await
            .expect("age it");
    }

    let purged = app::maintenance::purge::purge_audit(&db.db, at(365), 1)
        .await
        .expect("purge");

    assert_eq!(purged, 2, "{backend:?}");
    assert_eq!(
        texts(&db.db, "SELECT actor FROM audit_log", vec![]).await,
        [vec![Some("recent".to_string())]],
        "{backend:?}"
    );
}

both_backends!(failed_sign_ins_from_one_client_are_bounded_counts_not_a_row_each);
async fn failed_sign_ins_from_one_client_are_bounded_counts_not_a_row_each(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    auth::add_user(&app.db, "olga", PASSWORD, Role::Operator)
        .await
        .expect("add user");
    let minute = || chrono::Utc::now().timestamp().div_euclid(60);

    // 300 wrong passwords for one name from one client, 30 at once.
    let first_minute = minute();
    let tasks: Vec<_> = (0..30)
        .map(|_| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for _ in 0..10 {
                    answers.push(sign_in_as(&app, "olga", "wrong", Some("198.51.100.9")).await);
                }
                answers
            })
        })
        .collect();
    let answers = answers_of(tasks).await;
    let minutes = minute() - first_minute + 1;

    assert_eq!(answers.len(), 300);
    let of = |f: fn(&SignedIn) -> bool| answers.iter().filter(|a| f(a)).count() as i64;
    let (checked, throttled, busy) = (
        of(|a| a.status == 401),
        of(SignedIn::throttled),
        of(SignedIn::busy),
    );
    assert_eq!(checked + throttled + busy, 300, "{backend:?}");
    let client = "WHERE client = '198.51.100.9'";
    assert_eq!(
        recorded(&app.db, "failed", client).await,
        checked,
        "{backend:?}"
    );
    assert_eq!(
        recorded(&app.db, "throttled", client).await,
        throttled,
        "{backend:?}"
    );
    assert_eq!(recorded(&app.db, "busy", client).await, busy, "{backend:?}");
    let rows = count(
        &app.db,
        "SELECT count(*) FROM sign_in_failures WHERE client = '198.51.100.9'",
    )
    .await;
    assert!(
        rows <= minutes,
        "{backend:?}: one row per minute, {rows} rows in {minutes}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM audit_log").await,
        0,
        "{backend:?}: no audit row per attempt"
    );

    // Names made up by the hundred from one client: a bounded number of rows too.
    let first_minute = minute();
    let tasks: Vec<_> = (0..10)
        .map(|t| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for i in 0..20 {
                    let name = format!("user{t}-{i}");
                    answers.push(sign_in_as(&app, &name, "wrong", Some("198.51.100.10")).await);
                }
                answers
            })
        })
        .collect();
    let answers = answers_of(tasks).await;
    let minutes = minute() - first_minute + 1;
    let names = count(
        &app.db,
        "SELECT count(*) FROM sign_in_failures WHERE client = '198.51.100.10'",
    )
    .await;
    assert_eq!(
        recorded(
            &app.db,
            "failed + throttled + busy",
            "WHERE client = '198.51.100.10'"
        )
        .await,
        answers.len() as i64,
        "{backend:?}"
    );
    let bound =
        (auth::MAX_FAILURES_PER_ADDRESS + auth::MAX_REFUSED_NAMES_PER_CLIENT as i64 + 1) * minutes;
    assert!(
        names <= bound,
        "{backend:?}: {names} rows for 200 names (at most {bound})"
    );

    // The audit page shows the counts, a row per minute.
    let page = app::db::audit::audit_entries(&app.db, Some("sign_in"), Some("olga"))
        .await
        .expect("audit entries");
    let failed: Vec<String> = page
        .iter()
        .filter(|row| row.outcome == "failed")
        .filter_map(|row| row.detail.clone())
        .collect();
    assert!(
        failed
            .iter()
            .all(|d| d.contains("failed sign-ins as olga from 198.51.100.9 in the minute of")),
        "{backend:?}: {failed:?}"
    );
    let shown: i64 = failed
        .iter()
        .filter_map(|d| d.split(' ').next()?.parse::<i64>().ok())
        .sum();
    assert_eq!(shown, checked, "{backend:?}: {page:?}");
}
