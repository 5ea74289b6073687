//! The router: the webhook endpoint, then the Leptos dashboard and its static files.

use crate::{AppState, hooks};
use app::{App, shell};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::post;
use leptos::prelude::LeptosOptions;
use leptos_axum::{LeptosRoutes, generate_route_list};

pub fn router(state: AppState, leptos_options: LeptosOptions) -> Router {
    let webhooks = Router::new()
        .route("/hooks/{source}", post(hooks::receive))
        // The handler enforces each deployment's own `max_body_bytes`.
        .layer(DefaultBodyLimit::disable())
        .with_state(state.clone());

    let routes = generate_route_list(App);
    let dashboard = Router::new()
        .leptos_routes_with_context(
            &leptos_options,
            routes,
            {
                let state = state.clone();
                move || leptos::prelude::provide_context(state.db.clone())
            },
            {
                let options = leptos_options.clone();
                move || shell(options.clone())
            },
        )
        .fallback(leptos_axum::file_and_error_handler(shell))
        .with_state(leptos_options);

    webhooks.merge(dashboard)
}
