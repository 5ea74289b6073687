//! `[[sources]]`: one sender account each: its name, its scheme and secrets, its rate limit, the
//! destinations it forwards to, and its identity mapping (each key, else the preset's, else the
//! snapshot envelope's).

use super::destinations;
use super::keys::{Keys, valid_env_name};
use crate::envelope::{Field, FieldRef, Mapping, Mode};
use crate::providers::{ALL_PRESETS, Preset};
use crate::schemes::public_key::{parse_public_key, takes_public_keys};
use crate::schemes::recipe::RECIPE_KEYS;
use crate::schemes::{Auth, PublicKey, Recipe, Scheme, SecretKey};

pub const DEFAULT_TOLERANCE_SECS: u64 = 300;

const SOURCE_KEYS: &[&str] = &[
    "name",
    "preset",
    "scheme",
    "secrets_env",
    "tolerance_secs",
    "rate_limit_per_sec",
    "retention_days",
    "body_retention_days",
    "mode",
    "event_id",
    "object_id",
    "revision",
    "snapshot",
    "event_type",
    "forward",
    "token_header",
    "token_query",
    "public_keys_env",
];

/// Every key a source may have: its own and a recipe's.
fn source_keys() -> Vec<&'static str> {
    SOURCE_KEYS.iter().chain(RECIPE_KEYS).copied().collect()
}

/// One sender account: its endpoint, how it authenticates and where its identities live.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    /// The provider preset the source was declared with; its keys may override any part.
    pub preset: Option<Preset>,
    pub scheme: Scheme,
    /// `scheme = "hmac"`: the recipe its keys describe.
    pub recipe: Option<Recipe>,
    /// `scheme = "token"`: the header the token is in (lower case).
    pub token_header: Option<String>,
    /// `scheme = "token"`, opted in: the query parameter the token may be in instead (for
    /// senders that cannot set a header). The query string is never stored nor logged.
    pub token_query: Option<String>,
    /// The names of the variables the public keys came from (`public_keys_env`), in order.
    pub public_keys_env: Vec<String>,
    /// A public-key scheme's keys (Standard Webhooks `v1a`, Discord, SendGrid): any verifies.
    pub public_keys: Vec<PublicKey>,
    /// The names of the environment variables the keys came from, in order (never the values).
    pub secrets_env: Vec<String>,
    /// The first key signs in `hookbox send`; any key verifies.
    pub keys: Vec<SecretKey>,
    pub tolerance_secs: u64,
    /// Deliveries a second this process accepts for the source (a burst of as many); beyond
    /// that, 429 with `Retry-After`. None: unlimited.
    pub rate_limit_per_sec: Option<u32>,
    /// How long its archive rows (and its done forward deliveries) are kept, in days, when not
    /// `[server] retention_days`.
    pub retention_days: Option<u32>,
    /// How long its archive rows keep their bodies and headers: its own `body_retention_days`,
    /// else `[server] body_retention_days`, else as long as the rows.
    pub body_retention_days: Option<u32>,
    pub mapping: Mapping,
    /// The destinations its accepted events are forwarded to (`forward = [...]`).
    pub forward: Vec<String>,
    /// The routes of this source (`[[routes]]` naming it), in file order: with `forward`, what
    /// decides each delivery's destinations (`Config::plan`).
    pub routes: Vec<crate::routing::Route>,
}

