//! The built `hookbox` binary as a process of its own, for the tests that need one: signals,
//! kill -9, several processes on one database, its own memory; a free address for it to bind,
//! and a delivery sent to it.

use super::{SHOP_SECRET, now, test_env};
use app::schemes::Scheme;
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// One `hookbox serve` process; killed if the test ends without stopping it.
pub struct Binary {
    pub child: Child,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Binary {
    /// Starts `hookbox serve` on `database_url` with `config` as its configuration file, the
    /// test secrets in its environment and `env` on top (a later value wins), its log in a file
    /// of its own; waits until it answers `/healthz`.
    pub async fn start(database_url: &str, config: &str, env: &[(&str, &str)]) -> Binary {
        let dir = tempfile::tempdir().expect("temporary folder");
        let config_file = dir.path().join("hookbox.toml");
        std::fs::write(&config_file, config).expect("write config");
        let site = dir.path().join("site");
        std::fs::create_dir(&site).expect("site folder");
        let log = std::fs::File::create(dir.path().join("hookbox.log")).expect("log file");
        let addr = free_addr();
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookbox"));
        command
            .env("DATABASE_URL", database_url)
            .env("HOOKBOX_CONFIG", &config_file)
            .env("SHOP_SECRET", SHOP_SECRET)
            .env(
                "DESTINATION_SECRET",
                test_env("DESTINATION_SECRET").expect("the destination secret"),
            )
            .env("HOOKBOX_ADMIN_PASSWORD", "a test password")
            .env("LEPTOS_SITE_ADDR", addr.to_string())
            .env("LEPTOS_SITE_ROOT", &site)
            .env("RUST_LOG", "info");
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start hookbox");
        let mut process = Binary { child, addr, dir };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = client.get(format!("http://{addr}/healthz")).send().await
                && r.status().is_success()
            {
                return process;
            }
            assert!(
                process.child.try_wait().expect("status").is_none(),
                "hookbox exited at start: {}",
                process.log()
            );
            assert!(Instant::now() < deadline, "hookbox never answered /healthz");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What the process has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("hookbox.log")).unwrap_or_default()
    }

    /// The `fields` of every JSON log line whose message starts with `message` (with
    /// `HOOKBOX_LOG_FORMAT=json`).
    pub fn logged(&self, message: &str) -> Vec<serde_json::Value> {
        self.log()
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|line| line["fields"].clone())
            .filter(|fields| {
                fields["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(message))
            })
            .collect()
    }

    /// Sends the signal `name` (`TERM`, `KILL`, …).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name}");
    }

    /// SIGTERM, then waits (at most 60 s) for the exit.
    pub async fn terminate(&mut self) -> ExitStatus {
        self.signal("TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "hookbox did not exit after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A figure of the process's memory from /proc (kB): `VmRSS` now, `VmHWM` its peak.
    pub fn memory_kb(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap_or(0)
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
