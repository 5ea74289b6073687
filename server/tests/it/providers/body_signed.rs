//! Providers whose signature or timestamp sits in the JSON body, over HTTP on both backends:
//! Mailgun (a signature object of timestamp and token; its token is accepted for one event
//! only) and Linear (`webhookTimestamp` inside the signed body, a minute either way); and
//! Dropbox's endpoint verification by `GET ?challenge=`.
#![allow(clippy::unwrap_used)]

use super::forms::eventually_causes;
use super::*;
use hmac::{Hmac, Mac};
use serde_json::json;

const CURRENT: &str = "key-mailgun-or-linear-current";
const PREVIOUS: &str = "key-mailgun-or-linear-previous";

fn body_signed_config() -> Config {
    let mut text = String::new();
    for preset in ["mailgun", "linear", "dropbox", "github"] {
        text.push_str(&format!(
            "[[sources]]\nname = \"{preset}\"\npreset = \"{preset}\"\nsecrets_env = [\"CURRENT\", \"PREVIOUS\"]\n"
        ));
    }
    let env = |name: &str| match name {
        "CURRENT" => Some(CURRENT.to_string()),
        "PREVIOUS" => Some(PREVIOUS.to_string()),
        _ => None,
    };
    Config::parse(&text, Path::new("body_signed.toml"), &env).unwrap()
}

/// A Mailgun event with its signature object, signed with `secret` at `at`.
fn mailgun_body(secret: &str, event_id: &str, token: &str, at: i64) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{at}{token}").as_bytes());
    let signature = hex(&mac.finalize().into_bytes());
    json!({
        "signature": {"timestamp": at.to_string(), "token": token, "signature": signature},
        "event-data": {
            "id": event_id,
            "event": "delivered",
            "message": {"headers": {"message-id": "20251203.1@mg.example.com"}}
        }
    })
    .to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn json_headers() -> Vec<(String, String)> {
    vec![("Content-Type".into(), "application/json".into())]
}

both_backends!(a_mailgun_signature_is_read_from_the_body_and_accepted_for_one_event);
async fn a_mailgun_signature_is_read_from_the_body_and_accepted_for_one_event(backend: Backend) {
    let app = spawn_app_with(backend, body_signed_config()).await;
    let token = "2f8d4e6a0b1c3d5e7f9a1b3c5d7e9f0a2b4c6d8e0f1a2b3c4d";
    let body = mailgun_body(CURRENT, "CPgfbmQMTCKtHW6u", token, now());
    let accepted = app
        .post("mailgun", &json_headers(), body.clone().into())
        .await;
    assert_eq!(
        (accepted.status, &accepted.body),
        (
            200,
            &json!({"status": "accepted", "event_id": "CPgfbmQMTCKtHW6u"})
        )
    );
    let stored = texts(
        &app.db,
        "SELECT object_id, event_type FROM webhook_events WHERE source = 'mailgun'",
        vec![],
    )
    .await;
    assert_eq!(
        stored,
        [[
            Some("20251203.1@mg.example.com".to_string()),
            Some("delivered".to_string())
        ]]
    );
    // The event data is not signed: the same signature object under another event id is a
    // replay of the first, never a new event.
    let forged = body.replace("CPgfbmQMTCKtHW6u", "forged-event-id");
    let replayed = app.post("mailgun", &json_headers(), forged.into()).await;
    assert_eq!(
        (replayed.status, replayed.body["event_id"].as_str()),
        (200, Some("CPgfbmQMTCKtHW6u"))
    );
    assert_eq!(replayed.outcome(), "duplicate");
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_inbox WHERE source = 'mailgun'"
        )
        .await,
        1
    );
    // The previous key verifies; a changed token, a stale timestamp, no signature: 401.
    let rotated = mailgun_body(PREVIOUS, "second-event", "a-new-token", now());
    let rotated = app.post("mailgun", &json_headers(), rotated.into()).await;
    assert_eq!(rotated.outcome(), "accepted", "{:?}", rotated.body);
    let tampered = body.replace(token, &token.replace('2', "3"));
    assert_eq!(
        app.post("mailgun", &json_headers(), tampered.into())
            .await
            .status,
        401
    );
    let stale = mailgun_body(CURRENT, "stale", "token-3", now() - 301);
    assert_eq!(
        app.post("mailgun", &json_headers(), stale.into())
            .await
            .status,
        401
    );
    let unsigned = r#"{"event-data":{"id":"x","event":"delivered"}}"#;
    assert_eq!(
        app.post("mailgun", &json_headers(), unsigned.into())
            .await
            .status,
        401
    );
    let causes = eventually_causes(&app, "mailgun", 3).await;
    assert_eq!(causes[0], "the signature matches none of 2 secrets");
    assert!(
        causes[1].starts_with("timestamp ") && causes[1].contains("older than"),
        "{causes:?}"
    );
    assert_eq!(
        causes[2],
        "unreadable signed body: the body has no signature.timestamp"
    );
}

