//! `hookbox user add|list|remove`: dashboard users, managed from the shell.

use crate::database::connect_and_migrate;
use anyhow::{Context, bail};
use app::auth;
use app::config::Settings;
use app::model::Role;
use std::io::BufRead;

/// Reads the password from the first line of standard input.
fn read_password() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("read the password from standard input")?;
    let password = line.trim_end_matches(['\r', '\n']).to_string();
    if password.is_empty() {
        bail!(
            "no password on standard input (e.g. `echo 'a long password' | hookbox user add NAME --role viewer`)"
        );
    }
    Ok(password)
}

pub async fn add(settings: &Settings, name: &str, role: &str) -> anyhow::Result<()> {
    let role = Role::parse(role).context("--role is viewer or operator")?;
    let password = read_password()?;
    let db = connect_and_migrate(settings).await?;
    auth::add_user(&db, name, &password, role)
        .await
        .map_err(anyhow::Error::msg)?;
    let ended = auth::revoke_user_sessions(&db, name).await?;
    println!(
        "user {name} is a {}{}",
        role.as_str(),
        if ended > 0 {
            format!("; {ended} sessions ended")
        } else {
            String::new()
        }
    );
    Ok(())
}

pub async fn list(settings: &Settings) -> anyhow::Result<()> {
    let db = connect_and_migrate(settings).await?;
    println!("name\trole\tsigns in with\tcreated\tlast signed in");
    for user in auth::list_users(&db, None).await? {
        let signs_in = match &user.issuer {
            Some(issuer) => format!("single sign-on ({issuer})"),
            None => "password".to_string(),
        };
        println!(
            "{}\t{}\t{signs_in}\t{}\t{}",
            user.name,
            user.role.as_str(),
            minute(&user.created_at),
            user.last_sign_in_at
                .as_deref()
                .map(minute)
                .unwrap_or_else(|| "never".into())
        );
    }
    Ok(())
}

/// An RFC 3339 time as `2026-12-06 14:02 UTC`.
fn minute(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|at| {
            at.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        })
        .unwrap_or_else(|_| rfc3339.to_string())
}

pub async fn remove(settings: &Settings, name: &str) -> anyhow::Result<()> {
    let db = connect_and_migrate(settings).await?;
    if !auth::remove_user(&db, name).await? {
        bail!("there is no user {name:?}");
    }
    println!("removed {name}");
    Ok(())
}
