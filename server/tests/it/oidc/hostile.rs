//! A provider that sends what a certified one never does: each ID token below is refused, with
//! no session and an audit entry naming why; a replayed state or code is refused too. The same
//! provider, behaving, signs a person in (so each refusal is for its one fault).
#![allow(clippy::unwrap_used)]

use super::{CLIENT_ID, CLIENT_SECRET, Started, callback, sign_in_audit, spawn, start};
use crate::support::{Backend, TestApp, both_backends, count};
use axum::extract::State;
use axum::routing::{get, post};
use base64::Engine;
use openidconnect::core::{CoreHmacKey, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey};
use openidconnect::{JsonWebKeyId, PrivateSigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const PROVIDER_KEY: &str = include_str!("provider-key.pem");
const OTHER_KEY: &str = include_str!("other-key.pem");

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A code the provider will redeem once: its PKCE challenge and the ID token it answers with.
struct Issued {
    challenge: String,
    id_token: String,
    used: bool,
}

#[derive(Default)]
struct Provided {
    codes: HashMap<String, Issued>,
    jwks_fetches: usize,
    token_requests: usize,
}

/// The hostile provider: discovery, its one published key, and a token endpoint that answers a
/// code with the ID token the test prepared for it.
pub struct Hostile {
    pub issuer: String,
    state: Arc<Mutex<Provided>>,
    key: CoreRsaPrivateSigningKey,
    other: CoreRsaPrivateSigningKey,
}

impl Hostile {
    pub async fn spawn() -> Hostile {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let key = CoreRsaPrivateSigningKey::from_pem(
            PROVIDER_KEY,
            Some(JsonWebKeyId::new("published".into())),
        )
        .unwrap();
        let other = CoreRsaPrivateSigningKey::from_pem(
            OTHER_KEY,
            Some(JsonWebKeyId::new("unpublished".into())),
        )
        .unwrap();
        let jwks = json!({ "keys": [key.as_verification_key()] });
        let state = Arc::new(Mutex::new(Provided::default()));
        let discovery = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "jwks_uri": format!("{issuer}/jwks"),
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        });
        let router = axum::Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || async move { axum::Json(discovery) }),
            )
            .route(
                "/jwks",
                get(
                    move |State(state): State<Arc<Mutex<Provided>>>| async move {
                        state.lock().unwrap().jwks_fetches += 1;
                        axum::Json(jwks)
                    },
                ),
            )
            .route("/token", post(token))
            .with_state(state.clone());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Hostile {
            issuer,
            state,
            key,
            other,
        }
    }

    /// Claims as a behaving provider would send them for `started`.
    pub fn claims(&self, started: &Started, sub: &str, groups: &[&str]) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({
            "iss": self.issuer,
            "sub": sub,
            "aud": CLIENT_ID,
            "exp": now + 300,
            "iat": now,
            "nonce": started.nonce,
            "preferred_username": sub,
            "groups": groups,
        })
    }

    /// An ID token: `alg` in its header, signed with `key` (none: no signature).
    pub fn token(&self, alg: &str, kid: Option<&str>, claims: &Value, key: Signer) -> String {
        let mut header = json!({ "alg": alg, "typ": "JWT" });
        if let Some(kid) = kid {
            header["kid"] = json!(kid);
        }
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = match key {
            Signer::Published => self
                .key
                .sign(
                    &CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
                    input.as_bytes(),
                )
                .unwrap(),
            Signer::Unpublished => self
                .other
                .sign(
                    &CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
                    input.as_bytes(),
                )
                .unwrap(),
            Signer::ClientSecret => CoreHmacKey::new(CLIENT_SECRET.as_bytes())
                .sign(&CoreJwsSigningAlgorithm::HmacSha256, input.as_bytes())
                .unwrap(),
            Signer::Nothing => Vec::new(),
        };
        format!("{input}.{}", b64(&signature))
    }

    /// A well-formed token of the published key.
    pub fn good_token(&self, claims: &Value) -> String {
        self.token("RS256", Some("published"), claims, Signer::Published)
    }

    /// Authorizes `started`: a new code that redeems to `id_token` with the flow's verifier.
    pub fn authorize(&self, started: &Started, id_token: String) -> String {
        let code = format!("code-{}", rand::random::<u64>());
        self.state.lock().unwrap().codes.insert(
            code.clone(),
            Issued {
                challenge: started.challenge.clone(),
                id_token,
                used: false,
            },
        );
        code
    }

    pub fn jwks_fetches(&self) -> usize {
        self.state.lock().unwrap().jwks_fetches
    }

    pub fn token_requests(&self) -> usize {
        self.state.lock().unwrap().token_requests
    }
}

