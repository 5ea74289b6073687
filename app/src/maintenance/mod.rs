//! Operator maintenance over the whole database: archive retention ([`purge`]) and the check of
//! the ingest invariants ([`verify`]).

pub mod purge;
pub mod verify;
