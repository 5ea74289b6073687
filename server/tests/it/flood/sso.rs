//! Single sign-on's part of the flood: anonymous starts from the flooder's address (past its 20
//! unfinished sign-ins, each a 429) and callbacks with forged states, 50 a second between them.
//! Neither may be a 5xx or slow the paced deliveries; what they leave is checked at the end.

use super::FLOODER;
use super::client::hostile_pace;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The flood's `[auth.oidc]`, for the hostile provider at `issuer` (which the flood never lets
/// finish a sign-in: only starts and forged callbacks reach hookbox).
pub(super) fn config(issuer: &str) -> String {
    format!(
        r#"
[auth.oidc]
issuer = "{issuer}"
client_id = "hookbox"
client_secret_env = "OIDC_SECRET"
operator_values = ["hookbox-operators"]
"#
    )
}

pub(super) fn flood(
    addr: SocketAddr,
    client: &reqwest::Client,
    (stop, flooded): (&Arc<AtomicBool>, &Arc<AtomicU64>),
    server_errors: &Arc<std::sync::Mutex<Vec<(String, u16)>>>,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) {
    let (client, stop, flooded, server_errors) = (
        client.clone(),
        stop.clone(),
        flooded.clone(),
        server_errors.clone(),
    );
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap_or(client);
    tasks.push(tokio::spawn(async move {
        let mut pace = hostile_pace();
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            pace.tick().await;
            let url = if i.is_multiple_of(2) {
                format!("http://{addr}/auth/oidc/start?next=/")
            } else {
                format!("http://{addr}/auth/oidc/callback?code=c{i}&state=forged-{i}")
            };
            let status = match client
                .get(&url)
                .header("X-Forwarded-For", FLOODER)
                .send()
                .await
            {
                Ok(response) => response.status().as_u16(),
                Err(_) => 0,
            };
            if status == 0 || status >= 500 {
                let mut errors = server_errors.lock().unwrap_or_else(|e| e.into_inner());
                errors.push((url, status));
            }
            flooded.fetch_add(1, Ordering::Relaxed);
            i += 1;
        }
    }));
}
