//! Bad input and failed authentication: clear 4xx answers, never a 5xx, nothing applied.
//!
//! - `bodies`: bad bodies, bodies over the limit, unknown sources, and data the database refuses.
//! - `authentication`: failed authentication, rotated secrets, both Standard Webhooks header
//!   families, and unsigned requests against a source's rate limit.
//! - `requests`: a too-large body written whole before reading, bodies trickled past their
//!   deadline, and the request id a client sends.

use crate::support::*;

mod authentication;
mod bodies;
mod requests;
