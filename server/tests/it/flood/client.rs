//! What every flooding task shares: its pace, and signing in from an address.

use std::net::SocketAddr;
use std::time::Duration;

/// A flooding task's pace: a request every 20 ms, at most (50 a second, each task). The flood
/// is 100 failed sign-ins and 100 refused requests a second, beside the stalled exports: beyond
/// any real traffic, yet leaving the two cores this test shares with PostgreSQL and its own
/// client to hookbox's work rather than to the load generator's.
pub fn hostile_pace() -> tokio::time::Interval {
    let mut pace = tokio::time::interval(Duration::from_millis(20));
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    pace
}

/// Signs in from `address`; the session cookie when it worked, else the status.
pub async fn sign_in(
    client: &reqwest::Client,
    addr: SocketAddr,
    name: &str,
    password: &str,
    address: &str,
) -> Result<String, u16> {
    let response = client
        .post(format!("http://{addr}/api/login"))
        .header("Accept", "application/json")
        .header("X-Forwarded-For", address)
        .form(&[("name", name), ("password", password), ("next", "/")])
        .send()
        .await
        .map_err(|_| 0u16)?;
    let status = response.status();
    let cookie = crate::support::session_cookie(response.headers());
    match cookie {
        Some(cookie) if status.is_success() || status.is_redirection() => Ok(cookie),
        _ => Err(status.as_u16()),
    }
}
