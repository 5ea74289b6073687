//! PostgreSQL connections the deliveries keep between them.
//!
//! sqlx pings every connection that comes back to its pool: a round trip to PostgreSQL and a
//! spawned task in hookbox per delivery, which cannot be turned off. A delivery instead takes a
//! connection from here ([`Warm::lease`]) and, when its statements have all answered, parks it
//! here for the next one ([`Lease::done`]): no ping, no task. A lease dropped before `done` (an
//! error, or the request cut off mid-statement) gives its connection back to the pool, whose
//! ping then drains or drops it, as before.
//!
//! Deliveries hold at most `most` connections, leased or parked, fewer than the pool holds, so
//! replays, maintenance and the forwarder always find one in the pool. Deliveries wait for a turn
//! in the order they came (a parked connection goes to the one that waited longest, not to
//! whoever asks next), and a connection parked for [`IDLE`] goes back to the pool, so a quiet
//! hookbox holds none.

use super::ACQUIRE_TIMEOUT;
use sea_orm::sqlx::{self, PgPool, Postgres, pool::PoolConnection};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, SemaphorePermit};

/// A parked connection unused this long goes back to the pool.
pub const IDLE: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct Warm {
    pool: PgPool,
    parked: Mutex<Vec<(PoolConnection<Postgres>, Instant)>>,
    /// One per connection the deliveries may hold (leased or parked): deliveries queue here in
    /// order, so one parked a moment ago goes to the delivery that waited longest.
    leases: Semaphore,
}

/// A connection taken for one delivery's statements.
pub struct Lease<'a> {
    warm: &'a Warm,
    conn: Option<PoolConnection<Postgres>>,
    // Dropped after `conn` is parked: the next delivery in line finds it.
    _turn: SemaphorePermit<'a>,
}

impl Warm {
    /// At most `most` connections of `pool` leased or parked; a task returns those parked too
    /// long.
    pub fn start(pool: PgPool, most: usize) -> Arc<Warm> {
        let warm = Arc::new(Warm {
            pool,
            parked: Mutex::new(Vec::with_capacity(most)),
            leases: Semaphore::new(most.max(1)),
        });
        tokio::spawn(return_idle(Arc::downgrade(&warm)));
        warm
    }

    /// The most recently parked connection, or one from the pool: within [`ACQUIRE_TIMEOUT`] in
    /// all, as the pool's own wait.
    pub async fn lease(&self) -> Result<Lease<'_>, sqlx::Error> {
        let lease = async {
            let turn = self
                .leases
                .acquire()
                .await
                .map_err(|_| sqlx::Error::PoolClosed)?;
            let parked = self.parked().pop();
            let conn = match parked {
                Some((conn, at)) if at.elapsed() < IDLE => conn,
                // Idle too long to trust without the pool's check.
                stale => {
                    drop(stale);
                    self.pool.acquire().await?
                }
            };
            Ok(Lease {
                warm: self,
                conn: Some(conn),
                _turn: turn,
            })
        };
        tokio::time::timeout(ACQUIRE_TIMEOUT, lease)
            .await
            .unwrap_or(Err(sqlx::Error::PoolTimedOut))
    }

    /// Gives every parked connection back to the pool (before it closes).
    pub fn release_all(&self) {
        self.parked().clear();
    }

    fn parked(&self) -> std::sync::MutexGuard<'_, Vec<(PoolConnection<Postgres>, Instant)>> {
        // A panic while the lock was held cannot leave the list inconsistent.
        self.parked.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Lease<'_> {
    pub fn conn(&mut self) -> &mut sqlx::PgConnection {
        // Only `done` takes it, and that consumes the lease.
        self.conn.as_deref_mut().unwrap_or_else(|| unreachable!())
    }

    /// Every statement answered: the connection is parked for the next delivery.
    pub fn done(mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        // Never more parked than leases exist, so the list cannot grow past them.
        self.warm.parked().push((conn, Instant::now()));
    }
}

impl Drop for Warm {
    fn drop(&mut self) {
        // Giving a connection back spawns a task; without a runtime (the process ending) there
        // is none to spawn on, and the connections close with the process.
        if tokio::runtime::Handle::try_current().is_err() {
            let parked = std::mem::take(&mut *self.parked());
            std::mem::forget(parked);
        }
    }
}

async fn return_idle(warm: Weak<Warm>) {
    loop {
        tokio::time::sleep(IDLE).await;
        let Some(warm) = warm.upgrade() else {
            return;
        };
        warm.parked().retain(|(_, at)| at.elapsed() < IDLE);
    }
}
