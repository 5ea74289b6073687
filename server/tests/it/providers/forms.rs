//! Form-encoded bodies over HTTP on both backends: a Twilio status callback (signed over
//! `{public_url}/hooks/{source}` and its sorted fields) is accepted under Twilio's identity, a
//! changed byte or the URL behind the proxy is 401, the previous secret verifies; a GitHub
//! delivery sent as `application/x-www-form-urlencoded` is accepted and read from its `payload`;
//! and a form's fields are found by the body searches and shown on its page, while the archive
//! keeps the bytes as they came.
#![allow(clippy::unwrap_used)]

use super::*;
use app::model::Role;
use app::schemes::Request;
use serde_json::json;

const CURRENT: &str = "twilio-auth-token-current";
const PREVIOUS: &str = "twilio-auth-token-previous";
const PUBLIC_URL: &str = "https://hooks.example.com";
const FORM: &str = "application/x-www-form-urlencoded";

fn forms_config() -> Config {
    let text = format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n\
         [[sources]]\nname = \"twilio\"\npreset = \"twilio\"\nsecrets_env = [\"CURRENT\", \"PREVIOUS\"]\n\
         [[sources]]\nname = \"github\"\npreset = \"github\"\nsecrets_env = [\"CURRENT\"]\n"
    );
    let env = |name: &str| match name {
        "CURRENT" => Some(CURRENT.to_string()),
        "PREVIOUS" => Some(PREVIOUS.to_string()),
        _ => None,
    };
    Config::parse(&text, Path::new("forms.toml"), &env).unwrap()
}

/// The headers `source`'s sender sends for a form `body` posted to `url`, signed with `secret`.
fn signed_form(
    config: &Config,
    source: &str,
    secret: &str,
    url: &str,
    body: &str,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let source = config.source(source).unwrap();
    let mut map = http::HeaderMap::new();
    map.insert(http::header::CONTENT_TYPE, FORM.parse().unwrap());
    let request = Request {
        method: "POST",
        query: None,
        url: Some(url),
        headers: &map,
        body: body.as_bytes(),
    };
    let key = source.auth().parse_secret(secret).unwrap();
    let mut sent = vec![("Content-Type".to_string(), FORM.to_string())];
    for (name, value) in source.auth().sign(&key, "msg", &request, now()) {
        sent.push((name.to_string(), value));
    }
    sent.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
    sent
}

/// The event ids a search finds, through the dashboard's server functions.
async fn found(app: &TestApp, cookie: &str, endpoint: &str, args: &[(&str, &str)]) -> String {
    let (status, body) = call(app, cookie, endpoint, args).await;
    assert_eq!(status, 200, "{endpoint}: {body}");
    body
}

