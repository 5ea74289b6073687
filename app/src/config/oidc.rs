//! `[auth.oidc]`: single sign-on with the company's OpenID Provider (contract section 17,
//! `docs/dashboard.md`). Read and checked here; the sign-in itself is `auth::oidc` (the flow's
//! rows, the user and the role) and the server's `oidc` (discovery, the token, its signature).

use super::keys::{Keys, Problems, from_env};
use std::fmt;

const AUTH_KEYS: &[&str] = &["oidc"];
const OIDC_KEYS: &[&str] = &[
    "issuer",
    "client_id",
    "client_secret_env",
    "scopes",
    "role_claim",
    "operator_values",
    "viewer_values",
    "password_login",
    "break_glass",
];
/// Values of one list (`operator_values`, `viewer_values`, `break_glass`, `scopes`), at most.
const MAX_VALUES: usize = 100;

/// The client secret hookbox shares with the provider: read from the environment, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(String);

impl ClientSecret {
    pub fn new(secret: String) -> ClientSecret {
        ClientSecret(secret)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientSecret(…)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oidc {
    /// Exactly as the provider spells it in its tokens' `iss` (a trailing `/` is kept).
    pub issuer: String,
    pub client_id: String,
    pub client_secret: ClientSecret,
    /// The environment variable it came from (for `check-config`), never its value.
    pub client_secret_env: String,
    pub scopes: Vec<String>,
    /// The claim of the ID token (or of userinfo) that carries the user's groups.
    pub role_claim: String,
    pub operator_values: Vec<String>,
    pub viewer_values: Vec<String>,
    /// `false`: password sign-in is refused, except for the [`Oidc::break_glass`] users.
    pub password_login: bool,
    pub break_glass: Vec<String>,
}

impl Oidc {
    /// Where discovery reads the provider's metadata.
    pub fn discovery_url(&self) -> String {
        format!(
            "{}/.well-known/openid-configuration",
            self.issuer.trim_end_matches('/')
        )
    }

    /// The role one of `values` maps to: operator first, then viewer; none: refused.
    pub fn role_of<'a>(
        &self,
        values: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Option<crate::model::Role> {
        let has = |wanted: &[String]| {
            values
                .clone()
                .into_iter()
                .any(|v| wanted.iter().any(|w| w == v))
        };
        if has(&self.operator_values) {
            Some(crate::model::Role::Operator)
        } else if has(&self.viewer_values) {
            Some(crate::model::Role::Viewer)
        } else {
            None
        }
    }
}

/// Whether a password may sign `name` in: always without single sign-on; with it, when
/// `password_login` is on or `name` is a break-glass account.
pub fn password_allowed(oidc: Option<&Oidc>, name: &str) -> bool {
    oidc.is_none_or(|oidc| oidc.password_login || oidc.break_glass.iter().any(|n| n == name))
}

/// `[auth]`, with its one table `[auth.oidc]`; `public_url` is `[server] public_url` (required:
/// the provider sends the browser back to `{public_url}/auth/oidc/callback`).
pub(super) fn read(
    value: Option<&toml::Value>,
    public_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Problems,
) -> Option<Oidc> {
    let table = match value? {
        toml::Value::Table(table) => table,
        _ => {
            problems.add(None, Some("auth"), "must be a table ([auth])");
            return None;
        }
    };
    Keys::new(table, None, "auth.", problems).refuse_unknown(AUTH_KEYS);
    let oidc = match table.get("oidc")? {
        toml::Value::Table(oidc) => oidc,
        _ => {
            problems.add(None, Some("auth.oidc"), "must be a table ([auth.oidc])");
            return None;
        }
    };
    let mut keys = Keys::new(oidc, None, "auth.oidc.", problems);
    keys.refuse_unknown(OIDC_KEYS);
    if public_url.is_none() {
        keys.problem(
            "issuer",
            "needs [server] public_url: the provider sends the browser back to {public_url}/auth/oidc/callback",
        );
    }
    let issuer = required(&mut keys, "issuer").filter(|issuer| match issuer_problem(issuer) {
        Some(why) => {
            keys.problem("issuer", why);
            false
        }
        None => true,
    });
    let client_id = required(&mut keys, "client_id");
    let client_secret_env = keys.string("client_secret_env");
    let client_secret = from_env(&mut keys, "client_secret_env", "the client secret", env);
    let scopes = list(&mut keys, "scopes", false)
        .unwrap_or_else(|| ["openid", "profile", "email"].map(String::from).to_vec());
    if !scopes.iter().any(|s| s == "openid") {
        keys.problem("scopes", "must include \"openid\"");
    }
    let role_claim = keys.string("role_claim").unwrap_or_else(|| "groups".into());
    if role_claim.is_empty() || role_claim.len() > 200 {
        keys.problem("role_claim", "must be a claim name of 1 to 200 bytes");
    }
    let operator_values = list(&mut keys, "operator_values", false).unwrap_or_default();
    let viewer_values = list(&mut keys, "viewer_values", false).unwrap_or_default();
    if operator_values.is_empty()
        && viewer_values.is_empty()
        && !keys.has_refused("operator_values")
    {
        keys.problem(
            "operator_values",
            "operator_values or viewer_values must name a value of the role claim: else nobody can sign in",
        );
    }
    let break_glass = list(&mut keys, "break_glass", true).unwrap_or_default();
    let password_login = keys.boolean("password_login").unwrap_or(true);
    Some(Oidc {
        issuer: issuer?,
        client_id: client_id?,
        client_secret: ClientSecret::new(client_secret?),
        client_secret_env: client_secret_env?,
        scopes,
        role_claim,
        operator_values,
        viewer_values,
        password_login,
        break_glass,
    })
    .filter(|_| public_url.is_some())
}

fn required(keys: &mut Keys<'_>, key: &str) -> Option<String> {
    let value = keys.string(key);
    match &value {
        None if !keys.has(key) => keys.problem(key, "is required"),
        Some(text) if text.is_empty() || text.len() > 2048 => {
            keys.problem(key, "must be 1 to 2048 bytes")
        }
        _ => {}
    }
    value.filter(|text| !text.is_empty() && text.len() <= 2048)
}

/// A list of non-empty strings, at most [`MAX_VALUES`]; `user_names`: each a user name.
fn list(keys: &mut Keys<'_>, key: &str, user_names: bool) -> Option<Vec<String>> {
    let values = keys.strings(key)?;
    if values.len() > MAX_VALUES {
        keys.refuse(
            key,
            format!("has {} values; at most {MAX_VALUES}", values.len()),
        );
        return None;
    }
    if let Some(bad) = values.iter().find(|v| v.is_empty() || v.len() > 256) {
        keys.refuse(key, format!("{bad:?} is not a value of 1 to 256 bytes"));
        return None;
    }
    if user_names && let Some(bad) = values.iter().find(|v| !crate::model::valid_user_name(v)) {
        keys.refuse(key, format!("{bad:?} is not a user name"));
        return None;
    }
    Some(values)
}

/// Why `issuer` cannot be one: https, or http only on loopback; a host; no query or fragment.
fn issuer_problem(issuer: &str) -> Option<String> {
    let Ok(url) = url::Url::parse(issuer) else {
        return Some(format!("{issuer:?} is not a URL"));
    };
    let loopback = matches!(url.host(), Some(url::Host::Domain("localhost")))
        || match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            _ => false,
        };
    match url.scheme() {
        _ if url.host().is_none() => Some(format!("{issuer:?} has no host")),
        "https" => None,
        "http" if loopback => None,
        "http" => Some(format!(
            "{issuer:?}: http is only for a provider on loopback (127.0.0.1, ::1, localhost); use https"
        )),
        _ => Some(format!("{issuer:?} is not an https URL")),
    }
    .or_else(|| {
        (url.query().is_some() || url.fragment().is_some())
            .then(|| format!("{issuer:?} has a query or fragment"))
    })
}
