//! `hookbox serve`: migrate, bind, serve until SIGTERM or Ctrl-C.

use crate::background::Background;
use crate::database::connect_and_migrate;
use crate::routes::assets::Site;
use crate::{AppState, routes};
use anyhow::Context;
use app::config::{Config, Settings};
use app::db::Db;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use leptos::prelude::LeptosOptions;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower_http::add_extension::AddExtension;

/// The bundle's name, and the folder of the site root it is in.
const OUTPUT_NAME: &str = "hookbox";
const PKG_DIR: &str = "pkg";

/// The dashboard served from `site` (`LEPTOS_SITE_ROOT`), for a server listening on `addr`; its
/// pages load the bundle by its hashed names when the site has them.
pub fn leptos_options(addr: SocketAddr, site: &Site) -> LeptosOptions {
    let options = LeptosOptions::builder()
        .output_name(OUTPUT_NAME)
        .site_root(site.root.as_str())
        .site_pkg_dir(PKG_DIR)
        .site_addr(addr);
    match &site.hashed {
        Some((hash_file, _)) => options
            .hash_files(true)
            .hash_file(Arc::from(hash_file.to_string_lossy().as_ref()))
            .build(),
        None => options.build(),
    }
}

pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let config = Config::load_from_env()?;
    // A cold archive that cannot be opened stops the start, rather than a purge without it.
    let cold = app::maintenance::cold::ColdArchive::of(&config)?;
    let db = connect_and_migrate(&settings).await?;
    bootstrap_admin(&db, settings.admin_password.clone()).await?;
    let addr = settings.site_addr;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("listen on {addr}"))?;
    match &config.path {
        Some(path) => {
            tracing::info!(config = %path.display(), sources = config.sources.len(), "configuration loaded")
        }
        None => tracing::warn!(
            "no hookbox.toml and no HOOKBOX_CONFIG: no sources, every /hooks request is a 404"
        ),
    }
    tracing::info!(%addr, backend = ?db.backend(), "hookbox listening");
    let background = Background::new();
    // Archive retention: shortly after start, then daily, until the server has stopped.
    background.spawn(
        "daily purge",
        app::maintenance::daily::run_daily(
            db.clone(),
            app::maintenance::purge::Policy::of(&config),
            cold,
            config.server.audit_retention_days,
            background.stopped(),
        ),
    );
    let mut state = AppState::new(db, Arc::new(config));
    state.settings = Arc::new(settings);
    serve_on(background, listener, state, shutdown_signal()).await
}

/// Serves on a bound listener until `shutdown` resolves, then lets requests in flight finish
/// (at most the grace period), stops the background loops and closes the pool.
///
/// The accept loop is hyper's own rather than `axum::serve` because only hyper's connection
/// builder can bound how long a client takes to send its headers: a connection that has not
/// delivered a complete request head within `server.header_read_timeout_secs` (idle keep-alive
/// connections included) is closed, so slow or silent clients cannot hold connections forever.
/// Bodies are bounded separately (`server.body_read_timeout_secs`, and every request by `server.request_timeout_secs`). HTTP/1.1 only: hookbox sits
/// behind a load balancer that speaks HTTP/1.1 to it.
///
/// Shutdown, in order:
/// 1. `shutdown` resolves: the server stops accepting, the forwarder stops claiming (its
///    attempts in flight have the grace period).
/// 2. The requests in flight finish, or the grace period ends them.
/// 3. The background is cancelled: the refused-requests writer writes what is buffered, the
///    daily purge stops. Every background loop gets the grace period and a moment more to end.
/// 4. The refused sign-ins counted in memory are written, and the pools close.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_on(Background::new(), listener, state, shutdown).await
}

