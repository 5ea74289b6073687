//! `GET /export/events?format=ndjson|csv&…`: the deliveries of an `/events` filter as a download,
//! streamed batch by batch (`app::db::export`), at most `EXPORT_CAP` rows, audited when it starts.
//! Signed-in users only (the dashboard guard); a bad filter or format is a 400 naming it.

use crate::AppState;
use crate::request_id::RequestId;
use app::db::audit::{AuditEntry, audit};
use app::db::export::{self, EXPORT_BATCH, EXPORT_CAP, Format};
use app::db::filter::QueryError;
use app::guard::{ClientAddress, SignedIn};
use app::model::{AuditAction, EventFilter};
use axum::body::{Body, Bytes};
use axum::extract::{Extension, Query};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

#[derive(Deserialize)]
pub struct ExportQuery {
    format: Option<String>,
    #[serde(flatten)]
    filter: EventFilter,
}

pub async fn events(
    Extension(state): Extension<AppState>,
    Extension(SignedIn(user)): Extension<SignedIn>,
    address: Option<Extension<ClientAddress>>,
    request_id: RequestId,
    Query(query): Query<ExportQuery>,
) -> Response {
    let Some(user) = user else {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    };
    let format_text = query.format.as_deref().unwrap_or("ndjson");
    let Some(format) = Format::parse(format_text) else {
        return (
            StatusCode::BAD_REQUEST,
            format!("format: {format_text:?} is not one of ndjson, csv"),
        )
            .into_response();
    };
    let filter = query.filter;
    if let Err(e) = export::check_filter(&state.db, &filter) {
        return match e {
            QueryError::BadFilter(reason) => (StatusCode::BAD_REQUEST, reason).into_response(),
            QueryError::Db(e) => unavailable(&request_id, &e),
        };
    }
    // The filter in words, as bulk replay names it, with this filter's own status.
    let scope = app::pages::events::bulk_scope(&filter);
    let scope = scope.trim_end_matches(", status failed");
    let status = filter
        .status
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| format!(", status {s}"))
        .unwrap_or_default();
    let detail = format!(
        "{} of {scope}{status} (at most {EXPORT_CAP} rows)",
        format.as_str()
    );
    let address = address.map(|Extension(ClientAddress(a))| a);
    if let Err(e) = audit(
        &state.db,
        AuditEntry {
            actor: &user.name,
            action: AuditAction::Export.as_str(),
            target: Some(format.as_str()),
            outcome: "started",
            detail: Some(&detail),
            address: address.as_deref(),
        },
    )
    .await
    {
        return unavailable(&request_id, &e);
    }
    tracing::info!(user = %user.name, %detail, "export started");
    let db = state.db.clone();
    // (position after the last row sent, rows sent, whether the header went out)
    let start: (Option<export::After>, usize, bool) = (None, 0, false);
    let stream = futures::stream::unfold(start, move |(after, sent, started)| {
        let (db, filter) = (db.clone(), filter.clone());
        async move {
            if !started {
                return Some((
                    Ok::<Bytes, std::io::Error>(Bytes::from_static(format.header().as_bytes())),
                    (after, sent, true),
                ));
            }
            let room = EXPORT_CAP.saturating_sub(sent).min(EXPORT_BATCH);
            if room == 0 {
                return None;
            }
            match export::batch(&db, &filter, after, room).await {
                Ok(rows) if rows.is_empty() => None,
                Ok(rows) => {
                    let next = rows.last().map(|r| (r.received_at, r.id));
                    let mut chunk = String::new();
                    for row in &rows {
                        chunk.push_str(&row.line(format));
                    }
                    Some((Ok(Bytes::from(chunk)), (next, sent + rows.len(), true)))
                }
                // The download ends unfinished (the connection is closed), never looks complete.
                Err(e) => {
                    tracing::error!(error = %e, "export failed part way");
                    Some((
                        Err(std::io::Error::other("export failed")),
                        (None, EXPORT_CAP, true),
                    ))
                }
            }
        }
    });
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    if let Ok(value) = HeaderValue::from_str(&format!(
        "attachment; filename=\"hookbox-events.{}\"",
        format.as_str()
    )) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn unavailable(request_id: &RequestId, error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "export: database unavailable");
    crate::routes::unavailable(request_id)
}
