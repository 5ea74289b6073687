//! hookbox's application crate: the Leptos dashboard (both halves) and, behind the `ssr` feature,
//! the domain: configuration, envelope validation, authentication schemes, the database and the
//! ingest transaction.
//!
//! The modules are layers, and each imports only its own layer or lower ones, never in a
//! cycle (`tests/architecture.rs` checks it):
//! 1. foundations: `json`, `url`, `request_id`, `model` (what the browser receives), `error`;
//! 2. the domain's pure rules: `envelope`, `schemes`, `providers`, `present`;
//! 3. `config`, and `headers` (the one header policy, built from the schemes' headers);
//! 4. `db`, the data layer (with `db::dialect`, where PostgreSQL and SQLite differ);
//! 5. what hookbox does with the data: `ingest` (the one write path), `forward`, `feed`,
//!    `maintenance`, `auth`;
//! 6. `guard`, what every server function checks first;
//! 7. the dashboard: `session`, then `components`, then `pages` (no page imports another).

#![recursion_limit = "256"]

pub mod components;
pub mod error;
pub mod model;
pub mod pages;
pub mod session;
pub mod url;

#[cfg(feature = "ssr")]
pub mod auth;
#[cfg(feature = "ssr")]
pub mod blocking;
#[cfg(feature = "ssr")]
pub mod clock;
#[cfg(feature = "ssr")]
pub mod config;
#[cfg(feature = "ssr")]
pub mod db;
#[cfg(feature = "ssr")]
pub mod envelope;
#[cfg(feature = "ssr")]
pub mod feed;
#[cfg(feature = "ssr")]
pub mod forward;
#[cfg(feature = "ssr")]
pub mod guard;
#[cfg(feature = "ssr")]
pub mod headers;
#[cfg(feature = "ssr")]
pub mod ingest;
#[cfg(feature = "ssr")]
pub mod json;
#[cfg(feature = "ssr")]
pub mod maintenance;
#[cfg(feature = "ssr")]
pub mod notify;
#[cfg(feature = "ssr")]
pub mod present;
#[cfg(feature = "ssr")]
pub mod providers;
#[cfg(feature = "ssr")]
pub mod request_id;
#[cfg(feature = "ssr")]
pub mod routing;
#[cfg(feature = "ssr")]
pub mod schemes;

use leptos::prelude::*;
use leptos_meta::{HashedStylesheet, MetaTags, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{SsrMode, path};

/// The HTML document every page is rendered into.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                // Both name the bundle's files as built: `hookbox.<hash>.css` with `hash-files`.
                <HashedStylesheet options=options.clone() id="leptos"/>
                <HydrationScripts options/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                // The viewer's time zone, which the browser writes times in (`components::zone`).
                <components::zone::ZoneMeta/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Title text="hookbox"/>
        <Router>
            <Routes fallback=|| view! { <pages::NotFound/> }>
                <Route path=path!("/") view=pages::overview::OverviewPage/>
                <Route path=path!("/login") view=pages::login::LoginPage/>
                // Rendered whole before the head is sent: their answer's status (400 for a bad
                // filter or id, 404 for a missing delivery or object) is set by the data they
                // load, and a streamed head would go out before it, on some requests and not others.
                <Route path=path!("/events") view=pages::events::EventsPage ssr=SsrMode::Async/>
                <Route path=path!("/events/:id") view=pages::event::EventPage ssr=SsrMode::Async/>
                <Route path=path!("/objects/:source/:object_id") view=pages::object::ObjectPage ssr=SsrMode::Async/>
                <Route path=path!("/audit") view=pages::audit::AuditPage/>
                <Route path=path!("/users") view=pages::users::UsersPage/>
                // Operators only: a viewer gets 403 and says so, set by the data the page loads.
                <Route path=path!("/tokens") view=pages::tokens::TokensPage ssr=SsrMode::Async/>
                <Route path=path!("/rejected") view=pages::rejected::RejectedPage/>
                <Route path=path!("/problems") view=pages::problems::ProblemsPage/>
                <Route path=path!("/search") view=pages::search::SearchPage ssr=SsrMode::Async/>
                <Route path=path!("/sources") view=pages::sources::SourcesPage/>
                <Route path=path!("/destinations") view=pages::destinations::DestinationsPage/>
                <Route path=path!("/feed") view=pages::feed::FeedPage/>
                <Route path=path!("/destinations/:name") view=pages::destinations::DestinationDetailPage ssr=SsrMode::Async/>
            </Routes>
        </Router>
    }
}

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
