//! Where PostgreSQL and SQLite differ, in one place: the [`Dialect`] of a connection, the SQL
//! spellings that differ between the two, and statements written with named parameters
//! ([`Named`]) that run the same way on a pooled sqlx connection of either backend and on a
//! SeaORM connection or transaction.
//!
//! What differs, and why it cannot be hidden:
//! - content identity: PostgreSQL compares snapshots as `jsonb` (key order and white space
//!   ignored, numbers by value); SQLite has no such type, so the inbox stores a canonical form
//!   and compares that ([`Dialect::compares_canonical`]);
//! - data-modifying `WITH`: PostgreSQL runs a delivery as one statement, SQLite as one script
//!   whose steps hand results on through a temporary table (`ingest::write`);
//! - the pools: SQLite has a single writer connection, so dashboard writes queue on it
//!   (`Db::dashboard_writer`) where PostgreSQL gives the dashboard a pool of its own;
//! - wake-ups: PostgreSQL has `LISTEN`/`NOTIFY` between processes; SQLite is one process, woken
//!   in memory;
//! - casts, byte lengths, lock clauses, JSON projections and Unix times: the spellings below.
//!
//! A backend branch anywhere else carries a comment saying why it cannot live here.

use chrono::{DateTime, Utc};
use sea_orm::sqlx::{self, Row};
use sea_orm::{DatabaseBackend, DbErr, RuntimeErr, Statement, Value};
use std::sync::Arc;

/// The SQL dialect of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Sqlite,
}

impl Dialect {
    pub fn of(backend: DatabaseBackend) -> Dialect {
        match backend {
            DatabaseBackend::Postgres => Dialect::Postgres,
            // SeaORM's MySQL is not built; everything else is the embedded file.
            _ => Dialect::Sqlite,
        }
    }

    pub fn backend(self) -> DatabaseBackend {
        match self {
            Dialect::Postgres => DatabaseBackend::Postgres,
            Dialect::Sqlite => DatabaseBackend::Sqlite,
        }
    }

    /// Whether snapshots are compared through their stored canonical text (SQLite) rather than
    /// as `jsonb` (PostgreSQL).
    pub fn compares_canonical(self) -> bool {
        self == Dialect::Sqlite
    }

    /// A JSON value from bound text: `CAST(… AS jsonb)` on PostgreSQL, the text itself on SQLite
    /// (whose JSON functions read text).
    pub fn json(self, expression: &str) -> String {
        match self {
            Dialect::Postgres => format!("CAST({expression} AS jsonb)"),
            Dialect::Sqlite => expression.to_string(),
        }
    }

    /// A stored JSON column read back as text.
    pub fn json_text(self, column: &str) -> String {
        match self {
            Dialect::Postgres => format!("{column}::text"),
            Dialect::Sqlite => column.to_string(),
        }
    }

    /// The elements of a JSON array of strings (bound as text), as rows of one column `value`.
    pub fn json_strings(self, expression: &str) -> String {
        match self {
            Dialect::Postgres => {
                format!("jsonb_array_elements_text(CAST({expression} AS jsonb)) AS d(value)")
            }
            Dialect::Sqlite => format!("json_each({expression}) AS d"),
        }
    }

    /// The length in bytes of a `bytea` / `BLOB` value, as a 64-bit integer.
    pub fn byte_length(self, expression: &str) -> String {
        match self {
            Dialect::Postgres => format!("octet_length({expression})::bigint"),
            Dialect::Sqlite => format!("length({expression})"),
        }
    }

    /// The length in bytes (not characters) of a text value.
    pub fn text_bytes(self, expression: &str) -> String {
        match self {
            Dialect::Postgres => format!("octet_length({expression})"),
            Dialect::Sqlite => format!("length(CAST({expression} AS BLOB))"),
        }
    }

