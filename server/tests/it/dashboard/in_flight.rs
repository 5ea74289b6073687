//! One user's dashboard requests run two at a time, the others of theirs wait their turn, and
//! past eight in flight the next is answered 429 at once, in the dashboard's error encoding;
//! another user is served meanwhile, and every waiting request is answered
//! (`server/src/routes/per_user.rs`).
#![allow(clippy::unwrap_used)]

use super::*;
use sea_orm::{ConnectionTrait, TransactionTrait};
use server::routes::per_user::{InFlight, REQUESTS_PER_USER, RUNNING_PER_USER};

#[tokio::test]
async fn a_user_runs_two_requests_at_a_time_and_past_eight_is_refused_429_while_others_are_served()
{
    let in_flight = InFlight::default();
    let app = spawn_app_with_state(Backend::Postgres, test_config(), |state| {
        state.in_flight = in_flight.clone();
    })
    .await;
    with_user(&app, "mallory", Role::Viewer).await;
    with_user(&app, "olga", Role::Viewer).await;
    let mallory = sign_in(&app, "mallory", PASSWORD).await.unwrap();
    let olga = sign_in(&app, "olga", PASSWORD).await.unwrap();

    // The problems page reads `problem_states`: held here, each of mallory's calls that runs
    // waits in the database.
    let holder = app.db.writer.begin().await.unwrap();
    holder
        .execute_unprepared("LOCK TABLE problem_states IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let pid = crate::support::backend_pid(&holder).await;
    let calls: Vec<_> = (0..REQUESTS_PER_USER)
        .map(|_| {
            let (app, mallory) = (app.clone_handle(), mallory.clone());
            tokio::spawn(async move { call(&app, Some(&mallory), "problems", &[]).await })
        })
        .collect();
    wait_until_blocked(&app.db, pid, RUNNING_PER_USER as i64).await;
    while in_flight.of("mallory") < REQUESTS_PER_USER {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        blocked_by(&app.db, pid).await,
        RUNNING_PER_USER as i64,
        "two of mallory's eight run; the others wait their turn in hookbox, not in the database"
    );

    let (status, body) = call(&app, Some(&mallory), "problems", &[]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    let refused: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        refused["Throttled"],
        "you already have 8 requests in progress, the most hookbox takes from one user at once; wait for them to finish, then try again"
    );
    let (status, _) = page(&app, Some(&mallory), "/sources").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "a page counts too");
    let (status, body) = call(&app, Some(&olga), "sources", &[]).await;
    assert_eq!(status, StatusCode::OK, "another user is served: {body}");

    holder.commit().await.unwrap();
    for call in calls {
        let (status, body) = call.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body.contains("open_failures"), "{body}");
    }
    assert_eq!(in_flight.of("mallory"), 0, "every place freed");
    let (status, body) = call(&app, Some(&mallory), "problems", &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Backends blocked by `holder` now (`pg_blocking_pids`).
async fn blocked_by(db: &app::db::Db, holder: i32) -> i64 {
    scalar(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        vec![holder.into()],
    )
    .await
    .unwrap_or(0)
}

/// Waits until `n` backends are blocked by `holder` (`pg_blocking_pids`).
async fn wait_until_blocked(db: &app::db::Db, holder: i32, n: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let blocked = blocked_by(db, holder).await;
        if blocked >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{blocked} of {n} requests waited for backend {holder}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn an_export_is_one_of_its_users_requests_for_as_long_as_it_streams() {
    use super::export::{config_with_request_timeout, large_bodies};
    use tokio::io::AsyncWriteExt;
    let in_flight = InFlight::default();
    let app = spawn_app_with_state(Backend::Postgres, config_with_request_timeout(5), |state| {
        state.in_flight = in_flight.clone();
    })
    .await;
    with_user(&app, "mallory", Role::Viewer).await;
    let mallory = sign_in(&app, "mallory", PASSWORD).await.unwrap();
    large_bodies(&app.db, 16, 1024 * 1024).await;

    // Eight exports of 32 MB each, read by nobody: each stalls part way, its place held.
    let mut stalled = Vec::new();
    for _ in 0..REQUESTS_PER_USER {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(app.addr).await.unwrap();
        let request = format!(
            "GET /export/events?format=ndjson HTTP/1.1\r\nHost: {}\r\nCookie: {mallory}\r\n\r\n",
            app.addr
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        stalled.push(stream);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while in_flight.of("mallory") < REQUESTS_PER_USER
        || count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'export'",
        )
        .await
            < REQUESTS_PER_USER as i64
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{} exports in flight",
            in_flight.of("mallory")
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (status, body) = page(&app, Some(&mallory), "/events").await;
    assert_eq!(
        status,
        StatusCode::TOO_MANY_REQUESTS,
        "eight streaming exports are eight requests in flight: {body}"
    );
    assert!(
        body.contains("you already have 8 requests in progress"),
        "{body}"
    );
    let (status, _) = no_redirects()
        .get(app.url("/export/events?format=csv"))
        .header("Cookie", &mallory)
        .send()
        .await
        .map(|r| (r.status(), ()))
        .unwrap();
    assert_eq!(
        status,
        StatusCode::TOO_MANY_REQUESTS,
        "so is a ninth export"
    );

    // The clients go away: each export ends and gives its place back.
    drop(stalled);
    while in_flight.of("mallory") > 0 {
        assert!(
            std::time::Instant::now() < deadline + std::time::Duration::from_secs(10),
            "{} exports still hold a place after their clients left",
            in_flight.of("mallory")
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (status, _) = page(&app, Some(&mallory), "/events").await;
    assert_eq!(status, StatusCode::OK);
}
