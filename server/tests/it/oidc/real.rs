//! The whole flow through a certified OpenID Provider (npm `oidc-provider`, started here on
//! loopback from `end2end/oidc-provider.mjs`): its own sign-in page, the code, the ID token, the
//! groups from its userinfo; users created at their first sign-in and given the role of their
//! groups at every one; a flow started on one hookbox process and finished on another.
#![allow(clippy::unwrap_used)]

use super::{CLIENT_SECRET, Landed, browser, callback, config, sign_in_audit, whoami};
use crate::support::{
    Backend, TestApp, both_backends, count, spawn_app_on_listener, spawn_app_on_listener_over,
    texts,
};
use std::collections::HashMap;
use tokio::io::AsyncBufReadExt;
use tokio::net::TcpListener;

/// The provider, running until dropped; its accounts in a file it reads at every sign-in.
pub struct RealProvider {
    pub issuer: String,
    accounts: std::path::PathBuf,
    _dir: tempfile::TempDir,
    _process: tokio::process::Child,
}

impl RealProvider {
    /// Starts it for hookbox's callback at `public_url`.
    pub async fn start(public_url: &str) -> RealProvider {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let dir = tempfile::tempdir().unwrap();
        let accounts = dir.path().join("accounts.json");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/oidc-provider.mjs");
        let mut process = tokio::process::Command::new("node")
            .arg(script)
            .env("OIDC_PORT", port.to_string())
            .env(
                "OIDC_REDIRECT_URI",
                format!("{public_url}/auth/oidc/callback"),
            )
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_ACCOUNTS", &accounts)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs end2end/oidc-provider.mjs (`npm ci` in end2end installs it)");
        let mut lines = tokio::io::BufReader::new(process.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("ready") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(ready, Ok(true), "the OpenID Provider started");
        // Read on, so the provider never writes into a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let provider = RealProvider {
            issuer: format!("http://127.0.0.1:{port}"),
            accounts,
            _dir: dir,
            _process: process,
        };
        provider.set_groups(&[]);
        provider
    }

    /// Who the provider knows, with their groups.
    pub fn set_groups(&self, people: &[(&str, &[&str])]) {
        let accounts: serde_json::Map<String, serde_json::Value> = people
            .iter()
            .map(|(name, groups)| {
                (
                    name.to_string(),
                    serde_json::json!({ "email": format!("{name}@example.com"), "groups": groups }),
                )
            })
            .collect();
        std::fs::write(&self.accounts, serde_json::to_string(&accounts).unwrap()).unwrap();
    }

    /// Signs `name` in through the provider's own page, starting on `first` and finishing on
    /// `last` (another process on the same database, or the same one).
    pub async fn sign_in(&self, first: &TestApp, last: &TestApp, name: &str) -> Landed {
        let started = super::start(first, "/").await;
        let client = browser();
        // The provider's cookies, by name (one host).
        let mut jar: HashMap<String, String> = HashMap::new();
        let mut next = started.location.to_string();
        let mut form: Option<(String, Vec<(String, String)>)> = None;
        for _ in 0..12 {
            let cookie = jar
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            let request = match form.take() {
                Some((action, fields)) => client.post(&action).form(&fields),
                None => client.get(&next),
            };
            let response = request.header("Cookie", cookie).send().await.unwrap();
            for value in response.headers().get_all("set-cookie") {
                let pair = value.to_str().unwrap().split(';').next().unwrap();
                if let Some((k, v)) = pair.split_once('=') {
                    jar.insert(k.to_string(), v.to_string());
                }
            }
            if let Some(location) = response.headers().get("location") {
                let location = url::Url::parse(&next)
                    .unwrap()
                    .join(location.to_str().unwrap())
                    .unwrap();
                if location.path() == "/auth/oidc/callback" {
                    // Back at hookbox (the address every process shares: `public_url`).
                    let query = location.query().unwrap_or_default();
                    return callback(last, query, Some(&started.flow_cookie)).await;
                }
                next = location.to_string();
                continue;
            }
            let page = response.text().await.unwrap();
            let action = page
                .split("action=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("the provider's page has a form: {page}"));
            let action = url::Url::parse(&next).unwrap().join(action).unwrap();
            let fields = if page.contains("name=\"login\"") {
                vec![
                    ("prompt".to_string(), "login".to_string()),
                    ("login".to_string(), name.to_string()),
                    ("password".to_string(), "any password".to_string()),
                ]
            } else {
                vec![("prompt".to_string(), "consent".to_string())]
            };
            form = Some((action.to_string(), fields));
        }
        panic!("the flow did not come back to hookbox");
    }
}

/// hookbox on a listener bound first, so the provider can be told its callback.
async fn hookbox_with_provider(backend: Backend) -> (TestApp, RealProvider, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let public_url = format!("http://{}", listener.local_addr().unwrap());
    let provider = RealProvider::start(&public_url).await;
    let app =
        spawn_app_on_listener(backend, listener, config(&public_url, &provider.issuer, "")).await;
    (app, provider, public_url)
}

