//! Operator maintenance over the whole database: archive retention ([`purge`]), body expiry ([`expiry`]) and the check of
//! the ingest invariants ([`verify`]).

pub mod daily;
pub mod expiry;
pub mod policy;
pub mod purge;
pub mod verify;
