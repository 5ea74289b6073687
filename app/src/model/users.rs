//! What the `/users` page and `hookbox user list` say of each user: their role, how they sign
//! in, and when they last did.

use super::Role;
use serde::{Deserialize, Serialize};

/// A user name: 1 to 64 letters, digits, `.`, `_`, `-` or `@`.
pub fn valid_user_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRow {
    pub name: String,
    pub role: Role,
    /// The provider's issuer for a user of single sign-on; none: a local user with a password.
    pub issuer: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// RFC 3339, UTC; none: never signed in.
    pub last_sign_in_at: Option<String>,
}

impl UserRow {
    /// How the user signs in, in words.
    pub fn sign_in_kind(&self) -> &'static str {
        match self.issuer {
            Some(_) => "single sign-on",
            None => "password",
        }
    }
}
