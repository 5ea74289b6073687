//! `hookbox handshake SOURCE`: collect the signing secret a provider hands over in its unsigned
//! first request (Asana's `X-Hook-Secret`, Notion's `verification_token`).
//!
//! Nothing can verify such a request, so the endpoint takes one only while an operator waits for
//! it here. The command makes a key pair (X25519) and keeps its private half in memory; it
//! opens a wait in the database with the public half ([`app::db::handshakes`]); the endpoint,
//! whichever hookbox process gets the request, seals the secret to that key ([`seal`]) and
//! answers the provider; the command opens it, prints it on standard output and closes the
//! wait. The secret is never in the database, a log, an answer of hookbox's own or a page.

use crate::database::connect_and_migrate;
use anyhow::{Context, bail};
use app::config::{Config, Settings};
use app::db::handshakes::{self, WaitError};
use crypto_box::aead::OsRng;
use crypto_box::{PublicKey, SecretKey};
use std::time::Duration;

/// `secret` sealed to `public_key` (an anonymous sealed box: only the key's owner opens it).
/// `None` when the stored key is not one.
pub fn seal(public_key: &[u8], secret: &str) -> Option<Vec<u8>> {
    let key = PublicKey::from_slice(public_key).ok()?;
    key.seal(&mut OsRng, secret.as_bytes()).ok()
}

/// A wait for SOURCE's handshake, with the private key that opens what fills it.
pub struct Waiting {
    pub id: i64,
    key: SecretKey,
}

impl Waiting {
    /// Opens a wait on `source` for `secs`.
    pub async fn open(db: &app::db::Db, source: &str, secs: u64) -> anyhow::Result<Waiting> {
        let key = SecretKey::generate(&mut OsRng);
        let id = handshakes::open_wait(db, source, key.public_key().as_bytes(), secs)
            .await
            .map_err(|e| match e {
                WaitError::TooMany => anyhow::anyhow!(
                    "{} waits are open for source {source} already; let them end first",
                    handshakes::MAX_OPEN_WAITS
                ),
                WaitError::Db(e) => anyhow::Error::new(e).context("open the wait"),
            })?;
        Ok(Waiting { id, key })
    }

    /// The secret, once a handshake filled the wait; and where it came from.
    pub async fn collect(&self, db: &app::db::Db) -> anyhow::Result<Option<(String, String)>> {
        let Some(filled) = handshakes::filled(db, self.id).await? else {
            return Ok(None);
        };
        let opened = self
            .key
            .unseal(&filled.sealed)
            .map_err(|_| anyhow::anyhow!("the sealed secret does not open with this wait's key"))?;
        let secret = String::from_utf8(opened).context("the secret is not UTF-8")?;
        Ok(Some((secret, filled.client_address)))
    }
}

/// Waits up to `secs` for SOURCE's handshake and prints its secret on standard output.
pub async fn run(settings: &Settings, source_name: &str, secs: u64) -> anyhow::Result<()> {
    let config = Config::load_from_env()?;
    let source = config
        .source(source_name)
        .with_context(|| format!("source {source_name:?} is not declared"))?;
    if !source.preset.is_some_and(|p| p.captures_secret()) {
        bail!(
            "source {source_name} does not take its secret from a handshake (the asana and notion presets do)"
        );
    }
    let db = connect_and_migrate(settings).await?;
    let waiting = Waiting::open(&db, &source.name, secs).await?;
    eprintln!(
        "hookbox: waiting up to {secs} s for the handshake on /hooks/{}; create the webhook now",
        source.name
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let collected = loop {
        match waiting.collect(&db).await {
            Ok(Some(found)) => break Ok(Some(found)),
            Ok(None) if tokio::time::Instant::now() >= deadline => break Ok(None),
            Ok(None) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(e) => break Err(e),
        }
    };
    handshakes::close_wait(&db, waiting.id).await?;
    match collected? {
        None => bail!("no handshake arrived within {secs} s"),
        Some((secret, client)) => {
            let variable = source
                .secrets_env
                .first()
                .map_or("the source's secrets_env variable", String::as_str);
            eprintln!(
                "hookbox: a handshake from {client} was answered. If the provider confirms the \
                 webhook, set this secret in {variable} and restart hookbox:"
            );
            println!("{secret}");
            Ok(())
        }
    }
}
