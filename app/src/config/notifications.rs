//! `[[notifications]]`: the channels told when a problem opens, reopens or is resolved, or a
//! forward delivery dies (contract section 14). Each names where it sends (`url_env`, or for mail
//! `smtp_url_env`: the URL is read from the environment, never from the file), which sources and
//! events it wants, and how often one problem may message it. Every problem names the file, the
//! channel and the key (`notifications.ops.url_env`); a variable's value is never shown.

use super::keys::{Keys, Problems, from_env};
use crate::model::{ChannelKind, NotifyEvent};
use crate::schemes::{Scheme, SecretKey};

const KEYS: &[&str] = &[
    "name",
    "kind",
    "url_env",
    "secret_env",
    "smtp_url_env",
    "from",
    "to",
    "sources",
    "events",
    "min_interval_secs",
];

/// How long after a message about a problem (or a destination's deaths) the next may follow,
/// when `min_interval_secs` is not given; changes meanwhile are folded into that next one.
pub const DEFAULT_MIN_INTERVAL_SECS: u64 = 300;
/// The longest `min_interval_secs` (a day).
const MAX_MIN_INTERVAL_SECS: i64 = 24 * 3600;
/// Recipients of one mail channel, at most.
const MAX_RECIPIENTS: usize = 50;

/// Where a channel's messages go.
#[derive(Debug, Clone)]
pub enum Target {
    /// An HTTP(S) URL (the chat kinds and `webhook`); a `webhook` signs with `key`.
    Http { url: String, key: Option<SecretKey> },
    /// Mail through the SMTP server of `smtp_url` (`smtp://` with STARTTLS when offered,
    /// `?tls=required` to insist; `smtps://` with TLS from the start).
    Email {
        smtp_url: String,
        from: String,
        to: Vec<String>,
    },
}

/// A notification channel.
#[derive(Debug, Clone)]
pub struct Channel {
    pub name: String,
    pub kind: ChannelKind,
    pub target: Target,
    /// Only these sources' problems (and deaths of their deliveries); none: every source.
    pub sources: Option<Vec<String>>,
    pub events: Vec<NotifyEvent>,
    pub min_interval_secs: u64,
    /// The environment variables it reads (never their values), for `check-config`.
    pub variables: Vec<String>,
}

impl Channel {
    /// Whether this channel wants `event` of `source` (a destination's death: of a delivery of
    /// `source`).
    pub fn wants(&self, event: NotifyEvent, source: &str) -> bool {
        self.events.contains(&event)
            && self
                .sources
                .as_ref()
                .is_none_or(|sources| sources.iter().any(|s| s == source))
    }
}

/// Reads `[[notifications]]`; a channel with any problem is left out, its problems recorded.
pub(super) fn read_notifications(
    value: Option<&toml::Value>,
    env: &dyn Fn(&str) -> Option<String>,
    sources: &[super::Source],
    problems: &mut Problems,
) -> Vec<Channel> {
    let source_names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    super::keys::read_tables(value, "notifications", problems, |keys, earlier| {
        read_channel(keys, env, earlier, &source_names)
    })
}

fn read_channel(
    mut keys: Keys<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    earlier_names: &[String],
    source_names: &[&str],
) -> Option<Channel> {
    let problems_before = keys.problems.found.len();
    keys.refuse_unknown(KEYS);
    let name = keys.name(earlier_names);
    let kind = match keys.string("kind") {
        None if !keys.has("kind") => {
            keys.problem(
                "kind",
                format!("is required: one of {}", ChannelKind::spellings()),
            );
            None
        }
        None => None,
        Some(text) => {
            let kind = ChannelKind::parse(&text);
            if kind.is_none() {
                keys.problem(
                    "kind",
                    format!("{text:?} is not one of {}", ChannelKind::spellings()),
                );
            }
            kind
        }
    };
    let target = kind.and_then(|kind| read_target(&mut keys, kind, env));
    let sources = keys.strings("sources");
    for source in sources.iter().flatten() {
        if !source_names.contains(&source.as_str()) {
            keys.problem("sources", format!("unknown source {source:?}"));
        }
    }
    let events = match keys.strings("events") {
        None => NotifyEvent::ALL.to_vec(),
        Some(texts) => {
            let mut events = Vec::new();
            for text in texts {
                match NotifyEvent::parse(&text) {
                    Some(event) if !events.contains(&event) => events.push(event),
                    Some(_) => keys.problem("events", format!("{text:?} is listed twice")),
                    None => keys.problem(
                        "events",
                        format!("{text:?} is not one of {}", NotifyEvent::spellings()),
                    ),
                }
            }
            if events.is_empty() && !keys.has_refused("events") {
                keys.problem("events", "must name at least one event");
            }
            events
        }
    };
    let min_interval_secs = keys
        .number::<u64>("min_interval_secs", 0)
        .unwrap_or(DEFAULT_MIN_INTERVAL_SECS);
    if min_interval_secs > MAX_MIN_INTERVAL_SECS as u64 {
        keys.problem(
            "min_interval_secs",
            format!("at most {MAX_MIN_INTERVAL_SECS} (a day)"),
        );
    }
    let complete = keys.problems.found.len() == problems_before;
    match (name, kind, target) {
        (Some(name), Some(kind), Some(target)) if complete => Some(Channel {
            name,
            kind,
            target,
            sources,
            events,
            min_interval_secs,
            variables: ["url_env", "secret_env", "smtp_url_env"]
                .iter()
                .filter_map(|key| keys.table.get(*key).and_then(toml::Value::as_str))
                .map(str::to_string)
                .collect(),
        }),
        _ => None,
    }
}

