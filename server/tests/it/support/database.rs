//! Test databases: a fresh PostgreSQL database per test, copied from a template migrated once per
//! cluster, or a SQLite file in a temporary folder; and a PostgreSQL cluster of a test's own.

use super::Backend;
use app::db::Db;
use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx::{self, Connection, PgConnection};
use std::path::Path;
use std::time::Duration;

/// The cluster `.ci/test` started. Tests need it: they are never skipped for want of it.
pub fn cluster_url() -> String {
    std::env::var("HOOKBOX_TEST_DATABASE_URL").expect(
        "HOOKBOX_TEST_DATABASE_URL is unset: run the tests with .ci/test, which starts a PostgreSQL cluster",
    )
}

/// A database that lives as long as the test.
pub struct TestDb {
    pub db: Db,
    pub url: String,
    _dir: Option<tempfile::TempDir>,
}

/// A new, migrated PostgreSQL database in the given cluster: a copy of its template.
pub async fn fresh_postgres(cluster: &str) -> (Db, String) {
    let mut admin = admin_connection(cluster).await;
    let template = migrated_template(&mut admin, cluster).await;
    let name = new_database_name();
    // Nothing connects to the template (it allows no connections), but a copy fails while
    // anything does, so a moment's overlap is waited out rather than failing the test.
    let mut attempts = 0;
    while let Err(err) = execute(
        &mut admin,
        &format!("CREATE DATABASE {name} TEMPLATE {template}"),
    )
    .await
    {
        attempts += 1;
        assert!(
            in_use(&err) && attempts < 100,
            "copy the template {template}: {err}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    admin.close().await.ok();
    let url = database_url(cluster, &name);
    let db = Db::connect(&url)
        .await
        .expect("connect to the fresh database");
    (db, url)
}

/// A new PostgreSQL database without any table, for the tests of the migrations themselves.
pub async fn empty_postgres(cluster: &str) -> (Db, String) {
    let mut admin = admin_connection(cluster).await;
    let name = new_database_name();
    execute(&mut admin, &format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    admin.close().await.ok();
    let url = database_url(cluster, &name);
    let db = Db::connect(&url)
        .await
        .expect("connect to the fresh database");
    (db, url)
}

/// Serialises building a template among the test processes nextest runs at once.
const TEMPLATE_LOCK: i64 = 0x0068_6f6f_6b62_6f78; // "hookbox"

/// The template database of the current migrations in `cluster`, built by the first test that
/// needs it: its name carries a digest of the migrations, so a changed migration gets a new one.
///
/// The first test takes an advisory lock (`pg_advisory_lock`, held by its session), and builds the
/// template under a temporary name; the others wait for the lock and find it built. It is
/// renamed into place only once migrated, and no session may connect to it afterwards.
async fn migrated_template(admin: &mut PgConnection, cluster: &str) -> String {
    let name = template_name();
    if database_exists(admin, &name).await {
        return name;
    }
    execute(admin, &format!("SELECT pg_advisory_lock({TEMPLATE_LOCK})"))
        .await
        .expect("lock the template");
    if !database_exists(admin, &name).await {
        let building = format!("{name}_building");
        // What a test process killed while building left behind.
        execute(
            admin,
            &format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"),
        )
        .await
        .expect("drop an unfinished template");
        execute(admin, &format!("CREATE DATABASE {building}"))
            .await
            .expect("create the template");
        let db = Db::connect(&database_url(cluster, &building))
            .await
            .expect("connect to the template");
        Migrator::up(&db.writer, None)
            .await
            .expect("migrate the template");
        db.writer.close().await.ok();
        db.dashboard.close().await.ok();
        execute(
            admin,
            &format!("ALTER DATABASE {building} WITH ALLOW_CONNECTIONS false"),
        )
        .await
        .expect("close the template to connections");
        // The pools' sessions may take a moment to end; a rename waits for none.
        let mut attempts = 0;
        while let Err(err) = execute(
            admin,
            &format!("ALTER DATABASE {building} RENAME TO {name}"),
        )
        .await
        {
            attempts += 1;
            assert!(in_use(&err) && attempts < 100, "rename the template: {err}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    execute(
        admin,
        &format!("SELECT pg_advisory_unlock({TEMPLATE_LOCK})"),
    )
    .await
    .expect("unlock the template");
    name
}

/// `hookbox_template_` and a digest of the migrations' names and of the migration crate's
/// sources, so a migration edited in place also gets a template of its own.
fn template_name() -> String {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for migration in Migrator::migrations() {
        digest.update(migration.name().as_bytes());
        digest.update([0]);
    }
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migration/src");
    let mut files: Vec<_> = std::fs::read_dir(&sources)
        .expect("the migration sources")
        .map(|entry| entry.expect("a migration source").path())
        .collect();
    files.sort();
    for file in files {
        digest.update(file.file_name().unwrap_or_default().as_encoded_bytes());
        digest.update(std::fs::read(&file).expect("read a migration source"));
    }
    format!("hookbox_template_{}", &hex::encode(digest.finalize())[..16])
}

async fn admin_connection(cluster: &str) -> PgConnection {
    PgConnection::connect(cluster)
        .await
        .expect("connect to the test cluster")
}

async fn execute(admin: &mut PgConnection, sql: &str) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut *admin)
        .await
        .map(|_| ())
}

async fn database_exists(admin: &mut PgConnection, name: &str) -> bool {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(&mut *admin)
        .await
        .expect("look the database up")
}

/// "database … is being accessed by other users" (SQLSTATE 55006, object_in_use).
fn in_use(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "55006")
}

fn new_database_name() -> String {
    format!("t_{:016x}", rand::random::<u64>())
}

/// The URL of database `name` in the cluster of `cluster`.
fn database_url(cluster: &str, name: &str) -> String {
    match cluster.rfind('/') {
        Some(i) => format!("{}/{name}", &cluster[..i]),
        None => panic!("cluster URL {cluster} has no database part"),
    }
}

/// A database for one test, migrated.
pub async fn test_db(backend: Backend) -> TestDb {
    match backend {
        Backend::Postgres => {
            let (db, url) = fresh_postgres(&cluster_url()).await;
            TestDb {
                db,
                url,
                _dir: None,
            }
        }
        Backend::Sqlite => {
            let test_db = empty_db(Backend::Sqlite).await;
            Migrator::up(&test_db.db.writer, None)
                .await
                .expect("migrate");
            test_db
        }
    }
}

/// A database for one test, without any table.
pub async fn empty_db(backend: Backend) -> TestDb {
    match backend {
        Backend::Postgres => {
            let (db, url) = empty_postgres(&cluster_url()).await;
            TestDb {
                db,
                url,
                _dir: None,
            }
        }
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temporary folder");
            let url = format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("hookbox.db").display()
            );
            let db = Db::connect(&url).await.expect("open SQLite");
            TestDb {
                db,
                url,
                _dir: Some(dir),
            }
        }
    }
}

/// A PostgreSQL cluster of the test's own (in /tmp, which the postgres user can reach), so
/// stopping it disturbs no other test; stopped when dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    script: std::path::PathBuf,
}

impl Cluster {
    /// The cluster (its folder named after `prefix`) and a fresh, migrated database in it, with
    /// its URL.
    pub async fn start(prefix: &str) -> (Cluster, Db, String) {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in("/tmp")
            .expect("temporary folder");
        let cluster = Cluster {
            dir,
            script: std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci/pg-cluster"),
        };
        let url = cluster.run("start");
        let (db, url) = fresh_postgres(&url).await;
        (cluster, db, url)
    }

    /// `.ci/pg-cluster ACTION` on this cluster (`stop`, `resume`, …); its output.
    pub fn run(&self, action: &str) -> String {
        let output = std::process::Command::new(&self.script)
            .arg(action)
            .arg(self.dir.path())
            .output()
            .expect("run pg-cluster");
        assert!(
            output.status.success(),
            "pg-cluster {action}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new(&self.script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}
