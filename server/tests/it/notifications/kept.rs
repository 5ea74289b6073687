//! What the notification tables keep: messages for 30 days, and the mark of a cause (its
//! `problems` row) until a day past the longest retention after it closed, unless it is open or an
//! operator gave it a state. The tables grow with the time kept, not with the years.

use super::*;
use app::maintenance::purge::{purge_notifications, purge_problems};
use chrono::{Duration as Days, Utc};

both_backends!(marks_of_causes_closed_before_the_retention_and_old_messages_are_purged);
async fn marks_of_causes_closed_before_the_retention_and_old_messages_are_purged(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let now = Utc::now();
    let ago = |days: i64| -> sea_orm::Value { (now - Days::days(days)).into() };
    for (class, open, changed) in [
        ("closed long ago", false, 400),
        ("open since long ago", true, 400),
        ("ignored long ago", false, 400),
        ("closed lately", false, 10),
    ] {
        execute(
            db,
            "INSERT INTO problems (source, outcome, error_class, open, changes, changed_at)
             VALUES ('crm', 'invalid', $1, $2, 1, $3)",
            vec![class.into(), open.into(), ago(changed)],
        )
        .await;
    }
    execute(
        db,
        "INSERT INTO problem_states (source, outcome, error_class, state, changed_at, changed_by)
         VALUES ('crm', 'invalid', 'ignored long ago', 'ignored', $1, 'olga')",
        vec![ago(400)],
    )
    .await;
    for (subject, fanned_out, created) in [("p1", true, 40), ("p2", false, 40), ("p3", true, 5)] {
        execute(
            db,
            "INSERT INTO notifications (event, subject, source, facts, fanned_out, created_at)
             VALUES ('problem.opened', $1, 'crm', '{}', $2, $3)",
            vec![subject.into(), fanned_out.into(), ago(created)],
        )
        .await;
    }
    execute(
        db,
        "INSERT INTO notification_sends (notification_id, channel, subject, changes, status, next_attempt_at, created_at)
         SELECT id, 'ops', subject, 1, 'sent', created_at, created_at FROM notifications",
        vec![],
    )
    .await;

    let marks = purge_problems(db, now - Days::days(91), 2).await.unwrap();
    let copies = purge_notifications(db, now - Days::days(30), 2)
        .await
        .unwrap();

    assert_eq!(marks, 1);
    assert_eq!(
        texts(db, "SELECT error_class FROM problems ORDER BY id", vec![]).await,
        vec![
            vec![Some("open since long ago".into())],
            vec![Some("ignored long ago".into())],
            vec![Some("closed lately".into())],
        ],
        "an open cause, an ignored one and one closed within the retention keep their marks"
    );
    assert_eq!(copies, 2, "the copies older than 30 days");
    assert_eq!(
        texts(db, "SELECT subject FROM notifications ORDER BY id", vec![]).await,
        vec![vec![Some("p2".into())], vec![Some("p3".into())]],
        "a change not yet handed to the channels stays, whatever its age"
    );
}
