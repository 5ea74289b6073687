//! Single sign-on with an OpenID Provider (contract section 17): discovery, the authorization
//! code flow with PKCE (S256), `state` and `nonce`, and the ID token verified by the
//! `openidconnect` crate against the issuer's keys with an allow-list of asymmetric algorithms.
//! The flows' rows, the users and the refusals' records are `app::auth::oidc`; the routes that
//! browsers take are in `routes.rs`.
//!
//! What the provider's documents cost: discovery (with its keys) is fetched at the first sign-in
//! and kept for [`METADATA_TTL`]; after a failed fetch none is tried for [`RETRY_AFTER_FAILURE`]
//! (the start answers 503). A token signed with a key not in the kept set re-fetches the keys, at
//! most once per [`KEYS_MIN_INTERVAL`]. Every request to the provider has [`PROVIDER_TIMEOUT`].

pub mod routes;

use app::auth::oidc::Identity;
use app::config::oidc::Oidc;
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreIdTokenVerifier, CoreJsonWebKeySet,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret,
    CsrfToken, IdToken, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, SignatureVerificationError, TokenResponse, UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::str::FromStr;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long discovery's answer (and its keys) is kept.
pub const METADATA_TTL: Duration = Duration::from_secs(3600);
/// After a failed discovery, how long sign-ins are refused (503) before the next try.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);
/// The keys are re-fetched for an unknown key id at most this often.
pub const KEYS_MIN_INTERVAL: Duration = Duration::from_secs(60);
/// The deadline of each request to the provider.
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// The signature algorithms an ID token may use: asymmetric only (never `none`, never HS256 with
/// the client secret).
pub const ALLOWED_ALGORITHMS: [CoreJwsSigningAlgorithm; 3] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EdDsa,
];
/// An ID token's `iat` may be at most this far ahead of hookbox's clock ...
const IAT_AHEAD: chrono::Duration = chrono::Duration::minutes(5);
/// ... and at most this old.
const IAT_AGE: chrono::Duration = chrono::Duration::hours(1);

/// The claims of an ID token (or of userinfo) that are not standard: the role claim among them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OtherClaims(HashMap<String, serde_json::Value>);
impl AdditionalClaims for OtherClaims {}

type Token = IdToken<
    OtherClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

/// Why a sign-in through the provider did not end in an identity. The text is for the audit
/// log (never a token or a secret); [`Refusal::retry_later`] marks the provider's outages.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the provider's discovery failed: {0}")]
    Discovery(String),
    #[error("the provider did not take the code: {0}")]
    Exchange(String),
    #[error("the provider's answer has no ID token")]
    NoIdToken,
    #[error("the ID token is refused: {0}")]
    Token(String),
    #[error("the userinfo request failed: {0}")]
    UserInfo(String),
}

impl Refusal {
    /// A fault of reaching the provider, which trying again may fix.
    pub fn retry_later(&self) -> bool {
        matches!(self, Refusal::Discovery(_))
    }
}

/// Discovery's answer, kept.
struct Discovered {
    metadata: CoreProviderMetadata,
    fetched: Instant,
    keys_fetched: Instant,
}

#[derive(Default)]
struct Cache {
    discovered: Option<Discovered>,
    failed_at: Option<Instant>,
}

/// The configured provider, as one hookbox process talks to it.
pub struct Provider {
    pub config: Oidc,
    redirect: RedirectUrl,
    http: reqwest::Client,
    cache: Mutex<Cache>,
}

/// A started sign-in: where to send the browser, and what the flow's row and cookie keep.
pub struct Started {
    pub authorize_url: String,
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    pub challenge: String,
}

impl Provider {
    pub fn new(config: Oidc, public_url: &str) -> Result<Provider, String> {
        let redirect = RedirectUrl::new(format!("{public_url}/auth/oidc/callback"))
            .map_err(|e| format!("the callback URL: {e}"))?;
        let http = reqwest::Client::builder()
            .timeout(PROVIDER_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        Ok(Provider {
            config,
            redirect,
            http,
            cache: Mutex::new(Cache::default()),
        })
    }

    /// The provider's metadata and keys: kept, or fetched now (one fetch at a time).
    async fn metadata(&self) -> Result<CoreProviderMetadata, Refusal> {
        let mut cache = self.cache.lock().await;
        let now = app::clock::instant();
        if let Some(found) = &cache.discovered
            && now.duration_since(found.fetched) < METADATA_TTL
        {
            return Ok(found.metadata.clone());
        }
        if cache
            .failed_at
            .is_some_and(|at| now.duration_since(at) < RETRY_AFTER_FAILURE)
        {
            return Err(Refusal::Discovery("the last try failed moments ago".into()));
        }
        let issuer = IssuerUrl::new(self.config.issuer.clone())
            .map_err(|e| Refusal::Discovery(e.to_string()))?;
        match CoreProviderMetadata::discover_async(issuer, &self.http).await {
            Ok(metadata) => {
                cache.discovered = Some(Discovered {
                    metadata: metadata.clone(),
                    fetched: now,
                    keys_fetched: now,
                });
                cache.failed_at = None;
                Ok(metadata)
            }
            Err(e) => {
                cache.failed_at = Some(now);
                Err(Refusal::Discovery(error_chain(&e)))
            }
        }
    }

    /// The keys again, for a token whose key id the kept set lacks; `None` when they were
    /// fetched less than [`KEYS_MIN_INTERVAL`] ago (or cannot be).
    async fn refetch_keys(&self) -> Option<CoreProviderMetadata> {
        let mut cache = self.cache.lock().await;
        let now = app::clock::instant();
        let found = cache.discovered.as_mut()?;
        if now.duration_since(found.keys_fetched) < KEYS_MIN_INTERVAL {
            return None;
        }
        found.keys_fetched = now;
        let uri = found.metadata.jwks_uri().clone();
        match CoreJsonWebKeySet::fetch_async(&uri, &self.http).await {
            Ok(keys) => {
                found.metadata = found.metadata.clone().set_jwks(keys);
                Some(found.metadata.clone())
            }
            Err(e) => {
                tracing::warn!(error = %error_chain(&e), "single sign-on: the provider's keys could not be fetched");
                None
            }
        }
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
    ) -> openidconnect::core::CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    > {
        CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            Some(ClientSecret::new(
                self.config.client_secret.expose().to_string(),
            )),
        )
        .set_redirect_uri(self.redirect.clone())
    }