/// One `[[sources]]` table; `None` if it has a problem (recorded in `keys`).
pub(super) fn read_source(
    mut keys: Keys<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    allow_unsigned: bool,
    earlier_names: &[String],
    destinations: &[&str],
    public_url: bool,
) -> Option<Source> {
    let problems_before = keys.problems.found.len();
    keys.refuse_unknown(&source_keys());

    let name = keys.name(earlier_names);

    let preset = read_preset(&mut keys);
    let scheme = read_scheme(&mut keys, preset);

    let recipe = read_recipe(
        &mut keys,
        scheme,
        preset.and_then(Preset::recipe),
        public_url,
    );
    let token_query = read_token_query(&mut keys, scheme);
    let token_header = read_token_header(&mut keys, scheme, preset, token_query.is_some());
    let (public_keys_env, public_keys) = read_public_keys(&mut keys, scheme, env);
    let auth = scheme.map(|scheme| Auth {
        scheme,
        recipe: recipe.as_ref(),
        token_header: token_header.as_deref(),
        token_query: token_query.as_deref(),
        public_keys: &public_keys,
    });
    // A recipe names this problem by its `signed` key (`Recipe::check`).
    if let Some(scheme) = scheme.filter(|s| s.signs_url())
        && !public_url
    {
        keys.problem(
            "scheme",
            format!(
                "{} signs the URL the sender posts to: set [server] public_url, since hookbox cannot see it behind a proxy",
                scheme.name()
            ),
        );
    }

    let secrets_env = keys.strings("secrets_env").unwrap_or_default();
    let secret_keys = if scheme == Some(Scheme::None) {
        if !allow_unsigned {
            keys.problem(
                "scheme",
                "\"none\" accepts unsigned requests; set HOOKBOX_ALLOW_UNSIGNED=1 for local development only",
            );
        }
        Vec::new()
    } else {
        read_secrets(
            &mut keys,
            &secrets_env,
            env,
            (auth, preset, &public_keys_env),
        )
    };

    let tolerance_secs = keys.number("tolerance_secs", 0).unwrap_or_else(|| {
        preset
            .and_then(Preset::tolerance_secs)
            .unwrap_or(DEFAULT_TOLERANCE_SECS)
    });
    let rate_limit_per_sec = keys.number("rate_limit_per_sec", 1);
    let retention_days = keys.number("retention_days", 1);
    let body_retention_days = keys.number("body_retention_days", 1);

    let mode = read_mode(&mut keys, preset);
    let mapping = read_mapping(&mut keys, preset, mode);
    let forward = destinations::read_forward(&mut keys, destinations);

    let complete = keys.problems.found.len() == problems_before;
    match (name, scheme, mapping) {
        (Some(name), Some(scheme), Some(mapping)) if complete => Some(Source {
            name,
            preset,
            scheme,
            recipe,
            token_header,
            token_query,
            public_keys_env,
            public_keys,
            secrets_env,
            keys: secret_keys,
            tolerance_secs,
            rate_limit_per_sec,
            retention_days,
            body_retention_days,
            mapping,
            forward,
            routes: Vec::new(),
        }),
        _ => None,
    }
}

/// `preset`: one of the known providers, or a problem naming them.
fn read_preset(keys: &mut Keys<'_>) -> Option<Preset> {
    keys.string("preset").and_then(|spelled| {
        let preset = Preset::from_name(&spelled);
        if preset.is_none() {
            let known: Vec<&str> = ALL_PRESETS.iter().map(|p| p.name()).collect();
            keys.problem(
                "preset",
                format!("unknown preset {spelled:?} (known: {})", known.join(", ")),
            );
        }
        preset
    })
}

/// `scheme`, else the preset's; one of them is required.
fn read_scheme(keys: &mut Keys<'_>, preset: Option<Preset>) -> Option<Scheme> {
    match keys.string("scheme") {
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
    }
}

/// `mode`, else the preset's, else snapshot.
fn read_mode(keys: &mut Keys<'_>, preset: Option<Preset>) -> Mode {
    match keys.string("mode").as_deref() {
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
    }
}

