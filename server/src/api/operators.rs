//! Operators' reads: `GET /api/v1/rejected` (what the endpoint refused, newest first, by the
//! `/rejected` page's own query) and `GET /api/v1/audit` (who did what, newest first, as the
//! `/audit` page reads it). Both for tokens of every source: the refused requests name any
//! source, the audit log every one.

use super::ApiError;
use super::doc::page;
use super::extract::{Operator, Query, limit};
use crate::AppState;
use app::auth::tokens::Caller;
use app::model::{AuditRow, RejectedFilter, RejectedRow};
use axum::Json;
use axum::extract::State;

fn of_every_source(caller: &Caller) -> Result<(), ApiError> {
    if caller.sources.is_some() {
        return Err(ApiError::Forbidden(
            "this read names every source: it is for tokens of every source".into(),
        ));
    }
    Ok(())
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RejectedQuery {
    /// A configured source, or `(unknown)` for names that are none.
    source: Option<String>,
    /// Why the request was refused (`signature`, `timestamp`, `rate_limit`, …).
    reason: Option<String>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Rows of the page, 1 to 500 (100 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
}

page!(
    /// Refused requests, newest first.
    RejectedPage of RejectedRow
);

/// What the endpoint refused, newest first, as the `/rejected` page lists it.
#[utoipa::path(
    get,
    path = "/api/v1/rejected",
    operation_id = "list_rejected",
    tag = "operators",
    params(RejectedQuery),
    responses((status = 200, description = "A page of refused requests", body = RejectedPage))
)]
pub(super) async fn rejected(
    State(state): State<AppState>,
    Query(query): Query<RejectedQuery>,
    Operator(caller): Operator,
) -> Result<Json<RejectedPage>, ApiError> {
    of_every_source(&caller)?;
    let limit = limit(query.limit.as_deref())?;
    let filter = RejectedFilter {
        source: query.source,
        reason: query.reason,
        before: query.cursor,
    };
    let page = app::db::rejected::list(&state.db, &filter, limit).await?;
    Ok(Json(RejectedPage {
        data: page.rows,
        next_cursor: page.next_before.map(|n| n.to_string()),
    }))
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// An action (`replay`, `pause`, `add_token`, `sign_in`, …).
    action: Option<String>,
    /// A user's or a token's name.
    actor: Option<String>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Rows of the page, 1 to 500 (100 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
}

page!(
    /// Audit rows, newest first; failed sign-ins counted per client, name and minute.
    AuditPage of AuditRow
);

/// Who did what, newest first, as the `/audit` page reads it.
#[utoipa::path(
    get,
    path = "/api/v1/audit",
    operation_id = "list_audit",
    tag = "operators",
    params(AuditQuery),
    responses((status = 200, description = "A page of the audit log", body = AuditPage))
)]
pub(super) async fn audit(
    State(state): State<AppState>,
    Query(query): Query<AuditQuery>,
    Operator(caller): Operator,
) -> Result<Json<AuditPage>, ApiError> {
    of_every_source(&caller)?;
    let limit = limit(query.limit.as_deref())?;
    let (data, next_cursor) = app::db::audit::audit_page(
        &state.db,
        query.action.as_deref(),
        query.actor.as_deref(),
        query.cursor.as_deref(),
        limit,
    )
    .await?;
    Ok(Json(AuditPage { data, next_cursor }))
}
