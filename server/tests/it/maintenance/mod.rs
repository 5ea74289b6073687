//! Archive retention (`hookbox purge`) and the invariant check (`hookbox verify [--repair]`), on
//! PostgreSQL and SQLite. Waits are proven with `pg_blocking_pids`, never assumed from a sleep.
//! The shared helpers are here: a delivery through the ingest transaction, the cutoff, and an
//! object's projection.
//!
//! - `purge`: batched retention and ingest during a purge (and the ignored measurement).
//! - `verify`: drift found and repaired, a repair waiting on a delivery, the overview's last check.
//! - `commands`: the `hookbox purge` and `hookbox verify` commands, their config and output.
//! - `days`: PostgreSQL's archive laid out by day, a day dropped whole and what survives it.

use crate::support::*;
use app::db::Db;
use app::envelope::{Mode, parse_envelope};
use app::ingest::{self, Outcome, Received, Recorded};
use app::maintenance::purge::{purge_archive, purge_batch, retention_cutoff};
use app::maintenance::verify::{Drift, repair_projection, verify};
use chrono::{DateTime, Duration, SubsecRound, Utc};
use sea_orm::{ConnectionTrait, DatabaseBackend};
use std::time::Instant;

mod bodies;
mod cold;
mod commands;
mod days;
mod per_source;
mod purge;
mod verify;

const RETENTION_DAYS: u32 = 90;

/// One snapshot delivery of the `shop` source through the ingest transaction, received at `at`.
async fn deliver(db: &Db, body: &str, at: DateTime<Utc>, replay_of: Option<i64>) -> Recorded {
    deliver_to(db, "shop", body, at, replay_of).await
}

/// One snapshot delivery of `source` through the ingest transaction, received at `at`.
async fn deliver_to(
    db: &Db,
    source: &str,
    body: &str,
    at: DateTime<Utc>,
    replay_of: Option<i64>,
) -> Recorded {
    let envelope = parse_envelope(
        &app::envelope::Mapping::snapshot_envelope(),
        &http::HeaderMap::new(),
        body.as_bytes(),
    )
    .expect("valid envelope");
    let received = Received {
        source,
        headers_json: "{}",
        body: body.as_bytes(),
        body_fields: None,
        received_at: at,
        replay_of,
        replayed_by: replay_of.map(|_| "admin"),
        signed_body_digest: None,
        forward_to: &[],
    };
    ingest::apply_delivery(db, Mode::Snapshot, &received, &envelope)
        .await
        .expect("delivery recorded")
}

async fn execute(db: &Db, sql: &str) {
    db.dashboard
        .execute_unprepared(sql)
        .await
        .expect("statement");
}

fn cutoff() -> DateTime<Utc> {
    retention_cutoff(Utc::now(), RETENTION_DAYS)
}

/// The projection of an object as (revision, snapshot text without white space).
async fn projection(db: &Db, object_id: &str) -> Option<(i64, String)> {
    let snapshot = if db.backend() == DatabaseBackend::Postgres {
        "snapshot::text"
    } else {
        "snapshot"
    };
    let revision = current_revision(db, "shop", object_id).await?;
    let text = texts(
        db,
        &format!("SELECT {snapshot} FROM object_state WHERE source = 'shop' AND object_id = $1"),
        vec![object_id.into()],
    )
    .await;
    let snapshot = text[0][0].clone().unwrap_or_default().replace(' ', "");
    Some((revision, snapshot))
}
