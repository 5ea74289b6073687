//! Operator maintenance over the whole database: archive retention ([`purge`]), body expiry
//! ([`expiry`]), the archive's days on PostgreSQL ([`partitions`]), the cold archive
//! ([`cold`]), the daily task running them ([`daily`]) and the check of the ingest invariants
//! ([`verify`]).

pub mod cold;
pub mod daily;
pub mod expiry;
pub mod partitions;
pub mod policy;
pub mod purge;
pub mod verify;
