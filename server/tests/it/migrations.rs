//! The migrations on an empty database of each backend: all the way up, all the way down and up
//! again, and each one's `down` undoing exactly what its `up` did.

use crate::support::*;
use app::db::Db;
use migration::{Migrator, MigratorTrait};
use sea_orm::DatabaseBackend;

/// Every table the migrations create.
const TABLES: [&str; 27] = [
    "api_tokens",
    "archive_quarter_counts",
    "archive_quarters_counted",
    "audit_log",
    "body_expiry_horizons",
    "cold_archive_horizons",
    "cold_archive_state",
    "feed_consumers",
    "feed_horizon",
    "feed_source_horizons",
    "forward_attempts",
    "forward_deliveries",
    "forward_destinations",
    "handshake_waits",
    "notification_sends",
    "notifications",
    "object_state",
    "problem_states",
    "problems",
    "rejected_requests",
    "sessions",
    "sign_in_failures",
    "sign_in_flows",
    "users",
    "verify_runs",
    "webhook_events",
    "webhook_inbox",
];

/// The tables of the database, sorted, but for the migrator's own (`seaql_migrations`) and the
/// partitions of a table laid out by day.
async fn tables(db: &Db) -> Vec<String> {
    let sql = match db.backend() {
        DatabaseBackend::Postgres => {
            "SELECT relname::text FROM pg_class
             WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')
               AND NOT relispartition AND relname <> 'seaql_migrations'"
        }
        _ => {
            "SELECT name FROM sqlite_master
             WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
               AND name <> 'seaql_migrations'"
        }
    };
    let mut names: Vec<String> = texts(db, sql, vec![])
        .await
        .into_iter()
        .map(|row| row[0].clone().expect("a table name"))
        .collect();
    names.sort();
    names
}

async fn columns(db: &Db, table: &str) -> Vec<String> {
    let sql = match db.backend() {
        DatabaseBackend::Postgres => {
            "SELECT column_name::text FROM information_schema.columns
             WHERE table_schema = 'public' AND table_name = $1"
        }
        _ => "SELECT name FROM pragma_table_info($1)",
    };
    texts(db, sql, vec![table.into()])
        .await
        .into_iter()
        .map(|row| row[0].clone().expect("a column name"))
        .collect()
}

