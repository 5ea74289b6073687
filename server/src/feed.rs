//! The pull feed's moving parts in `hookbox serve`: the long polls waiting for items, and how
//! commits reach them. (The consumers' lag in `/metrics`: `crate::metrics`.)
//!
//! - Ingest calls [`FeedSignal::committed`] after each commit; the announcer sends one `NOTIFY`
//!   per burst of them (never inside a delivery's transaction), and every process's listener
//!   hears it.
//! - One task per process, the watcher, reads what the feed serves after the last place it saw
//!   (`app::feed::news`: one small query per burst of commits, at most one per
//!   [`WATCH_PAUSE`]) and wakes only the long polls whose selection takes one of the new items;
//!   those read their page. A long poll waiting for a source that gets nothing costs nothing, a
//!   commit costs one query, not one per waiting poll, and while no poll waits (one reading its
//!   page does not: a consumer keeping up under load is always reading), nothing at all (the
//!   watcher reads nothing then). Rows held back behind a running
//!   transaction are looked at again after [`HELD_BACK_RECHECK`]; with polls waiting, every
//!   [`BACKSTOP`] too (a lost notification, SQLite's other processes).
//! - At most [`MAX_WAITERS`] long polls wait at once per process, at most
//!   [`MAX_WAITERS_PER_TOKEN`] of them one API token's; one more is 429.
//! - Pages are read [`READS_AT_ONCE`] at a time per process; besides the long polls (their
//!   places bound them) at most [`READS_WAITING`] reads wait for a turn, one more is 429.
//! - Shutdown ends every wait at once (its answer: what there is, likely nothing).

use crate::background::Background;
use app::db::Db;
use app::feed::{Cursor, Selection};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The PostgreSQL channel commits are announced on.
pub const CHANNEL: &str = "hookbox_feed";

/// The least time between two of this process's notifications: under load it commits thousands
/// of deliveries a second, and another process's waiting poll needs to hear of them once.
pub const ANNOUNCE_SPACING: std::time::Duration = std::time::Duration::from_millis(10);

/// Long polls waiting at once in one process, at most.
pub const MAX_WAITERS: usize = 256;

/// Long polls of one API token waiting at once in one process, at most: a quarter of the
/// places, so one token never takes them all.
pub const MAX_WAITERS_PER_TOKEN: usize = MAX_WAITERS / 4;

/// Why the process takes no more of a long poll or a page read now (the API's 429, retry
/// after 1 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// [`MAX_WAITERS`] long polls wait already.
    Waiters,
    /// The token has [`MAX_WAITERS_PER_TOKEN`] long polls waiting already.
    TokenShare,
    /// [`READS_WAITING`] page reads wait for their turn already.
    Reads,
}

/// Who asks for a turn to read a page, which says whether it may queue for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// A long poll holding a place among the waiters: the places bound how many of them wait,
    /// so it always queues.
    Waiter,
    /// Any other read: refused when [`READS_WAITING`] reads queue already.
    Request,
}

/// Pages of the feed read at once in one process, at most: each holds up to about 1 MiB of
/// bodies several times over (rows, items, the answer); the others wait their turn.
pub const READS_AT_ONCE: usize = 2;

/// Page reads waiting for their turn in one process, at most: past them a read is refused at
/// once (429, retry after 1 s), so readers flooding the feed hold at most this many requests
/// (their connections, buffers and tasks) in the queue, however many tokens they use.
pub const READS_WAITING: usize = 32;

/// The watcher reads what is new at most once per this.
pub const WATCH_PAUSE: Duration = Duration::from_millis(10);

/// While rows wait behind a running transaction, the watcher looks again after this.
pub const HELD_BACK_RECHECK: Duration = Duration::from_millis(20);

/// With polls waiting, the watcher looks even when nothing woke it, this often.
pub const BACKSTOP: Duration = Duration::from_secs(1);

/// One long poll waiting: what it takes, and how it is woken.
pub struct Waiting {
    selection: Selection,
    /// The API token polling (`api_tokens.id`).
    token: i64,
    wake: Notify,
    /// Whether it waits for a wake-up now (its last page was empty), not reading its page.
    asleep: AtomicBool,
}

/// A long poll's place among the waiters; it leaves them when dropped.
pub struct Waiter {
    waiting: Arc<Waiting>,
    signal: Arc<FeedSignal>,
}

