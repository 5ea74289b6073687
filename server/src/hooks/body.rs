//! Reading a delivery's body within the limits: at most `max_body_bytes`, within
//! `body_read_timeout_secs` in all; a larger body is read on and discarded (up to
//! [`DISCARD_BYTES`]) so that the 413 reaches the sender.

use super::refusal::{BodySeen, Refusal, Rejection};
use axum::body::Body;
use axum::http::{HeaderMap, header};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use std::time::Duration;

/// How much of a too-large body is read and thrown away so that a sender that writes its whole
/// body before reading the answer receives the 413 instead of a reset connection. Beyond it the
/// connection is closed.
pub const DISCARD_BYTES: u64 = 16 * 1024 * 1024;

/// The body's length as the `Content-Length` header declares it, if it does.
pub(super) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
}

/// A refusal while reading the body, with its cause and the bytes seen.
fn refusal(rejection: Rejection, cause: String, bytes: u64) -> Refusal {
    Refusal::new(rejection, cause, BodySeen::partly(bytes))
}

/// Reads the body, at most `limit` bytes, within `deadline` in all. A larger body is read on and
/// discarded (up to [`DISCARD_BYTES`], within the same deadline) before the 413, so the answer
/// reaches a sender that reads only after writing. A refusal comes with its cause and the bytes
/// seen (read, or declared when the declared length alone refuses it).
pub(super) async fn read_body(
    body: Body,
    declared: Option<u64>,
    headers: &HeaderMap,
    limit: usize,
    deadline: Duration,
) -> Result<Bytes, Refusal> {
    let read_so_far = std::sync::atomic::AtomicU64::new(0);
    let read = async {
        let mut body = body;
        if let Some(declared) = declared.filter(|n| *n > limit as u64) {
            // A client waiting for `100 Continue` has sent nothing yet, and one announcing more
            // than we would discard is answered at once.
            let waits = headers
                .get(header::EXPECT)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
            if !waits && declared <= DISCARD_BYTES {
                discard(&mut body, declared).await;
            }
            return Err(refusal(
                Rejection::TooLarge { limit },
                format!("Content-Length {declared} is over the limit of {limit} bytes"),
                declared,
            ));
        }
        let mut buffer = BytesMut::with_capacity(declared.map_or(0, |n| n as usize));
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                let read = buffer.len();
                return Err(refusal(
                    Rejection::Unreadable,
                    format!("the connection broke after {read} bytes of the body"),
                    read as u64,
                ));
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if buffer.len() + data.len() > limit {
                let read = (buffer.len() + data.len()) as u64;
                discard(&mut body, DISCARD_BYTES).await;
                return Err(refusal(
                    Rejection::TooLarge { limit },
                    format!(
                        "the body passed the limit of {limit} bytes (no Content-Length said so)"
                    ),
                    read,
                ));
            }
            buffer.extend_from_slice(&data);
            read_so_far.store(buffer.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(buffer.freeze())
    };
    match tokio::time::timeout(deadline, read).await {
        Ok(result) => result,
        Err(_) => {
            let read = read_so_far.load(std::sync::atomic::Ordering::Relaxed);
            Err(refusal(
                Rejection::TimedOut { deadline },
                format!(
                    "the body did not arrive within {} s ({read} bytes of {} arrived)",
                    deadline.as_secs(),
                    declared.map_or_else(|| "an undeclared length".to_string(), |n| n.to_string())
                ),
                read,
            ))
        }
    }
}

/// Reads and drops what is left of a body, up to `at_most` bytes (never more than
/// [`DISCARD_BYTES`]); stops early at an error.
async fn discard(body: &mut Body, at_most: u64) {
    let at_most = at_most.min(DISCARD_BYTES);
    let mut seen: u64 = 0;
    while seen <= at_most {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    seen += data.len() as u64;
                }
            }
            _ => return,
        }
    }
}
