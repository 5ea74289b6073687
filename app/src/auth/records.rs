//! The records of refused sign-ins: attempts refused unchecked (throttled, busy) counted in
//! memory, bounded, and written once a minute with the trimming of `sign_in_failures`.

use super::throttle::THROTTLE_WINDOW_MINUTES;
use super::{lock, store_key};
use crate::db::Db;
use crate::db::audit::{self, RefusedSignIns};
use chrono::{DateTime, Duration, Utc};
use sea_orm::DbErr;
use std::collections::HashMap;
use std::sync::Mutex;

/// Keys (client, name, minute) of refused attempts counted in memory between two writes.
pub const MAX_REFUSED_KEYS: usize = 1000;
/// Names counted apart per client between two writes; the client's others count under `*`.
pub const MAX_REFUSED_NAMES_PER_CLIENT: usize = 10;
/// `sign_in_failures` rows older than this are deleted.
pub const FAILURE_RETENTION_DAYS: i64 = 30;
/// Of the `sign_in_failures` rows older than the throttle window, the newest kept.
pub const MAX_FAILURE_ROWS: u64 = 100_000;

/// Why an attempt was refused unchecked.
#[derive(Debug, Clone, Copy)]
pub(super) enum Refusal {
    Throttled,
    Busy,
}

/// The refused attempts of one database counted in memory since its last write, and the task
/// that writes them (spawned with the first of them).
pub(super) struct Pending {
    db: Db,
    counts: HashMap<(String, String, DateTime<Utc>), (i64, i64)>,
    names_per_client: HashMap<String, usize>,
}

pub(super) fn pending() -> &'static Mutex<HashMap<String, Pending>> {
    static PENDING: std::sync::OnceLock<Mutex<HashMap<String, Pending>>> =
        std::sync::OnceLock::new();
    PENDING.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Makes sure a write of `db`'s sign-in records is due at the end of this minute: it adds what
/// was refused meanwhile and deletes the rows past their bounds.
pub(super) fn schedule_write<'a>(
    all: &'a mut HashMap<String, Pending>,
    db: &Db,
    store: &str,
) -> &'a mut Pending {
    all.entry(store.to_string()).or_insert_with(|| {
        let store = store.to_string();
        tokio::spawn(async move {
            let now = crate::clock::now();
            let next_minute = audit::minute_of(now) + Duration::minutes(1);
            let wait = (next_minute - now).to_std().unwrap_or_default();
            tokio::time::sleep(wait + std::time::Duration::from_millis(100)).await;
            write_pending(&store).await;
        });
        Pending {
            db: db.clone(),
            counts: HashMap::new(),
            names_per_client: HashMap::new(),
        }
    })
}

/// Counts an attempt refused unchecked, in memory.
pub(super) fn count_refusal(db: &Db, store: &str, client: &str, name: &str, refusal: Refusal) {
    let minute = audit::minute_of(crate::clock::now());
    let mut all = lock(pending());
    let pending = schedule_write(&mut all, db, store);
    let key = |client: &str, name: &str| (client.to_string(), name.to_string(), minute);
    let mut chosen = key(client, name);
    if !pending.counts.contains_key(&chosen) {
        let names = pending.names_per_client.get(client).copied().unwrap_or(0);
        if names >= MAX_REFUSED_NAMES_PER_CLIENT || pending.counts.len() >= MAX_REFUSED_KEYS {
            chosen = key(client, "*");
            if !pending.counts.contains_key(&chosen) && pending.counts.len() >= 2 * MAX_REFUSED_KEYS
            {
                chosen = key("*", "*");
            }
        } else {
            *pending
                .names_per_client
                .entry(client.to_string())
                .or_default() += 1;
        }
    }
    let counts = pending.counts.entry(chosen).or_default();
    match refusal {
        Refusal::Throttled => counts.0 += 1,
        Refusal::Busy => counts.1 += 1,
    }
}

/// Writes what is counted for the database `store` and trims its rows.
async fn write_pending(store: &str) {
    let Some(pending) = lock(pending()).remove(store) else {
        return;
    };
    if let Err(error) = write(&pending).await {
        tracing::warn!(%error, "refused sign-ins not recorded");
    }
}

async fn write(pending: &Pending) -> Result<(), DbErr> {
    let counts: Vec<RefusedSignIns> = pending
        .counts
        .iter()
        .map(
            |((client, name, minute), (throttled, busy))| RefusedSignIns {
                client: client.clone(),
                name: name.clone(),
                minute: *minute,
                throttled: *throttled,
                busy: *busy,
            },
        )
        .collect();
    audit::add_refused_sign_ins(&pending.db, &counts).await?;
    let now = crate::clock::now();
    audit::trim_sign_in_failures(
        &pending.db,
        now - Duration::days(FAILURE_RETENTION_DAYS),
        now - Duration::minutes(THROTTLE_WINDOW_MINUTES),
        MAX_FAILURE_ROWS,
    )
    .await?;
    Ok(())
}

/// Writes now what this process counted of `db`'s refused sign-ins (due at the end of the
/// minute otherwise), and trims the rows. A stopping server calls it; a process killed without it
/// loses at most the last minute of these counts (never a failure: those are written before
/// their check).
pub async fn write_sign_in_records(db: &Db) -> Result<(), DbErr> {
    let taken = lock(pending()).remove(&store_key(db));
    match taken {
        Some(pending) => write(&pending).await,
        None => Ok(()),
    }
}
