//! Forms' part of the flood: signed forms of 1 MiB of distinct fields, two a second (each cost
//! tens of seconds of a worker's time when fields were looked up in a list): GitHub's (an HMAC
//! of the body), verified and read off the async workers and refused with a 400 past the field
//! cap, and Twilio's (its fields signed), refused with a 401 before they are sorted. None may be
//! a 5xx, or slow the paced deliveries.

use crate::support::*;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// A form of about 1 MiB of distinct fields, and the headers `source` (`github` or `twilio`)
/// signs it with for the flood's config (`public_url` `https://hooks.example.com`).
fn signed_large_form(source: &str, n: u64) -> (Vec<(String, String)>, String) {
    let mut body = format!("MessageSid=SM{n}");
    let mut i = 0;
    while body.len() < 1024 * 1024 - 64 {
        body.push_str(&format!("&f{i}=v{n}"));
        i += 1;
    }
    let config = app::config::Config::parse(
        super::CONFIG,
        std::path::Path::new("flood.toml"),
        &|name: &str| match name {
            "STDWH_PUBLIC_KEY" => Some(super::STDWH_PUBLIC_KEY.to_string()),
            other => test_env(other),
        },
    )
    .expect("the flood's config");
    let url = format!("https://hooks.example.com/hooks/{source}");
    let source = config.source(source).expect("a source of the flood");
    let mut headers = http::HeaderMap::new();
    let form = "application/x-www-form-urlencoded";
    headers.insert(http::header::CONTENT_TYPE, form.parse().expect("a value"));
    let request = app::schemes::Request {
        method: "POST",
        query: None,
        url: Some(&url),
        headers: &headers,
        body: body.as_bytes(),
    };
    let key = source.auth().parse_secret(SHOP_SECRET).expect("the secret");
    let mut sent = vec![("Content-Type".to_string(), form.to_string())];
    for (name, value) in source.auth().sign(&key, "msg", &request, now()) {
        sent.push((name.to_string(), value));
    }
    (sent, body)
}

/// Starts the forms' flooder on `flood`: what it was answered other than 400 goes to
/// `server_errors` (a 5xx, or no answer).
pub fn flood(
    addr: SocketAddr,
    client: &reqwest::Client,
    stop: &Arc<AtomicBool>,
    flooded: &Arc<AtomicU64>,
    server_errors: &Arc<std::sync::Mutex<Vec<(String, u16)>>>,
    flood: &mut Vec<tokio::task::JoinHandle<()>>,
) {
    let (client, stop, flooded, server_errors) = (
        client.clone(),
        stop.clone(),
        flooded.clone(),
        server_errors.clone(),
    );
    flood.push(tokio::spawn(async move {
        let mut pace = tokio::time::interval(Duration::from_millis(500));
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            pace.tick().await;
            let (source, expected) = match n % 2 {
                0 => ("github", 400),
                _ => ("twilio", 401),
            };
            let (headers, body) = signed_large_form(source, n);
            let mut request = client
                .post(format!("http://{addr}/hooks/{source}"))
                .header("X-Forwarded-For", super::FLOODER)
                .header("I-Twilio-Idempotency-Token", format!("flood-{n}"))
                .header("X-GitHub-Delivery", format!("flood-{n}"))
                .header("X-GitHub-Event", "ping")
                .body(body);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            let status = request
                .send()
                .await
                .map(|a| a.status().as_u16())
                .unwrap_or(0);
            if status != expected {
                let mut errors = server_errors.lock().unwrap_or_else(|e| e.into_inner());
                errors.push((format!("a signed form of 1 MiB to {source}"), status));
            }
            flooded.fetch_add(1, Ordering::Relaxed);
            n += 1;
        }
    }));
}
