//! The SQLite ceiling of the ingest benchmark (`.ci/bench-sqlite`): hookbox's delivery
//! transaction run directly against a migrated SQLite file, with no HTTP, no signature and no
//! envelope parsing. It is to `.ci/bench-sqlite` what pgbench is to `.ci/bench`.
//!
//! One transaction is one new revision of a random object: `BEGIN`, the claim into
//! `webhook_inbox`, the projection upsert into `object_state`, the archive insert into
//! `webhook_events`, `COMMIT`, as three plain statements (below: the steps of hookbox's SQLite
//! script, `app/src/ingest/write.rs`, without its temporary table), and the pool is `app::db::Db::connect`'s (WAL,
//! `synchronous = NORMAL`, the 10 s busy timeout, foreign keys, `HOOKBOX_DB_POOL_SIZE` or 8
//! connections), so only the layers above the database differ from hookbox. Event ids are unique
//! (task and a per-task counter); each task owns its share of the objects, as each connection of
//! `ingest_load` does, and its revisions increase, so every transaction applies.
//!
//! `--layer sqlx` (the ceiling) sends the statements through the pool's sqlx connections;
//! `--layer sea-orm` sends them as hookbox does, through sea-orm's transaction and raw statements.
//!
//! ```sh
//! hookbox migrate   # with DATABASE_URL=sqlite:///tmp/ceiling.db?mode=rwc
//! cargo run --release --example sqlite_ceiling -p server -- \
//!     --database-url 'sqlite:///tmp/ceiling.db?mode=rwc' --connections 32 --duration 20
//! ```
//!
//! The last line is machine-readable (`RESULT key=value ...`); the exit status is 1 when a
//! transaction failed or did not apply.

use anyhow::Context;
use app::db::Db;
use app::envelope::{Mapping, parse_envelope};
use chrono::Utc;
use clap::{Parser, ValueEnum};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sea_orm::sqlx::{self, SqlitePool};
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement, TransactionTrait, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The ceiling's transaction: the claim, the projection and the archive row of an applied
/// delivery, each a plain statement.
mod sql {
    pub struct Sql {
        pub claim: &'static str,
        pub advance_projection: &'static str,
        pub archive: &'static str,
    }

