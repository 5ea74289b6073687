//! `hookbox token add|list|revoke`: API tokens, managed from the shell. `add` prints the token
//! alone on the last line of standard output: the only time it is shown.

use crate::database::connect_and_migrate;
use anyhow::{Context, bail};
use app::auth::tokens::{self, TokenError};
use app::config::{Config, Settings};
use app::model::Role;

/// Who makes or revokes a token from the shell, in the audit log.
const SHELL_ACTOR: &str = "hookbox token (shell)";

pub async fn add(
    settings: &Settings,
    name: &str,
    role: &str,
    sources: &[String],
    expires_in_days: Option<u32>,
) -> anyhow::Result<()> {
    let role = Role::parse(role).context("--role is viewer or operator")?;
    let config = Config::load_from_env()?;
    let known: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
    let db = connect_and_migrate(settings).await?;
    let token = tokens::add_token(
        &db,
        name,
        role,
        sources,
        expires_in_days,
        SHELL_ACTOR,
        &known,
    )
    .await
    .map_err(|e| match e {
        TokenError::Invalid(why) => anyhow::anyhow!(why.to_string()),
        TokenError::Db(e) => anyhow::Error::new(e).context("store the token"),
    })?;
    eprintln!(
        "token {name} made ({}{}); it is shown once, keep it now:",
        role.as_str(),
        if sources.is_empty() {
            String::new()
        } else {
            format!(", sources {}", sources.join(", "))
        }
    );
    println!("{token}");
    Ok(())
}

pub async fn list(settings: &Settings) -> anyhow::Result<()> {
    let db = connect_and_migrate(settings).await?;
    let when = |at: Option<chrono::DateTime<chrono::Utc>>| {
        at.map_or_else(
            || "-".to_string(),
            |at| at.format("%Y-%m-%d %H:%M UTC").to_string(),
        )
    };
    for token in tokens::list_tokens(&db).await? {
        let state = token.state(chrono::Utc::now());
        println!(
            "{}\t{}\t{}\t{}\tcreated {}\texpires {}\tlast used {}",
            token.name,
            token.role.as_str(),
            state,
            token
                .sources
                .map_or_else(|| "all sources".to_string(), |s| s.join(",")),
            when(Some(token.created_at)),
            when(token.expires_at),
            when(token.last_used_at),
        );
    }
    Ok(())
}

pub async fn revoke(settings: &Settings, name: &str) -> anyhow::Result<()> {
    let db = connect_and_migrate(settings).await?;
    if !tokens::revoke_token(&db, name, SHELL_ACTOR).await? {
        bail!("no live token named {name}");
    }
    println!("token {name} revoked");
    Ok(())
}