    /// An empty byte string.
    pub fn empty_bytes(self) -> &'static str {
        match self {
            Dialect::Postgres => "''::bytea",
            Dialect::Sqlite => "X''",
        }
    }

    /// "Differs, null included" (`IS DISTINCT FROM` / SQLite's `IS NOT`).
    pub fn is_distinct(self, left: &str, right: &str) -> String {
        match self {
            Dialect::Postgres => format!("{left} IS DISTINCT FROM {right}"),
            Dialect::Sqlite => format!("{left} IS NOT {right}"),
        }
    }

    /// "Equal, null included" (`IS NOT DISTINCT FROM` / SQLite's `IS`).
    pub fn is_same(self, left: &str, right: &str) -> String {
        match self {
            Dialect::Postgres => format!("{left} IS NOT DISTINCT FROM {right}"),
            Dialect::Sqlite => format!("{left} IS {right}"),
        }
    }

    /// A correlated subquery joined to every row of the left side: `LEFT JOIN LATERAL (…) ON
    /// true` on PostgreSQL; SQLite's joins to subqueries see the outer row without the word.
    pub fn left_join_lateral(self, subquery: &str, alias: &str) -> String {
        match self {
            Dialect::Postgres => format!("LEFT JOIN LATERAL ({subquery}) AS {alias} ON true"),
            Dialect::Sqlite => format!("LEFT JOIN ({subquery}) AS {alias} ON 1"),
        }
    }

    /// A condition that takes a transaction-scoped lock on `key` (text) without waiting, true when
    /// it was taken: PostgreSQL's `pg_try_advisory_xact_lock`. On SQLite the one writer already
    /// serialises every transaction, so it is always true.
    pub fn try_lock_key(self, key: &str) -> String {
        match self {
            Dialect::Postgres => format!("pg_try_advisory_xact_lock(hashtextextended({key}, 0))"),
            Dialect::Sqlite => "1".to_string(),
        }
    }

    /// A statement that takes a transaction-scoped lock on `key` (text), waiting for it:
    /// PostgreSQL's `pg_advisory_xact_lock`, so a count and the insert it allows run in turn.
    /// `None` on SQLite, whose one writer already serialises every transaction.
    pub fn lock_key(self, key: &str) -> Option<String> {
        match self {
            Dialect::Postgres => Some(format!(
                "SELECT pg_advisory_xact_lock(hashtextextended({key}, 0))"
            )),
            Dialect::Sqlite => None,
        }
    }

    /// `IN` a list of ids bound as one text parameter (see [`Dialect::id_list`]), so a
    /// statement's text, and its prepared plan, is the same whatever the list's length.
    pub fn among_ids(self, parameter: &str) -> String {
        match self {
            Dialect::Postgres => format!("= ANY(CAST({parameter} AS TEXT)::bigint[])"),
            Dialect::Sqlite => format!("IN (SELECT value FROM json_each({parameter}))"),
        }
    }

    /// The text of a list of ids for [`Dialect::among_ids`]: an array literal on PostgreSQL,
    /// a JSON array on SQLite.
    pub fn id_list(self, ids: &[i64]) -> String {
        let joined = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        match self {
            Dialect::Postgres => format!("{{{joined}}}"),
            Dialect::Sqlite => format!("[{joined}]"),
        }
    }

    /// The clause that locks the selected rows against other writers until commit, skipping the
    /// rows another transaction holds (`FOR UPDATE SKIP LOCKED`). SQLite's one writer holds
    /// the whole database already: nothing to add.
    pub fn lock_skipping_locked(self) -> &'static str {
        match self {
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        }
    }

    /// The clause that locks the selected rows against other writers until commit, waiting for
    /// a row another transaction holds (`FOR UPDATE`); nothing on SQLite, as above.
    pub fn lock_for_update(self) -> &'static str {
        match self {
            Dialect::Postgres => " FOR UPDATE",
            Dialect::Sqlite => "",
        }
    }

    /// The clause that keeps the selected rows from being changed until commit while other
    /// transactions share them, and waits for one changing them (`FOR SHARE`); nothing on
    /// SQLite, whose one writer serialises every transaction.
    pub fn lock_for_share(self) -> &'static str {
        match self {
            Dialect::Postgres => " FOR SHARE",
            Dialect::Sqlite => "",
        }
    }

    /// The clause that keeps the selected rows from being deleted (or their key changed) until
    /// commit, and waits for a transaction deleting them (`FOR KEY SHARE`); nothing on SQLite,
    /// whose one writer serialises every transaction.
    pub fn lock_key_share(self) -> &'static str {
        match self {
            Dialect::Postgres => " FOR KEY SHARE",
            Dialect::Sqlite => "",
        }
    }

    /// The assignments that drop an archive row's body and headers when they expire: null on
    /// PostgreSQL; on SQLite, whose columns stay `NOT NULL`, an empty body and `{}`. Readers go
    /// by `body_expired_at` on both.
    pub fn expired_body(self) -> String {
        let (body, headers) = self.expired_values();
        format!("body = {body}, headers = {headers}")
    }

    /// What an expired row holds as its body and its headers (see [`Dialect::expired_body`]).
    pub fn expired_values(self) -> (&'static str, &'static str) {
        match self {
            Dialect::Postgres => ("NULL", "NULL"),
            Dialect::Sqlite => ("X''", "'{}'"),
        }
    }

    /// The archive's size on disk in bytes (`bytes`): PostgreSQL, `webhook_events` (every table
    /// of its days) with its indexes and TOAST; SQLite, which keeps no size per table without a build option, the
    /// database file's pages.
    pub fn archive_size(self) -> &'static str {
        match self {
            Dialect::Postgres => {
                "SELECT CAST(sum(pg_total_relation_size(relid)) AS bigint) AS bytes
                 FROM pg_partition_tree('webhook_events')"
            }
            Dialect::Sqlite => {
                "SELECT p.page_count * s.page_size AS bytes FROM pragma_page_count() AS p, pragma_page_size() AS s"
            }
        }
    }

    /// ` AND {column}` within the day `day` (a day number, `db::days`): on PostgreSQL ids carry
    /// their day, and the bound keeps a statement to that day's table; SQLite's ids are a plain
    /// sequence, and the bound is left out.
    pub fn ids_of_day(self, column: &str, day: &str) -> String {
        match self {
            Dialect::Postgres => format!(
                " AND {column} >= {day} * {per_day} AND {column} < ({day} + 1) * {per_day}",
                per_day = 1_i64 << crate::db::days::DAY_BITS
            ),
            Dialect::Sqlite => String::new(),
        }
    }

    /// A new id of the day of `at` from the sequence `sequence` (`db::days`): PostgreSQL's ids
    /// carry their day; SQLite's are the table's own sequence (none here).
    pub fn new_day_id(self, sequence: &str, at: &str) -> Option<String> {
        match self {
            Dialect::Postgres => Some(format!(
                "(({day}) << {bits}) | (nextval('{sequence}') & {mask})",
                day = self.day_number(at),
                bits = crate::db::days::DAY_BITS,
                mask = (1_i64 << crate::db::days::DAY_BITS) - 1
            )),
            Dialect::Sqlite => None,
        }
    }

    /// The day number (days since 1970-01-01, UTC, `db::days`) of the stored time `column`.
    pub fn day_number(self, column: &str) -> String {
        match self {
            Dialect::Postgres => {
                format!("CAST(floor(extract(epoch FROM {column}) / 86400) AS bigint)")
            }
            Dialect::Sqlite => format!("CAST(strftime('%s', {column}) AS INTEGER) / 86400"),
        }
    }

    /// The pull feed's visibility horizon, as a 64-bit integer: only archive rows whose
    /// `feed_tx` is below it are served. PostgreSQL: the oldest transaction still running (the
    /// snapshot's xmin), so a row whose transaction commits later always sorts after every row
    /// served (PgQ's rule). SQLite: no bound, as one writer at a time makes id order commit order.
    pub fn feed_horizon(self) -> &'static str {
        match self {
            Dialect::Postgres => {
                "CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint)"
            }
            Dialect::Sqlite => "9223372036854775807",
        }
    }

    /// The start, in Unix seconds (a 64-bit integer), of the `seconds`-long period the stored
    /// time `column` falls in: `period_start("received_at", 900)` is its quarter hour.
    pub fn period_start(self, column: &str, seconds: i64) -> String {
        let unix = match self {
            Dialect::Postgres => format!("CAST(floor(extract(epoch FROM {column})) AS bigint)"),
            Dialect::Sqlite => format!("CAST(strftime('%s', {column}) AS INTEGER)"),
        };
        format!("({unix} / {seconds}) * {seconds}")
    }
}