impl Waiter {
    /// Resolves when an item its selection takes may have been served (or was, before this
    /// was called: the wake-up is kept).
    ///
    /// The watcher reads what is new only while a poll is asleep here, so one reading its page
    /// costs it nothing; falling asleep, the poll has the watcher look at once (what committed
    /// while it read is news to it, or out of date: then every poll is woken to read again).
    pub async fn woken(&self) {
        self.waiting.asleep.store(true, Ordering::Release);
        let _awake = Awake(&self.waiting.asleep);
        self.signal.heard.notify_one();
        self.waiting.wake.notified().await;
    }
}

/// Marks a poll awake again however its sleep ends (woken, its wait over, its request gone).
struct Awake<'a>(&'a AtomicBool);

impl Drop for Awake<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut waiting = self.signal.lock();
        waiting.retain(|w| !Arc::ptr_eq(w, &self.waiting));
    }
}

/// What long polls wait on.
pub struct FeedSignal {
    /// Commits heard of, here or from another process: the watcher looks.
    heard: Notify,
    /// Commits of this process not yet announced to the others.
    unannounced: Notify,
    waiting: Mutex<Vec<Arc<Waiting>>>,
    reads: tokio::sync::Semaphore,
    /// How many reads wait for a turn now.
    reads_waiting: AtomicUsize,
    stopping: CancellationToken,
}

impl Default for FeedSignal {
    fn default() -> Self {
        FeedSignal {
            heard: Notify::new(),
            unannounced: Notify::new(),
            waiting: Mutex::new(Vec::new()),
            reads: tokio::sync::Semaphore::new(READS_AT_ONCE),
            reads_waiting: AtomicUsize::new(0),
            stopping: CancellationToken::new(),
        }
    }
}

impl FeedSignal {
    /// A delivery committed in this process: the watcher looks, and the others are told.
    pub fn committed(&self) {
        self.heard.notify_one();
        self.unannounced.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Waiting>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place among the waiters for a poll of `selection` by the API token `token`, or why
    /// there is none ([`MAX_WAITERS`], [`MAX_WAITERS_PER_TOKEN`]). Taken before the poll's first
    /// read, so nothing served after that read is missed.
    pub fn wait_for(self: &Arc<Self>, selection: &Selection, token: i64) -> Result<Waiter, Full> {
        let mut waiting = self.lock();
        if waiting.len() >= MAX_WAITERS {
            return Err(Full::Waiters);
        }
        if waiting.iter().filter(|w| w.token == token).count() >= MAX_WAITERS_PER_TOKEN {
            return Err(Full::TokenShare);
        }
        let entry = Arc::new(Waiting {
            selection: selection.clone(),
            token,
            wake: Notify::new(),
            asleep: AtomicBool::new(false),
        });
        waiting.push(entry.clone());
        Ok(Waiter {
            waiting: entry,
            signal: self.clone(),
        })
    }

    /// A turn to read a page ([`READS_AT_ONCE`] at once), for as long as it is held, or
    /// [`Full::Reads`] for a [`Reader::Request`] when [`READS_WAITING`] such reads queue already.
    pub async fn reading(&self, reader: Reader) -> Result<tokio::sync::SemaphorePermit<'_>, Full> {
        if let Ok(turn) = self.reads.try_acquire() {
            return Ok(turn);
        }
        if reader == Reader::Waiter {
            return Ok(self.turn().await);
        }
        if self.reads_waiting.fetch_add(1, Ordering::AcqRel) >= READS_WAITING {
            self.reads_waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Full::Reads);
        }
        // Counted out however the wait ends, its request answered or dropped.
        let _waiting = CountedOut(&self.reads_waiting);
        Ok(self.turn().await)
    }

    async fn turn(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.reads
            .acquire()
            .await
            .expect("the semaphore of reads is never closed")
    }

    /// Cancelled when the server stops: waits end then.
    pub fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }

    /// Wakes the waiters that take one of `kinds`.
    fn wake(&self, kinds: &[app::feed::Kind]) {
        for waiting in self.lock().iter() {
            if kinds.iter().any(|k| {
                waiting
                    .selection
                    .takes(&k.source, k.event_type.as_deref(), k.outcome)
            }) {
                waiting.wake.notify_one();
            }
        }
    }

    /// Wakes every waiting poll.
    fn wake_all(&self) {
        for waiting in self.lock().iter() {
            waiting.wake.notify_one();
        }
    }

    /// Whether a poll is asleep, waiting for a wake-up (not one reading its page).
    fn anyone_waiting(&self) -> bool {
        self.lock().iter().any(|w| w.asleep.load(Ordering::Acquire))
    }
}

