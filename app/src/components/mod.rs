//! Widgets shared by the pages: status badge, local time, top bar, error note, a loaded
//! resource ([`Loaded`]); the typed confirmation of bulk actions ([`confirm`]); the forward
//! deliveries list ([`forward`]); the URL query ([`query`]).

pub mod confirm;
pub mod forward;
pub mod query;

use crate::error::DashboardError;
use crate::model::{Me, OutcomeKind, Status};
use leptos::prelude::*;
use leptos_router::components::A;

/// A coloured badge for an archive status, with the outcome as its text.
#[component]
pub fn StatusBadge(status: Status, outcome: OutcomeKind) -> impl IntoView {
    let class = format!("badge badge-{status}");
    view! { <span class=class title=status.as_str()>{outcome.as_str()}</span> }
}

/// A time shown in the viewer's zone once the page has hydrated, UTC on hover (and before).
#[component]
pub fn LocalTime(utc: String) -> impl IntoView {
    let shown = RwSignal::new(utc_label(&utc));
    #[cfg(feature = "hydrate")]
    {
        let utc = utc.clone();
        Effect::new(move |_| {
            let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(&utc));
            if !date.get_time().is_nan() {
                let text: String = date
                    .to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED)
                    .into();
                shown.set(text);
            }
        });
    }
    let title = utc_label(&utc);
    view! { <time datetime=utc title=title>{move || shown.get()}</time> }
}

/// `2026-11-29T23:02:50.123+00:00` → `2026-11-29 23:02:50 UTC`.
pub fn utc_label(rfc3339: &str) -> String {
    let date_time = rfc3339.get(..19).unwrap_or(rfc3339).replace('T', " ");
    format!("{date_time} UTC")
}

/// The top bar: navigation, the signed-in user, sign out.
#[component]
pub fn TopBar() -> impl IntoView {
    let me = Resource::new(|| (), |_| crate::session::current_user());
    let logout = ServerAction::<crate::session::Logout>::new();
    // Set only in the browser, once the wasm bundle has hydrated the page (the tests wait for it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <a class="skip-link" href="#content">"Skip to content"</a>
        <header class="topbar" data-hydrated=move || hydrated.get().to_string()>
            <a class="brand" href="/">"hookbox"</a>
            <nav aria-label="Main">
                <A href="/" exact=true>"Overview"</A>
                <A href="/problems">"Problems"</A>
                <A href="/events">"Events"</A>
                <A href="/destinations">"Destinations"</A>
                <A href="/rejected">"Refused"</A>
                <A href="/sources">"Sources"</A>
                <A href="/audit">"Audit"</A>
            </nav>
            <form class="top-search" method="GET" action="/search" role="search">
                <label for="top-search-q" class="visually-hidden">"Search"</label>
                <input id="top-search-q" name="q" type="search" maxlength="200" placeholder="Order, event id, email…  ( / )" required/>
            </form>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match me.await {
                        Ok(Some(Me { name, role })) => view! {
                            <span class="who" data-testid="who">{name} " · " {role.as_str()}</span>
                            <ActionForm action=logout attr:class="inline">
                                <button type="submit" class="link">"Sign out"</button>
                            </ActionForm>
                        }.into_any(),
                        _ => view! { <a class="who" href="/login">"Sign in"</a> }.into_any(),
                    }
                })}
            </Suspense>
        </header>
        <span id="content" tabindex="-1"></span>
    }
}

/// A failed load, said plainly; a lost session links to the sign-in page.
#[component]
pub fn ErrorNote(error: DashboardError) -> impl IntoView {
    view! {
        <div class="error-note" role="alert">
            {if error.needs_sign_in() {
                view! { <p>"Your session has ended. " <a href="/login">"Sign in again"</a></p> }.into_any()
            } else {
                view! { <p>{error.to_string()}</p> }.into_any()
            }}
        </div>
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
                        Err(e) => view! { <ErrorNote error=e/> }.into_any(),
                        Ok(value) => show(value).into_any(),
                    }
                })
            }}
        </Transition>
    }
}
