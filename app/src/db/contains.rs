//! The `match` filter of `/events`: deliveries whose JSON body contains a given JSON object, the
//! way PostgreSQL's `@>` has it: an object contains another when it has each of its keys with a
//! value containing the other's; an array contains another when each of the other's elements is
//! contained in one of its elements; scalars by type and value (numbers by value, `1` and `1.0`
//! alike; `true` is not `1`).
//!
//! On PostgreSQL it is `@>` itself over the GIN index of `hookbox_body_json(body)` (migration
//! m20261201_000009). On SQLite the same rules are spelled with `json_each`, reading each body:
//! correct, and as fast as a scan of the archive (see docs/dashboard.md).

use super::Db;
use super::filter::{Conditions, QueryError};
use sea_orm::sqlx::{self, Arguments, Sqlite, pool::PoolConnection, sqlite::SqliteArguments};
use sea_orm::{
    ConnectionTrait, DatabaseBackend, DbErr, QueryResult, RuntimeErr, Statement, TransactionTrait,
    Value,
};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// The longest a payload search runs: its statement is cancelled in the database then (see
/// [`query_within`]). Never more than half the request's own deadline ([`search_deadline`]),
/// so the search is over well before the request would answer 408.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(5);
/// Payload searches one user may run at once; the next is a 429.
pub const SEARCHES_PER_USER: usize = 1;
/// Payload searches this process runs at once, all users together; the next is a 429. Half the
/// dashboard's PostgreSQL pool (4), so searches never take the connections pages and sign-ins
/// need.
pub const SEARCHES_AT_ONCE: usize = 2;
/// SQLite virtual-machine steps between two looks at the deadline.
const PROGRESS_STEPS: i32 = 1000;

/// The deadline of a search under a request deadline of `request_timeout`.
pub fn search_deadline(request_timeout: Duration) -> Duration {
    SEARCH_DEADLINE.min(request_timeout / 2)
}

/// Why a payload search gave no page.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Query(#[from] QueryError),
    /// It ran past its deadline and was cancelled.
    #[error(
        "match: the search ran past its deadline of {} ms and was stopped; narrow it (a source, dates, a more specific match)",
        .0.as_millis()
    )]
    TimedOut(Duration),
    /// Too many searches are running (the reason says whose).
    #[error("{0}")]
    Busy(String),
}

impl From<DbErr> for SearchError {
    fn from(e: DbErr) -> Self {
        SearchError::Query(QueryError::Db(e))
    }
}

/// The payload searches running, by user.
static RUNNING: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

/// A running search's place in the limits; dropping it frees the place.
#[derive(Debug)]
pub struct SearchPermit {
    user: String,
}

/// A place for one more search by `user`, or [`SearchError::Busy`]: at most
/// [`SEARCHES_PER_USER`] per user and [`SEARCHES_AT_ONCE`] in all.
pub fn begin_search(user: &str) -> Result<SearchPermit, SearchError> {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let total: usize = running.values().sum();
    let mine = running.get(user).copied().unwrap_or(0);
    if mine >= SEARCHES_PER_USER {
        return Err(SearchError::Busy(format!(
            "match: you already have {mine} body search running (at most {SEARCHES_PER_USER} at once); wait for it to finish"
        )));
    }
    if total >= SEARCHES_AT_ONCE {
        return Err(SearchError::Busy(format!(
            "match: {total} body searches are running, the most hookbox runs at once; try again shortly"
        )));
    }
    *running.entry(user.to_string()).or_default() += 1;
    Ok(SearchPermit {
        user: user.to_string(),
    })
}

impl Drop for SearchPermit {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = running.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.remove(&self.user);
            }
        }
    }
}

/// Payload searches running now, all users together.
pub fn searches_running() -> usize {
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .sum()
}

