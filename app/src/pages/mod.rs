//! One module per dashboard page, each with its server functions beside it.

pub mod audit;
pub mod destinations;
pub mod event;
pub mod events;
pub mod feed;
pub mod login;
pub mod object;
pub mod overview;
pub mod problems;
pub mod rejected;
pub mod search;
pub mod sources;
pub mod tokens;
pub mod users;

use leptos::prelude::*;

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
