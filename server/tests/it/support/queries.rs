//! Reading the database back: one integer, one body's bytes, rows of text, an inbox snapshot, the projection's
//! revision, the archive of an event, and a wait for a backend blocked by another.

use app::db::Db;
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement, Value};

/// One integer from a query (`count(*)`, a revision).
pub async fn scalar(db: &Db, sql: &str, values: Vec<Value>) -> Option<i64> {
    db.dashboard
        .query_one_raw(Statement::from_sql_and_values(db.backend(), sql, values))
        .await
        .expect("query")
        .map(|row| row.try_get_by_index::<i64>(0).expect("an integer"))
}

pub async fn count(db: &Db, sql: &str) -> i64 {
    scalar(db, sql, vec![]).await.unwrap_or(0)
}

/// Runs one statement (setting up what no request can, such as an expired token).
pub async fn execute(db: &Db, sql: &str, values: Vec<Value>) {
    db.dashboard
        .execute_raw(Statement::from_sql_and_values(db.backend(), sql, values))
        .await
        .expect("statement");
}

/// One bytes column of the first row (an archived body).
pub async fn bytes(db: &Db, sql: &str) -> Vec<u8> {
    db.dashboard
        .query_one_raw(Statement::from_string(db.backend(), sql))
        .await
        .expect("query")
        .map(|row| row.try_get_by_index::<Vec<u8>>(0).expect("bytes"))
        .unwrap_or_default()
}

/// Rows of text columns.
pub async fn texts(db: &Db, sql: &str, values: Vec<Value>) -> Vec<Vec<Option<String>>> {
    let rows = db
        .dashboard
        .query_all_raw(Statement::from_sql_and_values(db.backend(), sql, values))
        .await
        .expect("query");
    rows.iter()
        .map(|row| {
            let columns = row.column_names().len();
            (0..columns)
                .map(|i| {
                    row.try_get_by_index::<Option<String>>(i)
                        .expect("text column")
                })
                .collect()
        })
        .collect()
}

/// The stored snapshot of an inbox row, as text.
pub async fn inbox_snapshot(db: &Db, source: &str, event_id: &str) -> Option<String> {
    let sql = match db.backend() {
        DatabaseBackend::Postgres => {
            "SELECT snapshot::text FROM webhook_inbox WHERE source = $1 AND event_id = $2"
        }
        _ => "SELECT snapshot FROM webhook_inbox WHERE source = $1 AND event_id = $2",
    };
    texts(db, sql, vec![source.into(), event_id.into()])
        .await
        .into_iter()
        .next()
        .and_then(|mut r| r.remove(0))
}

/// The projection's revision of an object.
pub async fn current_revision(db: &Db, source: &str, object_id: &str) -> Option<i64> {
    scalar(
        db,
        "SELECT revision FROM object_state WHERE source = $1 AND object_id = $2",
        vec![source.into(), object_id.into()],
    )
    .await
}

/// (status, outcome) of every archive row of an event, oldest first.
pub async fn archived(db: &Db, source: &str, event_id: &str) -> Vec<(String, String)> {
    texts(
        db,
        "SELECT status, outcome FROM webhook_events WHERE source = $1 AND event_id = $2 ORDER BY id",
        vec![source.into(), event_id.into()],
    )
    .await
    .into_iter()
    .map(|r| (r[0].clone().unwrap_or_default(), r[1].clone().unwrap_or_default()))
    .collect()
}

/// Waits until some backend is blocked by `holder`, as PostgreSQL itself reports it
/// (`pg_blocking_pids`): the proof that a concurrent delivery really waits.
pub async fn wait_until_blocked_by(db: &Db, holder: i32) {
    wait_until_statement_blocked_by(db, holder, "").await;
}

/// Waits until a backend whose statement starts with `statement` is blocked by `holder`
/// (`pg_blocking_pids`): the proof that this statement, not another user of the table, waits.
pub async fn wait_until_statement_blocked_by(db: &Db, holder: i32, statement: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let blocked = scalar(
            db,
            "SELECT count(*) FROM pg_stat_activity
             WHERE $1 = ANY(pg_blocking_pids(pid)) AND starts_with(query, $2)",
            vec![holder.into(), statement.into()],
        )
        .await
        .unwrap_or(0);
        if blocked > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no `{statement}…` ever waited for backend {holder}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The PostgreSQL backend of `conn` (a transaction holding a lock), to see who waits for it.
pub async fn backend_pid<C: sea_orm::ConnectionTrait>(conn: &C) -> i32 {
    conn.query_one_raw(sea_orm::Statement::from_string(
        sea_orm::DatabaseBackend::Postgres,
        "SELECT pg_backend_pid() AS pid",
    ))
    .await
    .expect("the backend's pid")
    .expect("a row")
    .try_get::<i32>("", "pid")
    .expect("an int")
}
