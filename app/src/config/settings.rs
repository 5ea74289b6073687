//! The deployment settings read from the environment, read once and validated like the file:
//! a bad value stops start-up naming the variable (never a silent fallback), and
//! `hookbox check-config` reports each one. Secrets (`HOOKBOX_ADMIN_PASSWORD`) are reported as
//! set or unset, never shown.

use super::database::{DEFAULT_DATABASE_URL, Pools};
use super::proxies::{TRUSTED_PROXIES_ENV, TrustedProxies};
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

pub const DEFAULT_SITE_ADDR: &str = "127.0.0.1:3000";
pub const DEFAULT_SITE_ROOT: &str = "target/site";

/// How the dashboard's sessions are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sessions {
    /// `HOOKBOX_SESSION_HOURS` (12).
    pub lifetime: chrono::Duration,
    /// `HOOKBOX_COOKIE_SECURE=1`: the cookie is marked `Secure` (serve over https).
    pub cookie_secure: bool,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            lifetime: chrono::Duration::hours(12),
            cookie_secure: false,
        }
    }
}

/// Every setting hookbox takes from its environment.
#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    /// `DATABASE_URL` (the embedded SQLite file when unset).
    pub database_url: String,
    /// `LEPTOS_SITE_ADDR`.
    pub site_addr: SocketAddr,
    /// `LEPTOS_SITE_ROOT`: the built dashboard.
    pub site_root: String,
    pub pools: Pools,
    /// `HOOKBOX_LOG_FORMAT=json`.
    pub log_json: bool,
    /// `HOOKBOX_ALLOW_UNSIGNED=1`: `scheme = "none"` is allowed.
    pub allow_unsigned: bool,
    /// `HOOKBOX_ADMIN_PASSWORD`: the first start's `admin` password.
    pub admin_password: Option<String>,
    pub sessions: Sessions,
    /// `HOOKBOX_SHUTDOWN_GRACE_SECS` (30).
    pub shutdown_grace: Duration,
    /// `HOOKBOX_TRUSTED_PROXIES`.
    pub trusted_proxies: TrustedProxies,
    /// `HOOKBOX_FORWARD_POLL_MS` (500): how often the forwarder looks for due deliveries when
    /// nothing woke it (retries coming due; another process's deliveries on SQLite, or when a
    /// notification was lost).
    pub forward_poll: Duration,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe().join("; "))
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            database_url: DEFAULT_DATABASE_URL.into(),
            site_addr: DEFAULT_SITE_ADDR
                .parse()
                .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 3000))),
            site_root: DEFAULT_SITE_ROOT.into(),
            pools: Pools::default(),
            log_json: false,
            allow_unsigned: false,
            admin_password: None,
            sessions: Sessions::default(),
            shutdown_grace: Duration::from_secs(30),
            trusted_proxies: TrustedProxies::default(),
            forward_poll: Duration::from_millis(500),
        }
    }
}

/// The problems of the environment, one per variable, each naming it. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsErrors(pub Vec<String>);

impl fmt::Display for SettingsErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("\n"))
    }
}

impl std::error::Error for SettingsErrors {}

impl Settings {
    /// From the process environment.
    pub fn from_env() -> Result<Settings, SettingsErrors> {
        Settings::read(&|name| std::env::var(name).ok())
    }

