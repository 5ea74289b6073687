//! `hookbox.toml` + environment → a typed, validated configuration (the keys are described in
//! `docs/webhooks.md`, section 1).
//!
//! The file is read key by key and reading goes on after a problem, so every problem in a file is
//! reported at once (`hookbox check-config` lists them), each naming the file, the source and the
//! key. Secrets are read from the environment variables the file names and kept only as
//! [`SecretKey`](crate::schemes::SecretKey)s, which never print.
//!
//! Here: [`Config`], its loading, and its errors. The file's tables are read in `server.rs`
//! (`[server]`), `sources.rs` (`[[sources]]`), `destinations.rs` (`[[destinations]]`) and
//! `archive.rs` (`[archive]`), each
//! key by key through `keys.rs`, which records the problems. The environment is read in
//! `settings.rs`, with `proxies.rs`; what configures the database pools is in `database.rs`.

pub mod archive;
mod database;
pub mod destinations;
mod keys;
pub mod notifications;
pub mod oidc;
pub mod proxies;
pub mod routes;
mod server;
pub mod settings;
mod sources;

pub use database::{DEFAULT_DATABASE_URL, Pools};
pub use destinations::Destination;
pub use notifications::Channel;
pub use proxies::TrustedProxies;
pub use server::{
    DEFAULT_AUDIT_RETENTION_DAYS, DEFAULT_BODY_READ_TIMEOUT_SECS, DEFAULT_HEADER_READ_TIMEOUT_SECS,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_REJECTED_RETENTION_DAYS, DEFAULT_REJECTED_ROWS_PER_SOURCE,
    DEFAULT_REQUEST_TIMEOUT_SECS, DEFAULT_RETENTION_DAYS, ServerSettings,
};
pub use settings::{Sessions, Settings, SettingsErrors};
pub use sources::{DEFAULT_TOLERANCE_SECS, Source};

use keys::{Keys, Problems};
use server::read_server;
use sources::read_source;
use std::path::{Path, PathBuf};

/// The environment variable that names the config file.
pub const CONFIG_ENV: &str = "HOOKBOX_CONFIG";
/// The config file read from the working directory when [`CONFIG_ENV`] is unset.
pub const DEFAULT_CONFIG_FILE: &str = "hookbox.toml";

const TOP_KEYS: &[&str] = &[
    "server",
    "sources",
    "destinations",
    "archive",
    "notifications",
    "routes",
    "auth",
];

#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
    pub server: ServerSettings,
    pub sources: Vec<Source>,
    /// Where accepted events are forwarded (`[[destinations]]`).
    pub destinations: Vec<Destination>,
    /// The cold archive (`[archive] url`), when configured.
    pub archive: Option<archive::ArchiveUrl>,
    /// Who is told of problems (`[[notifications]]`).
    pub notifications: Vec<Channel>,
    /// Which deliveries of a source a destination is sent besides `forward` (`[[routes]]`),
    /// in file order.
    pub routes: Vec<crate::routing::Route>,
    /// Single sign-on (`[auth.oidc]`), when configured.
    pub oidc: Option<oidc::Oidc>,
}

impl Config {
    pub fn empty() -> Config {
        Config {
            path: None,
            server: ServerSettings::default(),
            sources: Vec::new(),
            destinations: Vec::new(),
            archive: None,
            notifications: Vec::new(),
            routes: Vec::new(),
            oidc: None,
        }
    }

