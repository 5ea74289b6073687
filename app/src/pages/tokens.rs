//! `/tokens`: the API tokens (`docs/api.md`), for operators only: each token's role, sources,
//! times and state; a form that makes one and shows it once; revoke, after a confirmation. Built
//! on `auth::tokens`, as `hookbox token add|list|revoke` is, and audited the same way with the
//! signed-in operator as the actor. A viewer's calls are refused (403), the page included.

use crate::components::{ErrorNote, Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{Role, TokenState};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// A token as the page shows it (never the token itself). Times are RFC 3339, UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRow {
    pub name: String,
    pub role: Role,
    /// `None`: every source.
    pub sources: Option<Vec<String>>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub last_used_at: Option<String>,
    pub state: TokenState,
}

/// The tokens, newest first, and the configured sources a new token may be limited to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokensPage {
    pub tokens: Vec<TokenRow>,
    pub sources: Vec<String>,
}

#[cfg(feature = "ssr")]
fn row_of(token: crate::auth::tokens::ApiToken, now: chrono::DateTime<chrono::Utc>) -> TokenRow {
    let state = token.state(now);
    let text = |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339();
    TokenRow {
        name: token.name,
        role: token.role,
        sources: token.sources,
        created_at: text(token.created_at),
        expires_at: token.expires_at.map(text),
        revoked_at: token.revoked_at.map(text),
        last_used_at: token.last_used_at.map(text),
        state,
    }
}

#[server(endpoint = "tokens")]
pub async fn list_tokens() -> Result<TokensPage, DashboardError> {
    use crate::guard;
    guard::require(Role::Operator).await?;
    let tokens = crate::auth::tokens::list_tokens(&guard::db()?).await?;
    let now = chrono::Utc::now();
    Ok(TokensPage {
        tokens: tokens.into_iter().map(|t| row_of(t, now)).collect(),
        sources: guard::config()?
            .sources
            .iter()
            .map(|s| s.name.clone())
            .collect(),
    })
}

/// Makes token `name` and answers it: the only time it is seen (it is stored as its SHA-256).
/// `role` is `viewer` or `operator`; no `sources`: every source; `expires_in_days`: empty for
/// never, else 1 to 3650.
#[server(endpoint = "add_token")]
pub async fn add_token(
    name: String,
    role: String,
    #[server(default)] sources: Vec<String>,
    expires_in_days: Option<String>,
) -> Result<String, DashboardError> {
    use crate::auth::tokens::{self, MAX_EXPIRES_IN_DAYS, TokenError};
    use crate::guard;
    let user = guard::require(Role::Operator).await?;
    let role = Role::parse(&role).ok_or_else(|| guard::bad_request("role: viewer or operator"))?;
    let days = match expires_in_days.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(days) => Some(
            days.parse::<u32>()
                .ok()
                .filter(|d| (1..=MAX_EXPIRES_IN_DAYS).contains(d))
                .ok_or_else(|| {
                    guard::bad_request(format!(
                        "expires in days: a whole number from 1 to {MAX_EXPIRES_IN_DAYS}, or empty for never"
                    ))
                })?,
        ),
    };
    let config = guard::config()?;
    let known: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
    let name = name.trim();
    let token = tokens::add_token(
        &guard::db()?,
        name,
        role,
        &sources,
        days,
        &user.name,
        &known,
    )
    .await
    .map_err(|e| match e {
        TokenError::Invalid(why) => guard::bad_request(why.on_page()),
        TokenError::Db(e) => guard::unavailable(&e),
    })?;
    tracing::info!(user = %user.name, token = %name, role = role.as_str(), "API token made");
    Ok(token)
}

/// Revokes the live token `name`; 404 when there is none of that name.
#[server(endpoint = "revoke_token")]
pub async fn revoke_token(name: String) -> Result<(), DashboardError> {
    use crate::guard;
    let user = guard::require(Role::Operator).await?;
    let revoked = crate::auth::tokens::revoke_token(&guard::db()?, &name, &user.name).await?;
    if !revoked {
        return Err(guard::fail(DashboardError::NotFound(format!(
            "there is no live token named {name}"
        ))));
    }
    tracing::info!(user = %user.name, token = %name, "API token revoked");
    Ok(())
}

