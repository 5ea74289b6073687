//! Test harness: a fresh database per test (PostgreSQL from the cluster `.ci/test` starts, or a
//! SQLite file in a temporary folder) and the real server on a random port.
//!
//! A PostgreSQL test database is a copy of a template migrated once per cluster
//! ([`migrated_template`]), so no test waits for every migration to run.
#![allow(dead_code, clippy::unwrap_used)]

pub mod binary;
pub use binary::Binary;

use app::config::Config;
use app::db::Db;
use app::schemes::Scheme;
use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx::{self, Connection, PgConnection};
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement, Value};
use serde_json::Value as Json;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// `both_backends!(name);` over `async fn name(backend: Backend)` makes it two tests,
/// `name::postgres` and `name::sqlite`, so a failure names the backend it happened on.
macro_rules! both_backends {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn postgres() {
                super::$name($crate::support::Backend::Postgres).await;
            }

            #[tokio::test]
            async fn sqlite() {
                super::$name($crate::support::Backend::Sqlite).await;
            }
        }
    };
}
pub(crate) use both_backends;

pub const SHOP_SECRET: &str = "shop-secret-current";
pub const SHOP_SECRET_OLD: &str = "shop-secret-previous";
/// `whsec_` + base64("standard-webhooks-test-key!")
pub const SW_SECRET: &str = "whsec_c3RhbmRhcmQtd2ViaG9va3MtdGVzdC1rZXkh";

/// The sources every test server has.
pub const CONFIG: &str = r#"
[server]
max_body_bytes = 65536

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET", "SHOP_SECRET_OLD"]

[[sources]]
name = "sw"
scheme = "standard-webhooks"
secrets_env = ["SW_SECRET"]

[[sources]]
name = "gh"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
mode = "dedup"
event_id = "header:X-Delivery-Id"
object_id = "/repository/id"
event_type = "header:X-Event"

[[sources]]
name = "limited"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
rate_limit_per_sec = 2
"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// `whsec_` + base64("destination-key"): the secret of the test destinations.
pub const DESTINATION_SECRET: &str = "whsec_ZGVzdGluYXRpb24ta2V5";

/// The environment the test configurations read their secrets from.
pub fn test_env(name: &str) -> Option<String> {
    match name {
        "SHOP_SECRET" => Some(SHOP_SECRET.to_string()),
        "SHOP_SECRET_OLD" => Some(SHOP_SECRET_OLD.to_string()),
        "SW_SECRET" => Some(SW_SECRET.to_string()),
        "DESTINATION_SECRET" => Some(DESTINATION_SECRET.to_string()),
        _ => None,
    }
}

pub fn test_config() -> Config {
    Config::parse(CONFIG, Path::new("test.toml"), &test_env).expect("test config is valid")
}

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
        db.conn.close().await.ok();
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

/// The real server on a random port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub db: Db,
    pub client: reqwest::Client,
    pub test_db: Option<TestDb>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

pub async fn spawn_app(backend: Backend) -> TestApp {
    let test_db = test_db(backend).await;
    let mut app = spawn_app_on(test_db.db.clone()).await;
    app.test_db = Some(test_db);
    app
}

pub async fn spawn_app_on(db: Db) -> TestApp {
    serve_on(db, test_config()).await
}

/// The real server on a random port over `db` with `config`.
async fn serve_on(db: Db, config: Config) -> TestApp {
    serve_with_state(db, config, |_| {}).await
}

/// The real server on a fresh database, its state adjusted first (trusted proxies, say).
pub async fn spawn_app_with_state(
    backend: Backend,
    config: Config,
    adjust: impl FnOnce(&mut server::AppState),
) -> TestApp {
    let test_db = test_db(backend).await;
    let mut app = serve_with_state(test_db.db.clone(), config, adjust).await;
    app.test_db = Some(test_db);
    app
}

/// The real server over an existing database (another process on it, say), its state adjusted.
pub async fn spawn_app_on_with_state(
    db: Db,
    config: Config,
    adjust: impl FnOnce(&mut server::AppState),
) -> TestApp {
    serve_with_state(db, config, adjust).await
}

async fn serve_with_state(
    db: Db,
    config: Config,
    adjust: impl FnOnce(&mut server::AppState),
) -> TestApp {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut state = server::AppState::new(db.clone(), Arc::new(config));
    adjust(&mut state);
    tokio::spawn(async move {
        server::serve::serve(listener, state, async {
            stopped.await.ok();
        })
        .await
        .expect("server runs");
    });
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("client");
    TestApp {
        addr,
        db,
        client,
        test_db: None,
        stop: Some(stop),
    }
}