pub enum Signer {
    Published,
    Unpublished,
    ClientSecret,
    Nothing,
}

/// `POST /token`: the client authenticated with its secret, the code redeemed once, the PKCE
/// verifier matching the challenge of its authorization.
async fn token(
    State(state): State<Arc<Mutex<Provided>>>,
    headers: axum::http::HeaderMap,
    body: String,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let form: HashMap<String, String> = form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let refuse = |error: &str| {
        (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({ "error": error })),
        )
            .into_response()
    };
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!(
            "{CLIENT_ID}:{}",
            form_urlencoded::byte_serialize(CLIENT_SECRET.as_bytes()).collect::<String>()
        ))
    );
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(basic.as_str()) {
        return refuse("invalid_client");
    }
    let mut provided = state.lock().unwrap();
    provided.token_requests += 1;
    let code = form.get("code").cloned().unwrap_or_default();
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let Some(issued) = provided.codes.get_mut(&code) else {
        return refuse("invalid_grant");
    };
    if issued.used {
        return refuse("invalid_grant");
    }
    issued.used = true;
    if b64(&Sha256::digest(verifier.as_bytes())) != issued.challenge {
        return refuse("invalid_grant");
    }
    axum::Json(json!({
        "access_token": "an access token",
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": issued.id_token,
    }))
    .into_response()
}

/// The callback of `started` with `code`, from the browser that started it.
async fn finish(app: &TestApp, started: &Started, code: &str) -> super::Landed {
    callback(
        app,
        &format!(
            "code={}&state={}",
            app::url::urlencode(code),
            app::url::urlencode(&started.state)
        ),
        Some(&started.flow_cookie),
    )
    .await
}

/// Asserts a refusal: back to `/login?sso=failed`, no session, and one more audit row, refused,
/// whose detail contains `why`.
async fn assert_refused(app: &TestApp, landed: &super::Landed, audited_before: usize, why: &str) {
    assert_eq!(
        landed.status,
        reqwest::StatusCode::SEE_OTHER,
        "{why}: {landed:?}"
    );
    assert_eq!(landed.location, "/login?sso=failed", "{why}");
    assert_eq!(landed.session, None, "{why}: no session cookie");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM sessions").await,
        0,
        "{why}"
    );
    let audit = sign_in_audit(app).await;
    assert_eq!(
        audit.len(),
        audited_before + 1,
        "{why}: one audit row: {audit:?}"
    );
    let (_, outcome, detail) = audit.last().unwrap();
    assert_eq!(outcome, "refused", "{why}");
    assert!(
        detail.to_lowercase().contains(&why.to_lowercase()),
        "{why}: the audit row names it: {detail}"
    );
    assert!(
        !detail.contains(CLIENT_SECRET),
        "no secret in the audit log"
    );
}