/// The schema as the catalog describes it, one line per column (its type, nullability and
/// default), index and constraint, sorted, but for the migrator's own table and, on PostgreSQL,
/// the partitions of a table laid out by day (their indexes and constraints are the parent's,
/// under names PostgreSQL makes up).
async fn schema(db: &Db) -> Vec<String> {
    let sql = match db.backend() {
        DatabaseBackend::Postgres => {
            "SELECT 'column', table_name::text, concat_ws(' ', column_name, data_type, is_nullable,
                    column_default, is_identity)
             FROM information_schema.columns
             WHERE table_schema = 'public' AND table_name <> 'seaql_migrations'
               AND table_name NOT IN (SELECT relname FROM pg_class WHERE relispartition)
             UNION ALL
             SELECT 'index', tablename::text, indexdef
             FROM pg_indexes
             WHERE schemaname = 'public' AND tablename <> 'seaql_migrations'
               AND tablename NOT IN (SELECT relname FROM pg_class WHERE relispartition)
             UNION ALL
             SELECT 'constraint', conrelid::regclass::text,
                    conname::text || ' ' || pg_get_constraintdef(oid)
             FROM pg_constraint
             WHERE connamespace = 'public'::regnamespace
               AND conrelid::regclass::text <> 'seaql_migrations'
               AND conrelid NOT IN (SELECT oid FROM pg_class WHERE relispartition)
             UNION ALL
             SELECT 'function', p.oid::regprocedure::text,
                    concat_ws(' ', p.provolatile, p.proparallel, p.proisstrict)
             FROM pg_proc p
             WHERE p.pronamespace = 'public'::regnamespace
             ORDER BY 1, 2, 3"
        }
        // SQLite keeps constraints in the table's CREATE statement: it is compared with its
        // white space collapsed, as ALTER TABLE edits that text.
        _ => {
            "SELECT 'column', m.name, p.name || ' ' || p.type || ' ' || p.\"notnull\" || ' '
                    || coalesce(p.dflt_value, '') || ' ' || p.pk
             FROM sqlite_master m JOIN pragma_table_info(m.name) p
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
               AND m.name <> 'seaql_migrations'
             UNION ALL
             SELECT type, tbl_name, sql
             FROM sqlite_master
             WHERE type <> 'table' AND sql IS NOT NULL AND tbl_name <> 'seaql_migrations'
             UNION ALL
             SELECT 'table', name, sql
             FROM sqlite_master
             WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
               AND name <> 'seaql_migrations'
             ORDER BY 1, 2, 3"
        }
    };
    texts(db, sql, vec![])
        .await
        .into_iter()
        .map(|row| {
            let line = row.into_iter().flatten().collect::<Vec<_>>().join(" ");
            line.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// Fails naming the lines of the schema `got` has and `expected` lacks, and the other way round.
fn assert_same_schema(got: &[String], expected: &[String], what: &str) {
    let extra: Vec<_> = got.iter().filter(|l| !expected.contains(l)).collect();
    let missing: Vec<_> = expected.iter().filter(|l| !got.contains(l)).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "{what}: the schema has {extra:#?} too many and lacks {missing:#?}"
    );
}

both_backends!(the_migrations_go_up_all_the_way_down_and_up_again);
async fn the_migrations_go_up_all_the_way_down_and_up_again(backend: Backend) {
    let test_db = empty_db(backend).await;
    let db = &test_db.db;
    assert_eq!(
        tables(db).await,
        Vec::<String>::new(),
        "{backend:?}: an empty database"
    );

    Migrator::up(&db.writer, None).await.expect("up");
    assert_eq!(tables(db).await, TABLES, "{backend:?}: after up");
    assert!(
        columns(db, "webhook_inbox")
            .await
            .contains(&"signed_body_digest".to_string()),
        "{backend:?}: the inbox has its signed-body digest"
    );
    if backend == Backend::Postgres {
        // The archive, its forward deliveries and their attempts are laid out by day: the rows
        // from before, a table for rows of a day without one, yesterday's to a week ahead.
        for table in ["webhook_events", "forward_deliveries", "forward_attempts"] {
            let partitions = texts(
                db,
                "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                 WHERE i.inhparent = CAST($1 AS regclass) ORDER BY 1",
                vec![table.into()],
            )
            .await;
            let days = partitions
                .iter()
                .filter(|row| {
                    row[0]
                        .as_deref()
                        .is_some_and(|name| name.starts_with(&format!("{table}_d2")))
                })
                .count();
            assert_eq!(days, 9, "{table}: {partitions:?}");
            assert_eq!(partitions.len(), 11, "{table}: {partitions:?}");
        }
    }
    let migrated = schema(db).await;

    Migrator::down(&db.writer, None).await.expect("down");
    assert_eq!(
        tables(db).await,
        Vec::<String>::new(),
        "{backend:?}: after down"
    );
    assert_same_schema(&schema(db).await, &[], &format!("{backend:?}: after down"));
    assert_eq!(
        count(db, "SELECT count(*) FROM seaql_migrations").await,
        0,
        "{backend:?}: no migration recorded as applied"
    );

    Migrator::up(&db.writer, None).await.expect("up again");
    assert_eq!(tables(db).await, TABLES, "{backend:?}: after up again");
    assert_same_schema(
        &schema(db).await,
        &migrated,
        &format!("{backend:?}: after up again"),
    );
}

both_backends!(each_migrations_down_undoes_exactly_its_up);
async fn each_migrations_down_undoes_exactly_its_up(backend: Backend) {
    let test_db = empty_db(backend).await;
    let db = &test_db.db;
    let names: Vec<String> = Migrator::migrations()
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    // The schema before each migration, then after the last.
    let mut schemas = vec![schema(db).await];
    for name in &names {
        Migrator::up(&db.writer, Some(1)).await.expect(name);
        let after = schema(db).await;
        // The payload and id search indexes are PostgreSQL's alone (SQLite searches without), and
        // so are the archive's days (SQLite purges row by row).
        let postgres_only = matches!(
            name.as_str(),
            "m20261201_000009_payload_search"
                | "m20261203_000014_id_search"
                | "m20261205_000023_body_doc_not_parallel"
                | "m20261206_000027_day_partitions"
        );
        if backend == Backend::Postgres || !postgres_only {
            assert_ne!(
                Some(&after),
                schemas.last(),
                "{backend:?}: {name} changes the schema"
            );
        }
        schemas.push(after);
    }
    for name in names.iter().rev() {
        schemas.pop();
        Migrator::down(&db.writer, Some(1)).await.expect(name);
        assert_same_schema(
            &schema(db).await,
            schemas.last().expect("the schema before it"),
            &format!("{backend:?}: the down of {name}"),
        );
    }
}
