//! Open failures grouped by cause: forty failures of one cause (each with its own ids and
//! revision) are one group with its count, first and last seen and newest example; another
//! cause is another group; and however many causes there are, the page is bounded.

use super::*;

both_backends!(forty_failures_of_one_cause_are_one_problem);
async fn forty_failures_of_one_cause_are_one_problem(backend: Backend) {
    let app = broken(backend).await;
    let ids = crm_failures(&app, "g", 40).await;
    let bad = [
        bad_revision(&app, "bad-1").await,
        bad_revision(&app, "bad-2").await,
    ];
    let cookie = signed_in(&app, "vera", Role::Viewer).await;

    let page = problems(&app, &cookie).await;

    assert_eq!(
        open_groups(&page),
        vec![
            ("crm".into(), "invalid".into(), BAD_REVISION.into(), 2),
            ("crm".into(), "invalid".into(), MISSING.into(), 40),
        ],
        "{backend:?}: the most recently failing first"
    );
    assert_eq!(page["open_total"], 2);
    assert_eq!(page["open_failures"], 42);
    assert_eq!(page["can_act"], false, "a viewer");
    let group = &page["open"][1];
    assert_eq!(
        group["example"].as_i64(),
        ids.last().copied(),
        "the newest is the example"
    );
    assert_eq!(group["example_message"], MISSING);
    let (a, c) = (&app, &cookie);
    let received = |id: i64| async move {
        let (_, row) = call_json(a, c, "event", &[("id", &id.to_string())]).await;
        row["event"]["received_at"]
            .as_str()
            .expect("a time")
            .to_string()
    };
    assert_eq!(
        group["first_seen"].as_str(),
        Some(received(ids[0]).await.as_str())
    );
    assert_eq!(
        group["last_seen"].as_str(),
        Some(received(ids[39]).await.as_str())
    );
    assert_eq!(page["open"][0]["example"].as_i64(), Some(bad[1]));
    // The stored class of each row is the one the page grouped by.
    assert_eq!(
        count(
            &app.db,
            &format!("SELECT count(*) FROM webhook_events WHERE error_class = '{MISSING}'")
        )
        .await,
        40
    );
    // The group's failed list: these forty, open ones only.
    let (_, listed) = call_json(
        &app,
        &cookie,
        "events",
        &[
            ("status", "failed"),
            ("open", "1"),
            ("source", "crm"),
            ("class", MISSING),
        ],
    )
    .await;
    assert_eq!(
        listed["rows"].as_array().map(Vec::len),
        Some(40),
        "{backend:?}"
    );
}

both_backends!(a_flood_of_causes_keeps_the_page_bounded_and_says_how_many_more);
async fn a_flood_of_causes_keeps_the_page_bounded_and_says_how_many_more(backend: Backend) {
    use sea_orm::{ConnectionTrait, Statement};
    let app = broken(backend).await;
    let (headers, body) = match backend {
        Backend::Postgres => ("'{}'::jsonb", "'\\x7b7d'::bytea"),
        Backend::Sqlite => ("'{}'", "X'7b7d'"),
    };
    // 250 distinct causes (a class no sender could make: classes have no numbers).
    app.db
        .writer
        .execute_raw(Statement::from_sql_and_values(
            app.db.backend(),
            format!(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 250)
                 INSERT INTO webhook_events (source, status, outcome, error_message, error_class,
                     headers, body, received_at)
                 SELECT 'crm', 'failed', 'invalid', 'cause ' || i, 'cause ' || i, {headers}, {body}, $1
                 FROM n"
            ),
            vec![chrono::Utc::now().into()],
        ))
        .await
        .expect("seed");
    let cookie = signed_in(&app, "vera", Role::Viewer).await;

    let page = problems(&app, &cookie).await;
    let html = super::page(&app, &cookie, "/problems").await;

    assert_eq!(
        page["open"].as_array().map(Vec::len),
        Some(200),
        "{backend:?}"
    );
    assert_eq!(page["open_total"], 250);
    assert_eq!(page["open_failures"], 250);
    assert_eq!(page["shown_at_most"], 200);
    assert!(
        html.contains("50 more open problems are not shown"),
        "{backend:?}"
    );
    assert_eq!(html.matches("data-testid=\"problem-row\"").count(), 200);
}
