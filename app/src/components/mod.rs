//! Widgets shared by the pages: status badge, local time, top bar, error note, a loaded
//! resource ([`Loaded`]); the typed confirmation of bulk actions ([`confirm`]); the forward
//! deliveries list ([`forward`]); the URL query ([`query`]); the viewer's time zone ([`zone`]);
//! what a page says under a text it shows cut ([`cut`]).

pub mod chart;
pub mod confirm;
pub mod cut;
pub mod forward;
pub mod forward_actions;
pub mod live;
pub mod query;
pub mod zone;

use crate::error::DashboardError;
use crate::model::{Me, OutcomeKind, Role, Status};
use leptos::prelude::*;
use leptos_router::components::A;

/// A coloured badge for an archive status, with the outcome as its text.
#[component]
pub fn StatusBadge(status: Status, outcome: OutcomeKind) -> impl IntoView {
    let class = format!("badge badge-{status}");
    view! { <span class=class title=status.as_str()>{outcome.as_str()}</span> }
}

/// A time (RFC 3339, any offset) in the viewer's zone, which the top bar names:
/// `2026-11-30 00:02:50`; in UTC on hover. The server and the browser write the same text.
#[component]
pub fn LocalTime(utc: String) -> impl IntoView {
    let (shown, title) = zone::shown_time(&utc);
    view! { <time datetime=utc title=title>{shown}</time> }
}

/// The top bar: navigation, the signed-in user, sign out.
#[component]
pub fn TopBar() -> impl IntoView {
    let me = Resource::new(|| (), |_| crate::session::current_user());
    let logout = ServerAction::<crate::session::Logout>::new();
    // Set only in the browser, once the wasm bundle has hydrated the page (the tests wait for it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    // On /search the box keeps what was searched; elsewhere it is empty (and has no `value`).
    let location = leptos_router::hooks::use_location();
    let query = leptos_router::hooks::use_query_map();
    let searched = move || match location.pathname.with(|p| p == "/search") {
        true => Some(query.with(|q| q.get("q")).unwrap_or_default()),
        false => None,
    };
    view! {
        // `target`: the browser follows it (moving the focus), not the router (which only scrolls).
        <a class="skip-link" href="#content" target="_self">"Skip to content"</a>
        <SlashFocusesSearch/>
        <header class="topbar" data-hydrated=move || hydrated.get().to_string()>
            <a class="brand" href="/">"hookbox"</a>
            <nav aria-label="Main">
                <A href="/" exact=true>"Overview"</A>
                <A href="/problems">"Problems"</A>
                <A href="/events">"Events"</A>
                <A href="/destinations">"Destinations"</A>
                <A href="/feed">"Feed"</A>
                <A href="/rejected">"Refused"</A>
                <A href="/sources">"Sources"</A>
                <A href="/audit">"Audit"</A>
                // Operators only, once the signed-in user is known.
                <Suspense fallback=|| ()>
                    {move || Suspend::new(async move {
                        matches!(me.await, Ok(Some(Me { role: Role::Operator, .. })))
                            .then(|| view! { <A href="/tokens">"Tokens"</A> <A href="/users">"Users"</A> })
                    })}
                </Suspense>
            </nav>
            <form class="top-search" method="GET" action="/search" role="search">
                <label for="top-search-q" class="visually-hidden">"Search"</label>
                <input id="top-search-q" name="q" type="search" maxlength="200" placeholder="Order, event id, email…  ( / )" required
                    value=searched prop:value=move || searched().unwrap_or_default()/>
            </form>
            <span class="zone-switch"><zone::ZoneSwitch/></span>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match me.await {
                        Ok(Some(Me { name, role })) => view! {
                            <span class="who" data-testid="who">{name} " · " {role.as_str()}</span>
                            <ActionForm action=logout attr:class="inline">
                                <button type="submit" class="link">"Sign out"</button>
                            </ActionForm>
                        }.into_any(),
                        Ok(None) | Err(DashboardError::SignInRequired) => view! { <a class="who" href="/login">"Sign in"</a> }.into_any(),
                        // hookbox unreachable or failing: the page's own note says so.
                        Err(_) => ().into_any(),
                    }
                })}
            </Suspense>
        </header>
        <span id="content" tabindex="-1"></span>
    }
}

/// A failed load, said plainly; a lost session links to the sign-in page. `retrying`: the page
/// tries again by itself (a load, not an action), and says so when hookbox cannot be reached.
#[component]
pub fn ErrorNote(error: DashboardError, #[prop(optional)] retrying: bool) -> impl IntoView {
    view! {
        <div class="error-note" role="alert" data-testid="error-note">
            {if error.needs_sign_in() {
                view! { <p>"Your session has ended. " <a href="/login">"Sign in again"</a></p> }.into_any()
            } else if error == DashboardError::Unreachable && retrying {
                view! { <p>{UNREACHABLE_RETRYING}</p> }.into_any()
            } else {
                view! { <p>{error.to_string()}</p> }.into_any()
            }}
        </div>
    }
}

/// What a page that tries again by itself says when hookbox cannot be reached.
pub const UNREACHABLE_RETRYING: &str =
    "hookbox could not be reached. Check your connection; this page will retry.";

/// How long a page waits before loading again what could not be loaded because hookbox could
/// not be reached.
pub const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// `/` focuses the top bar's search box, unless the key is typed into a field.
#[component]
fn SlashFocusesSearch() -> impl IntoView {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let handle = window_event_listener(leptos::ev::keydown, |ev| {
            if ev.key() != "/" || ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
                return;
            }
            let typing = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok())
                .is_some_and(|el| {
                    el.is_content_editable()
                        || matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
                });
            if typing {
                return;
            }
            if let Some(search) = document()
                .get_element_by_id("top-search-q")
                .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
            {
                ev.prevent_default();
                let _ = search.focus();
            }
        });
        on_cleanup(move || handle.remove());
    }
}

/// A server resource on a page: "Loading…" until its first answer, a failure as an
/// [`ErrorNote`], the loaded value through `show`. A refetch keeps the shown value until the
/// new one arrives (a transition), so live updates and refreshes never flash.
#[component]
pub fn Loaded<T, F, V>(resource: Resource<Result<T, DashboardError>>, show: F) -> impl IntoView
where
    T: Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || {
                let show = show.clone();
                Suspend::new(async move {
                    match resource.await {
                        Err(e) => {
                            let retrying = e == DashboardError::Unreachable;
                            #[cfg(feature = "hydrate")]
                            if retrying {
                                set_timeout(move || resource.refetch(), RETRY_AFTER);
                            }
                            view! { <ErrorNote error=e retrying/> }.into_any()
                        }
                        Ok(value) => show(value).into_any(),
                    }
                })
            }}
        </Transition>
    }
}