/// The secrets the variables of `secrets_env` hold, each checked by the source's scheme (`auth`)
/// where it is known; at least one variable unless the scheme verifies with public keys alone
/// or the preset's secret is collected later (`hookbox handshake`).
fn read_secrets(
    keys: &mut Keys<'_>,
    secrets_env: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    (auth, preset, public_keys_env): (Option<Auth<'_>>, Option<Preset>, &[String]),
) -> Vec<SecretKey> {
    let scheme = auth.map(|a| a.scheme);
    let mut secret_keys = Vec::new();
    // A public-key scheme may verify with its public keys alone.
    let keys_instead = scheme.is_some_and(takes_public_keys)
        && (!public_keys_env.is_empty() || scheme != Some(Scheme::StandardWebhooks));
    // Asana's and Notion's secret is collected by `hookbox handshake` first.
    let collected_later = preset.is_some_and(Preset::captures_secret);
    if secrets_env.is_empty()
        && !keys.has_refused("secrets_env")
        && !keys_instead
        && !collected_later
    {
        keys.problem("secrets_env", "must name at least one environment variable");
    }
    for var in secrets_env {
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
        if let Some(auth) = auth
            && (scheme != Some(Scheme::Hmac) || auth.recipe.is_some())
        {
            match auth.parse_secret(&value) {
                Ok(key) => secret_keys.push(key),
                Err(why) => keys.problem("secrets_env", format!("the secret in {var}: {why}")),
            }
        }
    }

    secret_keys
}

/// `scheme = "hmac"`'s recipe, each problem named by its key: the keys beside it, else the
/// preset's (`base`). A recipe key beside another scheme is a problem too (it would be ignored).
fn read_recipe(
    keys: &mut Keys<'_>,
    scheme: Option<Scheme>,
    base: Option<Recipe>,
    public_url: bool,
) -> Option<Recipe> {
    if scheme != Some(Scheme::Hmac) {
        for key in RECIPE_KEYS {
            if keys.has(key) && scheme.is_some() {
                keys.problem(
                    key,
                    "is a recipe key: it applies only with scheme = \"hmac\"",
                );
            }
        }
        return None;
    }
    let signed = keys
        .strings("signed")
        .or_else(|| base.as_ref().map(Recipe::signed_spelled));
    let refused_signed = keys.has_refused("signed");
    let read = Recipe::read(
        |key| {
            keys.string(key)
                .or_else(|| base.as_ref().and_then(|base| base.spelled(key)))
        },
        signed,
    );
    let problems = match read {
        Ok(recipe) => {
            let problems = recipe.check(public_url);
            if problems.is_empty() {
                return Some(recipe);
            }
            problems
        }
        Err(problems) => problems,
    };
    for (key, why) in problems {
        // A `signed` of the wrong type was already named.
        if !(key == "signed" && refused_signed) {
            keys.problem(key, why);
        }
    }
    None
}

/// `scheme = "token"`'s header: the key, else the preset's; required with that scheme and a
/// problem beside another.
fn read_token_header(
    keys: &mut Keys<'_>,
    scheme: Option<Scheme>,
    preset: Option<Preset>,
    in_query: bool,
) -> Option<String> {
    let given = keys.string("token_header");
    if scheme != Some(Scheme::Token) {
        if given.is_some() && scheme.is_some() {
            keys.problem("token_header", "applies only with scheme = \"token\"");
        }
        return None;
    }
    match given.or_else(|| preset.and_then(Preset::token_header).map(str::to_string)) {
        Some(name) => match crate::schemes::recipe::header_name(&name) {
            Ok(name) => Some(name),
            Err(why) => {
                keys.problem("token_header", why);
                None
            }
        },
        None => {
            if !keys.has_refused("token_header") && !in_query {
                keys.problem(
                    "token_header",
                    "is required with scheme = \"token\" (or token_query)",
                );
            }
            None
        }
    }
}

/// `token_query`: the query parameter a `token` source takes its token from, when the operator
/// opts in (a name of letters, digits, `_` and `-`); a problem beside another scheme.
fn read_token_query(keys: &mut Keys<'_>, scheme: Option<Scheme>) -> Option<String> {
    let name = keys.string("token_query")?;
    if scheme != Some(Scheme::Token) {
        if scheme.is_some() {
            keys.problem("token_query", "applies only with scheme = \"token\"");
        }
        return None;
    }
    let fits = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !fits {
        keys.problem(
            "token_query",
            format!("{name:?} is not a query parameter name (letters, digits, _ and -)"),
        );
        return None;
    }
    Some(name)
}

/// `public_keys_env`: the variables holding a public-key scheme's keys, each parsed for the
/// scheme (a key that does not decode is named by its variable). Discord and SendGrid need at
/// least one; beside a scheme without public keys it is a problem.
fn read_public_keys(
    keys: &mut Keys<'_>,
    scheme: Option<Scheme>,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<String>, Vec<PublicKey>) {
    let names = keys.strings("public_keys_env").unwrap_or_default();
    let Some(scheme) = scheme else {
        return (names, Vec::new());
    };
    if !takes_public_keys(scheme) {
        if !names.is_empty() {
            keys.problem(
                "public_keys_env",
                format!("scheme {} verifies no public keys", scheme.name()),
            );
        }
        return (Vec::new(), Vec::new());
    }
    if names.is_empty()
        && scheme != Scheme::StandardWebhooks
        && !keys.has_refused("public_keys_env")
    {
        keys.problem(
            "public_keys_env",
            format!(
                "must name at least one environment variable: scheme {} verifies public keys",
                scheme.name()
            ),
        );
    }
    let mut parsed = Vec::new();
    for var in &names {
        if !valid_env_name(var) {
            keys.problem(
                "public_keys_env",
                "lists something that is not an environment variable name (letters, digits, _)",
            );
            continue;
        }
        match env(var).filter(|v| !v.is_empty()) {
            None => keys.problem(
                "public_keys_env",
                format!("environment variable {var} is unset or empty"),
            ),
            Some(value) => match parse_public_key(scheme, &value) {
                Ok(key) => parsed.push(key),
                Err(why) => {
                    keys.problem("public_keys_env", format!("the public key in {var} {why}"))
                }
            },
        }
    }
    (names, parsed)
}

impl Source {
    /// How the source authenticates: its scheme, with its recipe.
    pub fn auth(&self) -> Auth<'_> {
        Auth {
            scheme: self.scheme,
            recipe: self.recipe.as_ref(),
            token_header: self.token_header.as_deref(),
            token_query: self.token_query.as_deref(),
            public_keys: &self.public_keys,
        }
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
    // The body's digest names an event, nothing else.
    for (key, field) in [
        ("object_id", &object_id),
        ("revision", &revision),
        ("snapshot", &snapshot),
        ("event_type", &event_type),
    ] {
        let digest = field
            .iter()
            .flat_map(Field::places)
            .any(|place| matches!(place, FieldRef::BodyDigest));
        if digest {
            keys.problem(key, "body:sha256 can only be an event_id");
        }
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