/// [`serve`], with loops already started on `background`: they stop once the server has.
pub async fn serve_on(
    background: Background,
    listener: TcpListener,
    mut state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    // Cancelled when `shutdown` resolves: what stops with the accept loop. The background
    // itself is cancelled once the server has stopped.
    let stopping = background.child();
    // The refused-requests log writes until the server has stopped, then what is buffered.
    let (rejected_log, rejected_writer) = crate::rejected_log::start(
        state.db.clone(),
        crate::rejected_log::Limits::of(&state.config.server),
    );
    state.rejected_log = rejected_log;
    background.spawn(
        "refused-requests writer",
        rejected_writer.run(background.token().clone()),
    );
    let db = state.db.clone();
    let header_timeout = Duration::from_secs(state.config.server.header_read_timeout_secs);
    // A client that reads nothing of its answer for the request deadline is dropped.
    let write_deadline = Duration::from_secs(state.config.server.request_timeout_secs);
    let grace = state.settings.shutdown_grace;
    let site = Site::open(&state.settings.site_root, OUTPUT_NAME, PKG_DIR)?;
    let app = routes::router(state.clone(), leptos_options(addr, &site), site.immutable());
    // The forwarder stops claiming at shutdown and lets its attempts in flight finish within the
    // grace period; the pools close after it.
    stopping.spawn(
        "forwarder",
        crate::forwarder::run(
            db.clone(),
            state.config.clone(),
            crate::forwarder::Options {
                wake: state.forward_wake.clone(),
                background: stopping.clone(),
                poll: state.settings.forward_poll,
                grace,
            },
        ),
    );
    stopping.spawn(
        "notifier",
        crate::notifier::run(db.clone(), state.config.clone(), stopping.clone()),
    );
    crate::feed::start(&db, &state.feed, &stopping);
    let trigger = stopping.clone();
    stopping.spawn("shutdown signal", async move {
        tokio::select! {
            () = shutdown => trigger.cancel(),
            () = trigger.stopped() => {}
        }
    });
    let server = accept_until(
        listener,
        app,
        (header_timeout, write_deadline),
        stopping.stopped(),
    );
    let grace_over = async {
        stopping.stopped().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        () = server => {},
        () = grace_over => tracing::warn!(?grace, "grace period over: stopping with requests in flight (their transactions roll back)"),
    }
    // The forwarder has the same grace period (it started with the server's), and a moment more
    // to give up the claims of what it abandoned; the writer flushes meanwhile.
    background.shutdown(grace + Duration::from_secs(5)).await;
    // The refused sign-ins counted in memory since the last minute's write.
    if let Err(error) = app::auth::write_sign_in_records(&db).await {
        tracing::warn!(%error, "the last minute's refused sign-ins were not recorded");
    }
    if let Some(warm) = &db.warm {
        warm.release_all();
    }
    for pool in [&db.dashboard, &db.writer] {
        pool.close_by_ref()
            .await
            .context("close the database pool")?;
    }
    tracing::info!("hookbox stopped");
    Ok(())
}

/// Accepts connections until `stop` resolves, then waits for the open ones to finish their
/// requests in flight (idle connections close at once).
async fn accept_until(
    listener: TcpListener,
    app: axum::Router,
    (header_timeout, write_deadline): (Duration, Duration),
    stop: impl Future<Output = ()>,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let graceful = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::error!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        // What `into_make_service_with_connect_info` would insert: the peer, for login throttling.
        let service = TowerToHyperService::new(AddExtension::new(app.clone(), ConnectInfo(remote)));
        let stream = crate::export::WriteDeadline::new(stream, write_deadline);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%remote, error = %error, "connection closed with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// With no user at all, creates the operator `admin` (password from `HOOKBOX_ADMIN_PASSWORD`, or a
/// random one printed once).
pub async fn bootstrap_admin(db: &Db, password: Option<String>) -> anyhow::Result<()> {
    let created = app::auth::ensure_admin(db, password)
        .await
        .map_err(anyhow::Error::msg)
        .context("create the first user")?;
    if let Some(generated) = created {
        tracing::warn!(
            "created the operator \"admin\" with the password {generated} (shown once; change it with `hookbox user add admin --role operator`)"
        );
    }
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing deliveries in flight");
}
