//! `[[destinations]]`: the operator's application endpoints that accepted events are forwarded
//! to, each signed with its own Standard Webhooks secret. Every problem names the file, the
//! destination and the key (`destinations.orders-app.url`).

use super::keys::{Keys, Problems, valid_env_name};
use crate::schemes::{Scheme, SecretKey};

const DESTINATION_KEYS: &[&str] = &[
    "name",
    "url",
    "secret_env",
    "timeout_secs",
    "retry_schedule_secs",
    "rate_limit_per_sec",
];

/// One attempt's limit when `timeout_secs` is not given.
pub const DEFAULT_TIMEOUT_SECS: u64 = 15;

/// The waits before attempt 2, 3, …: from 5 s to a day, about 2.15 days in all (12 attempts).
pub const DEFAULT_RETRY_SCHEDULE_SECS: &[u64] = &[
    5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200, 86400,
];

/// The longest wait one step of a schedule may name (a week).
const MAX_RETRY_WAIT_SECS: u64 = 7 * 24 * 3600;

#[derive(Debug, Clone)]
pub struct Destination {
    pub name: String,
    /// `http://` or `https://`.
    pub url: String,
    /// The name of the environment variable holding the secret (never its value).
    pub secret_env: String,
    /// The signing key (`whsec_<base64>` decoded).
    pub key: SecretKey,
    pub timeout_secs: u64,
    /// The wait before attempt 2, 3, …; after the last one a delivery is dead.
    pub retry_schedule_secs: Vec<u64>,
    /// At most this many attempts a second to this destination (per process).
    pub rate_limit_per_sec: Option<u32>,
}

/// Reads `[[destinations]]`; a destination with any problem is left out (and its problems
/// recorded), so sources naming it get "unknown destination" too.
pub(super) fn read_destinations(
    value: Option<&toml::Value>,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Problems,
) -> Vec<Destination> {
    super::keys::read_tables(value, "destinations", problems, |keys, earlier| {
        read_destination(keys, env, earlier)
    })
}

fn read_destination(
    mut keys: Keys<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    earlier_names: &[String],
) -> Option<Destination> {
    let problems_before = keys.problems.found.len();
    keys.refuse_unknown(DESTINATION_KEYS);

    let name = keys.name(earlier_names);

    let url = keys.string("url");
    match &url {
        None if !keys.has("url") => keys.problem("url", "is required"),
        Some(url) => {
            if let Err(why) = check_url(url) {
                keys.problem("url", why);
            }
        }
        None => {}
    }

    let secret_env = keys.string("secret_env");
    let mut key = None;
    match &secret_env {
        None if !keys.has("secret_env") => keys.problem(
            "secret_env",
            "is required: the environment variable holding the destination's whsec_ secret",
        ),
        // Not echoed: a value that is no variable name may be the secret itself.
        Some(var) if !valid_env_name(var) => keys.problem(
            "secret_env",
            "is not an environment variable name (letters, digits, _); the file names the variable, the secret stays in the environment",
        ),
        Some(var) => match env(var).filter(|v| !v.is_empty()) {
            None => keys.problem(
                "secret_env",
                format!("environment variable {var} is unset or empty"),
            ),
            Some(secret) => match Scheme::StandardWebhooks.parse_secret(&secret) {
                Ok(parsed) => key = Some(parsed),
                Err(why) => keys.problem("secret_env", format!("the secret in {var}: {why}")),
            },
        },
        None => {}
    }

    let timeout_secs = keys
        .number("timeout_secs", 1)
        .unwrap_or(DEFAULT_TIMEOUT_SECS);
    let retry_schedule_secs = match keys.table.get("retry_schedule_secs") {
        None => DEFAULT_RETRY_SCHEDULE_SECS.to_vec(),
        Some(value) => {
            let waits: Option<Vec<u64>> = value.as_array().and_then(|items| {
                items
                    .iter()
                    .map(|item| item.as_integer().and_then(|n| u64::try_from(n).ok()))
                    .collect()
            });
            match waits {
                None => {
                    keys.refuse(
                        "retry_schedule_secs",
                        "must be a list of whole seconds, like [5, 30, 120]",
                    );
                    Vec::new()
                }
                Some(waits) if waits.is_empty() => {
                    keys.refuse(
                        "retry_schedule_secs",
                        "must not be empty (it lists the waits before attempt 2, 3, …)",
                    );
                    waits
                }
                Some(waits) if waits.iter().any(|w| *w > MAX_RETRY_WAIT_SECS) => {
                    keys.refuse(
                        "retry_schedule_secs",
                        format!("a wait is longer than a week ({MAX_RETRY_WAIT_SECS} s)"),
                    );
                    waits
                }
                Some(waits) => waits,
            }
        }
    };
    let rate_limit_per_sec = keys.number("rate_limit_per_sec", 1);

    let complete = keys.problems.found.len() == problems_before;
    match (name, url, secret_env, key) {
        (Some(name), Some(url), Some(secret_env), Some(key)) if complete => Some(Destination {
            name,
            url,
            secret_env,
            key,
            timeout_secs,
            retry_schedule_secs,
            rate_limit_per_sec,
        }),
        _ => None,
    }
}

/// A source's `forward`: names of declared destinations, each once.
pub(super) fn read_forward(keys: &mut Keys<'_>, destinations: &[&str]) -> Vec<String> {
    let forward = keys.strings("forward").unwrap_or_default();
    for (i, name) in forward.iter().enumerate() {
        if !destinations.contains(&name.as_str()) {
            let known = if destinations.is_empty() {
                "none is declared".to_string()
            } else {
                format!("declared: {}", destinations.join(", "))
            };
            keys.problem("forward", format!("unknown destination {name:?} ({known})"));
        } else if forward[..i].contains(name) {
            keys.problem("forward", format!("names {name:?} twice"));
        }
    }
    forward
}

/// An absolute `http://` or `https://` URL with a host, as the `url` crate (and the forwarder's
/// HTTP client) reads it, and unambiguous: a password holding `/`, `?`, `#` or `@` must be
/// percent-encoded. A problem shows the URL as `redact_url` does, never its credentials.
pub(super) fn check_url(url: &str) -> Result<(), String> {
    let parsed = super::settings::parse_url(url)?;
    let shown = super::settings::redact_url(url);
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{shown:?} must start with http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("{shown:?} has no host"));
    }
    Ok(())
}