/// A database error from sqlx, as SeaORM reports one.
pub fn db_err(error: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(error)))
}

/// One bound value.
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Bytes(Option<&'a [u8]>),
    Time(Option<DateTime<Utc>>),
    Bool(bool),
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(value: &'a str) -> Self {
        Param::Text(Some(value))
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(value: Option<&'a str>) -> Self {
        Param::Text(value)
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(value: Option<i64>) -> Self {
        Param::Int(value)
    }
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Param::Int(Some(value))
    }
}

impl<'a> From<&'a [u8]> for Param<'a> {
    fn from(value: &'a [u8]) -> Self {
        Param::Bytes(Some(value))
    }
}

impl<'a> From<Option<&'a [u8]>> for Param<'a> {
    fn from(value: Option<&'a [u8]>) -> Self {
        Param::Bytes(value)
    }
}

impl From<DateTime<Utc>> for Param<'_> {
    fn from(value: DateTime<Utc>) -> Self {
        Param::Time(Some(value))
    }
}

impl From<Option<DateTime<Utc>>> for Param<'_> {
    fn from(value: Option<DateTime<Utc>>) -> Self {
        Param::Time(value)
    }
}

impl From<bool> for Param<'_> {
    fn from(value: bool) -> Self {
        Param::Bool(value)
    }
}

