//! The session's server functions every page uses: who is signed in, and sign out. Below the
//! components (the top bar calls them), above the guard.

use crate::error::DashboardError;
use crate::model::Me;
use leptos::prelude::*;

#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), DashboardError> {
    use crate::{auth, guard};
    if let Some(token) = guard::session_token() {
        auth::revoke_session(&guard::db()?, &token).await?;
    }
    guard::set_cookie(&auth::cleared_session_cookie());
    leptos_axum::redirect("/login");
    Ok(())
}

/// The signed-in user (anonymous callers get 401, like every other server function).
#[server(endpoint = "me")]
pub async fn current_user() -> Result<Option<Me>, DashboardError> {
    let user = crate::guard::require(crate::model::Role::Viewer).await?;
    Ok(Some(Me {
        name: user.name,
        role: user.role,
    }))
}
