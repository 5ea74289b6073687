//! Wake-ups between the hookbox processes of one PostgreSQL database: `NOTIFY` on a channel
//! after a commit, and a listener per process that turns each notification into a call. SQLite
//! has no such thing: there a process is woken in memory, and polling covers the others.
//! Used by the forwarder (`hookbox_forward`) and the pull feed (`hookbox_feed`).

use app::db::Db;
use sea_orm::DatabaseBackend;
use sea_orm::sqlx::Connection;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use std::time::Duration;

/// Sends the notifications of one channel from a connection of its own, kept between them: one
/// round trip each. A connection of a pool would cost three (sqlx pings it when it is taken and
/// when it is given back), and under load the feed announces hundreds of times a second.
pub struct Announcer {
    /// How to connect (PostgreSQL); `None` on SQLite, where nothing is announced.
    options: Option<PgConnectOptions>,
    channel: &'static str,
    conn: Option<PgConnection>,
}

impl Announcer {
    pub fn new(db: &Db, channel: &'static str) -> Announcer {
        let options = (db.backend() == DatabaseBackend::Postgres).then(|| {
            db.writer
                .get_postgres_connection_pool()
                .connect_options()
                .as_ref()
                .clone()
        });
        Announcer {
            options,
            channel,
            conn: None,
        }
    }

    /// Sends one notification on the channel (nothing on SQLite), connecting first when there
    /// is no connection. A failure is logged at debug and the connection dropped, to be made
    /// again by the next announcement: the listeners' polling covers the one missed.
    pub async fn announce(&mut self) {
        let Some(options) = &self.options else {
            return;
        };
        let channel = self.channel;
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => {
                let connecting = PgConnection::connect_with(options);
                match tokio::time::timeout(app::db::ACQUIRE_TIMEOUT, connecting).await {
                    Ok(Ok(conn)) => conn,
                    Ok(Err(e)) => {
                        tracing::debug!(channel, error = %e, "cannot connect to NOTIFY; the listeners poll");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(
                            channel,
                            "connecting to NOTIFY timed out; the listeners poll"
                        );
                        return;
                    }
                }
            }
        };
        let mut conn = conn;
        let notify = sea_orm::sqlx::query("SELECT pg_notify($1, '')").bind(channel);
        match tokio::time::timeout(app::db::ACQUIRE_TIMEOUT, notify.execute(&mut conn)).await {
            Ok(Ok(_)) => self.conn = Some(conn),
            Ok(Err(e)) => tracing::debug!(channel, error = %e, "NOTIFY failed; the listeners poll"),
            Err(_) => tracing::debug!(channel, "NOTIFY timed out; the listeners poll"),
        }
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