impl Param<'_> {
    fn value(self) -> Value {
        match self {
            Param::Text(v) => v.map(str::to_owned).into(),
            Param::Int(v) => v.into(),
            Param::Bytes(v) => Value::Bytes(v.map(<[u8]>::to_vec)),
            Param::Time(v) => v.into(),
            Param::Bool(v) => v.into(),
        }
    }
}

/// What a statement's named parameters are bound to: `None` for a name it does not know.
pub trait Binds {
    fn param(&self, name: &str) -> Option<Param<'_>>;
}

/// A statement written with named parameters (`:name`, a letter or `_` then letters, digits
/// and `_`), compiled once to the positional form both backends read (`$1`, `$2` …; every use
/// of a name is the same position). A `::` cast and text inside quotes are left alone.
#[derive(Debug, Clone)]
pub struct Named {
    sql: String,
    names: Vec<String>,
}

impl Named {
    pub fn new(template: &str) -> Named {
        let mut sql = String::with_capacity(template.len());
        let mut names: Vec<String> = Vec::new();
        let bytes = template.as_bytes();
        let mut quoted = false;
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            if c == b'\'' {
                quoted = !quoted;
            }
            let starts_name = !quoted
                && c == b':'
                && bytes
                    .get(i + 1)
                    .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_')
                && (i == 0 || bytes[i - 1] != b':');
            if !starts_name {
                // Copy the whole character (the template may hold non-ASCII text).
                let width = template[i..].chars().next().map_or(1, char::len_utf8);
                sql.push_str(&template[i..i + width]);
                i += width;
                continue;
            }
            let start = i + 1;
            let mut end = start;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            let name = &template[start..end];
            let position = match names.iter().position(|n| n == name) {
                Some(p) => p + 1,
                None => {
                    names.push(name.to_string());
                    names.len()
                }
            };
            sql.push('$');
            sql.push_str(&position.to_string());
            i = end;
        }
        Named { sql, names }
    }

    /// The positional SQL.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The parameter names, in position order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    fn params<'b, B: Binds + ?Sized>(&self, binds: &'b B) -> Result<Vec<Param<'b>>, DbErr> {
        self.names
            .iter()
            .map(|name| {
                binds.param(name).ok_or_else(|| {
                    DbErr::Custom(format!("the statement's parameter :{name} is not bound"))
                })
            })
            .collect()
    }

    /// A SeaORM statement (any connection or transaction).
    pub fn statement<B: Binds + ?Sized>(
        &self,
        dialect: Dialect,
        binds: &B,
    ) -> Result<Statement, DbErr> {
        let values: Vec<Value> = self.params(binds)?.into_iter().map(Param::value).collect();
        Ok(crate::db::statement(
            dialect.backend(),
            self.sql.as_str(),
            values,
        ))
    }

    /// A sqlx query on PostgreSQL (sqlx runs only statements that live for the whole program:
    /// the write path's are built once).
    pub fn postgres<'q, B: Binds + ?Sized>(
        &'static self,
        binds: &'q B,
    ) -> Result<sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>, DbErr> {
        let mut query = sqlx::query(self.sql.as_str());
        for param in self.params(binds)? {
            query = match param {
                Param::Text(v) => query.bind(v),
                Param::Int(v) => query.bind(v),
                Param::Bytes(v) => query.bind(v),
                Param::Time(v) => query.bind(v),
                Param::Bool(v) => query.bind(v),
            };
        }
        Ok(query)
    }

    /// A sqlx query on SQLite.
    pub fn sqlite<'q, B: Binds + ?Sized>(
        &'static self,
        binds: &'q B,
    ) -> Result<sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>, DbErr> {
        let mut query = sqlx::query(self.sql.as_str());
        for param in self.params(binds)? {
            query = match param {
                Param::Text(v) => query.bind(v),
                Param::Int(v) => query.bind(v),
                Param::Bytes(v) => query.bind(v),
                Param::Time(v) => query.bind(v),
                Param::Bool(v) => query.bind(v),
            };
        }
        Ok(query)
    }
}

