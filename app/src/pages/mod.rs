//! One module per dashboard page, each with its server functions beside it.

pub mod audit;
pub mod destinations;
pub mod event;
pub mod events;
pub mod login;
pub mod object;
pub mod overview;
pub mod rejected;

use leptos::prelude::*;
use leptos_router::params::ParamsMap;

/// A parameter of the page's URL; an empty one is absent.
pub(crate) fn param(query: &ParamsMap, key: &str) -> Option<String> {
    query.get(key).filter(|v| !v.is_empty())
}

/// `key=value` (value URL-encoded) for each of `keys` the page's URL sets, in that order: the
/// filter a link to another page of the same list (or its export) carries on.
pub(crate) fn query_pairs(query: &ParamsMap, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .filter_map(|k| param(query, k).map(|v| format!("{k}={}", crate::url::urlencode(&v))))
        .collect()
}

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    crate::guard::set_status(http::StatusCode::NOT_FOUND);
    view! {
        <crate::components::TopBar/>
        <main>
            <section class="panel">
                <h1>"Not found"</h1>
                <p><a href="/">"Back to the overview"</a></p>
            </section>
        </main>
    }
}
