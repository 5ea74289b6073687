//! Each provider's signed delivery is accepted once and both secrets of a rotation verify; a
//! signed body re-posted under new delivery ids is a duplicate; Shopify's older id header and
//! Slack's URL verification.

use super::*;
use serde_json::json;

async fn a_signed_delivery_is_accepted_once_and_both_secrets_verify(p: Provider) {
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;
    let first = (p.delivery)("1");
    let second = (p.delivery)("2");
    let [current, previous] = p.secrets;
    let forged = first.body.replacen(p.tamper.0, p.tamper.1, 1);
    assert_ne!(
        forged, first.body,
        "{}: the tamper changes the body",
        p.source
    );

    let accepted = deliver(&app, &p, current, &first).await;
    let retried = deliver(&app, &p, current, &first).await;
    let tampered = app
        .post(p.source, &signed(&p, current, &first), forged.into_bytes())
        .await;
    let rotated = deliver(&app, &p, previous, &second).await;

    let source = p.source;
    assert_eq!(
        (accepted.status, accepted.body),
        (
            200,
            json!({"status": "accepted", "event_id": first.event_id})
        ),
        "{source}: first delivery"
    );
    assert_eq!(
        (retried.status, retried.body),
        (
            200,
            json!({"status": "duplicate", "event_id": first.event_id, "idempotent": true})
        ),
        "{source}: retry"
    );
    assert_eq!(
        (tampered.status, tampered.body),
        (401, json!({"status": "unauthorized"})),
        "{source}: tampered"
    );
    assert_eq!(
        (rotated.status, rotated.body),
        (
            200,
            json!({"status": "accepted", "event_id": second.event_id})
        ),
        "{source}: signed with the previous secret"
    );
    assert_eq!(
        archive_rows(&app, source).await,
        [
            row(&first, "processed", "accepted"),
            row(&first, "skipped", "duplicate"),
            row(&second, "processed", "accepted"),
        ],
        "{source}: the tampered delivery is not archived"
    );
    let claimed = texts(
        &app.db,
        "SELECT event_id FROM webhook_inbox WHERE source = $1 ORDER BY event_id",
        vec![source.into()],
    )
    .await;
    assert_eq!(
        claimed,
        [
            vec![Some(first.event_id.clone())],
            vec![Some(second.event_id.clone())]
        ],
        "{source}"
    );
    let bodies = texts(
        &app.db,
        "SELECT convert_from(body, 'UTF8') FROM webhook_events WHERE source = $1 AND outcome = 'accepted' ORDER BY id",
        vec![source.into()],
    )
    .await;
    assert_eq!(
        bodies,
        [
            vec![Some(first.body.clone())],
            vec![Some(second.body.clone())]
        ],
        "{source}: the raw bytes are archived"
    );
}

#[tokio::test]
async fn stripe_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(STRIPE_PROVIDER).await;
}

#[tokio::test]
async fn github_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(GITHUB_PROVIDER).await;
}

#[tokio::test]
async fn paddle_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(PADDLE_PROVIDER).await;
}

#[tokio::test]
async fn shopify_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(SHOPIFY_PROVIDER).await;
}

#[tokio::test]
async fn slack_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(SLACK_PROVIDER).await;
}

#[tokio::test]
async fn svix_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(SVIX_PROVIDER).await;
}

#[tokio::test]
async fn clerk_deliveries_are_verified_deduplicated_and_rotated() {
    a_signed_delivery_is_accepted_once_and_both_secrets_verify(CLERK_PROVIDER).await;
}

