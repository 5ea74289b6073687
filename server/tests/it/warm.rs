//! The connections PostgreSQL deliveries park between them (`app::db::warm`): reused without the
//! pool's ping, never more than their share of the pool, given back when idle, and a delivery
//! cut off mid-statement leaves no connection mid-answer.

#![allow(clippy::unwrap_used)]

use crate::support::{Backend, test_db};
use app::db::warm::{IDLE, Warm};
use sea_orm::sqlx::{self, Row};
use std::collections::BTreeSet;
use std::time::Duration;

async fn backend_pid(conn: &mut sqlx::PgConnection) -> i32 {
    sqlx::query("SELECT pg_backend_pid() AS pid")
        .fetch_one(conn)
        .await
        .unwrap()
        .get("pid")
}

#[tokio::test]
async fn a_finished_delivery_parks_its_connection_for_the_next_one() {
    let test_db = test_db(Backend::Postgres).await;
    let warm = test_db
        .db
        .warm
        .clone()
        .expect("PostgreSQL has parked connections");
    let mut pids = BTreeSet::new();
    for _ in 0..20 {
        let mut lease = warm.lease().await.unwrap();
        pids.insert(backend_pid(lease.conn()).await);
        lease.done();
    }
    assert_eq!(
        pids.len(),
        1,
        "one connection served every delivery in turn: {pids:?}"
    );
    let pool = test_db.db.writer.get_postgres_connection_pool();
    assert_eq!(
        (pool.size(), pool.num_idle()),
        (1, 0),
        "parked, not given back to the pool"
    );
}

#[tokio::test]
async fn deliveries_hold_at_most_their_share_and_wait_their_turn_for_more() {
    let test_db = test_db(Backend::Postgres).await;
    let pool = test_db.db.writer.get_postgres_connection_pool().clone();
    let warm = Warm::start(pool.clone(), 2);
    let mut first = warm.lease().await.unwrap();
    let mut second = warm.lease().await.unwrap();
    let (a, b) = (
        backend_pid(first.conn()).await,
        backend_pid(second.conn()).await,
    );
    assert_ne!(a, b);
    // A third waits for a turn rather than taking a third connection from the pool...
    let third = warm.lease();
    tokio::pin!(third);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut third)
            .await
            .is_err(),
        "a third lease waits while two are out"
    );
    // ...which the pool still has for everyone else.
    let mut other = pool.acquire().await.unwrap();
    assert_ne!(backend_pid(&mut other).await, a);
    drop(other);
    first.done();
    let mut third = third.await.unwrap();
    assert_eq!(
        backend_pid(third.conn()).await,
        a,
        "the parked connection went to the waiter"
    );
    third.done();
    second.done();
}

#[tokio::test]
async fn a_connection_parked_for_a_second_goes_back_to_the_pool() {
    let test_db = test_db(Backend::Postgres).await;
    let pool = test_db.db.writer.get_postgres_connection_pool().clone();
    let warm = Warm::start(pool.clone(), 4);
    let mut lease = warm.lease().await.unwrap();
    backend_pid(lease.conn()).await;
    lease.done();
    assert_eq!(pool.num_idle(), 0, "parked, not idle in the pool");
    let deadline = tokio::time::Instant::now() + IDLE * 5;
    while pool.num_idle() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the parked connection never went back to the pool"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pool.num_idle(), 1);
}

#[tokio::test]
async fn a_delivery_cut_off_mid_statement_leaves_no_connection_mid_answer() {
    let test_db = test_db(Backend::Postgres).await;
    let pool = test_db.db.writer.get_postgres_connection_pool().clone();
    let warm = Warm::start(pool.clone(), 1);
    let cut_off = async {
        let mut lease = warm.lease().await.unwrap();
        sqlx::query("SELECT pg_sleep(0.5)")
            .execute(lease.conn())
            .await
            .unwrap();
        lease.done();
    };
    assert!(
        tokio::time::timeout(Duration::from_millis(100), cut_off)
            .await
            .is_err(),
        "the request was cut off before its statement answered"
    );
    // The connection was not parked: the next delivery gets one that answers its own statement.
    let mut lease = warm.lease().await.unwrap();
    let answer: i32 = sqlx::query_scalar("SELECT 41 + 1")
        .fetch_one(lease.conn())
        .await
        .unwrap();
    assert_eq!(answer, 42);
    lease.done();
}
