//! `hookbox send`: its deliveries are accepted by every preset, and the headers it is given set
//! the provider's ids.

use super::*;
use app::envelope::FieldRef;
use serde_json::json;

/// The header a source reads its event id from, as `hookbox send` filled it in.
fn sent_event_id(config: &Config, source: &str, sent: &http::HeaderMap) -> Option<String> {
    let source = config.source(source)?;
    source
        .mapping
        .event_id
        .places()
        .iter()
        .find_map(|place| match place {
            FieldRef::Header(name) => sent.get(name)?.to_str().ok().map(str::to_string),
            FieldRef::Pointer(_) | FieldRef::BodyDigest => None,
        })
}

fn as_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                v.to_str().expect("generated headers are ASCII").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn hookbox_send_is_accepted_by_every_preset() {
    let config = providers_config();
    let app = spawn_app_with(Backend::Postgres, config.clone()).await;

    for p in ALL_PROVIDERS {
        let d = (p.delivery)("5");
        let source = config.source(p.source).expect("declared");
        let sent = server::send::delivery_headers(source, d.body.as_bytes(), &[], None, now());

        let answer = app
            .post(p.source, &as_pairs(&sent), d.body.clone().into_bytes())
            .await;

        let expected_id = sent_event_id(&config, p.source, &sent).unwrap_or(d.event_id.clone());
        assert_eq!(
            (answer.status, answer.body),
            (200, json!({"status": "accepted", "event_id": expected_id})),
            "{}",
            p.source
        );
        let stored = texts(
            &app.db,
            "SELECT event_id FROM webhook_events WHERE source = $1",
            vec![p.source.into()],
        )
        .await;
        assert_eq!(stored, [vec![Some(expected_id)]], "{}", p.source);
    }
}

#[tokio::test]
async fn hookbox_send_headers_set_the_provider_ids() {
    let config = providers_config();
    let app = spawn_app_with(Backend::Postgres, config.clone()).await;
    let header = |text: &str| server::send::parse_header(text).expect("NAME:VALUE");
    let github = config.source("github").expect("declared");
    let svix = config.source("svix").expect("declared");
    let body = r#"{"type":"invoice.paid","data":{"id":"inv_9"}}"#;

    let github_sent = server::send::delivery_headers(
        github,
        body.as_bytes(),
        &[
            header("X-GitHub-Delivery: 9a1d2c3e-0000-4000-8000-000000000001"),
            header("X-GitHub-Event: push"),
        ],
        None,
        now(),
    );
    let svix_sent = server::send::delivery_headers(
        svix,
        body.as_bytes(),
        &[header("svix-id: msg_chosen")],
        None,
        now(),
    );
    let github_answer = app
        .post("github", &as_pairs(&github_sent), body.as_bytes().to_vec())
        .await;
    let svix_answer = app
        .post("svix", &as_pairs(&svix_sent), body.as_bytes().to_vec())
        .await;

    assert_eq!(
        github_answer.body,
        json!({"status": "accepted", "event_id": "9a1d2c3e-0000-4000-8000-000000000001"})
    );
    assert_eq!(
        svix_answer.body,
        json!({"status": "accepted", "event_id": "msg_chosen"}),
        "the given id is the signed webhook-id"
    );
    let stored = texts(
        &app.db,
        "SELECT source, event_id, object_id, event_type FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;
    let text = |s: &str| Some(s.to_string());
    assert_eq!(
        stored,
        [
            vec![
                text("github"),
                text("9a1d2c3e-0000-4000-8000-000000000001"),
                None,
                text("push")
            ],
            vec![
                text("svix"),
                text("msg_chosen"),
                text("inv_9"),
                text("invoice.paid")
            ],
        ]
    );
}
