//! `/login`: the sign-in page and its server function. Its refusals for too many attempts are
//! 429 with `Retry-After` (the throttle's delay, or 1 s when no password check slot is free).

use crate::error::DashboardError;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// Only a path of this site may follow a sign-in, else `/`: it starts with a single `/` and holds
/// only the characters of a URL path and query (RFC 3986 unreserved, sub-delims, `:@/?%`), so no
/// control character, space, backslash or non-ASCII byte a browser would rewrite into another
/// host (`/\t/evil.example` becomes `//evil.example`), and nothing a `Location` header refuses.
/// Percent-escapes must be complete, never decode to a control character, and the path must not
/// begin with one that decodes to `/` or `\` (`/%2F/evil.example`).
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(path) if is_local_path(path) => path.to_string(),
        _ => "/".to_string(),
    }
}

/// Longer `next` values are refused (a header line must stay reasonable).
const MAX_NEXT_LEN: usize = 2048;

fn is_local_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') || bytes.len() > MAX_NEXT_LEN {
        return false;
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b);
    if !bytes.iter().all(|&b| allowed(b)) {
        return false;
    }
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let (Some(high), Some(low)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            ) else {
                return false;
            };
            let byte = (high * 16 + low) as u8;
            if byte.is_ascii_control() {
                return false;
            }
            decoded.push(byte);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    !matches!(decoded.get(1), Some(b'/' | b'\\'))
}

#[server(endpoint = "login")]
pub async fn login(
    name: String,
    password: String,
    next: Option<String>,
) -> Result<(), DashboardError> {
    use crate::auth::{self, SignInError};
    use crate::guard::{self, fail};
    let db = guard::db()?;
    let sessions = use_context::<crate::config::Sessions>().unwrap_or_default();
    let config = use_context::<std::sync::Arc<crate::config::Config>>();
    let signed_in = auth::sign_in(
        &db,
        name.trim(),
        &password,
        &guard::client_address(),
        &sessions,
        config.as_ref().and_then(|c| c.oidc.as_ref()),
    )
    .await;
    if let Some(wait) = signed_in.as_ref().err().and_then(SignInError::retry_after)
        && let Some(response) = use_context::<leptos_axum::ResponseOptions>()
    {
        let secs = http::HeaderValue::from(auth::retry_after_secs(wait));
        response.insert_header(http::header::RETRY_AFTER, secs);
    }
    match signed_in {
        Ok((user, token)) => {
            tracing::info!(user = %user.name, "signed in");
            guard::set_cookie(&auth::session_cookie(&token, &sessions));
            leptos_axum::redirect(&safe_next(next.as_deref()));
            Ok(())
        }
        Err(SignInError::Throttled { retry_after }) => {
            Err(fail(DashboardError::Throttled(format!(
                "Too many failed sign-ins. Try again in {}.",
                auth::wait_text(retry_after)
            ))))
        }
        Err(SignInError::Busy) => Err(fail(DashboardError::Throttled(
            "Too many sign-ins at once. Try again in a moment.".into(),
        ))),
        Err(SignInError::Invalid) => Err(fail(DashboardError::WrongCredentials)),
        Err(SignInError::Db(e)) => Err(guard::unavailable(&e)),
    }
}

/// How this hookbox lets people sign in: single sign-on when `[auth.oidc]` is configured, the
/// password form unless it is off (then only for break-glass accounts, folded away).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignInWays {
    pub single_sign_on: bool,
    pub password_login: bool,
}

/// Anyone may ask: it says only which ways of signing in exist.
#[server(endpoint = "sign_in_options")]
pub async fn sign_in_options() -> Result<SignInWays, DashboardError> {
    let config = crate::guard::config()?;
    Ok(SignInWays {
        single_sign_on: config.oidc.is_some(),
        password_login: config.oidc.as_ref().is_none_or(|oidc| oidc.password_login),
    })
}

