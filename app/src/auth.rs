//! Dashboard users, sessions and the audit log: every page and server function needs a signed-in
//! user, `viewer` or `operator` (`docs/dashboard.md`).
//!
//! Passwords are Argon2id hashes. Sessions live in the database (revocable, expiring) and the
//! browser holds only a random token; the table keeps its SHA-256.
//!
//! What an unauthenticated caller can make hookbox spend on `/api/login` is bounded:
//!
//! - **The throttle** is per client (an IPv4 address, an IPv6 /64) and never per user name alone,
//!   so nobody can lock a user out from another client. After [`MAX_FAILURES_PER_USER`] failures
//!   of one name from one client, or [`MAX_FAILURES_PER_ADDRESS`] from one client across names,
//!   within [`THROTTLE_WINDOW_MINUTES`], each further attempt from that client waits a growing
//!   delay after the previous failure, [`FIRST_DELAY`] doubling up to [`MAX_DELAY`] (429 with
//!   `Retry-After`, the right password included). A successful sign-in clears its name's count
//!   from its client. The counts live in the database (`sign_in_failures`), so every hookbox
//!   process enforces the same limit; each process also remembers the clients it refused until
//!   their delay ends and answers them without a query.
//! - **Password checks** share the cores fairly between clients: at most one check per client at
//!   a time and one per core in all, a client waiting at most [`PASSWORD_CHECK_WAIT`] for its turn
//!   among at most [`WAITING_PER_CORE`] per core (first come, first served). A client already
//!   checking, or arriving when the queue is full, is answered 429 at once: a flooding client
//!   refuses itself, others still get a turn.
//! - **The records** are bounded: a successful sign-in is an audit row; a failure is a count of
//!   its client, name and minute, upserted before its check (so parallel attempts in any process
//!   count each other); attempts refused unchecked (throttled, busy) are counted in memory and
//!   added to those rows once a minute (at most [`MAX_REFUSED_KEYS`] keys per minute and process,
//!   the rest under the name `*`). The rows older than [`FAILURE_RETENTION_DAYS`] are deleted, and
//!   of those older than the throttle window only the newest [`MAX_FAILURE_ROWS`] are kept.
//! - **Every write** runs on [`Db::dashboard_writer`]: on SQLite the single writer connection,
//!   bounded, never a write lock taken from the read pool.

use crate::config::Sessions;
use crate::db::Db;
use crate::db::audit::{self, CountedFailures, RefusedSignIns};
use crate::db::users;

pub use crate::db::audit::{AuditEntry, audit_on};
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{DbErr, TransactionTrait};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

pub use crate::model::Role;

pub const SESSION_COOKIE: &str = "hookbox_session";
/// Failed sign-ins of one user name from one client within [`THROTTLE_WINDOW_MINUTES`] before
/// its further attempts wait the growing delay.
pub const MAX_FAILURES_PER_USER: i64 = 5;
/// Failed sign-ins from one client, whatever the names, before the same.
pub const MAX_FAILURES_PER_ADDRESS: i64 = 20;
/// How long a failure counts.
pub const THROTTLE_WINDOW_MINUTES: i64 = 60;
/// The delay after the failure that reaches a limit; each further failure doubles it.
pub const FIRST_DELAY: std::time::Duration = std::time::Duration::from_secs(2);
/// The longest delay.
pub const MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// How long an attempt waits for a password check slot before it is refused (429).
pub const PASSWORD_CHECK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Clients waiting for a password check slot, per core, at most.
pub const WAITING_PER_CORE: usize = 8;
/// Keys (client, name, minute) of refused attempts counted in memory between two writes.
pub const MAX_REFUSED_KEYS: usize = 1000;
/// Names counted apart per client between two writes; the client's others count under `*`.
pub const MAX_REFUSED_NAMES_PER_CLIENT: usize = 10;
/// `sign_in_failures` rows older than this are deleted.
pub const FAILURE_RETENTION_DAYS: i64 = 30;
/// Of the `sign_in_failures` rows older than the throttle window, the newest kept.
pub const MAX_FAILURE_ROWS: u64 = 100_000;
/// Clients (and names) this process remembers as throttled, at most.
const MAX_REMEMBERED_BLOCKS: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub role: Role,
}

