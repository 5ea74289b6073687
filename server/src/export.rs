//! `GET /export/events?format=ndjson|csv&…`: the deliveries of an `/events` filter as a download,
//! streamed batch by batch (`app::db::export`), at most `EXPORT_CAP` rows, audited when it starts.
//! Signed-in users only (the dashboard guard); a bad filter or format is a 400 naming it.
//!
//! Memory is bounded whatever the bodies: a batch holds at most `EXPORT_BATCH_BYTES` of bodies
//! (or one larger body), written out in chunks of about [`CHUNK_BYTES`], and the next batch is
//! read only once hyper has taken the last chunk, which it does only as the client reads. A
//! client that reads nothing for the write deadline is dropped ([`WriteDeadline`], on every
//! connection), and the export with it.

use crate::AppState;
use crate::request_id::RequestId;
use app::db::Db;
use app::db::audit::{AuditEntry, audit};
use app::db::export::{self, EXPORT_BATCH, EXPORT_CAP, ExportRow, Format, Place};
use app::db::filter::{QueryError, in_words};
use app::db::search_bounds::{SearchError, SearchPermit, search_deadline};
use app::guard::{ClientAddress, SignedIn};
use app::model::{AuditAction, EventFilter};
use axum::body::{Body, Bytes};
use axum::extract::{Extension, Query};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Where the export is served.
pub const PATH: &str = "/export/events";

