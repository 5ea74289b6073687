//! The pull feed's moving parts in `hookbox serve`: the signal long polls wait on, how commits
//! reach it (in this process directly, from the others by `NOTIFY hookbox_feed`), and the
//! consumers' lag in `/metrics`.
//!
//! - Ingest calls [`FeedSignal::committed`] after each commit; the announcer sends one `NOTIFY`
//!   per burst of them (never inside a delivery's transaction), and every process's listener
//!   turns a notification into a wake-up of its long polls.
//! - At most [`MAX_WAITERS`] long polls wait at once per process; one more is 429.
//! - Shutdown ends every wait at once (its answer: what there is, likely nothing).

use crate::background::Background;
use app::db::Db;
use app::feed::consumers;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;

/// The PostgreSQL channel commits are announced on.
pub const CHANNEL: &str = "hookbox_feed";

/// Long polls waiting at once in one process, at most.
pub const MAX_WAITERS: usize = 256;

/// How often, at most, the consumers' lag is measured for `/metrics`.
pub const LAG_INTERVAL: Duration = Duration::from_secs(15);

/// What long polls wait on.
pub struct FeedSignal {
    /// Counts the commits heard of; a waiter wakes when it changes.
    commits: watch::Sender<u64>,
    /// Commits of this process not yet announced to the others.
    unannounced: Notify,
    waiters: Arc<Semaphore>,
    stopping: CancellationToken,
}

impl Default for FeedSignal {
    fn default() -> Self {
        FeedSignal {
            commits: watch::Sender::new(0),
            unannounced: Notify::new(),
            waiters: Arc::new(Semaphore::new(MAX_WAITERS)),
            stopping: CancellationToken::new(),
        }
    }
}

impl FeedSignal {
    /// A delivery committed in this process: wake the waiters here, and announce it.
    pub fn committed(&self) {
        self.heard();
        self.unannounced.notify_one();
    }

    /// Another process committed (or may have): wake the waiters here.
    fn heard(&self) {
        self.commits.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// What a waiter watches: it changes at each commit heard of.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.commits.subscribe()
    }

    /// A place among the waiters, or `None` when [`MAX_WAITERS`] wait already.
    pub fn waiter(&self) -> Option<OwnedSemaphorePermit> {
        self.waiters.clone().try_acquire_owned().ok()
    }

    /// Cancelled when the server stops: waits end then.
    pub fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }
}

/// Starts the announcer and the listener (PostgreSQL) on `background`; waits end when it stops.
pub fn start(db: &Db, signal: &Arc<FeedSignal>, background: &Background) {
    let stop = background.token().clone();
    {
        let signal = signal.clone();
        background.spawn("feed: end waits at shutdown", async move {
            stop.cancelled().await;
            signal.stopping.cancel();
        });
    }
    if db.backend() == sea_orm::DatabaseBackend::Postgres {
        let (db2, announcing) = (db.clone(), signal.clone());
        let stop = background.token().clone();
        background.spawn("feed: announce commits", async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = announcing.unannounced.notified() => {
                        crate::wakeup::announce(&db2, CHANNEL).await;
                    }
                }
            }
        });
        let hearing = signal.clone();
        let listening =
            background
                .token()
                .clone()
                .run_until_cancelled_owned(crate::wakeup::listen(db.clone(), CHANNEL, move || {
                    hearing.heard()
                }));
        background.spawn("feed LISTEN", async move {
            listening.await;
        });
    }
}

/// Sets each consumer's lag gauges for `/metrics`, measured at most once per [`LAG_INTERVAL`]
/// whatever the scrapes (one at a time); a consumer deleted since reads 0.
pub async fn export_lag(db: &Db) {
    static LAST: tokio::sync::Mutex<(Option<std::time::Instant>, BTreeSet<String>)> =
        tokio::sync::Mutex::const_new((None, BTreeSet::new()));
    let mut last = LAST.lock().await;
    if last.0.is_some_and(|at| at.elapsed() < LAG_INTERVAL) {
        return;
    }
    last.0 = Some(std::time::Instant::now());
    measure_lag(db, &mut last.1).await;
}

async fn measure_lag(db: &Db, shown: &mut BTreeSet<String>) {
    let list = match consumers::list(db).await {
        Ok(list) => list,
        Err(e) => {
            metrics::counter!(crate::metrics::READ_FAILURES, "read" => "feed_lag").increment(1);
            tracing::warn!(error = %e, "feed: cannot list consumers for their lag");
            return;
        }
    };
    let mut now = BTreeSet::new();
    for consumer in &list {
        match consumers::lag(db, consumer, &consumer.selection()).await {
            Ok(lag) => crate::metrics::feed_lag(&consumer.name, lag.items, lag.seconds),
            Err(e) => {
                metrics::counter!(crate::metrics::READ_FAILURES, "read" => "feed_lag").increment(1);
                tracing::warn!(consumer = %consumer.name, error = %e, "feed: lag not measured");
            }
        }
        now.insert(consumer.name.clone());
    }
    for gone in shown.difference(&now) {
        crate::metrics::feed_lag(gone, 0, 0);
    }
    *shown = now;
}