/// Follows what the feed serves and wakes the long polls that take it; runs until `stop`.
///
/// While no poll waits it reads nothing (a commit then costs the process no query): the place
/// it last saw is only marked out of date. The first time it looks again with a poll waiting,
/// it reads the latest place and wakes every waiting poll once: each reads its page from its
/// own place, so what was committed up to the latest place is theirs, and what follows it is
/// news as usual.
async fn watch(db: Db, signal: Arc<FeedSignal>, stop: CancellationToken) {
    // From the latest place served when it starts: a poll reads after it starts waiting, so it
    // has what came before.
    let mut last: Cursor = loop {
        match app::feed::latest(&db).await {
            Ok(latest) => break latest,
            Err(e) => {
                tracing::debug!(error = %e, "feed watcher: cannot read the latest place yet");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(BACKSTOP) => {}
                }
            }
        }
    };
    let (mut held_back, mut out_of_date) = (false, false);
    loop {
        let anyone_waiting = signal.anyone_waiting();
        let pause = if !anyone_waiting {
            Duration::from_secs(3600)
        } else if held_back {
            HELD_BACK_RECHECK
        } else {
            BACKSTOP
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = signal.heard.notified() => {}
            () = tokio::time::sleep(pause) => {}
        }
        if !signal.anyone_waiting() {
            // Nobody to wake: what is new waits for a poll, which reads its own page first.
            out_of_date = true;
        } else if out_of_date {
            match app::feed::latest(&db).await {
                Ok(latest) => {
                    (last, out_of_date, held_back) = (latest, false, true);
                    signal.wake_all();
                }
                Err(e) => {
                    tracing::debug!(error = %e, "feed watcher: cannot read the latest place");
                    held_back = true;
                }
            }
        } else {
            match app::feed::news(&db, last).await {
                Ok((kinds, place, waiting_behind)) => {
                    signal.wake(&kinds);
                    held_back = waiting_behind;
                    last = place;
                    if !kinds.is_empty() {
                        // More may follow the ones read: look again without waiting for a wake-up.
                        signal.heard.notify_one();
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "feed watcher: cannot read what is new");
                    held_back = true;
                }
            }
        }
        tokio::time::sleep(WATCH_PAUSE).await;
    }
}

/// Starts the watcher, the announcer and the listener (PostgreSQL) on `background`; waits end
/// when it stops.
pub fn start(db: &Db, signal: &Arc<FeedSignal>, background: &Background) {
    background.spawn(
        "feed watcher",
        watch(db.clone(), signal.clone(), background.token().clone()),
    );
    let stop = background.token().clone();
    {
        let signal = signal.clone();
        background.spawn("feed: end waits at shutdown", async move {
            stop.cancelled().await;
            signal.stopping.cancel();
        });
    }
    if db.backend() == sea_orm::DatabaseBackend::Postgres {
        let (mut announcer, announcing) =
            (crate::wakeup::Announcer::new(db, CHANNEL), signal.clone());
        let stop = background.token().clone();
        background.spawn("feed: announce commits", async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = announcing.unannounced.notified() => announcer.announce().await,
                }
                // The commits of the next moment are announced together, in one notification.
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(ANNOUNCE_SPACING) => {}
                }
            }
        });
        let hearing = signal.clone();
        let listening =
            background
                .token()
                .clone()
                .run_until_cancelled_owned(crate::wakeup::listen(db.clone(), CHANNEL, move || {
                    hearing.heard.notify_one()
                }));
        background.spawn("feed LISTEN", async move {
            listening.await;
        });
    }
}

/// Takes one off its count when dropped.
struct CountedOut<'a>(&'a AtomicUsize);