/// GitHub and Shopify sign the body alone, not their delivery-id headers: a captured delivery
/// re-posted with fresh ids verifies. It is recorded as a duplicate of the event that first
/// carried that body (the archive row names it), never as a new event; the provider's own
/// redelivery (same id) stays an ordinary duplicate, and another body is a new event.
async fn a_signed_body_under_a_new_delivery_id_is_a_duplicate_of_its_first_event(
    p: Provider,
    backend: Backend,
) {
    let app = spawn_app_with(backend, providers_config()).await;
    let first = (p.delivery)("1");
    let other = (p.delivery)("2");
    let current = p.secrets[0];

    let accepted = deliver(&app, &p, current, &first).await;
    let mut forged_headers = signed(&p, current, &first);
    for (name, value) in &mut forged_headers {
        if name.ends_with("-Delivery") || (name.ends_with("-Id") && name.starts_with("X-Shopify")) {
            *value = format!("forged-{name}");
        }
    }
    let forged_id = forged_headers
        .iter()
        .find(|(name, _)| name == "X-GitHub-Delivery" || name == "X-Shopify-Event-Id")
        .map(|(_, value)| value.clone())
        .expect("a delivery id header");
    let replayed = app
        .post(p.source, &forged_headers, first.body.clone().into_bytes())
        .await;
    let redelivered = deliver(&app, &p, current, &first).await;
    let new_event = deliver(&app, &p, current, &other).await;

    let source = p.source;
    assert_eq!(accepted.outcome(), "accepted", "{backend:?} {source}");
    assert_eq!(
        (replayed.status, replayed.body),
        (
            200,
            json!({"status": "duplicate", "event_id": first.event_id, "idempotent": true, "delivered_as": forged_id})
        ),
        "{backend:?} {source}: the replay under a new id"
    );
    assert_eq!(redelivered.outcome(), "duplicate", "{backend:?} {source}");
    assert_eq!(new_event.outcome(), "accepted", "{backend:?} {source}");
    assert_eq!(
        archive_rows(&app, source).await,
        [
            row(&first, "processed", "accepted"),
            row(&first, "skipped", "duplicate"),
            row(&first, "skipped", "duplicate"),
            row(&other, "processed", "accepted"),
        ],
        "{backend:?} {source}: the replay's archive row names the original event"
    );
    let replay_error = texts(
        &app.db,
        "SELECT error_message FROM webhook_events WHERE source = $1 ORDER BY id",
        vec![source.into()],
    )
    .await;
    let message = replay_error[1][0].clone().unwrap_or_default();
    assert!(
        message.contains(&first.event_id) && message.contains("replay"),
        "{backend:?} {source}: {message}"
    );
    assert_eq!(replay_error[2][0], None, "{backend:?} {source}");
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id FROM webhook_inbox WHERE source = $1 ORDER BY event_id",
            vec![source.into()],
        )
        .await,
        [
            vec![Some(first.event_id.clone())],
            vec![Some(other.event_id.clone())]
        ],
        "{backend:?} {source}: no event under the forged id"
    );

    // The body is archived once: each re-post refers to the original row.
    let kept = texts(
        &app.db,
        "SELECT CAST(id AS TEXT), CAST(length(body) AS TEXT), CAST(body_of AS TEXT) FROM webhook_events WHERE source = $1 ORDER BY id",
        vec![source.into()],
    )
    .await;
    let original = kept[0][0].clone();
    let size = |n: usize| Some(n.to_string());
    assert_eq!(
        kept.iter()
            .map(|r| (r[1].clone(), r[2].clone()))
            .collect::<Vec<_>>(),
        [
            (size(first.body.len()), None),
            (size(0), original.clone()),
            (size(0), original.clone()),
            (size(other.body.len()), None),
        ],
        "{backend:?} {source}: the re-posts keep a reference, not a copy"
    );
    for _ in 0..200 {
        let again = app
            .post(p.source, &forged_headers, first.body.clone().into_bytes())
            .await;
        assert_eq!(again.outcome(), "duplicate");
    }
    let stored_bytes = scalar(
        &app.db,
        "SELECT CAST(sum(length(body)) AS bigint) FROM webhook_events WHERE source = $1",
        vec![source.into()],
    )
    .await;
    assert_eq!(
        stored_bytes,
        Some((first.body.len() + other.body.len()) as i64),
        "{backend:?} {source}: 202 re-posts stored no body bytes"
    );
    // What replay, export and the event page read is the original's body, byte for byte.
    let latest = scalar(
        &app.db,
        "SELECT max(id) FROM webhook_events WHERE source = $1",
        vec![source.into()],
    )
    .await
    .expect("a row");
    let stored = app::db::events::stored_delivery(&app.db, latest)
        .await
        .expect("read")
        .expect("the row");
    assert_eq!(stored.body, first.body.as_bytes(), "{backend:?} {source}");
    assert_eq!(
        stored.body_of.map(|id| id.to_string()),
        original,
        "{backend:?} {source}"
    );
    assert!(stored.body_kept);
}

both_backends!(a_github_body_replayed_under_a_new_delivery_id_is_a_duplicate);
async fn a_github_body_replayed_under_a_new_delivery_id_is_a_duplicate(backend: Backend) {
    a_signed_body_under_a_new_delivery_id_is_a_duplicate_of_its_first_event(
        GITHUB_PROVIDER,
        backend,
    )
    .await;
}

both_backends!(a_shopify_body_replayed_under_new_ids_is_a_duplicate);
async fn a_shopify_body_replayed_under_new_ids_is_a_duplicate(backend: Backend) {
    a_signed_body_under_a_new_delivery_id_is_a_duplicate_of_its_first_event(
        SHOPIFY_PROVIDER,
        backend,
    )
    .await;
}

