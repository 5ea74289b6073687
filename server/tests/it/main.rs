//! hookbox's integration tests, in one test binary so the whole application is linked once:
//! `cargo nextest run -p server --test it`, or one file's tests with a filter such as
//! `cargo nextest run -p server --test it concurrency::`.
//!
//! Each module was a test binary of its own; `support` is the harness they share (a fresh
//! database per test, cloned from a migrated template, and the real server on a random port).
//! Tests that run on both backends are two tests, `…::postgres` and `…::sqlite`
//! (`support::both_backends!`), so a failure names its backend.
//!
//! Run them with nextest, which runs every test in a process of its own: the metrics recorder
//! and the tracing subscriber are process-wide, and some tests count what they recorded.

mod support;

mod api;
mod charts;
mod check_config;
mod concurrency;
mod dashboard;
mod faults;
mod feed;
mod flood;
mod forward_claim;
mod forwarder;
mod forwarding;
mod forwarding_faults;
mod logs;
mod maintenance;
mod migrations;
mod notifications;
mod oidc;
mod operations;
mod outage;
mod outcomes;
mod problems;
mod providers;
mod rejected_log;
mod rejections;
mod resend;
mod routes;
mod sign_in;
mod sources;
mod support_search;
mod warm;
mod weight;
mod write_path;