both_backends!(
    every_token_a_certified_provider_never_sends_is_refused_with_no_session_and_an_audit_entry
);
async fn every_token_a_certified_provider_never_sends_is_refused_with_no_session_and_an_audit_entry(
    backend: Backend,
) {
    let provider = Hostile::spawn().await;
    let app = spawn(backend, &provider.issuer, "").await;
    type Fault = (&'static str, fn(&Hostile, &Started) -> String);
    let faults: [Fault; 9] = [
        ("invalid audiences", |p, s| {
            let mut claims = p.claims(s, "mallory", &["hookbox-operators"]);
            claims["aud"] = json!("another-client");
            p.good_token(&claims)
        }),
        ("invalid issuer", |p, s| {
            let mut claims = p.claims(s, "mallory", &["hookbox-operators"]);
            claims["iss"] = json!("http://127.0.0.1:1");
            p.good_token(&claims)
        }),
        ("expired", |p, s| {
            let mut claims = p.claims(s, "mallory", &["hookbox-operators"]);
            let now = chrono::Utc::now().timestamp();
            claims["exp"] = json!(now - 60);
            claims["iat"] = json!(now - 360);
            p.good_token(&claims)
        }),
        ("no matching key", |p, s| {
            let claims = p.claims(s, "mallory", &["hookbox-operators"]);
            p.token("RS256", Some("unpublished"), &claims, Signer::Unpublished)
        }),
        ("disallowed signature algorithm", |p, s| {
            let claims = p.claims(s, "mallory", &["hookbox-operators"]);
            p.token("HS256", None, &claims, Signer::ClientSecret)
        }),
        ("single sign-on:", |p, s| {
            // `alg: none`: no signature at all.
            let claims = p.claims(s, "mallory", &["hookbox-operators"]);
            p.token("none", None, &claims, Signer::Nothing)
        }),
        ("invalid nonce", |p, s| {
            let mut claims = p.claims(s, "mallory", &["hookbox-operators"]);
            claims["nonce"] = json!("a nonce of another sign-in");
            p.good_token(&claims)
        }),
        ("signature verification failed", |p, s| {
            // The published key's signature over other claims.
            let good = p.good_token(&p.claims(s, "mallory", &["support"]));
            let forged = b64(p
                .claims(s, "mallory", &["hookbox-operators"])
                .to_string()
                .as_bytes());
            let parts: Vec<&str> = good.split('.').collect();
            format!("{}.{forged}.{}", parts[0], parts[2])
        }),
        ("issued in the future", |p, s| {
            let mut claims = p.claims(s, "mallory", &["hookbox-operators"]);
            claims["iat"] = json!(chrono::Utc::now().timestamp() + 3600);
            claims["exp"] = json!(chrono::Utc::now().timestamp() + 7200);
            p.good_token(&claims)
        }),
    ];
    for (why, make) in faults {
        let audited = sign_in_audit(&app).await.len();
        let started = start(&app, "/").await;
        let code = provider.authorize(&started, make(&provider, &started));
        let landed = finish(&app, &started, &code).await;
        assert_refused(&app, &landed, audited, why).await;
    }
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM users WHERE issuer IS NOT NULL"
        )
        .await,
        0,
        "no user was created"
    );
    // The unknown key was looked for once more (the keys were fetched with discovery moments
    // ago, so not again within the minute) ...
    assert_eq!(
        provider.jwks_fetches(),
        1,
        "keys fetched once, within the minute"
    );
    // ... and the same provider, behaving, signs the person in.
    let started = start(&app, "/events?status=failed").await;
    let code = provider.authorize(
        &started,
        provider.good_token(&provider.claims(&started, "olga", &["hookbox-operators"])),
    );
    let landed = finish(&app, &started, &code).await;
    assert_eq!(landed.location, "/events?status=failed");
    let session = landed.session.expect("a session");
    assert_eq!(
        super::whoami(&app, &session).await,
        Some(("olga".into(), "operator".into()))
    );
}

/// A new flow's callback with a code the provider would take, `extra` added to its query and
/// `cookie` instead of the flow's (when given): refused to the login page with no session, before
/// the provider is asked for the code, audited with `reason`.
async fn refused_before_the_provider_is_asked(
    app: &TestApp,
    provider: &Hostile,
    extra: &str,
    cookie: Option<&str>,
    reason: &str,
) {
    let flow = start(app, "/").await;
    let code = provider.authorize(
        &flow,
        provider.good_token(&provider.claims(&flow, "mallory", &["hookbox-operators"])),
    );
    let requests = provider.token_requests();
    let landed = callback(
        app,
        &format!("code={code}&state={}{extra}", flow.state),
        Some(cookie.unwrap_or(&flow.flow_cookie)),
    )
    .await;
    assert_eq!(landed.location, "/login?sso=failed", "{reason}");
    assert_eq!(landed.session, None, "{reason}");
    assert_eq!(provider.token_requests(), requests, "{reason}");
    let audit = sign_in_audit(app).await;
    assert!(
        audit.last().is_some_and(|entry| entry.2.contains(reason)),
        "{reason}: {audit:?}"
    );
}