/// Runs a read-only `statement` on the dashboard's pool, cancelled in the database when
/// `deadline` passes or when the caller is dropped (a request that timed out, a browser gone):
///
/// - PostgreSQL: in a transaction of its own with `SET LOCAL statement_timeout`, so the server
///   itself ends the statement (SQLSTATE 57014) whatever happens to the request;
/// - SQLite: on a connection of the read pool with a progress handler that interrupts the
///   statement at the deadline, or as soon as the caller is dropped; the handler is removed
///   before the connection goes back to the pool.
pub async fn query_within(
    db: &Db,
    statement: Statement,
    deadline: Duration,
) -> Result<Vec<QueryResult>, SearchError> {
    let end = Instant::now() + deadline;
    match db.backend() {
        DatabaseBackend::Postgres => {
            let txn = db.conn.begin().await?;
            txn.execute_unprepared(&format!(
                "SET LOCAL statement_timeout = {}",
                deadline.as_millis().max(1)
            ))
            .await?;
            match txn.query_all_raw(statement).await {
                Ok(rows) => {
                    txn.commit().await?;
                    Ok(rows)
                }
                Err(e) => {
                    // Ended now rather than when the connection is next used.
                    let _ = txn.rollback().await;
                    if database_code(&e).as_deref() == Some("57014") {
                        Err(SearchError::TimedOut(deadline))
                    } else {
                        Err(e.into())
                    }
                }
            }
        }
        _ => {
            let pool = db.conn.get_sqlite_connection_pool();
            let conn = pool.acquire().await.map_err(sqlx_err)?;
            let mut run = Interruptible {
                conn: Some(conn),
                stop: Arc::new(AtomicBool::new(false)),
            };
            let result = run.fetch(&statement, end).await;
            run.finish().await;
            match result {
                Ok(rows) => Ok(rows.into_iter().map(QueryResult::from).collect()),
                Err(e) if interrupted(&e) || Instant::now() >= end => {
                    Err(SearchError::TimedOut(deadline))
                }
                Err(e) => Err(sqlx_err(e).into()),
            }
        }
    }
}

/// A SQLite connection with a progress handler installed for one statement.
struct Interruptible {
    conn: Option<PoolConnection<Sqlite>>,
    /// Set when the search is dropped mid-statement: the handler interrupts it.
    stop: Arc<AtomicBool>,
}

impl Interruptible {
    async fn fetch(
        &mut self,
        statement: &Statement,
        end: Instant,
    ) -> Result<Vec<sqlx::sqlite::SqliteRow>, sqlx::Error> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(sqlx::Error::PoolClosed);
        };
        let stop = self.stop.clone();
        conn.lock_handle()
            .await?
            .set_progress_handler(PROGRESS_STEPS, move || {
                !stop.load(Ordering::Relaxed) && Instant::now() < end
            });
        let arguments = sqlite_arguments(statement).map_err(sqlx::Error::Encode)?;
        sqlx::query_with(sqlx::AssertSqlSafe(statement.sql.as_str()), arguments)
            .fetch_all(&mut **conn)
            .await
    }

    /// Removes the handler; the connection goes back to the pool (closed if that failed).
    async fn finish(mut self) {
        if let Some(conn) = self.conn.take() {
            remove_handler(conn).await;
        }
    }
}

impl Drop for Interruptible {
    /// Dropped mid-statement (the request ended): the statement is interrupted at the handler's
    /// next look, and the handler removed once it has stopped.
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.stop.store(true, Ordering::Relaxed);
            tokio::spawn(remove_handler(conn));
        }
    }
}

async fn remove_handler(mut conn: PoolConnection<Sqlite>) {
    let removed = match conn.lock_handle().await {
        Ok(mut handle) => {
            handle.remove_progress_handler();
            true
        }
        Err(_) => false,
    };
    if !removed {
        conn.close_on_drop();
    }
}

/// The statement's values as SQLite arguments, bound as SeaORM binds them.
fn sqlite_arguments(statement: &Statement) -> Result<SqliteArguments, sqlx::error::BoxDynError> {
    let mut arguments = SqliteArguments::default();
    for value in statement.values.iter().flat_map(|v| v.0.iter()) {
        match value.clone() {
            Value::Bool(v) => arguments.add(v)?,
            Value::Int(v) => arguments.add(v)?,
            Value::BigInt(v) => arguments.add(v)?,
            Value::Double(v) => arguments.add(v)?,
            Value::String(v) => arguments.add(v)?,
            Value::ChronoDateTimeUtc(v) => arguments.add(v)?,
            other => return Err(format!("a search cannot bind {other:?}").into()),
        }
    }
    Ok(arguments)
}

/// SQLite's `SQLITE_INTERRUPT`.
fn interrupted(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "9")
}

/// The SQLSTATE (or SQLite code) of a database error.
fn database_code(e: &DbErr) -> Option<String> {
    let (DbErr::Query(RuntimeErr::SqlxError(e))
    | DbErr::Exec(RuntimeErr::SqlxError(e))
    | DbErr::Conn(RuntimeErr::SqlxError(e))) = e
    else {
        return None;
    };
    e.as_database_error()
        .and_then(|d| d.code())
        .map(|c| c.into_owned())
}

