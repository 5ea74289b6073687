//! `hookbox.toml` + environment → a typed, validated configuration (the keys are described in
//! `docs/webhooks.md`, section 1).
//!
//! The file is read key by key and reading goes on after a problem, so every problem in a file is
//! reported at once (`hookbox check-config` lists them), each naming the file, the source and the
//! key. Secrets are read from the environment variables the file names and kept only as
//! [`SecretKey`]s, which never print.

pub mod destinations;
pub mod proxies;
pub mod settings;

pub use destinations::Destination;

pub use crate::db::Pools;
pub use proxies::TrustedProxies;
pub use settings::{Sessions, Settings, SettingsErrors};

use crate::envelope::{Field, FieldRef, Mapping, Mode};
use crate::providers::{ALL_PRESETS, Preset};
use crate::schemes::{Scheme, SecretKey};
use std::path::{Path, PathBuf};

pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
pub const DEFAULT_RETENTION_DAYS: u32 = 90;
/// How long a client may take to send a request's headers (and how long an idle keep-alive
/// connection stays open).
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_BODY_READ_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_AUDIT_RETENTION_DAYS: u32 = 365;
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;
pub const DEFAULT_REJECTED_ROWS_PER_SOURCE: u32 = 10_000;
pub const DEFAULT_REJECTED_RETENTION_DAYS: u32 = 7;
/// The environment variable that names the config file.
pub const CONFIG_ENV: &str = "HOOKBOX_CONFIG";
/// The config file read from the working directory when [`CONFIG_ENV`] is unset.
pub const DEFAULT_CONFIG_FILE: &str = "hookbox.toml";

const TOP_KEYS: &[&str] = &["server", "sources", "destinations"];
const SERVER_KEYS: &[&str] = &[
    "max_body_bytes",
    "retention_days",
    "header_read_timeout_secs",
    "body_read_timeout_secs",
    "request_timeout_secs",
    "audit_retention_days",
    "rejected_rows_per_source",
    "rejected_retention_days",
];
const SOURCE_KEYS: &[&str] = &[
    "name",
    "preset",
    "scheme",
    "secrets_env",
    "tolerance_secs",
    "rate_limit_per_sec",
    "mode",
    "event_id",
    "object_id",
    "revision",
    "snapshot",
    "event_type",
    "forward",
];

#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
    pub server: ServerSettings,
    pub sources: Vec<Source>,
    /// Where accepted events are forwarded (`[[destinations]]`).
    pub destinations: Vec<Destination>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    pub max_body_bytes: usize,
    pub retention_days: u32,
    pub header_read_timeout_secs: u64,
    /// How long a webhook body may take to arrive, in all (not per chunk): then 408.
    pub body_read_timeout_secs: u64,
    /// The deadline of every request, head to answer: then 408.
    pub request_timeout_secs: u64,
    /// How long audit rows (sign-ins, replays) are kept.
    pub audit_retention_days: u32,
    /// The refused-requests log keeps at most this many rows per source (and as many for all
    /// unknown source names together), the newest.
    pub rejected_rows_per_source: u32,
    /// ... and none older than this.
    pub rejected_retention_days: u32,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            retention_days: DEFAULT_RETENTION_DAYS,
            header_read_timeout_secs: DEFAULT_HEADER_READ_TIMEOUT_SECS,
            body_read_timeout_secs: DEFAULT_BODY_READ_TIMEOUT_SECS,
            request_timeout_secs: DEFAULT_REQUEST_TIMEOUT_SECS,
            audit_retention_days: DEFAULT_AUDIT_RETENTION_DAYS,
            rejected_rows_per_source: DEFAULT_REJECTED_ROWS_PER_SOURCE,
            rejected_retention_days: DEFAULT_REJECTED_RETENTION_DAYS,
        }
    }
}

/// One sender account: its endpoint, how it authenticates and where its identities live.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    /// The provider preset the source was declared with; its keys may override any part.
    pub preset: Option<Preset>,
    pub scheme: Scheme,
    /// The names of the environment variables the keys came from, in order (never the values).
    pub secrets_env: Vec<String>,
    /// The first key signs in `hookbox send`; any key verifies.
    pub keys: Vec<SecretKey>,
    pub tolerance_secs: u64,
    /// Deliveries a second this process accepts for the source (a burst of as many); beyond
    /// that, 429 with `Retry-After`. None: unlimited.
    pub rate_limit_per_sec: Option<u32>,
    pub mapping: Mapping,
    /// The destinations its accepted events are forwarded to (`forward = [...]`).
    pub forward: Vec<String>,
}