both_backends!(a_replayed_state_or_code_and_a_callback_from_another_browser_are_refused);
async fn a_replayed_state_or_code_and_a_callback_from_another_browser_are_refused(
    backend: Backend,
) {
    let provider = Hostile::spawn().await;
    let app = spawn(backend, &provider.issuer, "").await;
    let started = start(&app, "/").await;
    let code = provider.authorize(
        &started,
        provider.good_token(&provider.claims(&started, "vera", &["support"])),
    );
    let landed = finish(&app, &started, &code).await;
    assert!(
        landed.session.is_some(),
        "the first callback signs in: {landed:?}"
    );
    let sessions = count(&app.db, "SELECT count(*) FROM sessions").await;

    // The same callback again: the state was taken; counted as a failed sign-in of the client.
    let again = finish(&app, &started, &code).await;
    assert_eq!(again.location, "/login?sso=expired");
    assert_eq!(again.session, None);
    let counted = crate::support::texts(
        &app.db,
        "SELECT name, CAST(failed AS TEXT) FROM sign_in_failures",
        vec![],
    )
    .await;
    assert_eq!(
        counted,
        vec![vec![
            Some(app::auth::oidc::UNKNOWN_FLOW.to_string()),
            Some("1".to_string())
        ]],
        "the replayed state is counted"
    );
    assert_eq!(
        provider.token_requests(),
        1,
        "a replayed state never reaches the provider"
    );

    // The code again under a new flow: the provider refuses it, and that is audited.
    let audited = sign_in_audit(&app).await.len();
    let second = start(&app, "/").await;
    let replayed = finish(&app, &second, &code).await;
    assert_eq!(replayed.location, "/login?sso=failed");
    let audit = sign_in_audit(&app).await;
    assert_eq!(audit.len(), audited + 1);
    assert!(
        audit.last().unwrap().2.contains("did not take the code"),
        "{audit:?}"
    );

    // A callback with a live state but without the browser's cookie (login CSRF: an attacker's
    // code and state sent to a victim) is refused before the provider is asked.
    refused_before_the_provider_is_asked(
        &app,
        &provider,
        "",
        Some("hookbox_sign_in=another-browsers-verifier"),
        "another browser",
    )
    .await;
    // An answer naming another issuer (RFC 9207's `iss`): refused before the provider is asked.
    let iss = format!(
        "&iss={}",
        app::url::urlencode("https://another-provider.example")
    );
    refused_before_the_provider_is_asked(&app, &provider, &iss, None, "another issuer").await;
    // The provider's own error (the person cancelled) is refused and audited too.
    let fourth = start(&app, "/").await;
    let cancelled = callback(
        &app,
        &format!("error=access_denied&state={}", fourth.state),
        Some(&fourth.flow_cookie),
    )
    .await;
    assert_eq!(cancelled.location, "/login?sso=failed");
    assert!(
        sign_in_audit(&app)
            .await
            .last()
            .unwrap()
            .2
            .contains("access_denied")
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM sessions").await,
        sessions,
        "no session but the first"
    );
}

#[tokio::test]
async fn an_unknown_key_refetches_the_keys_at_most_once_a_minute() {
    let provider = Hostile::spawn().await;
    let app = spawn(Backend::Sqlite, &provider.issuer, "").await;
    let unknown = |started: &Started| {
        let claims = provider.claims(started, "olga", &["hookbox-operators"]);
        provider.token("RS256", Some("unpublished"), &claims, Signer::Unpublished)
    };
    let started = start(&app, "/").await;
    assert_eq!(provider.jwks_fetches(), 1, "discovery fetched the keys");
    let code = provider.authorize(&started, unknown(&started));
    finish(&app, &started, &code).await;
    assert_eq!(provider.jwks_fetches(), 1, "not again within the minute");
    app::clock::advance(std::time::Duration::from_secs(61));
    for _ in 0..3 {
        let started = start(&app, "/").await;
        let code = provider.authorize(&started, unknown(&started));
        let landed = finish(&app, &started, &code).await;
        assert_eq!(landed.session, None);
    }
    assert_eq!(
        provider.jwks_fetches(),
        2,
        "a minute later, one fetch for three tokens of an unknown key"
    );
}