/// A new token's fields: name, role, sources, expires in days.
type AddArgs = (String, String, Vec<String>, String);
type Add = Action<AddArgs, Result<String, DashboardError>>;
type Revoke = Action<String, Result<(), DashboardError>>;

#[component]
pub fn TokensPage() -> impl IntoView {
    // Bumped by what changed the list, so it loads again (and the form, emptied, with it); a
    // refused token keeps the form as it was typed.
    let done = RwSignal::new(0u32);
    let after = move |ok: bool| {
        if ok {
            done.update(|n| *n += 1);
        }
    };
    let add: Add = Action::new(move |(name, role, sources, days): &AddArgs| {
        let (name, role, sources, days) =
            (name.clone(), role.clone(), sources.clone(), days.clone());
        async move {
            let result = add_token(name, role, sources, Some(days)).await;
            after(result.is_ok());
            result
        }
    });
    let revoke: Revoke = Action::new(move |name: &String| {
        let name = name.clone();
        async move {
            let result = revoke_token(name).await;
            after(result.is_ok());
            result
        }
    });
    let page = Resource::new(move || done.get(), |_| list_tokens());
    view! {
        <TopBar/>
        <main>
            <h1>"API tokens"</h1>
            <p class="muted">"Programs call " <code>"/api/v1"</code> " with a token instead of a browser (see the API documentation). A token is shown once, when it is made; hookbox keeps only its hash."</p>
            {move || revoke.value().get().and_then(Result::err).map(|e| view! { <ErrorNote error=e/> })}
            <Loaded resource=page show=move |p: TokensPage| view! {
                <TokenTable tokens=p.tokens revoke/>
                <AddForm sources=p.sources add/>
            }/>
            <NewToken add/>
        </main>
    }
}

/// The new token, once: the answer of the one call that made it, never stored by the page.
#[component]
fn NewToken(add: Add) -> impl IntoView {
    let copied = RwSignal::new(false);
    move || {
        add.value().get().map(|result| match result {
            Err(e) => view! { <ErrorNote error=e/> }.into_any(),
            Ok(token) => {
                let copy = {
                    #[cfg(feature = "hydrate")]
                    let token = token.clone();
                    move |_| {
                        #[cfg(feature = "hydrate")]
                        if let Some(window) = web_sys::window() {
                            let _ = window.navigator().clipboard().write_text(&token);
                        }
                        copied.set(true);
                    }
                };
                copied.set(false);
                view! {
                    <section class="panel attention" role="status" data-testid="new-token">
                        <h2>"The new token"</h2>
                        <p><code class="mono wrap" data-testid="new-token-secret">{token.clone()}</code></p>
                        <button type="button" class="small" data-testid="copy-token" on:click=copy>
                            {move || if copied.get() { "Copied" } else { "Copy" }}</button>
                        <p class="warning">"Copy it now: it will not be shown again. hookbox keeps only its hash; a lost token is revoked and a new one made."</p>
                    </section>
                }
                .into_any()
            }
        })
    }
}