impl TestApp {
    /// Begins the server's shutdown (as SIGTERM does), keeping the test's database.
    pub fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
    }
}

/// An answer of the webhook endpoint.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Json,
}

impl Answer {
    pub fn outcome(&self) -> &str {
        match (self.body["status"].as_str(), self.body["reason"].as_str()) {
            (Some("conflict"), Some(reason)) => reason,
            (Some(status), _) => status,
            _ => "",
        }
    }
}

pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A snapshot-envelope body.
pub fn event(event_id: &str, object_id: &str, revision: i64, snapshot: &str) -> String {
    format!(
        r#"{{"event_id":"{event_id}","object_id":"{object_id}","revision":{revision},"snapshot":{snapshot}}}"#
    )
}

impl TestApp {
    /// Another handle on the same server, for concurrent senders (it does not stop the server).
    pub fn clone_handle(&self) -> TestApp {
        TestApp {
            addr: self.addr,
            db: self.db.clone(),
            client: self.client.clone(),
            test_db: None,
            stop: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Posts a body signed the way the source's sender signs it.
    pub async fn send(&self, source: &str, body: &str) -> Answer {
        self.send_bytes(source, body.as_bytes(), &[]).await
    }

    pub async fn send_bytes(&self, source: &str, body: &[u8], extra: &[(&str, &str)]) -> Answer {
        let (scheme, secret) = match source {
            "sw" => (Scheme::StandardWebhooks, SW_SECRET),
            _ => (Scheme::HmacSha256, SHOP_SECRET),
        };
        let key = scheme.parse_secret(secret).expect("test secret");
        let msg_id = format!("msg_{:x}", rand::random::<u64>());
        let mut headers: Vec<(String, String)> = scheme
            .sign(&key, &msg_id, body, now())
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        headers.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        self.post(source, &headers, body.to_vec()).await
    }

    /// Posts exactly these headers and bytes.
    pub async fn post(&self, source: &str, headers: &[(String, String)], body: Vec<u8>) -> Answer {
        let mut request = self
            .client
            .post(self.url(&format!("/hooks/{source}")))
            .body(body);
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request.send().await.expect("the server answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("answer body");
        let body = serde_json::from_str(&text).unwrap_or(Json::String(text));
        Answer {
            status,
            headers,
            body,
        }
    }
}

/// One integer from a query (`count(*)`, a revision).
pub async fn scalar(db: &Db, sql: &str, values: Vec<Value>) -> Option<i64> {
    db.conn
        .query_one_raw(Statement::from_sql_and_values(db.backend(), sql, values))
        .await
        .expect("query")
        .map(|row| row.try_get_by_index::<i64>(0).expect("an integer"))
}

pub async fn count(db: &Db, sql: &str) -> i64 {
    scalar(db, sql, vec![]).await.unwrap_or(0)
}

/// Rows of text columns.
pub async fn texts(db: &Db, sql: &str, values: Vec<Value>) -> Vec<Vec<Option<String>>> {
    let rows = db
        .conn
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

/// The real server on a random port with its own configuration, on a fresh database.
pub async fn spawn_app_with(backend: Backend, config: Config) -> TestApp {
    let test_db = test_db(backend).await;
    let mut app = serve_on(test_db.db.clone(), config).await;
    app.test_db = Some(test_db);
    app
}

/// Waits until some backend is blocked by `holder`, as PostgreSQL itself reports it
/// (`pg_blocking_pids`): the proof that a concurrent delivery really waits.
pub async fn wait_until_blocked_by(db: &Db, holder: i32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let blocked = scalar(
            db,
            "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
            vec![holder.into()],
        )
        .await
        .unwrap_or(0);
        if blocked > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing ever waited for backend {holder}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
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

/// A loopback address nothing listens on (for a process to bind).
pub fn free_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address")
}

/// Posts a delivery to `shop` at `addr`, signed as its sender signs (`hmac-sha256`): (status,
/// the answer's `status` or its text); `None` when no answer came (the process died).
pub async fn send_to(
    client: &reqwest::Client,
    addr: SocketAddr,
    body: &str,
) -> Option<(u16, String)> {
    let key = Scheme::HmacSha256
        .parse_secret(SHOP_SECRET)
        .expect("test secret");
    let mut request = client
        .post(format!("http://{addr}/hooks/shop"))
        .body(body.to_string());
    for (name, value) in Scheme::HmacSha256.sign(&key, "msg", body.as_bytes(), now()) {
        request = request.header(name.to_string(), value);
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    let text = response.text().await.ok()?;
    let outcome = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["status"].as_str().map(str::to_string))
        .unwrap_or(text);
    Some((status, outcome))
}