both_backends!(a_svix_id_other_than_the_signed_webhook_id_is_refused);
/// The svix and clerk presets read the event id from `svix-id`, while the signature may cover
/// `webhook-id`: a request carrying both with different values is refused, so one captured
/// delivery cannot become new events under invented `svix-id`s.
async fn a_svix_id_other_than_the_signed_webhook_id_is_refused(backend: Backend) {
    let app = spawn_app_with(backend, providers_config()).await;
    for p in [SVIX_PROVIDER, CLERK_PROVIDER] {
        let d = (p.delivery)("1");
        let key = p.scheme.parse_secret(p.secrets[0]).expect("secret");
        // Signed over webhook-id, as a Standard Webhooks sender signs.
        let mut headers: Vec<(String, String)> = p
            .scheme
            .sign(&key, &d.event_id, d.body.as_bytes(), now())
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect();
        let genuine = app
            .post(p.source, &headers, d.body.clone().into_bytes())
            .await;
        headers.push(("svix-id".into(), "msg_forged_1".into()));
        let forged = app
            .post(p.source, &headers, d.body.clone().into_bytes())
            .await;
        // The same id under both names is what some senders send: still the one event.
        headers.pop();
        headers.push(("svix-id".into(), d.event_id.clone()));
        let twins = app
            .post(p.source, &headers, d.body.clone().into_bytes())
            .await;

        assert_eq!(genuine.outcome(), "accepted", "{backend:?} {}", p.source);
        assert_eq!(
            (forged.status, forged.body),
            (401, json!({"status": "unauthorized"})),
            "{backend:?} {}",
            p.source
        );
        assert_eq!(twins.outcome(), "duplicate", "{backend:?} {}", p.source);
        assert_eq!(
            texts(
                &app.db,
                "SELECT event_id FROM webhook_inbox WHERE source = $1",
                vec![p.source.into()],
            )
            .await,
            [vec![Some(d.event_id.clone())]],
            "{backend:?} {}: only the signed id is an event",
            p.source
        );
    }
}

#[tokio::test]
async fn an_older_shopify_delivery_is_identified_by_its_webhook_id() {
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;
    let mut old_style = (SHOPIFY_PROVIDER.delivery)("3");
    old_style
        .headers
        .retain(|(name, _)| name != "X-Shopify-Event-Id");
    let webhook_id = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043";
    old_style.event_id = webhook_id.into();
    let mut unidentified = (SHOPIFY_PROVIDER.delivery)("4");
    unidentified
        .headers
        .retain(|(name, _)| !name.ends_with("-Id"));

    let accepted = deliver(&app, &SHOPIFY_PROVIDER, SHOPIFY[0], &old_style).await;
    let missing = deliver(&app, &SHOPIFY_PROVIDER, SHOPIFY[0], &unidentified).await;

    assert_eq!(
        (accepted.status, accepted.body),
        (200, json!({"status": "accepted", "event_id": webhook_id}))
    );
    assert_eq!(missing.status, 422, "{:?}", missing.body);
    assert_eq!(
        missing.body["reason"],
        "event_id (header x-shopify-event-id or header x-shopify-webhook-id) is missing"
    );
    assert_eq!(
        archive_rows(&app, "shopify").await,
        [
            row(&old_style, "processed", "accepted"),
            vec![
                None,
                None,
                Some("orders/paid".into()),
                Some("failed".into()),
                Some("invalid".into())
            ],
        ]
    );
}

#[tokio::test]
async fn slack_url_verification_is_answered_after_its_signature_and_not_archived() {
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;
    let challenge = body_only(
        r#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#,
    );
    let stripe_challenge = body_only(r#"{"type":"url_verification","challenge":"c"}"#);

    let answered = deliver(&app, &SLACK_PROVIDER, SLACK[1], &challenge).await;
    let unsigned = app
        .post("slack", &[], challenge.body.clone().into_bytes())
        .await;
    let wrong_secret = deliver(&app, &SLACK_PROVIDER, "not-the-secret", &challenge).await;
    let not_slack = deliver(&app, &STRIPE_PROVIDER, STRIPE[0], &stripe_challenge).await;

    assert_eq!(
        (answered.status, answered.body),
        (
            200,
            json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
        )
    );
    assert_eq!(
        (unsigned.status, unsigned.body),
        (401, json!({"status": "unauthorized"}))
    );
    assert_eq!(wrong_secret.status, 401);
    assert_eq!(
        (not_slack.status, not_slack.body["status"].as_str()),
        (422, Some("invalid")),
        "only Slack sources answer a challenge"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE source = 'slack'"
        )
        .await,
        0,
        "the handshake is not an event"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        0
    );
}