impl Config {
    pub fn empty() -> Config {
        Config {
            path: None,
            server: ServerSettings::default(),
            sources: Vec::new(),
            destinations: Vec::new(),
        }
    }

    pub fn source(&self, name: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.name == name)
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
                    let source = read_source(keys, env, allow_unsigned, &names, &destination_names);
                    if let Some(name) = table.get("name").and_then(toml::Value::as_str) {
                        names.push(name.to_string());
                    }
                    sources.extend(source);
                }
            }
            Some(_) => problems.add(None, Some("sources"), "must be tables ([[sources]])"),
        }

        if problems.found.is_empty() {
            Ok(Config {
                path: Some(path.to_path_buf()),
                server,
                sources,
                destinations,
            })
        } else {
            Err(ConfigErrors(problems.found))
        }
    }
}

fn read_server(mut keys: Keys<'_>) -> ServerSettings {
    keys.refuse_unknown(SERVER_KEYS);
    ServerSettings {
        max_body_bytes: keys
            .number("max_body_bytes", 1)
            .unwrap_or(DEFAULT_MAX_BODY_BYTES),
        retention_days: keys
            .number("retention_days", 1)
            .unwrap_or(DEFAULT_RETENTION_DAYS),
        header_read_timeout_secs: keys
            .number("header_read_timeout_secs", 1)
            .unwrap_or(DEFAULT_HEADER_READ_TIMEOUT_SECS),
        body_read_timeout_secs: keys
            .number("body_read_timeout_secs", 1)
            .unwrap_or(DEFAULT_BODY_READ_TIMEOUT_SECS),
        request_timeout_secs: keys
            .number("request_timeout_secs", 1)
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS),
        audit_retention_days: keys
            .number("audit_retention_days", 1)
            .unwrap_or(DEFAULT_AUDIT_RETENTION_DAYS),
        rejected_rows_per_source: keys
            .number("rejected_rows_per_source", 1)
            .unwrap_or(DEFAULT_REJECTED_ROWS_PER_SOURCE),
        rejected_retention_days: keys
            .number("rejected_retention_days", 1)
            .unwrap_or(DEFAULT_REJECTED_RETENTION_DAYS),
    }
}

/// One `[[sources]]` table; `None` if it has a problem (recorded in `keys`).
fn read_source(
    mut keys: Keys<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    allow_unsigned: bool,
    earlier_names: &[String],
    destinations: &[&str],
) -> Option<Source> {
    let problems_before = keys.problems.found.len();
    keys.refuse_unknown(SOURCE_KEYS);

    let name = keys.name(earlier_names);

    let preset = keys.string("preset").and_then(|spelled| {
        let preset = Preset::from_name(&spelled);
        if preset.is_none() {
            let known: Vec<&str> = ALL_PRESETS.iter().map(|p| p.name()).collect();
            keys.problem(
                "preset",
                format!("unknown preset {spelled:?} (known: {})", known.join(", ")),
            );
        }
        preset
    });

    let scheme = match keys.string("scheme") {
        Some(spelled) => {
            let scheme = Scheme::from_name(&spelled);
            if scheme.is_none() {
                keys.problem("scheme", format!("unknown scheme {spelled:?}"));
            }
            scheme
        }
        None if keys.has("scheme") || keys.has("preset") => preset.map(Preset::scheme),
        None => {
            keys.problem("scheme", "is required (or a preset)");
            None
        }
    };

    let secrets_env = keys.strings("secrets_env").unwrap_or_default();
    let mut secret_keys = Vec::new();
    if scheme == Some(Scheme::None) {
        if !allow_unsigned {
            keys.problem(
                "scheme",
                "\"none\" accepts unsigned requests; set HOOKBOX_ALLOW_UNSIGNED=1 for local development only",
            );
        }
    } else {
        if secrets_env.is_empty() && !keys.has_refused("secrets_env") {
            keys.problem("secrets_env", "must name at least one environment variable");
        }
        for var in &secrets_env {
            // Not echoed: a value that is no variable name may be the secret itself.
            if !valid_env_name(var) {
                keys.problem(
                    "secrets_env",
                    "lists something that is not an environment variable name (letters, digits, _); \
                     the file names the variables, the secrets stay in the environment",
                );
                continue;
            }
            let Some(value) = env(var).filter(|v| !v.is_empty()) else {
                keys.problem(
                    "secrets_env",
                    format!("environment variable {var} is unset or empty"),
                );
                continue;
            };
            // Without a known scheme the value cannot be checked, only its presence.
            if let Some(scheme) = scheme {
                match scheme.parse_secret(&value) {
                    Ok(key) => secret_keys.push(key),
                    Err(why) => keys.problem("secrets_env", format!("the secret in {var}: {why}")),
                }
            }
        }
    }

    let tolerance_secs = keys
        .number("tolerance_secs", 0)
        .unwrap_or(DEFAULT_TOLERANCE_SECS);
    let rate_limit_per_sec = keys.number("rate_limit_per_sec", 1);

    let mode = match keys.string("mode").as_deref() {
        Some("snapshot") => Mode::Snapshot,
        Some("dedup") => Mode::Dedup,
        Some(other) => {
            keys.problem(
                "mode",
                format!("must be \"snapshot\" or \"dedup\", not {other:?}"),
            );
            Mode::Snapshot
        }
        None => preset.map_or(Mode::Snapshot, |p| p.mapping().mode),
    };
    let mapping = read_mapping(&mut keys, preset, mode);
    let forward = destinations::read_forward(&mut keys, destinations);

    let complete = keys.problems.found.len() == problems_before;
    match (name, scheme, mapping) {
        (Some(name), Some(scheme), Some(mapping)) if complete => Some(Source {
            name,
            preset,
            scheme,
            secrets_env,
            keys: secret_keys,
            tolerance_secs,
            rate_limit_per_sec,
            mapping,
            forward,
        }),
        _ => None,
    }
}