impl Drop for CountedOut<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_waiters_wait_a_token_takes_its_share_and_a_place_is_given_back() {
        let signal = Arc::new(FeedSignal::default());
        let selection = Selection::default();
        let mine: Vec<Waiter> = (0..MAX_WAITERS_PER_TOKEN)
            .map(|_| signal.wait_for(&selection, 1).expect("a place"))
            .collect();
        assert_eq!(
            signal.wait_for(&selection, 1).err(),
            Some(Full::TokenShare),
            "one token takes a quarter at most"
        );
        let others: Vec<Waiter> = (0..MAX_WAITERS - MAX_WAITERS_PER_TOKEN)
            .map(|i| {
                signal
                    .wait_for(&selection, 2 + (i % 3) as i64)
                    .expect("a place")
            })
            .collect();
        assert_eq!(
            signal.wait_for(&selection, 9).err(),
            Some(Full::Waiters),
            "one more is refused"
        );
        drop(mine);
        assert!(signal.wait_for(&selection, 1).is_ok());
        drop(others);
    }

    #[tokio::test]
    async fn at_most_reads_waiting_wait_for_a_turn_besides_long_polls_and_a_dropped_wait_gives_its_place_back()
     {
        let signal = Arc::new(FeedSignal::default());
        let waiting = || signal.reads_waiting.load(Ordering::Acquire);
        let wait = || {
            let signal = signal.clone();
            tokio::spawn(async move { signal.reading(Reader::Request).await.map(drop) })
        };
        let mut turns = Vec::new();
        for _ in 0..READS_AT_ONCE {
            turns.push(
                signal
                    .reading(Reader::Request)
                    .await
                    .expect("a turn at once"),
            );
        }
        let mut waits: Vec<_> = (0..READS_WAITING).map(|_| wait()).collect();
        while waiting() < READS_WAITING {
            tokio::task::yield_now().await;
        }
        let one_more =
            tokio::time::timeout(Duration::from_secs(5), signal.reading(Reader::Request)).await;
        assert_eq!(
            one_more.expect("answered at once").err(),
            Some(Full::Reads),
            "one more is refused"
        );
        // A long poll's read waits for its turn all the same: its place bounds it.
        let long_poll = {
            let signal = signal.clone();
            tokio::spawn(async move { signal.reading(Reader::Waiter).await.map(drop) })
        };
        let dropped = waits.remove(0);
        dropped.abort();
        assert!(dropped.await.is_err(), "the wait was dropped");
        assert_eq!(waiting(), READS_WAITING - 1, "its place is given back");
        waits.push(wait());
        while waiting() < READS_WAITING {
            tokio::task::yield_now().await;
        }
        drop(turns);
        assert_eq!(
            long_poll.await.expect("the read ran"),
            Ok(()),
            "a long poll's turn"
        );
        for read in waits {
            assert_eq!(
                read.await.expect("the read ran"),
                Ok(()),
                "each gets its turn"
            );
        }
        assert_eq!(waiting(), 0);
    }

    #[tokio::test]
    async fn only_a_poll_asleep_has_the_watcher_read_and_falling_asleep_it_has_it_look() {
        let signal = Arc::new(FeedSignal::default());
        let waiter = signal.wait_for(&Selection::default(), 1).expect("a place");
        assert!(
            !signal.anyone_waiting(),
            "reading its page, it costs nothing"
        );
        {
            let sleep = waiter.woken();
            tokio::pin!(sleep);
            assert!(futures::poll!(&mut sleep).is_pending());
            assert!(signal.anyone_waiting(), "asleep");
            let looks = tokio::time::timeout(Duration::from_millis(50), signal.heard.notified());
            assert!(looks.await.is_ok(), "the watcher was told to look");
        }
        assert!(!signal.anyone_waiting(), "its sleep cut short, it is awake");
        // A wake-up sent while it read is kept for its next sleep.
        signal.wake_all();
        let woken = tokio::time::timeout(Duration::from_millis(50), waiter.woken());
        assert!(woken.await.is_ok());
        assert!(!signal.anyone_waiting());
    }

    #[tokio::test]
    async fn only_the_polls_that_take_a_new_item_are_woken() {
        let signal = Arc::new(FeedSignal::default());
        let shop = Selection {
            sources: Some(vec!["shop".into()]),
            ..Selection::default()
        };
        let (for_shop, for_all) = (
            signal.wait_for(&shop, 1).expect("a place"),
            signal.wait_for(&Selection::default(), 1).expect("a place"),
        );
        signal.wake(&[app::feed::Kind {
            source: "gh".into(),
            event_type: None,
            outcome: app::model::OutcomeKind::Accepted,
        }]);
        let quick = Duration::from_millis(50);
        assert!(tokio::time::timeout(quick, for_all.woken()).await.is_ok());
        assert!(
            tokio::time::timeout(quick, for_shop.woken()).await.is_err(),
            "another source's item does not wake it"
        );
        signal.wake(&[app::feed::Kind {
            source: "shop".into(),
            event_type: Some("order.updated".into()),
            outcome: app::model::OutcomeKind::Stale,
        }]);
        assert!(
            tokio::time::timeout(quick, for_shop.woken()).await.is_err(),
            "a stale item is not among what it takes"
        );
    }
}