both_backends!(a_twilio_form_is_accepted_under_twilios_identity_and_found_by_its_fields);
async fn a_twilio_form_is_accepted_under_twilios_identity_and_found_by_its_fields(
    backend: Backend,
) {
    let config = forms_config();
    let app = spawn_app_with(backend, forms_config()).await;
    let url = format!("{PUBLIC_URL}/hooks/twilio");
    let body = "AccountSid=AC9a1b&MessageSid=SM5f0e7c&MessageStatus=delivered&To=%2B15558675310&Body=Caf%C3%A9+at+nine&Tag=a&Tag=b";
    let token = [("I-Twilio-Idempotency-Token", "c9f6e2a4-idem-1")];
    let current = signed_form(&config, "twilio", CURRENT, &url, body, &token);

    let accepted = app.post("twilio", &current, body.into()).await;
    assert_eq!(
        (accepted.status, &accepted.body),
        (
            200,
            &json!({"status": "accepted", "event_id": "c9f6e2a4-idem-1"})
        )
    );
    let stored = texts(
        &app.db,
        "SELECT object_id, event_type, body_fields FROM webhook_events WHERE source = 'twilio'",
        vec![],
    )
    .await;
    assert_eq!(
        stored,
        [[
            Some("SM5f0e7c".to_string()),
            Some("delivered".to_string()),
            Some(
                r#"{"AccountSid":"AC9a1b","MessageSid":"SM5f0e7c","MessageStatus":"delivered","To":"+15558675310","Body":"Café at nine","Tag":["a","b"]}"#
                    .to_string()
            )
        ]]
    );
    let raw: Vec<u8> = bytes(
        &app.db,
        "SELECT body FROM webhook_events WHERE source = 'twilio'",
    )
    .await;
    assert_eq!(raw, body.as_bytes(), "the archive keeps the bytes as sent");

    // The previous auth token verifies: Twilio's retry, a duplicate.
    let previous = signed_form(&config, "twilio", PREVIOUS, &url, body, &token);
    let retried = app.post("twilio", &previous, body.into()).await;
    assert_eq!(retried.outcome(), "duplicate", "{:?}", retried.body);

    // One changed byte; the URL as hookbox sees it behind the proxy; no signature at all.
    let changed = body.replace("nine", "nina");
    let tampered = app.post("twilio", &current, changed.into()).await;
    assert_eq!(tampered.status, 401);
    let proxied = signed_form(
        &config,
        "twilio",
        CURRENT,
        &app.url("/hooks/twilio"),
        body,
        &token,
    );
    assert_eq!(app.post("twilio", &proxied, body.into()).await.status, 401);
    let unsigned = [("Content-Type".to_string(), FORM.to_string())];
    assert_eq!(app.post("twilio", &unsigned, body.into()).await.status, 401);
    let causes = eventually_causes(&app, "twilio", 3).await;
    assert_eq!(
        causes,
        [
            "the signature matches none of 2 secrets",
            "the signature matches none of 2 secrets",
            "missing header x-twilio-signature"
        ]
    );

    // The fields are searched like JSON, and shown as JSON on the delivery's page.
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    let listed = found(
        &app,
        &cookie,
        "events",
        &[("match", r#"{"MessageStatus":"delivered","Tag":["b"]}"#)],
    )
    .await;
    assert!(listed.contains("c9f6e2a4-idem-1"), "{listed}");
    let none = found(
        &app,
        &cookie,
        "events",
        &[("match", r#"{"MessageStatus":"failed"}"#)],
    )
    .await;
    assert!(!none.contains("c9f6e2a4-idem-1"), "{none}");
    let anywhere = found(&app, &cookie, "find", &[("q", "Café at nine")]).await;
    assert!(anywhere.contains("c9f6e2a4-idem-1"), "{anywhere}");
    let id = count(
        &app.db,
        "SELECT min(id) FROM webhook_events WHERE source = 'twilio'",
    )
    .await
    .to_string();
    let page: serde_json::Value =
        serde_json::from_str(&found(&app, &cookie, "event", &[("id", &id)]).await).unwrap();
    assert_eq!(page["body_is_form"], true);
    assert!(
        page["body"]
            .as_str()
            .unwrap()
            .contains("\"MessageSid\": \"SM5f0e7c\""),
        "{}",
        page["body"]
    );
    assert_eq!(page["raw_body"], body);
}

both_backends!(a_github_delivery_sent_as_a_form_is_read_from_its_payload);
async fn a_github_delivery_sent_as_a_form_is_read_from_its_payload(backend: Backend) {
    let config = forms_config();
    let app = spawn_app_with(backend, forms_config()).await;
    // GitHub's default content type: the JSON event url-encoded as the `payload` field.
    let payload =
        r#"{"zen":"Keep it logically awesome.","hook_id":123456789,"sender":{"login":"octocat"}}"#;
    let body: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", payload)
        .finish();
    let headers = signed_form(
        &config,
        "github",
        CURRENT,
        &format!("{PUBLIC_URL}/hooks/github"),
        &body,
        &[
            ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
            ("X-GitHub-Event", "ping"),
        ],
    );
    let accepted = app.post("github", &headers, body.clone().into()).await;
    assert_eq!(
        (accepted.status, &accepted.body),
        (
            200,
            &json!({"status": "accepted", "event_id": "72d3162e-cc78-11e3-81ab-4c9367dc0958"})
        )
    );
    let stored = texts(
        &app.db,
        "SELECT event_type, body_fields FROM webhook_events WHERE source = 'github'",
        vec![],
    )
    .await;
    assert_eq!(
        stored,
        [[Some("ping".to_string()), Some(payload.to_string())]]
    );
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    let listed = found(
        &app,
        &cookie,
        "events",
        &[("match", r#"{"sender":{"login":"octocat"}}"#)],
    )
    .await;
    assert!(listed.contains("72d3162e-cc78-11e3"), "{listed}");
    let mut changed = body.into_bytes();
    changed[20] ^= 1;
    assert_eq!(app.post("github", &headers, changed).await.status, 401);
}

both_backends!(a_captured_twilio_form_reordered_or_re_encoded_is_one_event);
async fn a_captured_twilio_form_reordered_or_re_encoded_is_one_event(backend: Backend) {
    let config = forms_config();
    let app = spawn_app_with(backend, forms_config()).await;
    let url = format!("{PUBLIC_URL}/hooks/twilio");
    let body = "MessageSid=SM77&MessageStatus=delivered&Body=Hi+there&To=%2B15558675310";
    let captured = |token: &str| {
        signed_form(
            &config,
            "twilio",
            CURRENT,
            &url,
            body,
            &[("I-Twilio-Idempotency-Token", token)],
        )
    };
    let first = app.post("twilio", &captured("idem-0"), body.into()).await;
    assert_eq!(first.outcome(), "accepted", "{:?}", first.body);
    // The same signature verifies each of these (Twilio signs the sorted, decoded fields), each
    // under a new unsigned idempotency token: all one signed delivery, never a new event.
    let variants = [
        "To=%2B15558675310&Body=Hi+there&MessageStatus=delivered&MessageSid=SM77",
        "MessageSid=SM77&MessageStatus=delivered&Body=Hi%20there&To=%2b15558675310",
        "MessageSid=SM77&MessageStatus=delivered&Body=Hi+there&To=%2B15558675310&To=%2B15558675310",
        "Message%53id=SM77&MessageStatus=delivered&Body=Hi+there&To=%2B15558675310",
        "MessageStatus=delivered&MessageSid=SM77&To=%2B15558675310&Body=Hi%20there",
    ];
    for (i, variant) in variants.iter().enumerate() {
        let answer = app
            .post(
                "twilio",
                &captured(&format!("idem-{}", i + 1)),
                variant.to_string().into(),
            )
            .await;
        assert_eq!(answer.status, 200, "{variant}: {:?}", answer.body);
        assert_eq!(
            answer.outcome(),
            "duplicate",
            "{variant}: {:?}",
            answer.body
        );
    }
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE source = 'twilio' AND outcome = 'accepted'"
        )
        .await,
        1,
        "one captured callback is one accepted event"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_inbox WHERE source = 'twilio'"
        )
        .await,
        1
    );
}

both_backends!(a_form_of_more_fields_than_the_cap_is_kept_raw_and_refused_naming_the_cap);
async fn a_form_of_more_fields_than_the_cap_is_kept_raw_and_refused_naming_the_cap(
    backend: Backend,
) {
    let config = forms_config();
    let app = spawn_app_with(backend, forms_config()).await;
    // 1 MiB of distinct fields (the linear-list lookup spent tens of seconds on one), signed as
    // GitHub signs a form: the body's HMAC.
    let mut body = String::from("a=1");
    let mut i = 0;
    while body.len() < 1024 * 1024 - 32 {
        body.push_str(&format!("&f{i}=v"));
        i += 1;
    }
    let github = |body: &str, delivery: &str| {
        signed_form(
            &config,
            "github",
            CURRENT,
            &format!("{PUBLIC_URL}/hooks/github"),
            body,
            &[("X-GitHub-Delivery", delivery), ("X-GitHub-Event", "ping")],
        )
    };
    let answer = app
        .post("github", &github(&body, "big-1"), body.clone().into())
        .await;
    assert_eq!(answer.status, 400, "{:?}", answer.body);
    assert!(
        answer.body["reason"]
            .as_str()
            .is_some_and(|r| r.contains("more than 1000 fields")),
        "{:?}",
        answer.body
    );
    let stored = texts(
        &app.db,
        "SELECT status, outcome, error_message, body_fields FROM webhook_events WHERE source = 'github'",
        vec![],
    )
    .await;
    assert_eq!(stored.len(), 1, "archived once");
    assert_eq!(stored[0][0].as_deref(), Some("failed"));
    assert_eq!(stored[0][1].as_deref(), Some("invalid"));
    assert!(
        stored[0][2]
            .as_deref()
            .is_some_and(|e| e.contains("more than 1000 fields")),
        "{:?}",
        stored[0][2]
    );
    assert_eq!(stored[0][3], None, "no fields are stored past the cap");
    let raw = bytes(
        &app.db,
        "SELECT body FROM webhook_events WHERE source = 'github'",
    )
    .await;
    assert_eq!(raw.len(), body.len(), "the raw body is kept whole");
    // Its page shows the raw body, not fields, cut.
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    let id = count(
        &app.db,
        "SELECT min(id) FROM webhook_events WHERE source = 'github'",
    )
    .await
    .to_string();
    let page: serde_json::Value =
        serde_json::from_str(&found(&app, &cookie, "event", &[("id", &id)]).await).unwrap();
    assert_eq!(page["body_is_form"], false);
    assert_eq!(page["body_cut"], true);
    // A form of few fields repeated many times is read whole.
    let repeated: String = (0..20_000)
        .map(|i| format!("tag={i}"))
        .collect::<Vec<_>>()
        .join("&");
    let answer = app
        .post(
            "github",
            &github(&repeated, "big-2"),
            repeated.clone().into(),
        )
        .await;
    assert_eq!(answer.outcome(), "accepted", "{:?}", answer.body);
    // Twilio's signature over a form is not even checked past 10,000 fields: a 401.
    let url = format!("{PUBLIC_URL}/hooks/twilio");
    let headers = signed_form(
        &config,
        "twilio",
        CURRENT,
        &url,
        &body,
        // (No signature can be made for it: one is forged.)
        &[
            ("I-Twilio-Idempotency-Token", "big-3"),
            ("X-Twilio-Signature", "Zm9yZ2VkLXNpZ25hdHVyZQ=="),
        ],
    );
    assert_eq!(app.post("twilio", &headers, body.into()).await.status, 401);
    let causes = eventually_causes(&app, "twilio", 1).await;
    assert_eq!(
        causes,
        ["the signed form has more than 10000 fields, the most hookbox checks"]
    );
}

/// The refused requests' causes of `source`, once `n` are logged (the log is written off the
/// request's path).
pub(super) async fn eventually_causes(app: &TestApp, source: &str, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let causes: Vec<String> = texts(
            &app.db,
            "SELECT cause FROM rejected_requests WHERE source = $1 ORDER BY id",
            vec![source.into()],
        )
        .await
        .into_iter()
        .filter_map(|row| row[0].clone())
        .collect();
        if causes.len() >= n || std::time::Instant::now() > deadline {
            return causes;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