    pub fn source(&self, name: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.name == name)
    }

    /// What `source` sends where: its `forward` list and the routes of it, which decide each
    /// delivery's destinations ([`crate::routing::Plan`]).
    pub fn plan<'a>(&'a self, source: &'a Source) -> crate::routing::Plan<'a> {
        crate::routing::Plan {
            forward: &source.forward,
            routes: &source.routes,
        }
    }

    /// `HOOKBOX_CONFIG`, else `hookbox.toml` if the working directory has one, else none.
    pub fn path_from_env() -> Option<PathBuf> {
        match std::env::var_os(CONFIG_ENV) {
            Some(path) => Some(PathBuf::from(path)),
            None => Some(PathBuf::from(DEFAULT_CONFIG_FILE)).filter(|p| p.exists()),
        }
    }

    /// The file of [`Config::path_from_env`] with the process environment; no file → no sources.
    pub fn load_from_env() -> Result<Config, ConfigErrors> {
        match Config::path_from_env() {
            Some(path) => Config::load(&path, &|name| std::env::var(name).ok()),
            None => Ok(Config::empty()),
        }
    }

    pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigErrors> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigErrors(vec![ConfigError {
                file: path.display().to_string(),
                source_name: None,
                key: None,
                message: format!("cannot be read: {e}"),
            }])
        })?;
        Config::parse(&text, path, env)
    }

    /// Reads a config file's text; `env` gives the environment variables (secrets,
    /// `HOOKBOX_ALLOW_UNSIGNED`). Every problem found is returned, not just the first.
    pub fn parse(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigErrors> {
        let mut problems = Problems {
            file: path.display().to_string(),
            found: Vec::new(),
        };
        let top: toml::Table = match toml::from_str(text) {
            Ok(table) => table,
            Err(e) => {
                let line = e
                    .span()
                    .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
                let message = match line {
                    Some(line) => format!("line {line}: {}", e.message()),
                    None => e.message().to_string(),
                };
                problems.add(None, None, message);
                return Err(ConfigErrors(problems.found));
            }
        };
        Keys::new(&top, None, "", &mut problems).refuse_unknown(TOP_KEYS);

        let server = match top.get("server") {
            None => ServerSettings::default(),
            Some(toml::Value::Table(table)) => {
                read_server(Keys::new(table, None, "server.", &mut problems))
            }
            Some(_) => {
                problems.add(None, Some("server"), "must be a table ([server])");
                ServerSettings::default()
            }
        };

        let archive = archive::read(top.get("archive"), &mut problems);
        let destinations =
            destinations::read_destinations(top.get("destinations"), env, &mut problems);
        let destination_names: Vec<&str> = destinations.iter().map(|d| d.name.as_str()).collect();
        let allow_unsigned = env("HOOKBOX_ALLOW_UNSIGNED").as_deref() == Some("1");
        let mut sources: Vec<Source> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        match top.get("sources") {
            None => {}
            Some(toml::Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    let Some(table) = item.as_table() else {
                        problems.add(None, Some("sources"), "must be tables ([[sources]])");
                        continue;
                    };
                    let label = match table.get("name").and_then(toml::Value::as_str) {
                        Some(name) => name.to_string(),
                        None => format!("#{}", index + 1),
                    };
                    let keys = Keys::new(table, Some(label), "", &mut problems);
                    let source = read_source(
                        keys,
                        env,
                        allow_unsigned,
                        &names,
                        &destination_names,
                        server.public_url.is_some(),
                    );
                    if let Some(name) = table.get("name").and_then(toml::Value::as_str) {
                        names.push(name.to_string());
                    }
                    sources.extend(source);
                }
            }
            Some(_) => problems.add(None, Some("sources"), "must be tables ([[sources]])"),
        }

        let (notifications, routes, oidc) = read_the_rest(
            &top,
            (&mut sources, &destination_names),
            &server,
            env,
            &mut problems,
        );
        if problems.found.is_empty() {
            Ok(Config {
                path: Some(path.to_path_buf()),
                server,
                sources,
                destinations,
                archive,
                notifications,
                routes,
                oidc,
            })
        } else {
            Err(ConfigErrors(problems.found))
        }
    }
}

/// The tables read after the sources: `[[notifications]]`, `[[routes]]` and `[auth]`.
fn read_the_rest(
    top: &toml::Table,
    (sources, destination_names): (&mut Vec<Source>, &[&str]),
    server: &ServerSettings,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Problems,
) -> (Vec<Channel>, Vec<crate::routing::Route>, Option<oidc::Oidc>) {
    let notifications =
        notifications::read_notifications(top.get("notifications"), env, sources, problems);
    let routes = routes::read_routes(top.get("routes"), sources, destination_names, problems);
    let oidc = oidc::read(top.get("auth"), server.public_url.as_deref(), env, problems);
    (notifications, routes, oidc)
}

/// A config problem, naming the file, the source and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub source_name: Option<String>,
    pub key: Option<String>,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(source) = &self.source_name {
            write!(f, ": source {source}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Every problem of a config file, in file order; never empty. Displayed one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod recipe_tests;

#[cfg(test)]
mod oidc_tests;
#[cfg(test)]
mod route_tests;