fn sqlx_err(e: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(e)))
}

/// The longest `match` accepted, in bytes.
pub const MAX_MATCH_BYTES: usize = 4096;
/// The deepest nesting of a `match`, and the most values it may name.
const MAX_DEPTH: usize = 8;
const MAX_VALUES: usize = 64;

/// A `match` parameter as a JSON object, or a 400 naming the problem.
pub fn parse_match(text: &str) -> Result<Json, QueryError> {
    let bad = |why: String| QueryError::BadFilter(format!("match: {why}"));
    if text.len() > MAX_MATCH_BYTES {
        return Err(bad(format!("longer than {MAX_MATCH_BYTES} bytes")));
    }
    // hookbox's own reader first: it refuses what `jsonb` cannot hold (`\u0000`, lone
    // surrogates, numbers beyond `numeric` such as `10e-16384`), which PostgreSQL would answer
    // with an error at `CAST(? AS jsonb)`, so such a `match` is a 400 here, never a failed query.
    match crate::json::parse(text) {
        Ok(_) => {}
        Err(crate::json::JsonError::Syntax { offset, reason }) => {
            return Err(bad(format!("not JSON: {reason} at byte {offset}")));
        }
        Err(crate::json::JsonError::Unsupported { offset, reason }) => {
            return Err(bad(format!("{reason} at byte {offset}")));
        }
    }
    let value: Json = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(bad(
            "must be a JSON object, such as {\"customer\":\"cus_123\"}".into(),
        ));
    }
    let (depth, values) = measure(&value);
    if depth > MAX_DEPTH {
        return Err(bad(format!("nested deeper than {MAX_DEPTH} levels")));
    }
    if values > MAX_VALUES {
        return Err(bad(format!("names more than {MAX_VALUES} values")));
    }
    Ok(value)
}

/// (nesting depth, number of values) of a JSON value.
fn measure(value: &Json) -> (usize, usize) {
    let children: Vec<&Json> = match value {
        Json::Object(map) => map.values().collect(),
        Json::Array(items) => items.iter().collect(),
        _ => return (0, 1),
    };
    children
        .into_iter()
        .map(measure)
        .fold((1, 1), |(d, n), (cd, cn)| (d.max(cd + 1), n + cn))
}

/// Adds the condition "the body contains `value`" (`text` is its JSON as given).
pub(crate) fn push_containment(
    c: &mut Conditions,
    backend: DatabaseBackend,
    text: &str,
    value: &Json,
) {
    if backend == DatabaseBackend::Postgres {
        c.push(
            "hookbox_body_json(body) @> CAST(? AS jsonb)",
            text.to_string(),
        );
        return;
    }
    let mut aliases = 0;
    let inner = sqlite_contains(c, "m0", value, &mut aliases);
    // The body wrapped in an array, so that its one element has a type and a value like every
    // element below; a body that is not JSON contains nothing (and is never parsed as JSON).
    c.push_built(format!(
        "(CASE WHEN json_valid(CAST(body AS TEXT))
               THEN EXISTS (SELECT 1 FROM json_each(json_array(json(CAST(body AS TEXT)))) AS m0 WHERE {inner})
               ELSE 0 END)"
    ));
}

/// SQLite: whether the `json_each` row `row` (its `type` and `value`) contains `value`.
fn sqlite_contains(c: &mut Conditions, row: &str, value: &Json, aliases: &mut usize) -> String {
    fn next(aliases: &mut usize) -> String {
        *aliases += 1;
        format!("m{aliases}")
    }
    match value {
        Json::Object(map) => {
            let mut parts = vec![format!("{row}.type = 'object'")];
            for (key, sub) in map {
                let child = next(aliases);
                let key = c.placeholder(key.clone());
                let inner = sqlite_contains(c, &child, sub, aliases);
                parts.push(format!(
                    "EXISTS (SELECT 1 FROM json_each({row}.value) AS {child} WHERE {child}.key = {key} AND {inner})"
                ));
            }
            parts.join(" AND ")
        }
        Json::Array(items) => {
            let mut parts = vec![format!("{row}.type = 'array'")];
            for item in items {
                let child = next(aliases);
                let inner = sqlite_contains(c, &child, item, aliases);
                parts.push(format!(
                    "EXISTS (SELECT 1 FROM json_each({row}.value) AS {child} WHERE {inner})"
                ));
            }
            parts.join(" AND ")
        }
        Json::String(text) => {
            let p = c.placeholder(text.clone());
            format!("({row}.type = 'text' AND {row}.value = {p})")
        }
        Json::Number(n) => {
            let p = match n.as_i64() {
                Some(i) => c.placeholder(i),
                None => c.placeholder(n.as_f64().unwrap_or(f64::NAN)),
            };
            format!("({row}.type IN ('integer', 'real') AND {row}.value = {p})")
        }
        Json::Bool(true) => format!("{row}.type = 'true'"),
        Json::Bool(false) => format!("{row}.type = 'false'"),
        Json::Null => format!("{row}.type = 'null'"),
    }
}

