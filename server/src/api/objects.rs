//! `GET /api/v1/sources/{source}/objects/{object_id}`: an object's current revision; and
//! `…/revisions`: every accepted revision, greatest first, cursor-paged.

use super::ApiError;
use super::doc::page;
use super::extract::{ApiPath, NoParams, Query, Viewer, limit};
use crate::AppState;
use axum::Json;
use axum::extract::State;
use serde_json::value::RawValue;

/// An object's current revision, as the projection holds it.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "source": "shop", "object_id": "order-1042", "revision": 7,
    "updated_at": "2026-12-04T06:25:12.481Z", "event_id": "evt-88",
    "snapshot": {"id": "order-1042", "status": "shipped", "revision": 7}
}))]
pub struct Object {
    pub source: String,
    pub object_id: String,
    /// The greatest revision accepted.
    pub revision: i64,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The event that carried it.
    pub event_id: Option<String>,
    /// The snapshot of that revision, as sent.
    #[schema(value_type = serde_json::Value)]
    pub snapshot: Box<RawValue>,
}

/// The path of an object.
type ObjectPath = (String, String);

fn not_found(source: &str, object_id: &str) -> ApiError {
    ApiError::NotFound(format!(
        "the source {source:?} holds no revision of the object {object_id:?}"
    ))
}

/// The projection's row: revision, snapshot, when it was updated and the event that carried it.
#[utoipa::path(
    get,
    path = "/api/v1/sources/{source}/objects/{object_id}",
    operation_id = "get_object",
    tag = "sources",
    params(
        ("source" = String, Path, description = "A configured source"),
        ("object_id" = String, Path, description = "The object's id, as its deliveries carry it"),
    ),
    responses((status = 200, description = "The current revision", body = Object))
)]
pub(super) async fn object(
    State(state): State<AppState>,
    ApiPath((source, object_id)): ApiPath<ObjectPath>,
    Query(NoParams {}): Query<NoParams>,
    Viewer(caller): Viewer,
) -> Result<Json<Object>, ApiError> {
    if !caller.sees(&source) {
        return Err(not_found(&source, &object_id));
    }
    let current = app::db::objects::current_object(&state.db, &source, &object_id)
        .await?
        .ok_or_else(|| not_found(&source, &object_id))?;
    let snapshot = RawValue::from_string(current.snapshot).map_err(|e| {
        tracing::error!(error = %e, source, object_id, "a stored snapshot is not JSON");
        ApiError::Unavailable
    })?;
    Ok(Json(Object {
        source,
        object_id,
        revision: current.revision,
        updated_at: current
            .updated_at
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        event_id: current.event_id,
        snapshot,
    }))
}

/// One accepted revision of an object.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Revision {
    pub revision: i64,
    pub event_id: String,
    #[schema(format = DateTime)]
    pub received_at: String,
}

page!(
    /// Accepted revisions, greatest first.
    RevisionPage of Revision
);

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RevisionsQuery {
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Revisions of the page, 1 to 500 (100 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
}

/// Every accepted revision of an object, greatest first.
#[utoipa::path(
    get,
    path = "/api/v1/sources/{source}/objects/{object_id}/revisions",
    operation_id = "list_revisions",
    tag = "sources",
    params(
        ("source" = String, Path, description = "A configured source"),
        ("object_id" = String, Path, description = "The object's id"),
        RevisionsQuery,
    ),
    responses((status = 200, description = "A page of revisions", body = RevisionPage))
)]
pub(super) async fn revisions(
    State(state): State<AppState>,
    ApiPath((source, object_id)): ApiPath<ObjectPath>,
    Query(query): Query<RevisionsQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<RevisionPage>, ApiError> {
    let limit = limit(query.limit.as_deref())?;
    let before = query
        .cursor
        .map(|c| {
            c.parse::<i64>().map_err(|_| {
                ApiError::BadRequest("cursor: not a cursor from a previous page".into())
            })
        })
        .transpose()?;
    if !caller.sees(&source) {
        return Err(not_found(&source, &object_id));
    }
    let (page, more) =
        app::db::objects::revisions_page(&state.db, &source, &object_id, before, limit).await?;
    let next_cursor = more
        .then(|| page.last().map(|r| r.revision.to_string()))
        .flatten();
    Ok(Json(RevisionPage {
        data: page
            .into_iter()
            .map(|r| Revision {
                revision: r.revision,
                event_id: r.event_id,
                received_at: r
                    .received_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            })
            .collect(),
        next_cursor,
    }))
}