/// What `/login?sso=…` says after a single sign-on that did not end in a session: enough for the
/// person to act on, nothing an attacker could use (the audit log names the reason).
pub fn sso_failure_text(code: &str) -> Option<&'static str> {
    Some(match code {
        "expired" => "That sign-in took too long or was already used. Sign in again.",
        "failed" => {
            "Single sign-on failed. Try again; if it keeps failing, your administrator can see why in hookbox's audit log."
        }
        "no-role" => {
            "Your account is not in a group that may use hookbox. Ask your administrator for access."
        }
        "unavailable" => {
            "The identity provider cannot be reached right now. Try again in a minute."
        }
        _ => return None,
    })
}

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let query = use_query_map();
    // An attribute, not a property: rendered on the server, so a sign-in before the wasm has
    // loaded (or without JavaScript) still lands on the page asked for.
    let next = move || safe_next(query.read().get("next").as_deref());
    let error = move || match login.value().get() {
        Some(Err(e)) => Some(e.to_string()),
        _ => None,
    };
    let options = Resource::new(|| (), |_| sign_in_options());
    let sso_failure = move || {
        query
            .read()
            .get("sso")
            .and_then(|code| sso_failure_text(&code))
    };
    let start = move || format!("/auth/oidc/start?next={}", crate::url::urlencode(&next()));
    let form = move || {
        view! {
            <ActionForm action=login>
                <input type="hidden" name="next" value=next/>
                <label for="name">"User name"</label>
                <input id="name" name="name" type="text" autocomplete="username" required/>
                <label for="password">"Password"</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required/>
                <button type="submit" class="primary">"Sign in"</button>
            </ActionForm>
        }
    };
    view! {
        <main class="login">
            <section class="panel narrow">
                <h1>"Sign in to hookbox"</h1>
                {move || sso_failure().map(|message| view! { <p class="error-note" role="alert" data-testid="sso-failure">{message}</p> })}
                <Suspense fallback=form>
                    {move || options.get().map(|options| {
                        let options = options.unwrap_or(SignInWays { single_sign_on: false, password_login: true });
                        view! {
                            {options.single_sign_on.then(|| view! {
                                <a class="sso" href=start rel="external" data-testid="sso-start">"Sign in with single sign-on"</a>
                            })}
                            {if options.password_login {
                                form().into_any()
                            } else {
                                view! {
                                    <details class="break-glass">
                                        <summary>"Sign in with a break-glass account"</summary>
                                        {form()}
                                    </details>
                                }.into_any()
                            }}
                        }
                    })}
                </Suspense>
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
        for path in [
            "/",
            "/events?status=failed",
            "/events?status=failed&source=crm&q=order%2F1",
            "/objects/shop/order-1",
            "/events?q=caf%C3%A9",
            "/audit?action=replay&actor=o'brien",
        ] {
            assert_eq!(safe_next(Some(path)), path, "{path}");
        }
        assert_eq!(safe_next(None), "/");
    }

    #[test]
    fn hostile_next_values_fall_back_to_the_overview() {
        for hostile in [
            "",
            "events",
            "//evil.example",
            "///evil.example",
            "https://evil.example",
            "javascript:alert(1)",
            "/\\evil.example",
            "\\/evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/ok\r\nSet-Cookie: hookbox_session=x",
            "/\u{0}",
            "/\u{7f}",
            "/ /evil.example",
            "/%2F/evil.example",
            "/%2f/evil.example",
            "/%5C/evil.example",
            "/%5c/evil.example",
            "/%09/evil.example",
            "/events?q=%0d%0aX-Injected:%201",
            "/events?q=%7F",
            "/events?q=%",
            "/events?q=%2",
            "/events?q=%zz",
            "/caf\u{e9}",
            "/\u{2215}\u{2215}evil.example",
            "/events#frag\"><script>",
            "/events?q=<script>",
        ] {
            assert_eq!(safe_next(Some(hostile)), "/", "{hostile:?}");
        }
        assert_eq!(
            safe_next(Some(&format!("/{}", "a".repeat(MAX_NEXT_LEN)))),
            "/"
        );
    }
}
