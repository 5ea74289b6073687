//! `/login`: sign in; and the session server functions every page uses.

use crate::model::Me;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// Only a local path may follow a sign-in: never another site.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(path) if path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') => {
            path.to_string()
        }
        _ => "/".to_string(),
    }
}

#[server(endpoint = "login")]
pub async fn login(
    name: String,
    password: String,
    next: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::auth::{self, SignInError};
    use crate::guard;
    use http::StatusCode;
    let db = guard::db()?;
    match auth::sign_in(&db, name.trim(), &password, &guard::client_address()).await {
        Ok((user, token)) => {
            tracing::info!(user = %user.name, "signed in");
            guard::set_cookie(&auth::session_cookie(&token));
            leptos_axum::redirect(&safe_next(next.as_deref()));
            Ok(())
        }
        Err(SignInError::Throttled { minutes }) => {
            guard::set_status(StatusCode::TOO_MANY_REQUESTS);
            Err(ServerFnError::new(format!(
                "Too many failed sign-ins. Try again in {minutes} minutes."
            )))
        }
        Err(SignInError::Invalid) => {
            guard::set_status(StatusCode::UNAUTHORIZED);
            Err(ServerFnError::new("Wrong user name or password."))
        }
        Err(SignInError::Db(e)) => Err(guard::unavailable(&e)),
    }
}

#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), ServerFnError> {
    use crate::{auth, guard};
    if let Some(token) = guard::session_token() {
        auth::revoke_session(&guard::db()?, &token)
            .await
            .map_err(|e| guard::unavailable(&e))?;
    }
    guard::set_cookie(&auth::cleared_session_cookie());
    leptos_axum::redirect("/login");
    Ok(())
}

/// The signed-in user (anonymous callers get 401, like every other server function).
#[server(endpoint = "me")]
pub async fn current_user() -> Result<Option<Me>, ServerFnError> {
    let user = crate::guard::require(crate::model::Role::Viewer).await?;
    Ok(Some(Me {
        name: user.name,
        role: user.role,
    }))
}

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_else(|| "/".into());
    let error = move || match login.value().get() {
        Some(Err(e)) => Some(crate::components::error_text(&e)),
        _ => None,
    };
    view! {
        <main class="login">
            <section class="panel narrow">
                <h1>"Sign in to hookbox"</h1>
                <ActionForm action=login>
                    <input type="hidden" name="next" prop:value=next/>
                    <label for="name">"User name"</label>
                    <input id="name" name="name" type="text" autocomplete="username" required autofocus/>
                    <label for="password">"Password"</label>
                    <input id="password" name="password" type="password" autocomplete="current-password" required/>
                    <button type="submit" class="primary">"Sign in"</button>
                </ActionForm>
                {move || error().map(|message| view! { <p class="error-note" role="alert">{message}</p> })}
            </section>
        </main>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_follow_a_sign_in() {
        assert_eq!(
            safe_next(Some("/events?status=failed")),
            "/events?status=failed"
        );
        assert_eq!(safe_next(Some("//evil.example")), "/");
        assert_eq!(safe_next(Some("https://evil.example")), "/");
        assert_eq!(safe_next(Some("/\\evil")), "/");
        assert_eq!(safe_next(None), "/");
    }
}