    const SQLITE: Sql = Sql {
        claim: "INSERT INTO webhook_inbox (source, event_id, object_id, revision, snapshot, received_at, signed_body_digest, snapshot_canonical)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT DO NOTHING
            RETURNING event_id",
        advance_projection: "INSERT INTO object_state AS cur (source, object_id, revision, snapshot, updated_at)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (source, object_id) DO UPDATE
               SET revision = excluded.revision, snapshot = excluded.snapshot, updated_at = excluded.updated_at
             WHERE cur.revision < excluded.revision
            RETURNING revision",
        archive: "INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status, outcome,
                  error_message, headers, body, received_at, replay_of, replayed_by)
              VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
              RETURNING id",
    };

    impl Sql {
        pub fn for_backend(_: sea_orm::DatabaseBackend) -> &'static Sql {
            &SQLITE
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Layer {
    /// The pool's sqlx connections: the database and its driver only.
    Sqlx,
    /// sea-orm's transaction and raw statements, as `app::ingest` sends them.
    SeaOrm,
}

#[derive(Parser)]
#[command(about = "Run hookbox's ingest transaction directly against a SQLite file")]
struct Args {
    /// A migrated SQLite database, e.g. sqlite:///tmp/ceiling.db?mode=rwc.
    #[arg(long)]
    database_url: String,
    /// Concurrent tasks, one transaction in flight on each (they share the pool).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 20)]
    duration: u64,
    /// Objects, shared out among the tasks.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    #[arg(long, value_enum, default_value_t = Layer::Sqlx)]
    layer: Layer,
}

/// The constant parts of a delivery, as hookbox would store them for a small order.
struct Fixture {
    snapshot: String,
    canonical: String,
    headers_json: String,
    body: Vec<u8>,
}

impl Fixture {
    fn new() -> anyhow::Result<Fixture> {
        let body = serde_json::json!({
            "event_id": "order-42-r12",
            "object_id": "order-42",
            "revision": 12,
            "type": "order.updated",
            "snapshot": {
                "status": "paid", "amount": 1234, "currency": "EUR", "customer": "cus-42",
                "items": [{"sku": "A-100", "qty": 1}, {"sku": "B-200", "qty": 3}],
            }
        })
        .to_string()
        .into_bytes();
        // The snapshot and its canonical form exactly as hookbox's envelope parser gives them.
        let envelope = parse_envelope(
            &Mapping::snapshot_envelope(),
            &http::HeaderMap::new(),
            &body,
        )
        .map_err(|e| anyhow::anyhow!("fixture envelope: {}", e.reason))?;
        let snapshot = envelope.snapshot.context("fixture snapshot")?;
        let headers_json = serde_json::json!({
            "host": "127.0.0.1:3000",
            "accept": "*/*",
            "content-type": "application/json",
            "content-length": body.len().to_string(),
            "x-hookbox-signature": "t=1764460800,v1=ce7c8ae9028c255f3569f6bc3149d2ee7025705423b340b062ceba8081df3f7f",
        })
        .to_string();
        Ok(Fixture {
            canonical: snapshot.canonical().to_string(),
            snapshot: snapshot.raw,
            headers_json,
            body,
        })
    }
}

/// One delivery's variable parts.
struct Delivery {
    event_id: String,
    object_id: String,
    revision: i64,
}

/// Claim, projection, archive, commit: the `applied` path of `app::ingest::apply_in`, on sqlx.
async fn via_sqlx(pool: &SqlitePool, f: &Fixture, d: &Delivery) -> anyhow::Result<()> {
    let sql = sql::Sql::for_backend(DatabaseBackend::Sqlite);
    let now = Utc::now();
    let mut txn = pool.begin().await?;
    let claimed = sqlx::query(sql.claim)
        .bind("bench")
        .bind(&d.event_id)
        .bind(&d.object_id)
        .bind(d.revision)
        .bind(&f.snapshot)
        .bind(now)
        .bind(None::<Vec<u8>>)
        .bind(&f.canonical)
        .fetch_optional(&mut *txn)
        .await?;
    anyhow::ensure!(claimed.is_some(), "{} was not claimed", d.event_id);
    let advanced = sqlx::query(sql.advance_projection)
        .bind("bench")
        .bind(&d.object_id)
        .bind(d.revision)
        .bind(&f.snapshot)
        .bind(now)
        .fetch_optional(&mut *txn)
        .await?;
    anyhow::ensure!(advanced.is_some(), "{} did not advance", d.event_id);
    sqlx::query(sql.archive)
        .bind("bench")
        .bind(&d.event_id)
        .bind(&d.object_id)
        .bind(d.revision)
        .bind("order.updated")
        .bind("processed")
        .bind("applied")
        .bind(None::<String>)
        .bind(&f.headers_json)
        .bind(&f.body)
        .bind(now)
        .bind(None::<i64>)
        .bind(None::<String>)
        .fetch_one(&mut *txn)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// The same transaction through sea-orm, with the values hookbox binds.
async fn via_sea_orm(db: &Db, f: &Fixture, d: &Delivery) -> anyhow::Result<()> {
    let sql = sql::Sql::for_backend(DatabaseBackend::Sqlite);
    let statement =
        |text: &str, values| Statement::from_sql_and_values(DatabaseBackend::Sqlite, text, values);
    let now = Utc::now();
    let txn = db.dashboard.begin().await?;
    let claimed = txn
        .query_one_raw(statement(
            sql.claim,
            vec![
                "bench".into(),
                d.event_id.as_str().into(),
                Some(d.object_id.as_str()).into(),
                Some(d.revision).into(),
                Some(f.snapshot.as_str()).into(),
                now.into(),
                Value::Bytes(None),
                Some(f.canonical.as_str()).into(),
            ],
        ))
        .await?;
    anyhow::ensure!(claimed.is_some(), "{} was not claimed", d.event_id);
    let advanced = txn
        .query_one_raw(statement(
            sql.advance_projection,
            vec![
                "bench".into(),
                d.object_id.as_str().into(),
                d.revision.into(),
                f.snapshot.as_str().into(),
                now.into(),
            ],
        ))
        .await?;
    anyhow::ensure!(advanced.is_some(), "{} did not advance", d.event_id);
    let archived = txn
        .query_one_raw(statement(
            sql.archive,
            vec![
                "bench".into(),
                Some(d.event_id.as_str()).into(),
                Some(d.object_id.as_str()).into(),
                Some(d.revision).into(),
                Some("order.updated").into(),
                "processed".into(),
                "applied".into(),
                None::<String>.into(),
                f.headers_json.as_str().into(),
                Value::Bytes(Some(f.body.clone())),
                now.into(),
                None::<i64>.into(),
                None::<&str>.into(),
            ],
        ))
        .await?;
    anyhow::ensure!(archived.is_some(), "{} was not archived", d.event_id);
    txn.commit().await?;
    Ok(())
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    failed: u64,
    examples: Vec<String>,
}

async fn drive(
    task: usize,
    args: Arc<Args>,
    db: Db,
    fixture: Arc<Fixture>,
    deadline: Instant,
) -> Tally {
    let pool = db.dashboard.get_sqlite_connection_pool().clone();
    let mut rng = StdRng::seed_from_u64(task as u64);
    let mut tally = Tally::default();
    let mut counter: i64 = 0;
    while Instant::now() < deadline {
        counter += 1;
        // The task's own objects: task, task + tasks, task + 2 × tasks, ... below --objects.
        let owned = (args.objects - task).div_ceil(args.connections);
        let object = task + args.connections * rng.random_range(0..owned);
        let delivery = Delivery {
            event_id: format!("ceil-{task}-{counter}"),
            object_id: format!("order-{object}"),
            revision: counter,
        };
        let started = Instant::now();
        let done = match args.layer {
            Layer::Sqlx => via_sqlx(&pool, &fixture, &delivery).await,
            Layer::SeaOrm => via_sea_orm(&db, &fixture, &delivery).await,
        };
        match done {
            Ok(()) => tally
                .latencies_us
                .push(started.elapsed().as_micros() as u64),
            Err(e) => {
                tally.failed += 1;
                if tally.examples.len() < 5 {
                    tally.examples.push(format!("{e:#}"));
                }
            }
        }
    }
    tally
}

fn percentile_ms(sorted_us: &[u64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    sorted_us[rank.clamp(1, sorted_us.len()) - 1] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Arc::new(Args::parse());
    anyhow::ensure!(args.connections > 0, "--connections must be at least 1");
    anyhow::ensure!(
        args.objects >= args.connections,
        "--objects must be at least --connections"
    );
    anyhow::ensure!(
        args.database_url.starts_with("sqlite:"),
        "--database-url must be a sqlite: URL"
    );
    let db = Db::connect(&args.database_url)
        .await
        .context("open the database")?;
    let fixture = Arc::new(Fixture::new()?);
    // What the pool's connections run with, for the report.
    let (version, journal_mode, synchronous, busy_timeout_ms): (String, String, i64, i64) =
        sqlx::query_as(
            "SELECT sqlite_version(), (SELECT journal_mode FROM pragma_journal_mode),
                    (SELECT synchronous FROM pragma_synchronous), (SELECT timeout FROM pragma_busy_timeout)",
        )
        .fetch_one(db.dashboard.get_sqlite_connection_pool())
        .await
        .context("read the connection settings")?;
    let settings = format!(
        "sqlite_version={version} journal_mode={journal_mode} synchronous={synchronous} busy_timeout_ms={busy_timeout_ms}"
    );
    let layer = match args.layer {
        Layer::Sqlx => "sqlx",
        Layer::SeaOrm => "sea-orm",
    };
    let pool_size = db
        .dashboard
        .get_sqlite_connection_pool()
        .options()
        .get_max_connections();
    println!(
        "sqlite_ceiling: {} tasks, {} s, {} objects, layer {layer}, pool of {pool_size}, {}; {settings}",
        args.connections, args.duration, args.objects, args.database_url
    );

    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration);
    let workers: Vec<_> = (0..args.connections)
        .map(|task| {
            tokio::spawn(drive(
                task,
                args.clone(),
                db.clone(),
                fixture.clone(),
                deadline,
            ))
        })
        .collect();
    let mut tally = Tally::default();
    for worker in workers {
        let t = worker.await?;
        tally.latencies_us.extend(t.latencies_us);
        tally.failed += t.failed;
        tally.examples.extend(t.examples);
    }
    let elapsed = started.elapsed().as_secs_f64();
    db.dashboard.close().await?;

    tally.latencies_us.sort_unstable();
    let committed = tally.latencies_us.len() as u64;
    let rate = committed as f64 / elapsed;
    let p50 = percentile_ms(&tally.latencies_us, 50.0);
    let p99 = percentile_ms(&tally.latencies_us, 99.0);
    println!("committed       {committed} in {elapsed:.1} s = {rate:.1} transactions/s");
    println!("latency         p50 {p50:.2} ms, p99 {p99:.2} ms");
    println!("failed          {}", tally.failed);
    for example in tally.examples.iter().take(5) {
        println!("  e.g. {example}");
    }
    println!(
        "RESULT rate={rate:.1} p50_ms={p50:.2} p99_ms={p99:.2} committed={committed} failed={} pool={pool_size} {settings}",
        tally.failed
    );
    if tally.failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