#[component]
fn TokenTable(tokens: Vec<TokenRow>, revoke: Revoke) -> impl IntoView {
    if tokens.is_empty() {
        return view! {
            <section class="panel empty" data-testid="no-tokens"><p>"No API tokens yet. Add one below."</p></section>
        }
        .into_any();
    }
    let when = |at: Option<String>, none: &'static str| match at {
        Some(at) => view! { <LocalTime utc=at/> }.into_any(),
        None => view! { <span class="muted">{none}</span> }.into_any(),
    };
    view! {
        <div class="table-wrap">
            <table class="data" data-testid="tokens-table">
                <thead><tr>
                    <th scope="col">"Name"</th>
                    <th scope="col">"Role"</th>
                    <th scope="col">"Sources"</th>
                    <th scope="col">"Created"</th>
                    <th scope="col">"Expires"</th>
                    <th scope="col">"Last used"</th>
                    <th scope="col">"State"</th>
                    <th scope="col"><span class="visually-hidden">"Actions"</span></th>
                </tr></thead>
                <tbody>
                    {tokens.into_iter().map(|t| {
                        let live = t.state == TokenState::Live;
                        let state = match (t.state, t.revoked_at.clone()) {
                            (TokenState::Revoked, Some(at)) => view! { <span>"revoked " <LocalTime utc=at/></span> }.into_any(),
                            (state, _) => view! { <span>{state.as_str()}</span> }.into_any(),
                        };
                        view! {
                            <tr data-testid="token-row" data-name=t.name.clone() data-state=t.state.as_str()>
                                <th data-label="Name" scope="row" class="mono">{t.name.clone()}</th>
                                <td data-label="Role">{t.role.as_str()}</td>
                                <td data-label="Sources">{t.sources.clone().map_or_else(|| "every source".to_string(), |s| s.join(", "))}</td>
                                <td data-label="Created"><LocalTime utc=t.created_at.clone()/></td>
                                <td data-label="Expires">{when(t.expires_at.clone(), "never")}</td>
                                <td data-label="Last used">{when(t.last_used_at.clone(), "never")}</td>
                                <td data-label="State" data-testid="token-state">{state}</td>
                                <td data-label="Actions" class="actions">{live.then(|| view! { <RevokeButton name=t.name.clone() revoke/> })}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// Revoke, after a second click that says what it does.
#[component]
fn RevokeButton(name: String, revoke: Revoke) -> impl IntoView {
    let asked = RwSignal::new(false);
    let question =
        format!("Revoke {name}? Programs using it get 401 from now on; this cannot be undone.");
    view! {
        <Show when=move || asked.get() fallback=move || view! {
            <button type="button" class="small" data-testid="revoke" on:click=move |_| asked.set(true)>"Revoke"</button>
        }>
            <p role="status" data-testid="revoke-question">{question.clone()}</p>
            <button type="button" class="small danger" data-testid="confirm-revoke" disabled=move || revoke.pending().get()
                on:click={
                    let name = name.clone();
                    move |_| { revoke.dispatch(name.clone()); }
                }>"Revoke now"</button>
            <button type="button" class="small" data-testid="cancel-revoke" on:click=move |_| asked.set(false)>"Cancel"</button>
        </Show>
    }
}

#[component]
fn AddForm(sources: Vec<String>, add: Add) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let role = RwSignal::new("viewer".to_string());
    let chosen = RwSignal::new(Vec::<String>::new());
    let days = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        add.dispatch((
            name.get_untracked(),
            role.get_untracked(),
            chosen.get_untracked(),
            days.get_untracked(),
        ));
    };
    view! {
        <section class="panel" aria-labelledby="add-token-title">
            <h2 id="add-token-title">"Add a token"</h2>
            <form class="filters" on:submit=submit data-testid="add-token">
                <label>"Name"
                    <input name="name" type="text" required maxlength="64" autocomplete="off" size="16"
                        prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
                </label>
                <label>"Role"
                    <select name="role" aria-label="Role" prop:value=move || role.get() on:change=move |ev| role.set(event_target_value(&ev))>
                        <option value="viewer">"viewer"</option>
                        <option value="operator">"operator"</option>
                    </select>
                </label>
                <label>"Expires in days"
                    <input name="expires_in_days" type="number" min="1" max="3650" size="6" placeholder="never"
                        prop:value=move || days.get() on:input=move |ev| days.set(event_target_value(&ev))/>
                </label>
                <div class="filters" role="group" aria-labelledby="token-sources">
                <span id="token-sources" class="muted">"Sources (none checked: every source)"</span>
                {sources.into_iter().map(|source| {
                    let checked = {
                        let source = source.clone();
                        move || chosen.with(|c| c.contains(&source))
                    };
                    let toggle = {
                        let source = source.clone();
                        move |ev| {
                            let on = event_target_checked(&ev);
                            chosen.update(|c| {
                                c.retain(|s| s != &source);
                                if on {
                                    c.push(source.clone());
                                }
                            });
                        }
                    };
                    view! {
                        <label><input type="checkbox" name="sources" value=source.clone() prop:checked=checked on:change=toggle/> {source.clone()}</label>
                    }
                }).collect_view()}
                </div>
                <button type="submit" data-testid="add-token-submit" disabled=move || add.pending().get()>"Add token"</button>
            </form>
        </section>
    }
    .into_any()
}
