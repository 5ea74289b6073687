//! Prints the statement a new delivery runs on PostgreSQL, with its named parameters (`:name`,
//! which pgbench reads as its variables): `.ci/bench` sends it through pgbench for the ceiling
//! of hookbox's own statements, so that ceiling follows the write path as it changes.

fn main() {
    println!("{}", app::ingest::postgres_delivery_statement());
}
