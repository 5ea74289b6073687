//! Test harness: a fresh database per test (PostgreSQL from the cluster `.ci/test` starts, or a
//! SQLite file in a temporary folder) and the real server on a random port.
//!
//! A PostgreSQL test database is a copy of a template migrated once per cluster
//! ([`database::migrated_template`]), so no test waits for every migration to run.
//!
//! - `database`: the test databases, the migrated template, and a cluster of a test's own.
//! - `queries`: reading the database back (counts, texts, the archive, the projection).
//! - `binary`: the `hookbox` binary as a process of its own.
//! - `session`: a signed-in user's cookie, and calling a server function with it.
#![allow(dead_code, clippy::unwrap_used)]

mod api;
pub mod binary;
mod database;
mod queries;
mod session;
pub use api::*;
pub use binary::{Binary, send_to};
pub use database::*;
pub use queries::*;
pub use session::*;

use app::config::Config;
use app::db::Db;
use app::schemes::Scheme;
use serde_json::Value as Json;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
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
    serve_listener(listener, db, config, adjust).await
}

/// The real server on `listener` (bound first, so its configuration can name its address) on a
/// fresh database.
pub async fn spawn_app_on_listener(
    backend: Backend,
    listener: TcpListener,
    config: Config,
) -> TestApp {
    let test_db = test_db(backend).await;
    let mut app = serve_listener(listener, test_db.db.clone(), config, |_| {}).await;
    app.test_db = Some(test_db);
    app
}

/// The real server on `listener` over an existing database (a second process on it, say).
pub async fn spawn_app_on_listener_over(db: Db, listener: TcpListener, config: Config) -> TestApp {
    serve_listener(listener, db, config, |_| {}).await
}

async fn serve_listener(
    listener: TcpListener,
    db: Db,
    config: Config,
    adjust: impl FnOnce(&mut server::AppState),
) -> TestApp {
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

/// The real server on a random port with its own configuration, on a fresh database.
pub async fn spawn_app_with(backend: Backend, config: Config) -> TestApp {
    let test_db = test_db(backend).await;
    let mut app = serve_on(test_db.db.clone(), config).await;
    app.test_db = Some(test_db);
    app
}