impl User {
    /// A stored user; none when its role is not one hookbox knows.
    fn from_record(record: users::UserRecord) -> Option<User> {
        Role::parse(&record.role).map(|role| User {
            id: record.id,
            name: record.name,
            role,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed sign-ins; try again in {}", wait_text(*retry_after))]
    Throttled { retry_after: std::time::Duration },
    /// This client is already checking a password, or every password check slot of this process
    /// is taken and the queue is full or too slow (a burst of sign-ins).
    #[error("too many sign-ins at once; try again in a moment")]
    Busy,
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

impl SignInError {
    /// What `Retry-After` says, for the refusals that are a 429.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            SignInError::Throttled { retry_after } => Some(*retry_after),
            SignInError::Busy => Some(std::time::Duration::from_secs(1)),
            _ => None,
        }
    }
}

/// Whole seconds, rounded up, at least 1: a `Retry-After` value.
pub fn retry_after_secs(wait: std::time::Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// "5 seconds", "3 minutes" (rounded up).
pub fn wait_text(wait: std::time::Duration) -> String {
    let secs = retry_after_secs(wait);
    match secs {
        1 => "1 second".into(),
        s if s < 60 => format!("{s} seconds"),
        s => {
            let minutes = s.div_ceil(60);
            format!("{minutes} minute{}", if minutes == 1 { "" } else { "s" })
        }
    }
}

pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>()).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

pub fn valid_user_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
}

/// Adds a user, or sets the password and role of an existing one.
pub async fn add_user(db: &Db, name: &str, password: &str, role: Role) -> Result<(), String> {
    if !valid_user_name(name) {
        return Err("user names are 1 to 64 letters, digits, '.', '_', '-' or '@'".into());
    }
    if password.chars().count() < 8 {
        return Err("passwords need at least 8 characters".into());
    }
    let password = password.to_string();
    let hash = tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| e.to_string())??;
    users::upsert_user(db, name, &hash, role)
        .await
        .map_err(|e| e.to_string())
}

/// With no user at all, creates the operator `admin`. Returns the password when it was generated.
pub async fn ensure_admin(db: &Db, password: Option<String>) -> Result<Option<String>, String> {
    if users::count_users(db).await.map_err(|e| e.to_string())? > 0 {
        return Ok(None);
    }
    let (password, generated) = match password.filter(|p| !p.is_empty()) {
        Some(p) => (p, false),
        None => (format!("{:032x}", rand::random::<u128>()), true),
    };
    add_user(db, "admin", &password, Role::Operator).await?;
    Ok(generated.then_some(password))
}

/// The longest password checked; Argon2 takes any length, but there is no reason to hash
/// megabytes an unauthenticated caller sent.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// The client a throttle counts: an IPv4 address as it is, an IPv6 address as its /64 (what one
/// subscriber is usually given, so a client cannot escape the throttle by changing addresses
/// within it); anything else (`unknown`) as it is.
pub fn client_key(address: &str) -> String {
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => ipnet::Ipv6Net::new(v6, 64)
                .map(|net| net.trunc().to_string())
                .unwrap_or_else(|_| address.to_string()),
        },
        _ => address.to_string(),
    }
}

/// The delay after the failure that brought `failures` to `limit` or beyond: [`FIRST_DELAY`] at
/// the limit, doubling with each further failure, at most [`MAX_DELAY`]; none below the limit.
pub fn throttle_delay(failures: i64, limit: i64) -> Option<std::time::Duration> {
    let beyond = failures.checked_sub(limit).filter(|beyond| *beyond >= 0)?;
    // Doubling 31 times is past any cap; more shifts would overflow.
    let shift = u32::try_from(beyond).unwrap_or(u32::MAX).min(31);
    Some(
        FIRST_DELAY
            .checked_mul(1u32 << shift)
            .unwrap_or(MAX_DELAY)
            .min(MAX_DELAY),
    )
}

