//! Bad input and failed authentication: clear 4xx answers, never a 5xx, nothing applied.

mod support;

use app::schemes::Scheme;
use support::*;

#[tokio::test]
async fn bad_bodies_are_answered_with_a_reason_and_archived_as_invalid() {
    let long = "x".repeat(256);
    // (body, expected HTTP status, a word the reason must contain)
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"this is not json".to_vec(), 400, "JSON"),
        (b"\xff\xfe{}".to_vec(), 400, "UTF-8"),
        (
            event("b1", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":\"1\"")
                .into_bytes(),
            422,
            "revision",
        ),
        (event("b2", "o", 0, "{}").into_bytes(), 422, "revision"),
        (event("b3", "o", -4, "{}").into_bytes(), 422, "revision"),
        (
            event("b4", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":1.5")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            event("b5", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":3.0")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            event("b6", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":9223372036854775808")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            br#"{"event_id":"b7","object_id":"o","revision":1}"#.to_vec(),
            422,
            "snapshot",
        ),
        (event("b8", "o", 1, "[1,2]").into_bytes(), 422, "snapshot"),
        (
            event("b9", "o", 1, "\"text\"").into_bytes(),
            422,
            "snapshot",
        ),
        (event("", "o", 1, "{}").into_bytes(), 422, "event_id"),
        (event("b10", "", 1, "{}").into_bytes(), 422, "object_id"),
        (event(&long, "o", 1, "{}").into_bytes(), 422, "event_id"),
        (event("b11", &long, 1, "{}").into_bytes(), 422, "object_id"),
        (
            event("b12", "o", 1, r#"{"note":"nul \u0000 here"}"#).into_bytes(),
            422,
            "\\u0000",
        ),
        (
            br#"{"object_id":"o","revision":1,"snapshot":{}}"#.to_vec(),
            422,
            "event_id",
        ),
    ];
    for backend in BOTH {
        let app = spawn_app(backend).await;
        for (i, (body, status, word)) in cases.iter().enumerate() {
            let answer = app.send_bytes("shop", body, &[]).await;

            assert_eq!(
                answer.status, *status,
                "{backend:?} case {i}: {:?}",
                answer.body
            );
            assert_eq!(answer.body["status"], "invalid", "{backend:?} case {i}");
            let reason = answer.body["reason"].as_str().unwrap_or_default();
            assert!(
                reason.contains(word),
                "{backend:?} case {i}: reason {reason:?} should name {word:?}"
            );
        }
        assert_eq!(
            count(&app.db, "SELECT count(*) FROM webhook_events WHERE status = 'failed' AND outcome = 'invalid'").await,
            cases.len() as i64,
            "{backend:?}: every bad delivery is archived"
        );
        assert_eq!(
            count(&app.db, "SELECT count(*) FROM webhook_events").await,
            cases.len() as i64
        );
        assert_eq!(
            count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
            0,
            "{backend:?}: nothing claimed"
        );
        assert_eq!(
            count(&app.db, "SELECT count(*) FROM object_state").await,
            0,
            "{backend:?}: nothing applied"
        );
        let readable = texts(
            &app.db,
            "SELECT error_message FROM webhook_events WHERE event_id = 'b2'",
            vec![],
        )
        .await;
        assert!(
            readable[0][0]
                .as_deref()
                .is_some_and(|m| m.contains("revision")),
            "the error is archived"
        );
    }
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_and_not_stored() {
    let app = spawn_app(Backend::Postgres).await;
    let big = event(
        "big",
        "o",
        1,
        &format!(r#"{{"pad":"{}"}}"#, "x".repeat(70_000)),
    );

    let answer = app.send("shop", &big).await;

    assert_eq!(answer.status, 413);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

#[tokio::test]
async fn unknown_sources_are_404() {
    let app = spawn_app(Backend::Sqlite).await;
    let answer = app.send("nobody", &event("e", "o", 1, "{}")).await;
    assert_eq!(answer.status, 404);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

/// What an attempt was, the headers it sent and its body.
type Attempt = (&'static str, Vec<(String, String)>, String);

fn hookbox_signature(secret: &str, t: i64, body: &str) -> String {
    let key = Scheme::HmacSha256.parse_secret(secret).expect("secret");
    let headers = Scheme::HmacSha256.sign(&key, "", body.as_bytes(), t);
    headers.into_iter().next().expect("one header").1
}

#[tokio::test]
async fn failed_authentication_is_401_and_nothing_is_archived() {
    for backend in BOTH {
        let app = spawn_app(backend).await;
        let body = event("e1", "o1", 1, "{}");
        let now = now();
        let header = |value: String| vec![("X-Hookbox-Signature".to_string(), value)];
        let attempts: Vec<Attempt> = vec![
            ("unsigned", vec![], body.clone()),
            (
                "wrong secret",
                header(hookbox_signature("not-the-secret", now, &body)),
                body.clone(),
            ),
            (
                "10 minutes old",
                header(hookbox_signature(SHOP_SECRET, now - 600, &body)),
                body.clone(),
            ),
            (
                "10 minutes ahead",
                header(hookbox_signature(SHOP_SECRET, now + 600, &body)),
                body.clone(),
            ),
            (
                "body changed",
                header(hookbox_signature(SHOP_SECRET, now, &body)),
                body.replace("o1", "o2"),
            ),
            ("garbage header", header("t=abc,v1=zz".into()), body.clone()),
        ];
        for (what, headers, sent) in attempts {
            let answer = app.post("shop", &headers, sent.into_bytes()).await;
            assert_eq!(
                (answer.status, &answer.body),
                (401, &serde_json::json!({"status":"unauthorized"})),
                "{backend:?}: {what}"
            );
        }
        assert_eq!(
            count(&app.db, "SELECT count(*) FROM webhook_events").await,
            0,
            "{backend:?}"
        );
        assert_eq!(
            count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
            0,
            "{backend:?}"
        );
    }
}

#[tokio::test]
async fn an_old_secret_and_a_header_with_several_signatures_verify() {
    let app = spawn_app(Backend::Postgres).await;
    let now = now();
    let body_old = event("old-secret", "o1", 1, "{}");
    let body_many = event("many-signatures", "o2", 1, "{}");
    let good = hookbox_signature(SHOP_SECRET, now, &body_many);
    let good_v1 = good.split(',').find(|p| p.starts_with("v1=")).expect("v1");
    let several = format!("t={now},v1={},{good_v1}", "0".repeat(64));

    let old = app
        .post(
            "shop",
            &[(
                "X-Hookbox-Signature".into(),
                hookbox_signature(SHOP_SECRET_OLD, now, &body_old),
            )],
            body_old.into_bytes(),
        )
        .await;
    let many = app
        .post(
            "shop",
            &[("X-Hookbox-Signature".into(), several)],
            body_many.into_bytes(),
        )
        .await;

    assert_eq!(old.outcome(), "applied", "{:?}", old.body);
    assert_eq!(many.outcome(), "applied", "{:?}", many.body);
}

#[tokio::test]
async fn standard_webhooks_senders_are_verified_with_either_header_family() {
    let app = spawn_app(Backend::Sqlite).await;
    let body = event("sw-1", "o1", 1, r#"{"k":"v"}"#);

    let signed = app.send("sw", &body).await;
    let key = Scheme::StandardWebhooks
        .parse_secret(SW_SECRET)
        .expect("secret");
    let svix_headers: Vec<(String, String)> = Scheme::StandardWebhooks
        .sign(&key, "msg_svix", body.as_bytes(), now())
        .into_iter()
        .map(|(n, v)| (n.as_str().replacen("webhook-", "svix-", 1), v))
        .collect();
    let svix = app
        .post("sw", &svix_headers, body.clone().into_bytes())
        .await;
    let unsigned = app.post("sw", &[], body.into_bytes()).await;

    assert_eq!(signed.outcome(), "applied", "{:?}", signed.body);
    assert_eq!(svix.outcome(), "duplicate", "{:?}", svix.body);
    assert_eq!(unsigned.status, 401);
}
