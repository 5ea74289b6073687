//! Passwords: Argon2id hashes, and the password check slots that share the cores fairly between
//! clients (one check per core, one per client, a bounded queue).

use super::lock;
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use std::collections::HashSet;
use std::sync::Mutex;

/// How long an attempt waits for a password check slot before it is refused (429).
pub const PASSWORD_CHECK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Clients waiting for a password check slot, per core, at most.
pub const WAITING_PER_CORE: usize = 8;

/// The longest password checked; Argon2 takes any length, but there is no reason to hash
/// megabytes an unauthenticated caller sent.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// A hash of a random password, verified against when the user name is unknown.
pub(super) const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0LzP1yq3w7nH2uQkT6pWnB8mCk3cQm0q4S0oS7x2s5M";

pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>()).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

pub(super) fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
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
pub(super) struct ClientTurn {
    client: String,
}

impl Drop for ClientTurn {
    fn drop(&mut self) {
        lock(&password_checks().clients).remove(&self.client);
    }
}

/// A password check slot of `client`; none when the client already has one (checking or
/// waiting), when the queue is full, or after [`PASSWORD_CHECK_WAIT`].
pub(super) async fn password_check_slot(
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