/// The identity mapping: each key, else the preset's, else the snapshot envelope's default.
fn read_mapping(keys: &mut Keys<'_>, preset: Option<Preset>, mode: Mode) -> Option<Mapping> {
    let preset = preset.map(Preset::mapping);
    let snapshot_only =
        |pointer: &str| (mode == Mode::Snapshot).then(|| Field::from(FieldRef::pointer(pointer)));

    let event_id = match keys.field("event_id") {
        Some(Some(field)) => Some(field),
        Some(None) => {
            keys.problem("event_id", "must name at least one place");
            None
        }
        None if keys.has("event_id") => None,
        None => Some(match &preset {
            Some(preset) => preset.event_id.clone(),
            None => FieldRef::pointer("/event_id").into(),
        }),
    };
    let object_id = keys.field("object_id").unwrap_or_else(|| {
        preset
            .as_ref()
            .and_then(|p| p.object_id.clone())
            .or_else(|| snapshot_only("/object_id"))
    });
    let revision = keys
        .field("revision")
        .unwrap_or_else(|| snapshot_only("/revision"));
    let snapshot = keys
        .field("snapshot")
        .unwrap_or_else(|| snapshot_only("/snapshot"));
    let event_type = keys.field("event_type").unwrap_or_else(|| match &preset {
        Some(preset) => preset.event_type.clone(),
        None => Some(FieldRef::pointer("/type").into()),
    });

    match mode {
        Mode::Dedup => {
            for key in ["revision", "snapshot"] {
                if keys.has(key) {
                    keys.problem(key, "applies to snapshot mode only (this source is dedup)");
                }
            }
        }
        Mode::Snapshot => {
            for (key, field) in [
                ("object_id", &object_id),
                ("revision", &revision),
                ("snapshot", &snapshot),
            ] {
                if field.is_none() && !keys.has_refused(key) {
                    keys.problem(key, "is required in snapshot mode");
                }
            }
        }
    }
    let from_header = |field: &Option<Field>| {
        field
            .iter()
            .flat_map(Field::places)
            .any(|place| matches!(place, FieldRef::Header(_)))
    };
    if mode == Mode::Snapshot && from_header(&snapshot) {
        keys.problem("snapshot", "must be a JSON pointer into the body");
    }

    Some(Mapping {
        mode,
        event_id: event_id?,
        object_id,
        revision,
        snapshot,
        event_type,
    })
}

fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn valid_source_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let allowed = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && allowed(&bytes[0])
        && bytes[1..]
            .iter()
            .all(|b| allowed(b) || *b == b'_' || *b == b'-')
}

/// The problems found so far in one file.
struct Problems {
    file: String,
    found: Vec<ConfigError>,
}

impl Problems {
    fn add(&mut self, source_name: Option<&str>, key: Option<&str>, message: impl Into<String>) {
        self.found.push(ConfigError {
            file: self.file.clone(),
            source_name: source_name.map(str::to_string),
            key: key.map(str::to_string),
            message: message.into(),
        });
    }
}

