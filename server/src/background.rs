//! The background loops of `hookbox serve` (the forwarder and its LISTEN task, the
//! refused-requests writer, the daily purge): where each starts, what stops it, and the one wait
//! for them all at shutdown.
//!
//! A [`Background`] is a cancellation token and the tracker of every task started on it. Each
//! loop stops when its token is cancelled, in its own way (the writer flushes what is buffered,
//! the forwarder lets its attempts in flight finish). [`Background::child`] starts loops that
//! stop earlier, on a token of their own that the root's cancellation cancels too.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;

/// Background loops and the token that stops them.
#[derive(Clone, Default)]
pub struct Background {
    token: CancellationToken,
    tracker: TaskTracker,
    /// The loops still running, by name (a name may run more than once).
    running: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

impl Background {
    pub fn new() -> Background {
        Background::default()
    }

    /// Loops on the same tracker that stop when the child is cancelled, or this one is.
    pub fn child(&self) -> Background {
        Background {
            token: self.token.child_token(),
            tracker: self.tracker.clone(),
            running: self.running.clone(),
        }
    }

    /// Starts `work` as the loop `name`; it is expected to end once [`Self::stopped`] resolves.
    pub fn spawn(&self, name: &'static str, work: impl Future<Output = ()> + Send + 'static) {
        let running = Running::start(self.running.clone(), name);
        self.tracker.spawn(async move {
            let _running = running;
            work.await;
        });
    }

    /// Resolves once this token (or a parent) is cancelled.
    pub fn stopped(&self) -> WaitForCancellationFutureOwned {
        self.token.clone().cancelled_owned()
    }

    /// The token the loops started here stop on.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Stops the loops of this token and its children (they end in their own time).
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Cancels the token and waits, at most `wait`, for every loop of the tracker to end; logs
    /// the ones still running then (they are left to end with the process). Called once, on the
    /// root.
    pub async fn shutdown(&self, wait: Duration) {
        self.token.cancel();
        self.tracker.close();
        if tokio::time::timeout(wait, self.tracker.wait())
            .await
            .is_err()
        {
            let running = self.running.lock().map(|r| r.clone()).unwrap_or_default();
            for name in running.keys() {
                tracing::warn!(task = name, ?wait, "a background task did not stop in time");
            }
        }
    }
}

/// A loop's entry in [`Background::running`], removed when the loop ends (or panics).
struct Running {
    running: Arc<Mutex<BTreeMap<&'static str, usize>>>,
    name: &'static str,
}

impl Running {
    fn start(running: Arc<Mutex<BTreeMap<&'static str, usize>>>, name: &'static str) -> Running {
        if let Ok(mut names) = running.lock() {
            *names.entry(name).or_default() += 1;
        }
        Running { running, name }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(mut names) = self.running.lock()
            && let Some(count) = names.get_mut(self.name)
        {
            *count -= 1;
            if *count == 0 {
                names.remove(self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shutdown_stops_the_children_and_waits_for_every_loop() {
        let root = Background::new();
        let child = root.child();
        let (done, mut finished) = tokio::sync::mpsc::unbounded_channel();
        for (background, name) in [(&root, "root"), (&child, "child")] {
            let (stopped, done) = (background.stopped(), done.clone());
            background.spawn(name, async move {
                stopped.await;
                done.send(name).ok();
            });
        }
        child.cancel();
        assert_eq!(finished.recv().await, Some("child"));
        assert!(!root.token().is_cancelled());
        root.shutdown(Duration::from_secs(5)).await;
        assert_eq!(finished.recv().await, Some("root"));
        assert!(root.running.lock().expect("lock").is_empty());
    }

    #[tokio::test]
    async fn shutdown_gives_up_on_a_loop_after_the_wait() {
        let root = Background::new();
        root.spawn("stuck", std::future::pending());
        root.shutdown(Duration::from_millis(10)).await;
        assert_eq!(root.running.lock().expect("lock").get("stuck"), Some(&1));
    }
}