/// The fields of a body an operator can search by from its page: each scalar leaf inside
/// objects (strings, booleans, integers) as (its JSON pointer, the `match` object that finds
/// it), at most `limit`. Leaves inside arrays are left out.
pub fn searchable_fields(body: &Json, limit: usize) -> Vec<(String, String)> {
    fn walk(
        value: &Json,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Json)>,
        limit: usize,
    ) {
        if out.len() >= limit || path.len() > MAX_DEPTH {
            return;
        }
        match value {
            Json::Object(map) => {
                for (key, sub) in map {
                    path.push(key.clone());
                    walk(sub, path, out, limit);
                    path.pop();
                }
            }
            Json::String(_) | Json::Bool(_) if !path.is_empty() => {
                out.push((path.clone(), value.clone()))
            }
            Json::Number(n) if n.is_i64() && !path.is_empty() => {
                out.push((path.clone(), value.clone()))
            }
            _ => {}
        }
    }
    let mut leaves = Vec::new();
    walk(body, &mut Vec::new(), &mut leaves, limit);
    leaves
        .into_iter()
        .map(|(path, leaf)| {
            let pointer: String = path
                .iter()
                .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
                .collect();
            let matcher = path.iter().rev().fold(leaf, |inner, key| {
                let mut map = serde_json::Map::new();
                map.insert(key.clone(), inner);
                Json::Object(map)
            });
            (pointer, matcher.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_match_must_be_a_small_json_object() {
        for (text, why) in [
            ("{\"a\":", "match: not JSON"),
            ("[1]", "match: must be a JSON object"),
            ("\"x\"", "match: must be a JSON object"),
            (&"{\"a\":".repeat(10).to_string(), "match: not JSON"),
        ] {
            match parse_match(text) {
                Err(QueryError::BadFilter(reason)) => {
                    assert!(reason.starts_with(why), "{text}: {reason}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let deep = format!("{}1{}", "{\"a\":".repeat(9), "}".repeat(9));
        assert!(
            matches!(parse_match(&deep), Err(QueryError::BadFilter(r)) if r.contains("deeper"))
        );
        assert!(parse_match(r#"{"customer":{"id":"cus_1"},"tags":["a"]}"#).is_ok());
        // What jsonb refuses is refused here, naming `match`.
        for text in [
            r#"{"a":"\u0000"}"#,
            r#"{"a":10e-16384}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":1e200000}"#,
        ] {
            match parse_match(text) {
                Err(QueryError::BadFilter(reason)) => {
                    assert!(reason.starts_with("match: "), "{text}: {reason}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn each_scalar_field_of_a_body_finds_itself() {
        let body: Json = serde_json::from_str(
            r#"{"id":"evt_1","data":{"customer":"cus_123","paid":true,"n":3,"rate":0.5},"items":[{"sku":"A"}],"a/b":"x"}"#,
        )
        .expect("JSON");
        // Keys in their sorted order (serde_json's map).
        assert_eq!(
            searchable_fields(&body, 10),
            [
                ("/a~1b".to_string(), r#"{"a/b":"x"}"#.to_string()),
                (
                    "/data/customer".to_string(),
                    r#"{"data":{"customer":"cus_123"}}"#.to_string()
                ),
                ("/data/n".to_string(), r#"{"data":{"n":3}}"#.to_string()),
                (
                    "/data/paid".to_string(),
                    r#"{"data":{"paid":true}}"#.to_string()
                ),
                ("/id".to_string(), r#"{"id":"evt_1"}"#.to_string()),
            ]
        );
        assert_eq!(searchable_fields(&body, 2).len(), 2);
    }
}