    /// From `env`; every problem found is returned. An empty value is the same as unset.
    pub fn read(env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, SettingsErrors> {
        let mut problems = Vec::new();
        let get = |name: &str| env(name).filter(|v| !v.is_empty());
        let mut settings = Settings::default();

        if let Some(url) = get("DATABASE_URL") {
            if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                match parse_url(&url) {
                    Ok(_) => settings.database_url = url,
                    Err(why) => problems.push(format!("DATABASE_URL {why}")),
                }
            } else if url.starts_with("sqlite:") {
                settings.database_url = url;
            } else {
                problems.push(format!(
                    "DATABASE_URL must start with postgres://, postgresql:// or sqlite:, not {:?}",
                    url.split(':').next().unwrap_or_default()
                ));
            }
        }
        if let Some(addr) = get("LEPTOS_SITE_ADDR") {
            match addr.parse() {
                Ok(addr) => settings.site_addr = addr,
                Err(_) => problems.push(format!(
                    "LEPTOS_SITE_ADDR {addr:?} is not an address like 127.0.0.1:3000"
                )),
            }
        }
        if let Some(root) = get("LEPTOS_SITE_ROOT") {
            settings.site_root = root;
        }
        let mut number = |name: &str, min: u64, max: u64| -> Option<u64> {
            let text = get(name)?;
            match text.trim().parse::<u64>() {
                Ok(n) if (min..=max).contains(&n) => Some(n),
                _ => {
                    problems.push(format!(
                        "{name} must be a whole number from {min} to {max}, not {text:?}"
                    ));
                    None
                }
            }
        };
        let pool = |n: u64| u32::try_from(n).ok();
        settings.pools.ingest = number("HOOKBOX_DB_POOL_SIZE", 1, 1000).and_then(pool);
        settings.pools.dashboard = number("HOOKBOX_DASHBOARD_POOL_SIZE", 1, 1000).and_then(pool);
        if let Some(hours) = number("HOOKBOX_SESSION_HOURS", 1, 24 * 366) {
            settings.sessions.lifetime = chrono::Duration::hours(hours as i64);
        }
        if let Some(secs) = number("HOOKBOX_SHUTDOWN_GRACE_SECS", 0, 3600) {
            settings.shutdown_grace = Duration::from_secs(secs);
        }
        if let Some(ms) = number("HOOKBOX_FORWARD_POLL_MS", 10, 600_000) {
            settings.forward_poll = Duration::from_millis(ms);
        }
        let mut flag = |name: &str, on: &str| -> bool {
            match get(name) {
                None => false,
                Some(value) if value == on => true,
                Some(value) if value == "0" && on == "1" => false,
                Some(value) => {
                    problems.push(format!("{name} must be {on:?} or unset, not {value:?}"));
                    false
                }
            }
        };
        settings.log_json = flag("HOOKBOX_LOG_FORMAT", "json");
        settings.allow_unsigned = flag("HOOKBOX_ALLOW_UNSIGNED", "1");
        settings.sessions.cookie_secure = flag("HOOKBOX_COOKIE_SECURE", "1");
        settings.admin_password = get("HOOKBOX_ADMIN_PASSWORD");
        if let Some(text) = get(TRUSTED_PROXIES_ENV) {
            match TrustedProxies::parse(&text) {
                Ok(proxies) => settings.trusted_proxies = proxies,
                Err(problem) => problems.push(problem),
            }
        }

        if problems.is_empty() {
            Ok(settings)
        } else {
            Err(SettingsErrors(problems))
        }
    }

    /// One line per setting, for `hookbox check-config` and the start-up log; no secret.
    pub fn describe(&self) -> Vec<String> {
        let default = |value: Option<u32>| value.map_or("default".to_string(), |n| n.to_string());
        vec![
            format!("DATABASE_URL: {}", redact_url(&self.database_url)),
            format!("LEPTOS_SITE_ADDR: {}", self.site_addr),
            format!("LEPTOS_SITE_ROOT: {}", self.site_root),
            format!(
                "HOOKBOX_DB_POOL_SIZE: {}, HOOKBOX_DASHBOARD_POOL_SIZE: {}",
                default(self.pools.ingest),
                default(self.pools.dashboard)
            ),
            format!(
                "HOOKBOX_SESSION_HOURS: {}, HOOKBOX_COOKIE_SECURE: {}",
                self.sessions.lifetime.num_hours(),
                if self.sessions.cookie_secure {
                    "1"
                } else {
                    "unset"
                }
            ),
            format!(
                "HOOKBOX_SHUTDOWN_GRACE_SECS: {}, HOOKBOX_FORWARD_POLL_MS: {}",
                self.shutdown_grace.as_secs(),
                self.forward_poll.as_millis()
            ),
            format!(
                "HOOKBOX_LOG_FORMAT: {}, HOOKBOX_ALLOW_UNSIGNED: {}, HOOKBOX_ADMIN_PASSWORD: {}",
                if self.log_json { "json" } else { "text" },
                if self.allow_unsigned { "1" } else { "unset" },
                if self.admin_password.is_some() {
                    "set"
                } else {
                    "unset"
                }
            ),
            self.trusted_proxies.describe(),
        ]
    }
}