/// Until when the throttle refuses an attempt, given the counted failures; and whether it is the
/// client's limit across names (else the name's from that client).
fn throttled_until(counted: &CountedFailures) -> Option<(DateTime<Utc>, bool)> {
    let until = |failures, limit, last: Option<DateTime<Utc>>| {
        Some(last? + Duration::from_std(throttle_delay(failures, limit)?).ok()?)
    };
    let by_name = until(counted.of_name, MAX_FAILURES_PER_USER, counted.name_last);
    let by_client = until(
        counted.of_client,
        MAX_FAILURES_PER_ADDRESS,
        counted.client_last,
    );
    match (by_name, by_client) {
        (Some(n), Some(c)) if c >= n => Some((c, true)),
        (Some(n), _) => Some((n, false)),
        (None, Some(c)) => Some((c, true)),
        (None, None) => None,
    }
}

/// One database's sign-in state in this process, by [`store_key`].
fn store_key(db: &Db) -> String {
    match db.backend() {
        sea_orm::DatabaseBackend::Postgres => {
            let options = db.conn.get_postgres_connection_pool().connect_options();
            format!(
                "postgres://{}:{}/{}",
                options.get_host(),
                options.get_port(),
                options.get_database().unwrap_or_default()
            )
        }
        _ => {
            let options = db.writer.get_sqlite_connection_pool().connect_options();
            format!("sqlite:{}", options.get_filename().display())
        }
    }
}

/// Who this process refuses without a query, until when: (store, client, name or `None` for
/// every name).
type Blocks = HashMap<(String, String, Option<String>), DateTime<Utc>>;

fn blocks() -> &'static Mutex<Blocks> {
    static BLOCKS: std::sync::OnceLock<Mutex<Blocks>> = std::sync::OnceLock::new();
    BLOCKS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long `name` from `client` is still refused, as this process remembers it, and whether
/// for every name of the client.
fn remembered_block(store: &str, client: &str, name: &str) -> Option<(std::time::Duration, bool)> {
    let now = Utc::now();
    let blocks = lock(blocks());
    let key = |name: Option<&str>| {
        (
            store.to_string(),
            client.to_string(),
            name.map(str::to_string),
        )
    };
    [(key(None), true), (key(Some(name)), false)]
        .into_iter()
        .filter_map(|(k, every_name)| Some((*blocks.get(&k)?, every_name)))
        .filter(|(until, _)| *until > now)
        .max_by_key(|(until, _)| *until)
        .and_then(|(until, every_name)| Some(((until - now).to_std().ok()?, every_name)))
}

fn remember_block(store: &str, client: &str, name: Option<&str>, until: DateTime<Utc>) {
    let mut blocks = lock(blocks());
    if blocks.len() >= MAX_REMEMBERED_BLOCKS {
        let now = Utc::now();
        blocks.retain(|_, until| *until > now);
        if blocks.len() >= MAX_REMEMBERED_BLOCKS {
            return;
        }
    }
    blocks.insert(
        (
            store.to_string(),
            client.to_string(),
            name.map(str::to_string),
        ),
        until,
    );
}

/// Why an attempt was refused unchecked.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    Throttled,
    Busy,
}

/// The refused attempts of one database counted in memory since its last write, and the task
/// that writes them (spawned with the first of them).
struct Pending {
    db: Db,
    counts: HashMap<(String, String, DateTime<Utc>), (i64, i64)>,
    names_per_client: HashMap<String, usize>,
}

fn pending() -> &'static Mutex<HashMap<String, Pending>> {
    static PENDING: std::sync::OnceLock<Mutex<HashMap<String, Pending>>> =
        std::sync::OnceLock::new();
    PENDING.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Makes sure a write of `db`'s sign-in records is due at the end of this minute: it adds what
