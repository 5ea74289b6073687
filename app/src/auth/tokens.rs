//! API tokens (`api_tokens`, migration m20261203_000019): what programs call `/api/v1` with.
//!
//! A token is `hbt_` and 256 random bits (base64url); it is printed once, when it is made, and
//! only its SHA-256 is stored, as for sessions. A token has a role, may be limited to some
//! sources (a program then sees nothing of any other, [`Caller::sees`]), may expire, and is
//! revoked rather than deleted. Making and revoking one is audited; `last_used_at` is written at
//! most once a minute.

use super::sessions::token_hash;
use crate::db::Db;
use crate::db::audit::{AuditEntry, audit};
use crate::db::statement;
use crate::model::{AuditAction, Role, TokenState};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr};

/// What every token starts with.
pub const TOKEN_PREFIX: &str = "hbt_";
/// The longest life a token may be given.
pub const MAX_EXPIRES_IN_DAYS: u32 = 3650;
/// Sources a token may be limited to.
pub const MAX_TOKEN_SOURCES: usize = 64;

/// A token as `hookbox token list` and the tokens page show it (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    pub name: String,
    pub role: Role,
    /// `None`: every source.
    pub sources: Option<Vec<String>>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
}

impl ApiToken {
    /// Revoked, expired (its expiry passed by `now`) or live.
    pub fn state(&self, now: DateTime<Utc>) -> TokenState {
        match (self.revoked_at, self.expires_at) {
            (Some(_), _) => TokenState::Revoked,
            (None, Some(at)) if at <= now => TokenState::Expired,
            _ => TokenState::Live,
        }
    }
}

/// Who calls the API: a live token's id, name, role and sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `api_tokens.id`: what owns the feed consumers the token makes.
    pub id: i64,
    pub name: String,
    /// Who acts, in the audit log and on what it changes (a replay's `replayed_by`): `token
    /// NAME`, which no user's name can equal (user names hold no space).
    pub actor: String,
    pub role: Role,
    pub sources: Option<Vec<String>>,
}

impl Caller {
    /// Whether the token may see `source`'s rows.
    pub fn sees(&self, source: &str) -> bool {
        self.sources
            .as_ref()
            .is_none_or(|sources| sources.iter().any(|s| s == source))
    }
}

/// Why a token is not accepted: each is a 401, saying which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRefusal {
    Missing,
    Unknown,
    Revoked,
    Expired,
}

impl std::fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenRefusal::Missing => "no token: send Authorization: Bearer <token>",
            TokenRefusal::Unknown => "the token is not one of this hookbox's",
            TokenRefusal::Revoked => "the token was revoked",
            TokenRefusal::Expired => "the token has expired",
        })
    }
}

/// Why a token cannot be made or revoked.
#[derive(Debug)]
pub enum TokenError {
    /// What is wrong with the request.
    Invalid(InvalidToken),
    Db(DbErr),
}

/// What is wrong with a request for a token: said in the shell's words (`Display`: its flags)
/// or in the tokens page's ([`InvalidToken::on_page`]: its fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidToken {
    Name(String),
    TooManySources,
    UnknownSource(String),
    ExpiresTooSoon,
    ExpiresTooLate,
    NameTaken(String),
}

impl InvalidToken {
    fn said(&self, source: &str, expires: &str) -> String {
        match self {
            InvalidToken::Name(name) => format!(
                "{name:?} is not a token name: 1 to 64 letters, digits, '.', '_', '-' or '@'"
            ),
            InvalidToken::TooManySources => {
                format!("a token names at most {MAX_TOKEN_SOURCES} sources")
            }
            InvalidToken::UnknownSource(unknown) => {
                format!("{source} {unknown}: no source of that name is configured")
            }
            InvalidToken::ExpiresTooSoon => format!("{expires} is at least 1"),
            InvalidToken::ExpiresTooLate => format!("{expires} is at most {MAX_EXPIRES_IN_DAYS}"),
            InvalidToken::NameTaken(name) => {
                format!(
                    "a token named {name} exists (revoked ones keep their name): choose another"
                )
            }
        }
    }