/// Query parameters whose values are never shown: those whose name holds one of these
/// (`password`, `sslpassword`, `pass`, `pwd`, `api_key`, `access_token`, `secret`, `sig`…).
const SECRET_PARAM_PARTS: &[&str] = &[
    "pass", "pwd", "secret", "token", "key", "auth", "sig", "cred", "session", "jwt", "code",
];

fn secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAM_PARTS.iter().any(|part| name.contains(part))
}

/// The one way hookbox shows a URL (check-config, logs, `/destinations`): never its user name
/// or password (`***@` where it had some), nor its fragment, and `***` for the value of every
/// password-like query parameter. A text that is no URL shows as its scheme and `…` only.
///
/// `postgres://hookbox:s3cret@db/hookbox?sslmode=require&password=x` →
/// `postgres://***@db/hookbox?sslmode=require&password=***`.
pub fn redact_url(text: &str) -> String {
    let Ok(mut url) = url::Url::parse(text) else {
        let scheme = text
            .split_once(':')
            .map(|(scheme, _)| scheme)
            .filter(|s| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            })
            .unwrap_or("?");
        return format!("{scheme}:… (not a valid URL, not shown)");
    };
    let had_credentials = !url.username().is_empty() || url.password().is_some();
    // Neither fails on a URL that has credentials (one with a host).
    let _ = url.set_password(None);
    let _ = url.set_username("");
    url.set_fragment(None);
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if secret_param(&name) {
                    "***".to_string()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        if pairs.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
    }
    let shown = url.to_string();
    let prefix = format!("{}://", url.scheme());
    match shown.strip_prefix(&prefix) {
        Some(rest) if had_credentials => format!("{prefix}***@{rest}"),
        _ => shown,
    }
}