both_backends!(linears_timestamp_inside_the_signed_body_is_checked_within_a_minute);
async fn linears_timestamp_inside_the_signed_body_is_checked_within_a_minute(backend: Backend) {
    let config = body_signed_config();
    let app = spawn_app_with(backend, body_signed_config()).await;
    let source = config.source("linear").unwrap();
    let key = source.auth().parse_secret(CURRENT).unwrap();
    let previous = source.auth().parse_secret(PREVIOUS).unwrap();
    let at = |secs: i64, delivery: &str| signed_linear(source, &key, secs, delivery);
    // One time for both signings: the body carries it, and the retry re-sends that body.
    let sent_at = now();
    let (headers, body) = at(sent_at, "234d1a4e-b617-4388");
    let accepted = app.post("linear", &headers, body.clone().into()).await;
    assert_eq!(
        (accepted.status, &accepted.body),
        (
            200,
            &json!({"status": "accepted", "event_id": "234d1a4e-b617-4388"})
        )
    );
    // The previous secret verifies (Linear's retry: a duplicate); one changed byte is 401.
    let (rotated, _) = signed_linear(source, &previous, sent_at, "234d1a4e-b617-4388");
    let retried = app.post("linear", &rotated, body.clone().into()).await;
    assert_eq!(retried.outcome(), "duplicate", "{:?}", retried.body);
    let changed = body.replace("create", "crEate");
    assert_eq!(
        app.post("linear", &headers, changed.into()).await.status,
        401
    );
    let (headers, body) = at(now() - 61, "stale-delivery");
    assert_eq!(app.post("linear", &headers, body.into()).await.status, 401);
    let causes = eventually_causes(&app, "linear", 2).await;
    assert_eq!(
        causes,
        [
            "the signature matches none of 2 secrets",
            "timestamp 1 s older than the tolerance of 60 s allows"
        ]
    );
}

/// A Linear delivery stamped `secs` (in its body, in milliseconds), signed with `key`.
fn signed_linear(
    source: &app::config::Source,
    key: &app::schemes::SecretKey,
    secs: i64,
    delivery: &str,
) -> (Vec<(String, String)>, String) {
    {
        let body = json!({
            "action": "create", "type": "Comment",
            "data": {"id": "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9"},
            "webhookTimestamp": secs * 1000
        })
        .to_string();
        let map = http::HeaderMap::new();
        let request = app::schemes::Request {
            method: "POST",
            query: None,
            url: None,
            headers: &map,
            body: body.as_bytes(),
        };
        let mut headers = json_headers();
        headers.push(("Linear-Delivery".into(), delivery.into()));
        for (name, value) in source.auth().sign(key, "msg", &request, now()) {
            headers.push((name.to_string(), value));
        }
        (headers, body)
    }
}

both_backends!(dropbox_alone_answers_its_get_challenge_as_inert_text);
async fn dropbox_alone_answers_its_get_challenge_as_inert_text(backend: Backend) {
    let app = spawn_app_with(backend, body_signed_config()).await;
    let get = |path: &str| app.client.get(app.url(path)).send();
    let answer = get("/hooks/dropbox?challenge=8vJ3xZqR2mN5pL7t")
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
    assert_eq!(answer.text().await.unwrap(), "8vJ3xZqR2mN5pL7t");
    let long = format!("/hooks/dropbox?challenge={}", "a".repeat(300));
    for (path, status) in [
        ("/hooks/dropbox", 400),
        (long.as_str(), 400),
        ("/hooks/github?challenge=x", 405),
        ("/hooks/nosuchsource?challenge=x", 404),
    ] {
        assert_eq!(get(path).await.unwrap().status(), status, "{path}");
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0,
        "a verification is no event"
    );
}
