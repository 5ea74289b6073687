//! The `hookbox` binary's library: the axum router, the webhook endpoint and the commands.

pub mod check_config;
pub mod hooks;
pub mod routes;
pub mod send;
pub mod serve;
pub mod users;

use app::config::Config;
use app::db::Db;
use std::sync::Arc;

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub config: Arc<Config>,
}
