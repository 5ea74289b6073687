//! The database goes away and comes back: 503 with Retry-After in bounded time, then recovery
//! without restarting hookbox. Uses a cluster of its own, so stopping it disturbs no other test.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::*;

struct Cluster {
    dir: tempfile::TempDir,
    script: PathBuf,
}

impl Cluster {
    fn run(&self, action: &str) -> String {
        let output = Command::new(&self.script)
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
        let _ = Command::new(&self.script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

#[tokio::test]
async fn an_unreachable_database_is_503_and_hookbox_recovers_by_itself() {
    let dir = tempfile::Builder::new()
        .prefix("hookbox-outage")
        .tempdir_in("/tmp")
        .expect("temporary folder");
    let cluster = Cluster {
        dir,
        script: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci/pg-cluster"),
    };
    let url = cluster.run("start");
    let (db, _) = fresh_postgres(&url).await;
    let app = spawn_app_on(db.clone()).await;
    assert_eq!(
        app.send("shop", &event("before", "order-1", 1, "{}"))
            .await
            .outcome(),
        "applied"
    );

    cluster.run("stop");
    let started = Instant::now();
    let during = app.send("shop", &event("during", "order-1", 2, "{}")).await;
    let waited = started.elapsed();

    assert_eq!(
        (during.status, during.body["status"].as_str()),
        (503, Some("unavailable"))
    );
    let request_id = during
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("a request id");
    assert_eq!(
        during.body["request_id"], request_id,
        "the 5xx body names the request id of the logs"
    );
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("readyz answers");
    assert_eq!(
        ready.status().as_u16(),
        503,
        "/readyz says the database is gone"
    );
    assert_eq!(
        during
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("5")
    );
    assert!(
        waited < Duration::from_secs(15),
        "answered after {waited:?}, bounded by the pool's acquire timeout"
    );

    cluster.run("resume");
    let after = app.send("shop", &event("during", "order-1", 2, "{}")).await;

    assert_eq!(after.outcome(), "applied", "{:?}", after.body);
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("readyz answers");
    assert_eq!(ready.status().as_u16(), 200);
    assert_eq!(current_revision(&db, "shop", "order-1").await, Some(2));
    assert!(
        archived(&db, "shop", "during").await.len() == 1,
        "the 503 left nothing behind"
    );
}