    /// In the tokens page's words: its fields, not the shell's flags.
    pub fn on_page(&self) -> String {
        self.said("source", "expires in days")
    }
}

impl std::fmt::Display for InvalidToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.said("--source", "--expires-in-days"))
    }
}

impl From<DbErr> for TokenError {
    fn from(e: DbErr) -> TokenError {
        TokenError::Db(e)
    }
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Invalid(why) => write!(f, "{why}"),
            TokenError::Db(e) => write!(f, "the database failed: {e}"),
        }
    }
}

/// A new token: `hbt_` and 32 random bytes, base64url.
fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// Makes token `name` and returns it (the only time it is seen). `actor` is who made it, for the
/// audit log; `known_sources` are the configured sources a limit may name.
pub async fn add_token(
    db: &Db,
    name: &str,
    role: Role,
    sources: &[String],
    expires_in_days: Option<u32>,
    actor: &str,
    known_sources: &[&str],
) -> Result<String, TokenError> {
    if !super::valid_user_name(name) {
        return Err(TokenError::Invalid(InvalidToken::Name(name.to_string())));
    }
    if sources.len() > MAX_TOKEN_SOURCES {
        return Err(TokenError::Invalid(InvalidToken::TooManySources));
    }
    if let Some(unknown) = sources
        .iter()
        .find(|s| !known_sources.contains(&s.as_str()))
    {
        return Err(TokenError::Invalid(InvalidToken::UnknownSource(
            unknown.clone(),
        )));
    }
    let expires_at = match expires_in_days {
        Some(0) => {
            return Err(TokenError::Invalid(InvalidToken::ExpiresTooSoon));
        }
        Some(days) if days > MAX_EXPIRES_IN_DAYS => {
            return Err(TokenError::Invalid(InvalidToken::ExpiresTooLate));
        }
        Some(days) => Some(Utc::now() + Duration::days(i64::from(days))),
        None => None,
    };
    let token = new_token();
    let sources_json =
        (!sources.is_empty()).then(|| serde_json::Value::from(sources.to_vec()).to_string());
    let writer = db.dashboard_writer().await?;
    let taken = writer
        .query_one_raw(statement(
            db,
            "SELECT count(*) AS n FROM api_tokens WHERE name = $1",
            vec![name.into()],
        ))
        .await?
        .map(|row| row.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0);
    if taken > 0 {
        return Err(TokenError::Invalid(InvalidToken::NameTaken(
            name.to_string(),
        )));
    }
    writer
        .execute_raw(statement(
            db,
            "INSERT INTO api_tokens (name, token_hash, role, sources, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
            vec![
                name.into(),
                token_hash(&token).into(),
                role.as_str().into(),
                sources_json.clone().into(),
                Utc::now().into(),
                expires_at.into(),
            ],
        ))
        .await?;
    drop(writer);
    let detail = format!(
        "role {}, sources {}, expires {}",
        role.as_str(),
        sources_json.as_deref().unwrap_or("all"),
        expires_at.map_or_else(|| "never".to_string(), |at| at.to_rfc3339())
    );
    audit(
        db,
        AuditEntry {
            actor,
            action: AuditAction::AddToken,
            target: Some(name),
            outcome: "succeeded",
            detail: Some(&detail),
            address: None,
        },
    )
    .await?;
    Ok(token)
}

/// Revokes token `name`; whether there was a live one of that name.
pub async fn revoke_token(db: &Db, name: &str, actor: &str) -> Result<bool, DbErr> {
    let done = db
        .dashboard_writer()
        .await?
        .execute_raw(statement(
            db,
            "UPDATE api_tokens SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL",
            vec![Utc::now().into(), name.into()],
        ))
        .await?;
    let revoked = done.rows_affected() == 1;
    if revoked {
        audit(
            db,
            AuditEntry {
                actor,
                action: AuditAction::RevokeToken,
                target: Some(name),
                outcome: "succeeded",
                detail: None,
                address: None,
            },
        )
        .await?;
    }
    Ok(revoked)
}

