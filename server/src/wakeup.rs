//! Wake-ups between the hookbox processes of one PostgreSQL database: `NOTIFY` on a channel
//! after a commit, and a listener per process that turns each notification into a call. SQLite
//! has no such thing: there a process is woken in memory, and polling covers the others.
//! Used by the forwarder (`hookbox_forward`) and the pull feed (`hookbox_feed`).

use app::db::Db;
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use std::time::Duration;

/// Sends one notification on `channel` (PostgreSQL; nothing on SQLite). A failure is logged at
/// debug: the listeners' polling covers it.
pub async fn announce(db: &Db, channel: &str) {
    if db.backend() != DatabaseBackend::Postgres {
        return;
    }
    let notify = Statement::from_sql_and_values(
        DatabaseBackend::Postgres,
        "SELECT pg_notify($1, '')",
        vec![channel.into()],
    );
    if let Err(e) = db.writer.execute_raw(notify).await {
        tracing::debug!(channel, error = %e, "NOTIFY failed; the listeners poll");
    }
}

/// Listens on `channel` on a connection of its own and calls `heard` on each notification;
/// reconnects after a lost connection (and calls `heard` then: something may have been missed).
/// Never ends: it is dropped when its owner stops.
pub async fn listen(db: Db, channel: &'static str, heard: impl Fn() + Send) {
    use sea_orm::sqlx::postgres::{PgListener, PgPoolOptions};
    let options = db
        .writer
        .get_postgres_connection_pool()
        .connect_options()
        .as_ref()
        .clone();
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .acquire_timeout(app::db::ACQUIRE_TIMEOUT)
        .connect_lazy_with(options);
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(listener) => listener,
            Err(e) => {
                tracing::debug!(channel, error = %e, "cannot LISTEN yet; polling");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(channel).await {
            tracing::debug!(channel, error = %e, "LISTEN failed; polling");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        loop {
            match listener.try_recv().await {
                Ok(Some(_)) => heard(),
                // The connection was lost: wake (something may have been missed) and listen again.
                Ok(None) => {
                    heard();
                    break;
                }
                Err(e) => {
                    tracing::debug!(channel, error = %e, "the LISTEN connection failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
            }
        }
    }
}