/// An export's lines are sent in chunks of about this many bytes (one line when it is larger).
pub const CHUNK_BYTES: usize = 64 * 1024;

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
    // The export is one of its user's requests for as long as it streams (the router leaves it
    // its own place), and each of its batches waits its turn among theirs (`routes::per_user`).
    let place = match state.in_flight.enter(&user.name) {
        Ok(place) => place,
        Err(why) => return crate::routes::answers::too_many_requests(false, why),
    };
    let turn = place.step().await;
    let filter = query.filter;
    // An export that searches bodies is a search: its place among the searches, then its first
    // statement under the search deadline, so a refusal is an answer rather than a cut download.
    let permit = match export::begin(&state.db, &filter, &user.name) {
        Ok(permit) => permit,
        Err(e) => return refused(&request_id, e),
    };
    let deadline = search_deadline(Duration::from_secs(
        state.config.server.request_timeout_secs,
    ));
    let first = match export::places(&state.db, &filter, None, EXPORT_BATCH, deadline).await {
        Ok(places) => places,
        Err(e) => return refused(&request_id, e),
    };
    // The filter in words, as bulk replay names it, with this filter's own status.
    let scope = in_words(&filter, filter.status.as_deref());
    let detail = format!("{} of {scope} (at most {EXPORT_CAP} rows)", format.as_str());
    let address = address.map(|Extension(ClientAddress(a))| a);
    if let Err(e) = audit(
        &state.db,
        AuditEntry {
            actor: &user.name,
            action: AuditAction::Export,
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
    drop(turn);
    let export = Export {
        db: state.db.clone(),
        filter,
        format,
        header_sent: false,
        after: first.last().map(|place| place.after()),
        read: first.len(),
        exhausted: first.len() < EXPORT_BATCH,
        places: first.into(),
        rows: VecDeque::new(),
        deadline,
        _permit: permit,
        place,
    };
    download(export)
}

/// The answer streaming `export`: the file's type and name, never stored by the browser.
fn download(export: Export) -> Response {
    let format = export.format;
    let stream = futures::stream::unfold(Some(export), |export| async move {
        let mut export = export?;
        match export.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok::<Bytes, io::Error>(chunk), Some(export))),
            Ok(None) => None,
            // The download ends unfinished (the connection is closed), never looks complete.
            Err(e) => {
                tracing::error!(error = %e, "export failed part way");
                Some((Err(io::Error::other("export failed")), None))
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

/// An export under way: the places read and not yet sent, and the batch being written.
struct Export {
    db: Db,
    filter: EventFilter,
    format: Format,
    header_sent: bool,
    /// Places read, not yet in a batch.
    places: VecDeque<Place>,
    /// The position after the last place read.
    after: Option<export::After>,
    /// Places read so far (at most `EXPORT_CAP`).
    read: usize,
    /// No place is left to read.
    exhausted: bool,
    /// The batch being written out.
    rows: VecDeque<ExportRow>,
    /// How long each statement of a body search may run.
    deadline: Duration,
    /// A body search's place among the searches running, held until the export ends.
    _permit: Option<SearchPermit>,
    /// The export's place among its user's requests, held until it ends.
    place: crate::routes::per_user::Place,
}

impl Export {
    /// The next chunk of the download; `None` at its end.
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, SearchError> {
        if !self.header_sent {
            self.header_sent = true;
            let header = self.format.header();
            if !header.is_empty() {
                return Ok(Some(Bytes::from_static(header.as_bytes())));
            }
        }
        loop {
            if !self.rows.is_empty() {
                let mut taken = Vec::new();
                let mut bytes = 0usize;
                while bytes < CHUNK_BYTES
                    && let Some(row) = self.rows.pop_front()
                {
                    bytes = bytes.saturating_add(row.body.as_ref().map_or(0, Vec::len));
                    taken.push(row);
                }
                // Escaping bodies costs CPU in proportion to their size: on a blocking thread in
                // its turn (`app::blocking`), never on the async workers deliveries are answered on.
                let format = self.format;
                let chunk = app::blocking::run(move || {
                    let mut chunk = String::with_capacity(bytes);
                    for row in &taken {
                        chunk.push_str(&row.line(format));
                    }
                    chunk
                })
                .await
                .ok_or_else(|| sea_orm::DbErr::Custom("writing an export's lines failed".into()))?;
                return Ok(Some(Bytes::from(chunk)));
            }
            if self.places.is_empty() {
                let room = EXPORT_CAP.saturating_sub(self.read).min(EXPORT_BATCH);
                if self.exhausted || room == 0 {
                    return Ok(None);
                }
                let _turn = self.place.step().await;
                let places =
                    export::places(&self.db, &self.filter, self.after, room, self.deadline).await?;
                self.exhausted = places.len() < room;
                self.read += places.len();
                if let Some(last) = places.last() {
                    self.after = Some(last.after());
                }
                self.places.extend(places);
                if self.places.is_empty() {
                    return Ok(None);
                }
            }
            let n = export::batch_len(self.places.iter().copied());
            let ids: Vec<i64> = self.places.drain(..n).map(|p| p.id).collect();
            let _turn = self.place.step().await;
            self.rows = export::rows(&self.db, &ids).await?.into();
        }
    }
}

/// A connection whose writes give up when the client reads nothing for `deadline`: a write
/// that stays pending (the socket's buffers full) that long fails with `TimedOut`, and hyper
/// closes the connection, dropping the response (an export's stream and its batch with it).
/// Every connection has it (`serve`), with the request deadline (`server.request_timeout_secs`):
/// answers are never held for a client that stopped reading.
pub struct WriteDeadline<T> {
    inner: T,
    deadline: Duration,
    /// Since when the writes have been pending, as a timer.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteDeadline<T> {
    pub fn new(inner: T, deadline: Duration) -> Self {
        WriteDeadline {
            inner,
            deadline,
            stalled: None,
        }
    }

    /// After a write was refused for want of room: an error once the deadline has passed.
    fn poll_stall<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let deadline = self.deadline;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client read nothing for {} s: connection dropped",
                    deadline.as_secs_f32()
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<R>(
        &mut self,
        result: Poll<io::Result<R>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<R>> {
        match result {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.poll_stall(cx),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.progressed(result, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.progressed(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.progressed(result, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The answer to an export refused before it started: a bad filter 400, too many searches 429,
/// a search past its deadline 408, the database 503.
fn refused(request_id: &RequestId, error: SearchError) -> Response {
    match error {
        SearchError::Query(QueryError::BadFilter(reason)) => {
            (StatusCode::BAD_REQUEST, reason).into_response()
        }
        SearchError::Query(QueryError::Db(e)) => unavailable(request_id, &e),
        SearchError::Busy(why) => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, HeaderValue::from_static("5"))],
            why,
        )
            .into_response(),
        timed_out @ SearchError::TimedOut(_) => {
            (StatusCode::REQUEST_TIMEOUT, timed_out.to_string()).into_response()
        }
    }
}

fn unavailable(request_id: &RequestId, error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "export: database unavailable");
    crate::routes::answers::unavailable(request_id)
}
