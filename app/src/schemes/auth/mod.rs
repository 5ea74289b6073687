//! [`Auth`]: how one source authenticates, its scheme with what the scheme needs of the source
//! (a recipe for `hmac`). Everything that checks, signs or describes a source's requests goes
//! through it, so a scheme that reads settings of its source is handled in one place.

use http::HeaderName;

use super::public_key::{PublicKey, verify_discord, verify_sendgrid};
use super::recipe::{Recipe, Request};
use super::{AuthError, Scheme, SecretKey};

/// A source's scheme and what it needs of the source: for [`Scheme::Hmac`] its recipe, for
/// [`Scheme::Token`] the header the token is in (lower case).
#[derive(Debug, Clone, Copy)]
pub struct Auth<'a> {
    pub scheme: Scheme,
    pub recipe: Option<&'a Recipe>,
    pub token_header: Option<&'a str>,
    /// [`Scheme::Token`], opted in: the query parameter the token may be in instead.
    pub token_query: Option<&'a str>,
    /// The public keys of a public-key scheme (`public_keys_env`).
    pub public_keys: &'a [PublicKey],
}

impl Auth<'_> {
    /// The headers the signature is read from (lower case).
    pub fn signature_headers(&self) -> Vec<&str> {
        match self.recipe {
            Some(recipe) => vec![recipe.signature_header.as_str()],
            None => self.scheme.signature_headers().to_vec(),
        }
    }

    /// Whether the signature covers a timestamp, i.e. whether `tolerance_secs` means anything.
    pub fn has_timestamp(&self) -> bool {
        match self.recipe {
            Some(recipe) => recipe.has_timestamp(),
            None => self.scheme.has_timestamp(),
        }
    }

    /// Whether the signature covers the body alone (see [`Scheme::signs_body_only`]).
    pub fn signs_body_only(&self) -> bool {
        match self.recipe {
            Some(recipe) => recipe.signs_body_only(),
            None => self.scheme.signs_body_only(),
        }
    }

    /// Whether the signature covers the URL (see [`Scheme::signs_url`]).
    pub fn signs_url(&self) -> bool {
        match self.recipe {
            Some(recipe) => recipe.signed.contains(&super::recipe::Part::Url),
            None => self.scheme.signs_url(),
        }
    }

    /// What ingest remembers of a verified signature so that it is accepted for one event only
    /// (see `ingest::Received::signed_body_digest`): the body's SHA-256 where the signature
    /// covers the body alone, Mailgun's token; `None` where a timestamp or an id is signed.
    /// Twilio's is the digest of the form as signed, whatever its encoding.
    pub fn replay_digest(&self, headers: &http::HeaderMap, body: &[u8]) -> Option<[u8; 32]> {
        match self.scheme {
            Scheme::Mailgun => return super::mailgun::replay_digest(body),
            Scheme::Twilio => return Some(super::twilio::replay_digest(headers, body)),
            _ => {}
        }
        use sha2::{Digest, Sha256};
        self.signs_body_only().then(|| Sha256::digest(body).into())
    }

    /// What is checked, in words (the sources page, `check-config`).
    pub fn describe(&self, tolerance_secs: u64) -> String {
        if self.scheme == Scheme::Token {
            let place = match (self.token_header, self.token_query) {
                (Some(header), Some(query)) => format!("{header} or the query parameter {query}"),
                (Some(header), None) => header.to_string(),
                (None, Some(query)) => format!("the query parameter {query}"),
                (None, None) => "a header".to_string(),
            };
            return format!(
                "a shared token in {place}, equal to a secret; nothing is signed, so a captured request stays valid"
            );
        }
        match self.recipe {
            Some(recipe) if recipe.has_timestamp() => format!(
                "{recipe}, its timestamp within {} of hookbox's clock",
                super::span(tolerance_secs)
            ),
            Some(recipe) => {
                format!("{recipe}; no timestamp is signed, so a captured request stays valid")
            }
            None => self.scheme.describe(tolerance_secs),
        }
    }

    /// The key bytes of a configured secret (see [`Scheme::parse_secret`]).
    pub fn parse_secret(&self, secret: &str) -> Result<SecretKey, String> {
        match self.recipe {
            Some(recipe) => recipe.parse_secret(secret),
            None => self.scheme.parse_secret(secret),
        }
    }

    /// Verifies `request` against every key at `now` (see [`Scheme::verify`]).
    pub fn verify(
        &self,
        request: &Request<'_>,
        keys: &[SecretKey],
        tolerance_secs: u64,
        now: i64,
    ) -> Result<(), AuthError> {
        let (headers, body) = (request.headers, request.body);
        match self.scheme {
            Scheme::Token => {
                let in_query = self.token_query.and_then(|name| {
                    form_urlencoded::parse(request.query.unwrap_or_default().as_bytes())
                        .find(|(given, _)| given == name)
                        .map(|(_, value)| value.into_owned())
                });
                match (in_query, self.token_header) {
                    (Some(token), _) => {
                        return super::shared_secret::matches_any(token.as_bytes(), keys);
                    }
                    (None, Some(name)) => {
                        return super::shared_secret::verify_token(headers, name, keys);
                    }
                    (None, None) => {
                        if let Some(name) = self.token_query {
                            return Err(AuthError::MissingQuery(name.to_string().into()));
                        }
                    }
                }
            }
            Scheme::StandardWebhooks => {
                return super::standard_webhooks::verify_with(
                    headers,
                    body,
                    keys,
                    self.public_keys,
                    tolerance_secs,
                    now,
                );
            }
            Scheme::Discord => {
                return verify_discord(headers, body, self.public_keys, tolerance_secs, now);
            }
            Scheme::Sendgrid => {
                return verify_sendgrid(headers, body, self.public_keys, tolerance_secs, now);
            }
            Scheme::Twilio => return super::twilio::verify(request, keys),
            _ => {}
        }
        match self.recipe {
            Some(recipe) => recipe.verify(request, keys, tolerance_secs, now),
            None => self
                .scheme
                .verify(request.headers, request.body, keys, tolerance_secs, now),
        }
    }

    /// The query a sender puts its token in (`name=token`, encoded) when the source takes the
    /// token from the query only (`token_query` without `token_header`).
    pub fn query_token(&self, key: &SecretKey) -> Option<String> {
        let name = self.token_query.filter(|_| self.token_header.is_none())?;
        let token = std::str::from_utf8(&key.0).ok()?;
        Some(
            form_urlencoded::Serializer::new(String::new())
                .append_pair(name, token)
                .finish(),
        )
    }

    /// The headers a real sender would send for `request` at `now` (see [`Scheme::sign`]).
    pub fn sign(
        &self,
        key: &SecretKey,
        msg_id: &str,
        request: &Request<'_>,
        now: i64,
    ) -> Vec<(HeaderName, String)> {
        if let (Scheme::Token, Some(name)) = (self.scheme, self.token_header) {
            return super::shared_secret::sign_token(key, name);
        }
        if self.scheme == Scheme::Twilio {
            return super::twilio::sign(key, request);
        }
        match self.recipe {
            Some(recipe) => recipe.sign(key, request, now),
            None => self.scheme.sign(key, msg_id, request.body, now),
        }
    }
}

#[cfg(test)]
mod tests;
