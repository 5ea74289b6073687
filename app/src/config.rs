//! `hookbox.toml` + environment → a typed, validated configuration (contract section 1).
//!
//! Every problem names the file, the source and the key. Secrets are read from the environment
//! variables the file names and kept only as [`SecretKey`]s, which never print.

use crate::envelope::{FieldRef, Mapping, Mode};
use crate::schemes::{Scheme, SecretKey};
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
pub const DEFAULT_RETENTION_DAYS: u32 = 90;
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;

#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
    pub server: ServerSettings,
    pub sources: Vec<Source>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    pub max_body_bytes: usize,
    pub retention_days: u32,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            retention_days: DEFAULT_RETENTION_DAYS,
        }
    }
}

/// One sender account: its endpoint, how it authenticates and where its identities live.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub scheme: Scheme,
    /// The first key signs in `hookbox send`; any key verifies.
    pub keys: Vec<SecretKey>,
    pub tolerance_secs: u64,
    pub mapping: Mapping,
}

impl Config {
    pub fn empty() -> Config {
        Config {
            path: None,
            server: ServerSettings::default(),
            sources: Vec::new(),
        }
    }

    pub fn source(&self, name: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.name == name)
    }

    /// `HOOKBOX_CONFIG`, else `hookbox.toml` in the working directory; neither → no sources.
    pub fn load_from_env() -> Result<Config, ConfigError> {
        let env = |name: &str| std::env::var(name).ok();
        match env("HOOKBOX_CONFIG") {
            Some(path) => Config::load(Path::new(&path), &env),
            None if Path::new("hookbox.toml").exists() => {
                Config::load(Path::new("hookbox.toml"), &env)
            }
            None => Ok(Config::empty()),
        }
    }

    pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.display().to_string(),
            source_name: None,
            key: None,
            message: format!("cannot be read: {e}"),
        })?;
        Config::parse(&text, path, env)
    }

    pub fn parse(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let file = path.display().to_string();
        let error = |source_name: Option<&str>, key: Option<&str>, message: String| ConfigError {
            file: file.clone(),
            source_name: source_name.map(str::to_string),
            key: key.map(str::to_string),
            message,
        };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| error(None, None, e.message().to_string()))?;
        let server = match raw.server {
            None => ServerSettings::default(),
            Some(s) => {
                let max_body_bytes = s.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
                if max_body_bytes == 0 {
                    return Err(error(
                        None,
                        Some("server.max_body_bytes"),
                        "must be at least 1".into(),
                    ));
                }
                let retention_days = s.retention_days.unwrap_or(DEFAULT_RETENTION_DAYS);
                if retention_days == 0 {
                    return Err(error(
                        None,
                        Some("server.retention_days"),
                        "must be at least 1".into(),
                    ));
                }
                ServerSettings {
                    max_body_bytes,
                    retention_days,
                }
            }
        };
        let allow_unsigned = env("HOOKBOX_ALLOW_UNSIGNED").as_deref() == Some("1");
        let mut sources: Vec<Source> = Vec::new();
        for (index, s) in raw.sources.into_iter().enumerate() {
            let label = s.name.clone().unwrap_or_else(|| format!("#{}", index + 1));
            let err = |key: &str, message: String| error(Some(&label), Some(key), message);
            let name = s
                .name
                .clone()
                .ok_or_else(|| err("name", "is required".into()))?;
            if !valid_source_name(&name) {
                return Err(err("name", "must match [a-z0-9][a-z0-9_-]{0,62}".into()));
            }
            if sources.iter().any(|other| other.name == name) {
                return Err(err("name", "is declared twice".into()));
            }
            let scheme_name = s
                .scheme
                .clone()
                .ok_or_else(|| err("scheme", "is required".into()))?;
            let scheme = Scheme::from_name(&scheme_name)
                .ok_or_else(|| err("scheme", format!("unknown scheme {scheme_name:?}")))?;
            let mut keys = Vec::new();
            if scheme == Scheme::None {
                if !allow_unsigned {
                    return Err(err(
                        "scheme",
                        "\"none\" accepts unsigned requests; set HOOKBOX_ALLOW_UNSIGNED=1 for local development only"
                            .into(),
                    ));
                }
            } else {
                let names = s.secrets_env.clone().unwrap_or_default();
                if names.is_empty() {
                    return Err(err(
                        "secrets_env",
                        "must name at least one environment variable".into(),
                    ));
                }
                for var in names {
                    let value = env(&var).filter(|v| !v.is_empty()).ok_or_else(|| {
                        err(
                            "secrets_env",
                            format!("environment variable {var} is unset or empty"),
                        )
                    })?;
                    let key = scheme
                        .parse_secret(&value)
                        .map_err(|why| err("secrets_env", format!("the secret in {var}: {why}")))?;
                    keys.push(key);
                }
            }
            let mode = match s.mode.as_deref() {
                None | Some("snapshot") => Mode::Snapshot,
                Some("dedup") => Mode::Dedup,
                Some(other) => {
                    return Err(err(
                        "mode",
                        format!("must be \"snapshot\" or \"dedup\", not {other:?}"),
                    ));
                }
            };
            let field = |key: &str,
                         value: &Option<String>,
                         default: Option<&str>|
             -> Result<Option<FieldRef>, ConfigError> {
                match value.as_deref().or(default) {
                    None => Ok(None),
                    Some(spec) => FieldRef::parse(spec).map(Some).map_err(|why| err(key, why)),
                }
            };
            let snapshot_default = |d| (mode == Mode::Snapshot).then_some(d);
            let mapping = Mapping {
                mode,
                event_id: field("event_id", &s.event_id, Some("/event_id"))?
                    .ok_or_else(|| err("event_id", "is required".into()))?,
                object_id: field("object_id", &s.object_id, snapshot_default("/object_id"))?,
                revision: field("revision", &s.revision, snapshot_default("/revision"))?,
                snapshot: field("snapshot", &s.snapshot, snapshot_default("/snapshot"))?,
                event_type: field("event_type", &s.event_type, Some("/type"))?,
            };
            if mode == Mode::Dedup && (s.revision.is_some() || s.snapshot.is_some()) {
                return Err(err(
                    "mode",
                    "revision and snapshot apply to snapshot mode only".into(),
                ));
            }
            if let Some(FieldRef::Header(_)) = mapping.snapshot {
                return Err(err(
                    "snapshot",
                    "must be a JSON pointer into the body".into(),
                ));
            }
            sources.push(Source {
                name,
                scheme,
                keys,
                tolerance_secs: s.tolerance_secs.unwrap_or(DEFAULT_TOLERANCE_SECS),
                mapping,
            });
        }
        Ok(Config {
            path: Some(path.to_path_buf()),
            server,
            sources,
        })
    }
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    server: Option<RawServer>,
    #[serde(default)]
    sources: Vec<RawSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    max_body_bytes: Option<usize>,
    retention_days: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    name: Option<String>,
    scheme: Option<String>,
    secrets_env: Option<Vec<String>>,
    tolerance_secs: Option<u64>,
    mode: Option<String>,
    event_id: Option<String>,
    object_id: Option<String>,
    revision: Option<String>,
    snapshot: Option<String>,
    event_type: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Config::parse(text, Path::new("hookbox.toml"), &env)
    }

    #[test]
    fn a_minimal_source_gets_the_snapshot_envelope() {
        let config = parse(
            "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n",
            &[("S", "s3cret")],
        )
        .expect("valid");
        let shop = config.source("shop").expect("declared");
        assert_eq!(shop.mapping, Mapping::snapshot_envelope());
        assert_eq!(shop.keys.len(), 1);
        assert_eq!(config.server, ServerSettings::default());
    }

    #[test]
    fn errors_name_file_source_and_key() {
        let e = parse(
            "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"MISSING\"]\n",
            &[],
        )
        .expect_err("unset secret");
        assert_eq!(
            e.to_string(),
            "hookbox.toml: source shop: secrets_env: environment variable MISSING is unset or empty"
        );
        let e =
            parse("[[sources]]\nname = \"Shop!\"\nscheme = \"none\"\n", &[]).expect_err("bad name");
        assert_eq!(
            (e.source_name.as_deref(), e.key.as_deref()),
            (Some("Shop!"), Some("name"))
        );
        let e =
            parse("[[sources]]\nname = \"dev\"\nscheme = \"none\"\n", &[]).expect_err("unsigned");
        assert_eq!(e.key.as_deref(), Some("scheme"));
        assert!(
            parse(
                "[[sources]]\nname = \"dev\"\nscheme = \"none\"\n",
                &[("HOOKBOX_ALLOW_UNSIGNED", "1")]
            )
            .is_ok()
        );
        let e = parse(
            "[[sources]]\nname = \"a\"\nscheme = \"none\"\nevent_id = \"id\"\n",
            &[("HOOKBOX_ALLOW_UNSIGNED", "1")],
        )
        .expect_err("bad pointer");
        assert_eq!(e.key.as_deref(), Some("event_id"));
        let e = parse("[server]\nmax_body_bytes = 0\n", &[]).expect_err("zero");
        assert_eq!(e.key.as_deref(), Some("server.max_body_bytes"));
        assert!(
            parse("[server]\nmax_bytes = 1\n", &[]).is_err(),
            "unknown keys are refused"
        );
    }

    #[test]
    fn secret_values_never_appear_in_errors() {
        let e = parse(
            "[[sources]]\nname = \"sw\"\nscheme = \"standard-webhooks\"\nsecrets_env = [\"S\"]\n",
            &[("S", "whsec_!!!not-base64-topsecret")],
        )
        .expect_err("bad secret");
        assert!(!e.to_string().contains("topsecret"), "{e}");
    }
}
