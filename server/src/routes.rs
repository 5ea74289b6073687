//! The router: the webhook endpoint, then the Leptos dashboard behind sign-in.

pub(crate) mod answers;
pub mod assets;
pub mod per_user;

use crate::request_id::{RandomRequestId, RequestId, drop_unfit_request_id};
use crate::{AppState, hooks, metrics};
use answers::unavailable;
use app::auth;
use app::guard::{ClientAddress, SignedIn};
use app::{App, shell};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use leptos::prelude::LeptosOptions;
use leptos_axum::{LeptosRoutes, generate_route_list};
use std::time::Duration;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// `immutable`: the bundle's hashed files ([`assets::Site::immutable`]), which browsers keep for
/// good.
pub fn router(
    state: AppState,
    leptos_options: LeptosOptions,
    immutable: assets::Immutable,
) -> Router {
    // Its own state: one shared reference per delivery rather than a copy of every handle.
    let deliveries = Router::new()
        .route(
            "/hooks/{source}",
            post(hooks::receive).get(hooks::verify_endpoint),
        )
        // The handler enforces each deployment's own `max_body_bytes`.
        .layer(DefaultBodyLimit::disable())
        .with_state(std::sync::Arc::new(state.clone()));
    let webhooks = Router::new()
        .merge(deliveries)
        .merge(crate::api::router(state.clone()))
        .route(
            crate::oidc::routes::START_PATH,
            get(crate::oidc::routes::start),
        )
        .route(
            crate::oidc::routes::CALLBACK_PATH,
            get(crate::oidc::routes::callback),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics::render))
        .with_state(state.clone());

    let routes = generate_route_list(App);
    let dashboard = Router::new()
        .leptos_routes_with_context(&leptos_options, routes, page_context(&state), {
            let options = leptos_options.clone();
            move || shell(options.clone())
        })
        .route(crate::export::PATH, get(crate::export::events))
        // The not-found page is a page like the others: the same context, and its scripts
        // carry the response's nonce.
        .fallback(leptos_axum::file_and_error_handler_with_context(
            page_context(&state),
            shell,
        ))
        .with_state(leptos_options)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard_dashboard,
        ))
        .layer(middleware::from_fn(security_headers))
        .layer(middleware::from_fn_with_state(
            immutable,
            assets::set_cache_control,
        ))
        .layer(assets::compress_bundle())
        .layer(assets::compress_pages())
        .layer(axum::Extension(state.clone()));

    let request_id = HeaderName::from_static(crate::request_id::HEADER);
    let deadline = Duration::from_secs(state.config.server.request_timeout_secs);
    webhooks
        .merge(dashboard)
        // Every request, head to answer, within the deadline: a slow body on /api/* too.
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            deadline,
        ))
        .route_layer(middleware::from_fn(metrics::time_requests))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request| {
            let id = RequestId::of(request.headers());
            tracing::info_span!("request", request_id = %id, method = %request.method(), path = %request.uri().path())
        }))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, RandomRequestId))
        .layer(middleware::from_fn(drop_unfit_request_id))
}

/// What every page's render is given: the database, the configuration, the session settings,
/// the forwarder's wake-up, and the content security policy with the render's nonce.
fn page_context(state: &AppState) -> impl Fn() + Clone + Send + 'static {
    let state = state.clone();
    move || {
        leptos::prelude::provide_context(state.db.clone());
        leptos::prelude::provide_context(state.config.clone());
        leptos::prelude::provide_context(state.settings.sessions);
        leptos::prelude::provide_context(app::forward::Wake(state.forward_wake.clone()));
        set_content_security_policy();
    }
}

/// The policy of every page: scripts only from hookbox itself and the inline hydration script
/// carrying this response's nonce, no framing, no plug-ins, forms and connections to hookbox.
fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// On a rendered page: the policy with the nonce Leptos put on its scripts.
fn set_content_security_policy() {
    use leptos::prelude::use_context;
    if let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) && let Ok(value) = HeaderValue::from_str(&content_security_policy(&nonce))
    {
        response.insert_header(header::CONTENT_SECURITY_POLICY, value);
    }
}

/// The usual headers on every dashboard response; an HTML answer rendered without a nonce gets
/// a policy that allows no inline script at all.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    let html = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if html && !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
                 img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; \
                 frame-ancestors 'none'",
            ),
        );
    }
    response
}

/// `GET /readyz`: 200 when the database answers, else 503.
async fn ready(State(state): State<AppState>, request_id: RequestId) -> Response {
    match state.db.dashboard.ping().await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "not ready: the database does not answer");
            unavailable(&request_id)
        }
    }
}

/// Paths anyone may load: the sign-in page and the compiled assets.
fn is_public(path: &str) -> bool {
    path == "/login"
        || path.starts_with("/pkg/")
        || path == "/favicon.svg"
        || path == "/favicon.ico"
        || path == "/api/login"
}

/// Whether a browser says this request comes from another site.
fn cross_site(headers: &HeaderMap) -> bool {
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if fetch_site.is_some_and(|site| site != "same-origin" && site != "none") {
        return true;
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        host,
    ) {
        (Some(origin), Some(host)) => origin.split_once("://").map(|(_, rest)| rest) != Some(host),
        (Some(_), None) => true,
        _ => false,
    }
}

/// Before every dashboard request: record the client address, refuse cross-site calls that change
/// state, and send anonymous page requests to `/login?next=…`. Server functions check the
/// session and role themselves (401 / 403).
async fn guard_dashboard(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let address = state.client_of(&request);
    request.extensions_mut().insert(ClientAddress(address));
    let path = request.uri().path().to_string();

    if request.method() != Method::GET
        && request.method() != Method::HEAD
        && cross_site(request.headers())
    {
        return (StatusCode::FORBIDDEN, "cross-site request refused").into_response();
    }
    // The session is looked up once per request, here, and handed to the page's render and its
    // server functions (`guard::signed_in_user`); assets and the sign-in call need none.
    let asset = path.starts_with("/pkg/") || path == "/favicon.svg" || path == "/favicon.ico";
    let user = match auth::session_token_of(request.headers()) {
        Some(token) if !asset && path != "/api/login" => {
            auth::session_user(&state.db, &token).await
        }
        _ => Ok(None),
    };
    if let Ok(user) = &user
        && !asset
    {
        request.extensions_mut().insert(SignedIn(user.clone()));
    }
    // A signed-in user's requests run two at a time and at most eight are in flight
    // (`per_user`); the turn is held until the answer's head is sent. An export takes its own
    // place, held for as long as it streams (`export`).
    let _turn = match &user {
        Ok(Some(signed_in)) if !asset && path != crate::export::PATH => {
            match state.in_flight.enter(&signed_in.name) {
                Ok(place) => Some(place.turn().await),
                Err(why) => return answers::too_many_requests(path.starts_with("/api/"), why),
            }
        }
        _ => None,
    };
    // A failed lookup on a server-function call is left to the function, which answers it in
    // its own (JSON) error.
    if path.starts_with("/api/") || is_public(&path) {
        return next.run(request).await;
    }
    match user {
        Ok(Some(_)) => return next.run(request).await,
        Ok(None) => {}
        Err(e) => {
            tracing::error!(error = %e, "session lookup failed");
            return unavailable(&RequestId::of(request.headers()));
        }
    }
    let wanted = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    Redirect::to(&format!("/login?next={}", app::url::urlencode(&wanted))).into_response()
}