/// Where a channel of `kind` sends, from its keys; the keys of the other kinds are refused.
fn read_target(
    keys: &mut Keys<'_>,
    kind: ChannelKind,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Target> {
    let mail_keys = ["smtp_url_env", "from", "to"];
    if kind != ChannelKind::Email {
        for key in mail_keys {
            if keys.has(key) {
                keys.problem(
                    key,
                    format!("is for kind = \"email\", not {:?}", kind.as_str()),
                );
            }
        }
        if kind != ChannelKind::Webhook && keys.has("secret_env") {
            keys.problem(
                "secret_env",
                format!(
                    "is for kind = \"webhook\" (a {} URL carries its own token)",
                    kind.as_str()
                ),
            );
        }
        let url = from_env(keys, "url_env", "the channel's URL", env)?;
        if let Err(why) = super::destinations::check_url(&url) {
            // The URL is a secret: say what is wrong without it.
            let why = if why.contains("http://") {
                "must start with http:// or https://".to_string()
            } else {
                "is not a valid http(s) URL with a host".to_string()
            };
            keys.problem("url_env", format!("the URL in the variable {why}"));
            return None;
        }
        let key = if kind == ChannelKind::Webhook {
            let secret = from_env(keys, "secret_env", "the channel's whsec_ secret", env)?;
            match Scheme::StandardWebhooks.parse_secret(&secret) {
                Ok(key) => Some(key),
                Err(why) => {
                    keys.problem("secret_env", format!("the secret: {why}"));
                    return None;
                }
            }
        } else {
            None
        };
        return Some(Target::Http { url, key });
    }
    for key in ["url_env", "secret_env"] {
        if keys.has(key) {
            keys.problem(
                key,
                "is not for kind = \"email\" (it takes smtp_url_env, from and to)",
            );
        }
    }
    let smtp_url = from_env(keys, "smtp_url_env", "the SMTP server's URL", env);
    if let Some(url) = &smtp_url
        && let Err(why) = check_smtp_url(url)
    {
        keys.problem("smtp_url_env", format!("the URL in the variable {why}"));
    }
    let from = keys.string("from");
    match &from {
        None if !keys.has("from") => keys.problem("from", "is required: the sender's address"),
        Some(address) if !looks_like_address(address) => {
            keys.problem("from", format!("{address:?} is not a mail address"))
        }
        _ => {}
    }
    let to = keys.strings("to");
    match &to {
        None if !keys.has("to") => keys.problem("to", "is required: the recipients' addresses"),
        Some(list) if list.is_empty() => keys.problem("to", "must name at least one address"),
        Some(list) if list.len() > MAX_RECIPIENTS => {
            keys.problem("to", format!("at most {MAX_RECIPIENTS} addresses"))
        }
        Some(list) => {
            for address in list.iter().filter(|a| !looks_like_address(a)) {
                keys.problem("to", format!("{address:?} is not a mail address"));
            }
        }
        None => {}
    }
    Some(Target::Email {
        smtp_url: smtp_url.filter(|url| check_smtp_url(url).is_ok())?,
        from: from?,
        to: to?,
    })
}

/// An SMTP URL hookbox can use: `smtp://[user:pass@]host[:port][?tls=required|opportunistic]` or
/// `smtps://…`. The reason never shows the URL (it may carry a password).
pub fn check_smtp_url(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|_| "is not a valid URL".to_string())?;
    if !matches!(parsed.scheme(), "smtp" | "smtps") {
        return Err("must start with smtp:// or smtps://".into());
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("has no host".into());
    }
    for (key, value) in parsed.query_pairs() {
        match (key.as_ref(), value.as_ref()) {
            ("tls", "required" | "opportunistic") if parsed.scheme() == "smtp" => {}
            ("tls", _) => {
                return Err(
                    "has a tls= other than required or opportunistic (smtp:// only)".into(),
                );
            }
            _ => return Err(format!("has an unknown parameter {key:?} (only tls=)")),
        }
    }
    Ok(())
}

/// A mail address as far as a config check can tell: `local@domain`, no spaces or angle
/// brackets, at most 254 bytes.
fn looks_like_address(address: &str) -> bool {
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    address.len() <= 254
        && !local.is_empty()
        && domain.contains('.')
        && !address.contains(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | ',' | ';'))
}