    /// A new sign-in: its state, nonce and PKCE pair, and the provider's URL to send the browser to.
    pub async fn start(&self) -> Result<Started, Refusal> {
        let metadata = self.metadata().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let client = self.client(metadata);
        let mut request = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge.clone());
        for scope in self.config.scopes.iter().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.url();
        Ok(Started {
            authorize_url: url.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            challenge: challenge.as_str().to_string(),
            verifier: verifier.secret().clone(),
        })
    }

    /// Ends a sign-in: the code exchanged (with the PKCE verifier), the ID token verified against
    /// the provider's keys with the flow's `nonce`, and the identity it proves.
    pub async fn finish(
        &self,
        code: &str,
        verifier: &str,
        nonce: &str,
    ) -> Result<Identity, Refusal> {
        let metadata = self.metadata().await?;
        let client = self.client(metadata.clone());
        let answer = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| Refusal::Exchange(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_string()))
            .request_async(&self.http)
            .await
            .map_err(|e| Refusal::Exchange(error_chain(&e)))?;
        let raw = answer.id_token().ok_or(Refusal::NoIdToken)?;
        let token = serde_json::to_value(raw)
            .ok()
            .and_then(|value| value.as_str().map(Token::from_str))
            .and_then(Result::ok)
            .ok_or_else(|| Refusal::Token("it cannot be read".into()))?;
        let nonce = Nonce::new(nonce.to_string());
        let claims = match self.verify(&token, &metadata, &nonce) {
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => match self.refetch_keys().await {
                Some(refreshed) => self.verify(&token, &refreshed, &nonce),
                None => Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )),
            },
            other => other,
        }
        .map_err(|e| Refusal::Token(error_chain(&e)))?;
        let subject = claims.subject().to_string();
        let mut name_hint = claims
            .preferred_username()
            .map(|name| name.to_string())
            .or_else(|| claims.email().map(|email| email.to_string()));
        let mut values = claim_values(claims.additional_claims(), &self.config.role_claim);
        // What the ID token lacks may be in userinfo (a provider that keeps the token small).
        if (values.is_none() || name_hint.is_none())
            && let Ok(request) = client.user_info(
                answer.access_token().clone(),
                Some(claims.subject().clone()),
            )
        {
            let info: UserInfoClaims<OtherClaims, CoreGenderClaim> = request
                .request_async(&self.http)
                .await
                .map_err(|e| Refusal::UserInfo(error_chain(&e)))?;
            values =
                values.or_else(|| claim_values(info.additional_claims(), &self.config.role_claim));
            name_hint = name_hint.or_else(|| {
                info.preferred_username()
                    .map(|name| name.to_string())
                    .or_else(|| info.email().map(|email| email.to_string()))
            });
        }
        Ok(Identity {
            issuer: self.config.issuer.clone(),
            subject,
            name_hint,
            values: values.unwrap_or_default(),
        })
    }

    fn verify<'t>(
        &self,
        token: &'t Token,
        metadata: &CoreProviderMetadata,
        nonce: &Nonce,
    ) -> Result<
        &'t openidconnect::IdTokenClaims<OtherClaims, CoreGenderClaim>,
        ClaimsVerificationError,
    > {
        let verifier = CoreIdTokenVerifier::new_public_client(
            ClientId::new(self.config.client_id.clone()),
            metadata.issuer().clone(),
            metadata.jwks().clone(),
        )
        .set_allowed_algs(ALLOWED_ALGORITHMS)
        .set_time_fn(app::clock::now)
        .set_issue_time_verifier_fn(|iat| {
            let now = app::clock::now();
            if iat > now + IAT_AHEAD {
                Err(format!("issued in the future ({iat})"))
            } else if iat < now - IAT_AGE {
                Err(format!("issued too long ago ({iat})"))
            } else {
                Ok(())
            }
        });
        token.claims(&verifier, nonce)
    }
}

/// The values of the claim `name`: a string, or an array of strings (others ignored); `None`
/// when the claim is absent.
fn claim_values(claims: &OtherClaims, name: &str) -> Option<Vec<String>> {
    let value = claims.0.get(name)?;
    Some(match value {
        serde_json::Value::String(one) => vec![one.clone()],
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_string))
            .take(1000)
            .collect(),
        _ => Vec::new(),
    })
}

/// An error and its causes, one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text.chars().take(500).collect()
}