/// Parses a URL of the configuration (a destination's, `DATABASE_URL`) with the `url` crate,
/// refusing what another reader could take for a different URL: an `@` after the host (from
/// a password holding `/`, `?` or `#`, which end the host). The reason never holds the URL.
pub fn parse_url(text: &str) -> Result<url::Url, String> {
    const ENCODE: &str =
        "percent-encode '/', '?', '#' and '@' in a user name or password (%2F, %3F, %23, %40)";
    let url = url::Url::parse(text).map_err(|e| format!("is not a valid URL ({e}): {ENCODE}"))?;
    if let Some((_, rest)) = text.split_once("://") {
        let special = matches!(
            url.scheme(),
            "http" | "https" | "ws" | "wss" | "ftp" | "file"
        );
        let end = rest
            .find(|c| matches!(c, '/' | '?' | '#') || (special && c == '\\'))
            .unwrap_or(rest.len());
        if rest[end..].contains('@') {
            return Err(format!(
                "has an '@' after its host, so its host is ambiguous: {ENCODE}, and an '@' in the path or query as %40"
            ));
        }
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Settings, SettingsErrors> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::read(&move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn an_empty_environment_gives_the_defaults() {
        assert_eq!(read(&[]).expect("valid"), Settings::default());
    }

    #[test]
    fn every_bad_value_is_named_and_none_falls_back_silently() {
        let SettingsErrors(problems) = read(&[
            ("HOOKBOX_SESSION_HOURS", "twelve"),
            ("HOOKBOX_DB_POOL_SIZE", "0"),
            ("HOOKBOX_COOKIE_SECURE", "yes"),
            ("LEPTOS_SITE_ADDR", "localhost"),
            ("DATABASE_URL", "mysql://x"),
            ("HOOKBOX_TRUSTED_PROXIES", "lb"),
        ])
        .expect_err("six problems");
        assert_eq!(problems.len(), 6, "{problems:#?}");
        for name in [
            "HOOKBOX_SESSION_HOURS",
            "HOOKBOX_DB_POOL_SIZE",
            "HOOKBOX_COOKIE_SECURE",
            "LEPTOS_SITE_ADDR",
            "DATABASE_URL",
            "HOOKBOX_TRUSTED_PROXIES",
        ] {
            assert!(
                problems.iter().any(|p| p.starts_with(name)),
                "{name}: {problems:#?}"
            );
        }
    }

    #[test]
    fn good_values_are_taken_and_secrets_never_described() {
        let settings = read(&[
            ("DATABASE_URL", "postgres://hookbox:s3cret@db/hookbox"),
            ("HOOKBOX_SESSION_HOURS", "8"),
            ("HOOKBOX_COOKIE_SECURE", "1"),
            ("HOOKBOX_ADMIN_PASSWORD", "first-password"),
            ("HOOKBOX_DASHBOARD_POOL_SIZE", "6"),
        ])
        .expect("valid");
        assert_eq!(settings.sessions.lifetime, chrono::Duration::hours(8));
        assert!(settings.sessions.cookie_secure);
        assert_eq!(settings.pools.dashboard, Some(6));
        let described = settings.describe().join("\n");
        assert!(!described.contains("s3cret"), "{described}");
        assert!(!described.contains("first-password"), "{described}");
        assert!(
            described.contains("DATABASE_URL: postgres://***@db/hookbox\n"),
            "{described}"
        );
        assert!(
            described.contains("HOOKBOX_ADMIN_PASSWORD: set"),
            "{described}"
        );
        assert!(!format!("{settings:?}").contains("first-password"));
    }

    #[test]
    fn a_shown_url_never_holds_credentials_or_password_parameters() {
        for (url, shown) in [
            (
                "postgres://hookbox:s3cret@db:5432/hookbox?sslmode=require&password=s3cret&sslpassword=s3cret",
                "postgres://***@db:5432/hookbox?sslmode=require&password=***&sslpassword=***",
            ),
            (
                "postgres://db/hookbox?user=hookbox&password=s3cret",
                "postgres://db/hookbox?user=hookbox&password=***",
            ),
            (
                "postgres://nobody@127.0.0.1:1/none",
                "postgres://***@127.0.0.1:1/none",
            ),
            (
                "https://user:p%2Fs%3Fs%23s3cret@app.example:8443/in?api_key=s3cret&tenant=acme#s3cret",
                "https://***@app.example:8443/in?api_key=***&tenant=acme",
            ),
            (
                "https://user:pa@ss@s3cret.example/in",
                "https://***@s3cret.example/in",
            ),
            (
                "http://127.0.0.1:9000/hookbox",
                "http://127.0.0.1:9000/hookbox",
            ),
            (
                "sqlite://hookbox.db?mode=rwc",
                "sqlite://hookbox.db?mode=rwc",
            ),
            // Not URLs: nothing but the scheme.
            (
                "https://user:pa/s3cret@app.example/in",
                "https:… (not a valid URL, not shown)",
            ),
            (
                "postgres://u:s3#cret@db/x",
                "postgres:… (not a valid URL, not shown)",
            ),
            ("s3cret", "?:… (not a valid URL, not shown)"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn an_ambiguous_or_unparsable_database_url_is_refused_without_being_shown() {
        for url in [
            "postgres://hookbox:pa/s3cret@db/hookbox",
            "postgres://hookbox:pa?s3cret@db/hookbox",
            "postgres://hookbox:pa#s3cret@db/hookbox",
            "postgres://hookbox:123/s3cret@db/hookbox",
        ] {
            let SettingsErrors(problems) = read(&[("DATABASE_URL", url)]).expect_err("refused");
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(problems[0].starts_with("DATABASE_URL "), "{problems:?}");
            assert!(problems[0].contains("%2F"), "{problems:?}");
            assert!(!problems[0].contains("s3cret"), "{problems:?}");
        }
        let settings = read(&[("DATABASE_URL", "postgres://hookbox:pa%2Fs%40x@db/hookbox")])
            .expect("an encoded password is fine");
        assert!(!settings.describe().join("\n").contains("pa%2F"));
    }
}