/// One table of the file, read key by key. A key with a wrong value is recorded as a problem and
/// read as absent; [`Keys::has_refused`] tells the two apart, so a refused key does not also
/// produce an "is required".
struct Keys<'a> {
    table: &'a toml::Table,
    source_name: Option<String>,
    /// Prepended to key names in messages (`server.`, `destinations.orders-app.`).
    prefix: String,
    problems: &'a mut Problems,
    /// Keys present with a value that was refused.
    refused: Vec<String>,
}

impl<'a> Keys<'a> {
    fn new(
        table: &'a toml::Table,
        source_name: Option<String>,
        prefix: &str,
        problems: &'a mut Problems,
    ) -> Keys<'a> {
        Keys {
            table,
            source_name,
            prefix: prefix.to_string(),
            problems,
            refused: Vec::new(),
        }
    }

    fn problem(&mut self, key: &str, message: impl Into<String>) {
        let key = format!("{}{key}", self.prefix);
        self.problems
            .add(self.source_name.as_deref(), Some(&key), message);
    }

    /// A problem with the value of `key`, which is then read as absent.
    fn refuse(&mut self, key: &str, message: impl Into<String>) {
        self.problem(key, message);
        self.refused.push(key.to_string());
    }

    /// The table's `name`: required, `[a-z0-9][a-z0-9_-]{0,62}`, not one of `earlier`.
    fn name(&mut self, earlier: &[String]) -> Option<String> {
        let name = self.string("name");
        match &name {
            None if !self.has("name") => self.problem("name", "is required"),
            Some(name) if !valid_source_name(name) => {
                self.problem("name", "must match [a-z0-9][a-z0-9_-]{0,62}")
            }
            Some(name) if earlier.contains(name) => self.problem("name", "is declared twice"),
            _ => {}
        }
        name
    }

    fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// Whether `key` is present but was refused (its problem is already recorded).
    fn has_refused(&self, key: &str) -> bool {
        self.refused.iter().any(|k| k == key)
    }

    fn refuse_unknown(&mut self, known: &[&str]) {
        let unknown: Vec<String> = self
            .table
            .keys()
            .filter(|key| !known.contains(&key.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            self.problem(&key, format!("unknown key (known: {})", known.join(", ")));
        }
    }

    /// Names the type found but never shows the value: it could be a secret pasted in by mistake.
    fn wrong_type(&mut self, key: &str, expected: &str, value: &toml::Value) {
        let found = value.type_str();
        let article = if found.starts_with(['a', 'i']) {
            "an"
        } else {
            "a"
        };
        self.refuse(key, format!("must be {expected}, not {article} {found}"));
    }

    fn string(&mut self, key: &str) -> Option<String> {
        match self.table.get(key)? {
            toml::Value::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(key, "a string", other);
                None
            }
        }
    }

    /// A list of strings (a single string is not a list: `secrets_env = ["A"]`).
    fn strings(&mut self, key: &str) -> Option<Vec<String>> {
        let value = self.table.get(key)?;
        let strings: Option<Vec<String>> = value.as_array().and_then(|items| {
            items
                .iter()
                .map(|item| item.as_str().map(str::to_string))
                .collect()
        });
        if strings.is_none() {
            self.wrong_type(key, "a list of strings", value);
        }
        strings
    }

    /// An integer of at least `min` that fits `T`.
    fn number<T: TryFrom<i64>>(&mut self, key: &str, min: i64) -> Option<T> {
        let value = self.table.get(key)?;
        let Some(n) = value.as_integer() else {
            self.wrong_type(key, "an integer", value);
            return None;
        };
        if n < min {
            self.refuse(key, format!("must be at least {min}"));
            return None;
        }
        let converted = T::try_from(n).ok();
        if converted.is_none() {
            self.refuse(key, format!("{n} is too large"));
        }
        converted
    }

    /// Where a field lives: `"/pointer"`, `"header:Name"`, or a list of them tried in order.
    /// `Some(None)` is an explicit empty list: the field is not mapped.
    fn field(&mut self, key: &str) -> Option<Option<Field>> {
        let value = self.table.get(key)?;
        let specs: Vec<&str> = match value {
            toml::Value::String(spec) => vec![spec.as_str()],
            toml::Value::Array(items) => match items.iter().map(toml::Value::as_str).collect() {
                Some(specs) => specs,
                None => {
                    self.wrong_type(key, "a string or a list of strings", value);
                    return None;
                }
            },
            other => {
                self.wrong_type(key, "a string or a list of strings", other);
                return None;
            }
        };
        let mut places = Vec::new();
        for spec in specs {
            match FieldRef::parse(spec) {
                Ok(place) => places.push(place),
                Err(why) => {
                    self.refuse(key, why);
                    return None;
                }
            }
        }
        Some(Field::first_of(places))
    }
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