/// Every token, newest first.
pub async fn list_tokens(db: &Db) -> Result<Vec<ApiToken>, DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(statement(
            db,
            "SELECT name, role, sources, created_at, expires_at, revoked_at, last_used_at
               FROM api_tokens ORDER BY id DESC",
            vec![],
        ))
        .await?;
    rows.iter()
        .map(|row| {
            Ok(ApiToken {
                name: row.try_get("", "name")?,
                role: row.try_get("", "role")?,
                sources: sources_of(row.try_get("", "sources")?)?,
                created_at: row.try_get("", "created_at")?,
                expires_at: row.try_get("", "expires_at")?,
                revoked_at: row.try_get("", "revoked_at")?,
                last_used_at: row.try_get("", "last_used_at")?,
            })
        })
        .collect()
}

/// The sources token `id` is limited to (`Some(None)`: every source), or `None` when there is
/// no such token: what a feed consumer it owns may read.
pub async fn token_sources(db: &Db, id: i64) -> Result<Option<Option<Vec<String>>>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(statement(
            db,
            "SELECT sources FROM api_tokens WHERE id = $1",
            vec![id.into()],
        ))
        .await?;
    row.map(|row| sources_of(row.try_get("", "sources")?))
        .transpose()
}

fn sources_of(text: Option<String>) -> Result<Option<Vec<String>>, DbErr> {
    text.map(|text| {
        serde_json::from_str(&text)
            .map_err(|e| DbErr::Type(format!("a token's sources are not a JSON list: {e}")))
    })
    .transpose()
}

/// The caller a request's `Authorization` header names, or why it is refused. Marks the token
/// used (at most once a minute).
pub async fn authenticate(db: &Db, headers: &http::HeaderMap) -> Result<Caller, AuthFailure> {
    let token = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .filter(|token| token.starts_with(TOKEN_PREFIX) && token.len() <= 128)
        .ok_or(AuthFailure::Refused(TokenRefusal::Missing))?;
    let hash = token_hash(token);
    let row = db
        .dashboard
        .query_one_raw(statement(
            db,
            "SELECT id, name, role, sources, expires_at, revoked_at, last_used_at
               FROM api_tokens WHERE token_hash = $1",
            vec![hash.clone().into()],
        ))
        .await?
        .ok_or(AuthFailure::Refused(TokenRefusal::Unknown))?;
    let now = Utc::now();
    if row
        .try_get::<Option<DateTime<Utc>>>("", "revoked_at")?
        .is_some()
    {
        return Err(AuthFailure::Refused(TokenRefusal::Revoked));
    }
    if row
        .try_get::<Option<DateTime<Utc>>>("", "expires_at")?
        .is_some_and(|at| at <= now)
    {
        return Err(AuthFailure::Refused(TokenRefusal::Expired));
    }
    let name: String = row.try_get("", "name")?;
    let caller = Caller {
        id: row.try_get("", "id")?,
        actor: format!("token {name}"),
        name,
        role: row.try_get("", "role")?,
        sources: sources_of(row.try_get("", "sources")?)?,
    };
    let last_used: Option<DateTime<Utc>> = row.try_get("", "last_used_at")?;
    if last_used.is_none_or(|at| now - at >= Duration::seconds(60)) {
        db.dashboard_writer()
            .await?
            .execute_raw(statement(
                db,
                "UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2",
                vec![now.into(), hash.into()],
            ))
            .await?;
    }
    Ok(caller)
}

/// A request the API does not serve: a refused token (401) or the database failing (503).
#[derive(Debug)]
pub enum AuthFailure {
    Refused(TokenRefusal),
    Db(DbErr),
}

impl From<DbErr> for AuthFailure {
    fn from(e: DbErr) -> AuthFailure {
        AuthFailure::Db(e)
    }
}
