//! Work whose cost grows with a body (reading a large form, verifying a signature over a
//! megabyte, laying out a body for a page) runs on a blocking thread, never on the async workers
//! that answer every other request; and at most [`AT_ONCE`] such jobs run at a time, one per core
//! of the machine this is sized for, so a flood of large bodies waits its turn instead of taking
//! every core and a copy of each body at once (memory and CPU stay bounded).

use std::sync::LazyLock;
use tokio::sync::Semaphore;

/// Body-sized jobs that run at once in this process; the others wait their turn.
pub const AT_ONCE: usize = 2;

static TURNS: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(AT_ONCE));

/// Runs `work` on a blocking thread in its turn. `None` if it panicked (logged).
pub async fn run<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    // The semaphore is never closed: a turn is always given in the end.
    let _turn = TURNS.acquire().await.ok()?;
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => Some(done),
        Err(e) => {
            tracing::error!(error = %e, "body-sized work failed");
            None
        }
    }
}