/// was refused meanwhile and deletes the rows past their bounds.
fn schedule_write<'a>(
    all: &'a mut HashMap<String, Pending>,
    db: &Db,
    store: &str,
) -> &'a mut Pending {
    all.entry(store.to_string()).or_insert_with(|| {
        let store = store.to_string();
        tokio::spawn(async move {
            let now = Utc::now();
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
fn count_refusal(db: &Db, store: &str, client: &str, name: &str, refusal: Refusal) {
    let minute = audit::minute_of(Utc::now());
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
    let now = Utc::now();
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

/// Password checks: each Argon2 check holds about 19 MiB and a core for its duration, so at most
/// one per core runs, and at most one per client (checking or waiting).
struct PasswordChecks {
    slots: tokio::sync::Semaphore,
    clients: Mutex<HashSet<String>>,
    /// Clients checking or waiting, at most.
    most: usize,
}

fn password_checks() -> &'static PasswordChecks {
    static CHECKS: std::sync::OnceLock<PasswordChecks> = std::sync::OnceLock::new();
    CHECKS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        PasswordChecks {
            slots: tokio::sync::Semaphore::new(cores),
            clients: Mutex::new(HashSet::new()),
            most: cores * (1 + WAITING_PER_CORE),
        }
    })
}

/// A client's place among the password checks, given back when dropped (a request cancelled
/// while it waits included).
struct ClientTurn {
    client: String,
}

impl Drop for ClientTurn {
    fn drop(&mut self) {
        lock(&password_checks().clients).remove(&self.client);
    }
}

/// A password check slot of `client`; none when the client already has one (checking or
/// waiting), when the queue is full, or after [`PASSWORD_CHECK_WAIT`].
async fn password_check_slot(
    client: &str,
) -> Option<(ClientTurn, tokio::sync::SemaphorePermit<'static>)> {
    let checks = password_checks();
    let turn = {
        let mut clients = lock(&checks.clients);
        if clients.len() >= checks.most || !clients.insert(client.to_string()) {
            return None;
        }
        ClientTurn {
            client: client.to_string(),
        }
    };
    let permit = tokio::time::timeout(PASSWORD_CHECK_WAIT, checks.slots.acquire())
        .await
        .ok()?
        .ok()?;
    Some((turn, permit))
}

/// Checks a password (throttled) and opens a session. Returns the user and the session token.
///
/// In this order, so that what an unauthenticated caller can make hookbox spend is bounded:
/// a name that cannot exist is refused without touching the database or any record; a client
/// this process remembers as throttled is refused (counted in memory); so is one that gets no
/// password check slot; then the throttle is read from the database (a refusal is remembered
/// until its delay ends); the attempt is counted as a failure *before* the hash is checked, so
/// parallel attempts in several processes count each other; only then Argon2 (a failure that
/// reaches a limit is remembered as a block from the end of its check). A success is one
/// transaction: the session, its audit row, the throttle's count of the name cleared.
pub async fn sign_in(
    db: &Db,
    name: &str,
    password: &str,
    address: &str,
    sessions: &Sessions,
) -> Result<(User, String), SignInError> {
    if !valid_user_name(name) || password.is_empty() || password.len() > MAX_PASSWORD_BYTES {
        return Err(SignInError::Invalid);
    }
    let client = client_key(address);
    let store = store_key(db);
    if let Some((retry_after, every_name)) = remembered_block(&store, &client, name) {
        let counted_as = if every_name { "*" } else { name };
        count_refusal(db, &store, &client, counted_as, Refusal::Throttled);
        return Err(SignInError::Throttled { retry_after });
    }
    let Some(_slot) = password_check_slot(&client).await else {
        count_refusal(db, &store, &client, name, Refusal::Busy);
        return Err(SignInError::Busy);
    };

    let now = Utc::now();
    let counted = audit::counted_failures(
        db,
        &client,
        name,
        now - Duration::minutes(THROTTLE_WINDOW_MINUTES),
    )
    .await?;
    if let Some((until, every_name)) = throttled_until(&counted).filter(|(until, _)| *until > now) {
        remember_block(&store, &client, (!every_name).then_some(name), until);
        count_refusal(
            db,
            &store,
            &client,
            if every_name { "*" } else { name },
            Refusal::Throttled,
        );
        return Err(SignInError::Throttled {
            retry_after: (until - now).to_std().unwrap_or_default(),
        });
    }

    // Counted first, as a failure until the password proves right.
    audit::record_sign_in_failure(db, &client, name, now).await?;
    schedule_write(&mut lock(pending()), db, &store);

    let found = users::find_user(db, name).await?;
    // An unknown name costs the same hashing as a wrong password: no user enumeration by timing.
    let hash = found
        .as_ref()
        .map(|user| user.password_hash.clone())
        .unwrap_or_else(|| DUMMY_HASH.to_string());
    let password = password.to_string();
    let matches = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .unwrap_or(false);
    let Some(user) = found.and_then(User::from_record).filter(|_| matches) else {
        // The delay this failure starts runs from the end of its check (in the database, from
        // its count, a check's time earlier).
        let failed = CountedFailures {
            of_name: counted.of_name + 1,
            name_last: Some(Utc::now()),
            of_client: counted.of_client + 1,
            client_last: Some(Utc::now()),
        };
        if let Some((until, every_name)) = throttled_until(&failed) {
            remember_block(&store, &client, (!every_name).then_some(name), until);
        }
        return Err(SignInError::Invalid);
    };

    let token = format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    );
    let signed_in = Utc::now();
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    users::insert_session_on(
        &txn,
        &token_hash(&token),
        user.id,
        signed_in,
        signed_in + sessions.lifetime,
    )
    .await?;
    audit_on(
        &txn,
        AuditEntry {
            actor: name,
            action: crate::model::AuditAction::SignIn,
            target: None,
            outcome: "succeeded",
            detail: None,
            address: Some(address),
        },
    )
    .await?;
    audit::clear_sign_in_failures_on(&txn, &client, name, now).await?;
    txn.commit().await?;
    Ok((user, token))
}

/// A hash of a random password, verified against when the user name is unknown.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0LzP1yq3w7nH2uQkT6pWnB8mCk3cQm0q4S0oS7x2s5M";

/// The user of a live (unexpired, unrevoked) session.
pub async fn session_user(db: &Db, token: &str) -> Result<Option<User>, DbErr> {
    Ok(users::session_user(db, &token_hash(token))
        .await?
        .and_then(User::from_record))
}

pub async fn revoke_session(db: &Db, token: &str) -> Result<(), DbErr> {
    users::revoke_session(db, &token_hash(token)).await
}

pub use users::{list_users, remove_user, revoke_user_sessions};

/// The session token a request's `Cookie` headers carry, if any: the one reader of it.
pub fn session_token_of(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|cookies| session_token(cookies).map(str::to_string))
}