/// A returned row read by column name, whichever way the statement ran.
pub trait Fields {
    fn int(&self, column: &str) -> Result<Option<i64>, DbErr>;
    fn text(&self, column: &str) -> Result<Option<String>, DbErr>;
    fn flag(&self, column: &str) -> Result<Option<bool>, DbErr>;
}

impl Fields for sqlx::postgres::PgRow {
    fn int(&self, column: &str) -> Result<Option<i64>, DbErr> {
        self.try_get(column).map_err(db_err)
    }
    fn text(&self, column: &str) -> Result<Option<String>, DbErr> {
        self.try_get(column).map_err(db_err)
    }
    fn flag(&self, column: &str) -> Result<Option<bool>, DbErr> {
        self.try_get(column).map_err(db_err)
    }
}

impl Fields for sqlx::sqlite::SqliteRow {
    fn int(&self, column: &str) -> Result<Option<i64>, DbErr> {
        self.try_get(column).map_err(db_err)
    }
    fn text(&self, column: &str) -> Result<Option<String>, DbErr> {
        self.try_get(column).map_err(db_err)
    }
    fn flag(&self, column: &str) -> Result<Option<bool>, DbErr> {
        self.try_get(column).map_err(db_err)
    }
}

impl Fields for sea_orm::QueryResult {
    fn int(&self, column: &str) -> Result<Option<i64>, DbErr> {
        self.try_get("", column)
    }
    fn text(&self, column: &str) -> Result<Option<String>, DbErr> {
        self.try_get("", column)
    }
    fn flag(&self, column: &str) -> Result<Option<bool>, DbErr> {
        self.try_get("", column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_parameters_become_positions_in_order_of_first_use() {
        let named = Named::new(
            "SELECT :a, :b::jsonb, CAST(:a AS text), ':not_a_name', x::int, :b_2 FROM t",
        );
        assert_eq!(
            named.sql(),
            "SELECT $1, $2::jsonb, CAST($1 AS text), ':not_a_name', x::int, $3 FROM t"
        );
        assert_eq!(named.names(), ["a", "b", "b_2"]);
    }

    struct One;
    impl Binds for One {
        fn param(&self, name: &str) -> Option<Param<'_>> {
            (name == "known").then_some(Param::Int(Some(1)))
        }
    }

    #[test]
    fn a_parameter_nothing_binds_is_an_error_naming_it() {
        let error = Named::new("SELECT :known, :unknown")
            .statement(Dialect::Sqlite, &One)
            .expect_err("unbound");
        assert!(error.to_string().contains(":unknown"), "{error}");
    }
}
