//! Failed authentication is 401 and archives nothing; an old secret, a header with several
//! signatures and either Standard Webhooks header family verify; unsigned requests do not spend
//! a source's rate limit.

use super::*;
use app::schemes::Scheme;

/// What an attempt was, the headers it sent and its body.
type Attempt = (&'static str, Vec<(String, String)>, String);

fn hookbox_signature(secret: &str, t: i64, body: &str) -> String {
    let key = Scheme::HmacSha256.parse_secret(secret).expect("secret");
    let headers = Scheme::HmacSha256.sign(&key, "", body.as_bytes(), t);
    headers.into_iter().next().expect("one header").1
}

both_backends!(failed_authentication_is_401_and_nothing_is_archived);
async fn failed_authentication_is_401_and_nothing_is_archived(backend: Backend) {
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

both_backends!(unsigned_requests_do_not_spend_a_sources_rate_limit);
async fn unsigned_requests_do_not_spend_a_sources_rate_limit(backend: Backend) {
    let app = spawn_app(backend).await;
    // `limited` allows 2 a second; a flood of junk comes first.
    for _ in 0..10 {
        let junk = app
            .post("limited", &[], event("junk", "o", 1, "{}").into_bytes())
            .await;
        assert_eq!(junk.status, 401, "{backend:?}");
    }

    let genuine = app.send("limited", &event("real-1", "o1", 1, "{}")).await;

    assert_eq!(
        genuine.outcome(),
        "applied",
        "{backend:?}: {:?}",
        genuine.body
    );
    // Authenticated deliveries still count: the limit holds for them.
    let mut answers = Vec::new();
    for i in 2..6 {
        answers.push(
            app.send("limited", &event(&format!("real-{i}"), "o1", i, "{}"))
                .await
                .status,
        );
    }
    assert!(answers.contains(&429), "{backend:?}: {answers:?}");
}