both_backends!(people_sign_in_through_the_provider_with_the_role_of_their_groups_at_every_sign_in);
async fn people_sign_in_through_the_provider_with_the_role_of_their_groups_at_every_sign_in(
    backend: Backend,
) {
    let (app, provider, _) = hookbox_with_provider(backend).await;
    provider.set_groups(&[
        ("alice", &["hookbox-operators", "staff"]),
        ("bob", &["support"]),
        ("carol", &["staff"]),
    ]);

    let alice = provider.sign_in(&app, &app, "alice").await;
    assert_eq!(
        alice.location,
        "/",
        "{alice:?}: {:?}",
        sign_in_audit(&app).await
    );
    let alice_session = alice.session.clone().expect("alice has a session");
    assert_eq!(
        whoami(&app, &alice_session).await,
        Some(("alice".into(), "operator".into()))
    );
    let bob = provider.sign_in(&app, &app, "bob").await;
    assert_eq!(
        whoami(&app, &bob.session.clone().unwrap()).await,
        Some(("bob".into(), "viewer".into()))
    );
    // In neither list: refused, audited, no user created.
    let carol = provider.sign_in(&app, &app, "carol").await;
    assert_eq!(carol.location, "/login?sso=no-role");
    assert_eq!(carol.session, None);
    let (actor, outcome, detail) = sign_in_audit(&app).await.pop().unwrap();
    assert_eq!((actor.as_str(), outcome.as_str()), ("carol", "refused"));
    assert!(detail.contains("\"groups\""), "{detail}");
    let users = texts(
        &app.db,
        "SELECT name, role, issuer, subject, password_hash FROM users ORDER BY name",
        vec![],
    )
    .await;
    assert_eq!(
        users,
        vec![
            vec![
                Some("alice".into()),
                Some("operator".into()),
                Some(provider.issuer.clone()),
                Some("alice".into()),
                Some(String::new())
            ],
            vec![
                Some("bob".into()),
                Some("viewer".into()),
                Some(provider.issuer.clone()),
                Some("bob".into()),
                Some(String::new())
            ],
        ],
        "users by (issuer, sub), without a password"
    );
    // A user of single sign-on has no password: the form refuses any.
    let refused = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[("name", "alice"), ("password", ""), ("next", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(crate::support::session_cookie(refused.headers()), None);

    // Alice moves from the operators to support: the next sign-in makes her a viewer, and the
    // sessions that had the operator's role end.
    provider.set_groups(&[("alice", &["support"]), ("bob", &["support"])]);
    let demoted = provider.sign_in(&app, &app, "alice").await;
    assert_eq!(
        whoami(&app, &demoted.session.clone().unwrap()).await,
        Some(("alice".into(), "viewer".into()))
    );
    assert_eq!(
        whoami(&app, &alice_session).await,
        None,
        "the operator's session ended"
    );
    let (_, _, detail) = sign_in_audit(&app).await.pop().unwrap();
    assert!(detail.contains("role operator → viewer"), "{detail}");
    // Out of every group: refused, and her sessions end.
    provider.set_groups(&[("alice", &[]), ("bob", &["support"])]);
    let gone = provider.sign_in(&app, &app, "alice").await;
    assert_eq!(gone.location, "/login?sso=no-role");
    assert_eq!(whoami(&app, &demoted.session.unwrap()).await, None);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM users WHERE name = 'alice'").await,
        1,
        "still one alice: found by (issuer, sub)"
    );
    // The operators' page lists them, how they sign in and when they last did.
    let operator = crate::support::signed_in(&app, "olga", app::model::Role::Operator).await;
    let (status, body) = crate::support::call(&app, &operator, "users", &[]).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let listed: Vec<app::model::UserRow> = serde_json::from_str(&body).unwrap();
    let kinds: Vec<(&str, &str, bool)> = listed
        .iter()
        .map(|u| {
            (
                u.name.as_str(),
                u.sign_in_kind(),
                u.last_sign_in_at.is_some(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("alice", "single sign-on", true),
            ("bob", "single sign-on", true),
            ("olga", "password", true),
        ]
    );
    // `hookbox user list` says the same, from the shell.
    let cwd = tempfile::tempdir().unwrap();
    let listed = tokio::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["user", "list"])
        .current_dir(cwd.path())
        .env("DATABASE_URL", &app.test_db.as_ref().unwrap().url)
        .env_remove("HOOKBOX_CONFIG")
        .output()
        .await
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    let sso = format!("alice\tviewer\tsingle sign-on ({})\t", provider.issuer);
    assert!(listed.lines().any(|l| l.starts_with(&sso)), "{listed}");
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("olga\toperator\tpassword\t")),
        "{listed}"
    );
    let viewer = bob.session.unwrap();
    let (status, _) = crate::support::call(&app, &viewer, "users", &[]).await;
    assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "operators only");
}

#[tokio::test]
async fn a_sign_in_started_on_one_process_finishes_on_another() {
    let (first, provider, public_url) = hookbox_with_provider(Backend::Postgres).await;
    provider.set_groups(&[("alice", &["hookbox-operators"])]);
    // A second process on the same database behind the same public address.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let second = spawn_app_on_listener_over(
        first.db.clone(),
        listener,
        config(&public_url, &provider.issuer, ""),
    )
    .await;
    let landed = provider.sign_in(&first, &second, "alice").await;
    let session = landed.session.expect("signed in on the second process");
    assert_eq!(
        whoami(&first, &session).await,
        Some(("alice".into(), "operator".into()))
    );
    assert_eq!(
        count(&first.db, "SELECT count(*) FROM sign_in_flows").await,
        0
    );
}
