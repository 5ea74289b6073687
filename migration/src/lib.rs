//! hookbox's schema. Migrations run at start-up and by `hookbox migrate`.

pub use sea_orm_migration::prelude::*;

mod m20261129_000001_ingest_tables;
mod m20261129_000002_operators;
mod m20261130_000003_verify_runs;
mod m20261130_000004_dashboard_indexes;
mod m20261130_000005_overview_rollup;
mod m20261201_000006_signed_body_digest;
mod m20261201_000007_forwarding;
mod m20261201_000008_destination_state;
mod m20261201_000009_payload_search;
mod m20261201_000010_rejected_requests;
mod m20261202_000011_sign_in_failures;
mod m20261202_000012_archive_body_reference;
mod m20261203_000013_problems;
mod m20261203_000014_id_search;
mod m20261203_000015_hourly_rollup;
mod m20261203_000016_source_last_seen;
mod m20261203_000017_form_fields;
mod m20261203_000018_handshake_waits;
mod m20261203_000019_api_tokens;
mod m20261204_000020_feed;
mod m20261205_000021_feed_owners;
mod m20261205_000022_problem_reasons;
mod m20261205_000023_body_doc_not_parallel;
mod m20261206_000024_retention_per_source;
mod m20261206_000025_body_expiry;
mod m20261206_000026_cold_archive;
mod m20261206_000027_day_partitions;
mod m20261206_000028_notifications;
mod m20261206_000029_single_sign_on;
mod m20261207_000030_one_index_of_what_is_due;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261129_000001_ingest_tables::Migration),
            Box::new(m20261129_000002_operators::Migration),
            Box::new(m20261130_000003_verify_runs::Migration),
            Box::new(m20261130_000004_dashboard_indexes::Migration),
            Box::new(m20261130_000005_overview_rollup::Migration),
            Box::new(m20261201_000006_signed_body_digest::Migration),
            Box::new(m20261201_000007_forwarding::Migration),
            Box::new(m20261201_000008_destination_state::Migration),
            Box::new(m20261201_000009_payload_search::Migration),
            Box::new(m20261201_000010_rejected_requests::Migration),
            Box::new(m20261202_000011_sign_in_failures::Migration),
            Box::new(m20261202_000012_archive_body_reference::Migration),
            Box::new(m20261203_000013_problems::Migration),
            Box::new(m20261203_000014_id_search::Migration),
            Box::new(m20261203_000015_hourly_rollup::Migration),
            Box::new(m20261203_000016_source_last_seen::Migration),
            Box::new(m20261203_000017_form_fields::Migration),
            Box::new(m20261203_000018_handshake_waits::Migration),
            Box::new(m20261203_000019_api_tokens::Migration),
            Box::new(m20261204_000020_feed::Migration),
            Box::new(m20261205_000021_feed_owners::Migration),
            Box::new(m20261205_000022_problem_reasons::Migration),
            Box::new(m20261205_000023_body_doc_not_parallel::Migration),
            Box::new(m20261206_000024_retention_per_source::Migration),
            Box::new(m20261206_000025_body_expiry::Migration),
            Box::new(m20261206_000026_cold_archive::Migration),
            Box::new(m20261206_000027_day_partitions::Migration),
            Box::new(m20261206_000028_notifications::Migration),
            Box::new(m20261206_000029_single_sign_on::Migration),
            Box::new(m20261207_000030_one_index_of_what_is_due::Migration),
        ]
    }
}