/// The session token in a `Cookie` header, if any.
pub fn session_token(cookie_header: &str) -> Option<&str> {
    cookie_header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
        .filter(|v| !v.is_empty())
}

/// The `Set-Cookie` value for a new session (Secure when `HOOKBOX_COOKIE_SECURE=1`).
pub fn session_cookie(token: &str, sessions: &Sessions) -> String {
    let secure = if sessions.cookie_secure {
        "; Secure"
    } else {
        ""
    };
    format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        sessions.lifetime.num_seconds()
    )
}

pub fn cleared_session_cookie() -> String {
    format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse").expect("hash");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("wrong horse", &hash));
        assert!(!verify_password("anything", DUMMY_HASH));
    }

    #[test]
    fn the_delay_doubles_from_the_limit_up_to_its_cap() {
        let secs = |failures| throttle_delay(failures, 5).map(|d| d.as_secs());
        assert_eq!(secs(0), None);
        assert_eq!(secs(4), None);
        assert_eq!(secs(5), Some(2));
        assert_eq!(secs(6), Some(4));
        assert_eq!(secs(7), Some(8));
        assert_eq!(secs(13), Some(512));
        assert_eq!(secs(14), Some(MAX_DELAY.as_secs()));
        assert_eq!(secs(i64::MAX), Some(MAX_DELAY.as_secs()));
    }

    #[test]
    fn the_client_counted_is_the_address_or_its_ipv6_64() {
        assert_eq!(client_key("203.0.113.7"), "203.0.113.7");
        assert_eq!(client_key("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(client_key("2001:db8:1:2::9"), "2001:db8:1:2::/64");
        assert_eq!(client_key("::ffff:198.51.100.1"), "198.51.100.1");
        assert_eq!(client_key("unknown"), "unknown");
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        use std::time::Duration as D;
        assert_eq!(retry_after_secs(D::ZERO), 1);
        assert_eq!(retry_after_secs(D::from_millis(1)), 1);
        assert_eq!(retry_after_secs(D::from_millis(2001)), 3);
        assert_eq!(wait_text(D::from_secs(2)), "2 seconds");
        assert_eq!(wait_text(D::from_secs(61)), "2 minutes");
        assert_eq!(wait_text(MAX_DELAY), "15 minutes");
    }

    #[test]
    fn the_session_token_is_read_from_the_cookie_header() {
        assert_eq!(session_token("a=1; hookbox_session=abc; b=2"), Some("abc"));
        assert_eq!(session_token("hookbox_session="), None);
        assert_eq!(session_token("other=1"), None);
    }
}
