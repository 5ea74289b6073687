//! `/api/v1` with API tokens, over HTTP on both backends: a token reads what its role and its
//! sources allow (another source's rows are 404, never 403), a missing, unknown, revoked or
//! expired token is 401, errors are problem documents with the request id, an unknown query
//! parameter is a 400 naming it, each token is rate limited, and the token itself is never
//! stored, logged or audited. `hookbox token add|list|revoke` as a process.
#![allow(clippy::unwrap_used)]

use crate::support::*;
use app::model::Role;

mod destinations;
mod document;
mod events;
mod operators;
mod problems;
mod replay;
mod tokens;

/// The archive id of the newest delivery of `source`.
pub async fn newest(app: &TestApp, source: &str) -> i64 {
    scalar(
        &app.db,
        "SELECT max(id) FROM webhook_events WHERE source = $1",
        vec![source.into()],
    )
    .await
    .unwrap()
}
