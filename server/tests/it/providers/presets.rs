//! The presets whose signature is a recipe (and Resend, which is Svix), over HTTP on both
//! backends, each with its provider's own delivery from `app/tests/vectors/`: signed with the
//! current secret it is accepted under the provider's identity, its retry is a duplicate, one
//! changed byte is 401 with the precise cause logged, the previous secret verifies, and a stale
//! timestamp is 401 where the recipe signs one.
#![allow(clippy::unwrap_used)]

use super::*;
use app::providers::Preset;
use app::schemes::Request;
use serde_json::json;

/// A preset and what hookbox must read from its provider's delivery: event id, type, object.
struct Case {
    preset: Preset,
    event_id: &'static str,
    event_type: Option<&'static str>,
    object_id: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        preset: Preset::Intercom,
        event_id: "notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3",
        event_type: Some("conversation.user.created"),
        object_id: Some("1911149811"),
    },
    Case {
        preset: Preset::Typeform,
        event_id: "01HZX5N8PQKZ2D3E4F5G6H7J8K",
        event_type: Some("form_response"),
        object_id: Some("a3a12ec67a1365927098a606107fac15"),
    },
    Case {
        preset: Preset::Vercel,
        event_id: "uev_d4A2bQk3vKz7yXw9",
        event_type: Some("deployment.succeeded"),
        object_id: Some("dpl_2euZBFqxYdDMDG1jTrHFnNZ2eUVa"),
    },
    Case {
        preset: Preset::Bitbucket,
        event_id: "a3b6c2e1-4f5d-4a7b-8c9d-0e1f2a3b4c5d",
        event_type: Some("repo:push"),
        object_id: Some("{3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b}"),
    },
    Case {
        preset: Preset::Razorpay,
        event_id: "HSufWHPhvBJ4Qn",
        event_type: Some("payment.authorized"),
        object_id: Some("pay_6koWN7bvxujzxM"),
    },
    Case {
        preset: Preset::Pagerduty,
        event_id: "5ac64822-4adc-4fda-ade0-410becf0de4f",
        event_type: Some("incident.priority_updated"),
        object_id: Some("PGR0VU2"),
    },
    Case {
        preset: Preset::Sentry,
        event_id: "3b1f6d9a-2c4e-4f8a-9b7d-1e5c3a2f4d6b",
        event_type: Some("issue"),
        object_id: None,
    },
    Case {
        preset: Preset::Notion,
        event_id: "367cba44-b6f3-4c92-81e7-6a2e9659efd4",
        event_type: Some("page.created"),
        object_id: Some("153104cd-477e-809d-8dc4-ff2d96ae3090"),
    },
    Case {
        preset: Preset::Woocommerce,
        event_id: "8f14e45fceea167a5a36dedd4bea2543",
        event_type: Some("order.created"),
        object_id: Some("727"),
    },
    Case {
        preset: Preset::Square,
        event_id: "ac3ac95b-f97d-458c-a6e6-18981597e05f",
        event_type: Some("webhooks.test_notification"),
        object_id: Some("bc368e64-01aa-407e-b46e-3231809b1129"),
    },
    Case {
        preset: Preset::Hubspot,
        event_id: "1703257234",
        event_type: Some("contact.propertyChange"),
        object_id: Some("123456"),
    },
    Case {
        preset: Preset::Gitlab,
        event_id: "a7b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d",
        event_type: Some("Issue Hook"),
        object_id: Some("301"),
    },
    Case {
        preset: Preset::Lemonsqueezy,
        event_id: "sha256:87c0e5768d9decd6f52089a268691828109a3f981a0e4f7d46e2ce288ae3c2d5",
        event_type: Some("order_created"),
        object_id: Some("1"),
    },
    Case {
        preset: Preset::Calendly,
        event_id: "sha256:3f38c9c1f38a4541d81bf635fef62e1215bd2fbd7e5740d6c06745b181bf6c50",
        event_type: Some("invitee.created"),
        object_id: Some(
            "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA",
        ),
    },
    Case {
        preset: Preset::Postmark,
        event_id: "sha256:6a41858ce41fad239fea33fb90f1ea49197986b3f067c669675ece27139abdd6",
        event_type: Some("Delivery"),
        object_id: Some("00000000-0000-0000-0000-000000000000"),
    },
    Case {
        preset: Preset::Zoom,
        event_id: "sha256:a6ed58c14b67a3d1089f888f289d2d7c308227dfa6d9bed0f937c01243561909",
        event_type: Some("meeting.started"),
        object_id: Some("85678901234"),
    },
    Case {
        preset: Preset::Twitch,
        event_id: "befa7b53-d79d-478f-86b9-120f112b044e",
        event_type: Some("channel.follow"),
        object_id: Some("1337"),
    },
    Case {
        preset: Preset::Dropbox,
        event_id: "sha256:7048e7e78692d212e2e09d30aac36233abc301f8dbae2c68db907bd23fea0ef6",
        event_type: None,
        object_id: Some("dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"),
    },
    Case {
        preset: Preset::Asana,
        event_id: "sha256:d1f6091369d134ae61c85a35e2fe81c266bca7b1219ad6984824bbff4eff8dda",
        event_type: Some("changed"),
        object_id: Some("1204312345678901"),
    },
    Case {
        preset: Preset::Resend,
        event_id: "msg_2ZsHQK9pX1mJbYvW8cT4uN6rA3e",
        event_type: Some("email.delivered"),
        object_id: Some("56761188-7520-42d8-8898-ff6fc54ce618"),
    },
];

const CURRENT: &str = "whsec_cHJlc2V0LXNlY3JldC1jdXJyZW50";
const PREVIOUS: &str = "whsec_cHJlc2V0LXNlY3JldC1wcmV2aW91cw==";
/// Basic credentials are `user:password`.
const CURRENT_BASIC: &str = "hooks:cHJlc2V0-current";
const PREVIOUS_BASIC: &str = "hooks:cHJlc2V0-previous";

/// The preset's current and previous secret.
fn secrets(preset: Preset) -> (&'static str, &'static str) {
    match preset.scheme() {
        app::schemes::Scheme::Basic => (CURRENT_BASIC, PREVIOUS_BASIC),
        _ => (CURRENT, PREVIOUS),
    }
}

/// Every preset of [`CASES`], one source each named after it, with two secrets.
fn presets_config() -> Config {
    let mut text = String::from("[server]\npublic_url = \"https://hooks.example.com\"\n");
    for case in CASES {
        let name = case.preset.name();
        let basic = match case.preset.scheme() {
            app::schemes::Scheme::Basic => "_BASIC",
            _ => "",
        };
        text.push_str(&format!(
            "[[sources]]\nname = \"{name}\"\npreset = \"{name}\"\nsecrets_env = [\"CURRENT{basic}\", \"PREVIOUS{basic}\"]\n"
        ));
    }
    let env = |name: &str| match name {
        "CURRENT" => Some(CURRENT.to_string()),
        "PREVIOUS" => Some(PREVIOUS.to_string()),
        "CURRENT_BASIC" => Some(CURRENT_BASIC.to_string()),
        "PREVIOUS_BASIC" => Some(PREVIOUS_BASIC.to_string()),
        _ => None,
    };
    Config::parse(&text, Path::new("presets.toml"), &env).expect("every preset is valid")
}

/// The provider's delivery: the body and headers of the first valid vector with a JSON body,
/// without the headers its signature sets.
fn provider_delivery(preset: Preset, signed: &[&str]) -> (String, Vec<(String, String)>) {
    let path = format!(
        "{}/../app/tests/vectors/{}.json",
        env!("CARGO_MANIFEST_DIR"),
        preset.name()
    );
    let vectors: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let vector = vectors
        .iter()
        .find(|v| {
            v["expect"] == "valid"
                && v.get("challenge_response").is_none()
                && serde_json::from_str::<serde_json::Value>(v["body"].as_str().unwrap()).is_ok()
        })
        .unwrap_or_else(|| panic!("{path}: no valid vector with a JSON body"));
    let headers = vector["headers"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| !signed.contains(&name.to_ascii_lowercase().as_str()))
        .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_string()))
        .collect();
    (vector["body"].as_str().unwrap().to_string(), headers)
}

/// `headers` and the signature `secret` makes for `body` at `at`, as the provider sends them.
fn sign(
    config: &Config,
    preset: Preset,
    secret: &str,
    headers: &[(String, String)],
    body: &str,
    at: i64,
) -> Vec<(String, String)> {
    let source = config.source(preset.name()).unwrap();
    let key = source.auth().parse_secret(secret).unwrap();
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        map.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    let url = format!("https://hooks.example.com/hooks/{}", preset.name());
    let request = Request {
        method: "POST",
        query: None,
        url: Some(&url),
        headers: &map,
        body: body.as_bytes(),
    };
    let msg_id = map
        .get("svix-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("msg")
        .to_string();
    let mut sent = headers.to_vec();
    for (name, value) in source.auth().sign(&key, &msg_id, &request, at) {
        sent.push((name.to_string(), value));
    }
    sent
}

/// The answer's status and body of a delivery to the preset's source.
async fn post(app: &TestApp, preset: Preset, headers: &[(String, String)], body: &str) -> Answer {
    app.post(preset.name(), headers, body.as_bytes().to_vec())
        .await
}

both_backends!(every_recipe_preset_takes_its_providers_delivery_and_refuses_a_forgery);
async fn every_recipe_preset_takes_its_providers_delivery_and_refuses_a_forgery(backend: Backend) {
    let config = presets_config();
    let app = spawn_app_with(backend, presets_config()).await;
    for case in CASES {
        let preset = case.preset;
        let name = preset.name();
        let auth = config.source(name).unwrap().auth();
        let mut signature_headers: Vec<&str> = auth.signature_headers();
        signature_headers.extend(auth.token_header);
        signature_headers.extend([
            "x-hubspot-request-timestamp",
            "svix-timestamp",
            "x-zm-request-timestamp",
            "twitch-eventsub-message-timestamp",
        ]);
        signature_headers.push("authorization");
        let (body, headers) = provider_delivery(preset, &signature_headers);
        let (current_secret, previous_secret) = secrets(preset);
        let current = sign(&config, preset, current_secret, &headers, &body, now());

        let accepted = post(&app, preset, &current, &body).await;
        assert_eq!(
            (accepted.status, &accepted.body),
            (
                200,
                &json!({"status": "accepted", "event_id": case.event_id})
            ),
            "{name}"
        );
        let stored = texts(
            &app.db,
            "SELECT event_type, object_id FROM webhook_events WHERE source = $1",
            vec![name.into()],
        )
        .await;
        assert_eq!(
            stored,
            [[
                case.event_type.map(str::to_string),
                case.object_id.map(str::to_string)
            ]],
            "{name}"
        );
        // The archive keeps no secret (a token sent as it is is redacted as a credential).
        let archived = texts(
            &app.db,
            "SELECT CAST(headers AS TEXT) FROM webhook_events WHERE source = $1",
            vec![name.into()],
        )
        .await;
        let archived = archived[0][0].clone().unwrap();
        assert!(
            !archived.contains("cHJlc2V0")
                && !archived.contains("preset-secret")
                && !archived.contains("aG9va3M6"),
            "{name}: {archived}"
        );
        let retried = post(&app, preset, &current, &body).await;
        assert_eq!(retried.outcome(), "duplicate", "{name}: {:?}", retried.body);

        // One changed byte of the body; where nothing is signed, credentials that are not the
        // secret.
        let sends_secret = matches!(
            auth.scheme,
            app::schemes::Scheme::Token | app::schemes::Scheme::Basic
        );
        let tampered = match auth.token_header {
            None if sends_secret => {
                let wrong = sign(&config, preset, "hooks:wrong", &headers, &body, now());
                post(&app, preset, &wrong, &body).await
            }
            None => {
                let last = body.rfind(|c: char| c.is_ascii_alphanumeric()).unwrap();
                let mut changed = body.clone().into_bytes();
                changed[last] = if changed[last] == b'0' { b'1' } else { b'0' };
                app.post(name, &current, changed).await
            }
            Some(token_header) => {
                let forged: Vec<(String, String)> = current
                    .iter()
                    .map(|(n, v)| match n.eq_ignore_ascii_case(token_header) {
                        true => (n.clone(), format!("{v}x")),
                        false => (n.clone(), v.clone()),
                    })
                    .collect();
                post(&app, preset, &forged, &body).await
            }
        };
        assert_eq!(tampered.status, 401, "{name}");

        // The previous secret verifies (the same event: a duplicate, not a 401).
        let previous = sign(&config, preset, previous_secret, &headers, &body, now());
        let rotated = post(&app, preset, &previous, &body).await;
        assert_eq!(rotated.outcome(), "duplicate", "{name}: {:?}", rotated.body);

        let mut refused = 1;
        if auth.has_timestamp() {
            let tolerance = config.source(name).unwrap().tolerance_secs;
            let age = i64::try_from(tolerance).unwrap() + 1;
            let stale = sign(
                &config,
                preset,
                current_secret,
                &headers,
                &body,
                now() - age,
            );
            assert_eq!(
                post(&app, preset, &stale, &body).await.status,
                401,
                "{name}"
            );
            refused += 1;
        }
        let causes = texts(
            &app.db,
            "SELECT cause FROM rejected_requests WHERE source = $1 ORDER BY id",
            vec![name.into()],
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut causes = causes.await;
        while causes.len() < refused && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            causes = texts(
                &app.db,
                "SELECT cause FROM rejected_requests WHERE source = $1 ORDER BY id",
                vec![name.into()],
            )
            .await;
        }
        let causes: Vec<String> = causes.into_iter().filter_map(|r| r[0].clone()).collect();
        assert!(
            causes[0].ends_with("none of 2 secrets"),
            "{name}: the changed byte's cause: {causes:?}"
        );
        if auth.has_timestamp() {
            assert!(
                causes[1].starts_with("timestamp ") && causes[1].contains("older than"),
                "{name}: {causes:?}"
            );
        }
    }
}

both_backends!(zooms_url_validation_is_answered_after_its_signature_and_never_archived);
async fn zooms_url_validation_is_answered_after_its_signature_and_never_archived(backend: Backend) {
    let config = presets_config();
    let app = spawn_app_with(backend, presets_config()).await;
    let body = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1764748799000,"event":"endpoint.url_validation"}"#;
    let signed = sign(&config, Preset::Zoom, CURRENT, &[], body, now());
    let answer = post(&app, Preset::Zoom, &signed, body).await;
    let key = config
        .source("zoom")
        .unwrap()
        .auth()
        .parse_secret(CURRENT)
        .unwrap();
    assert_eq!(
        (answer.status, answer.body),
        (
            200,
            json!({
                "plainToken": "qgg8vlvZRS6UYooatFL8Aw",
                "encryptedToken": key.hmac_sha256_hex(b"qgg8vlvZRS6UYooatFL8Aw")
            })
        )
    );
    let unsigned = post(&app, Preset::Zoom, &[], body).await;
    assert_eq!(
        unsigned.status, 401,
        "answered only once its signature verifies"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0,
        "a handshake is no event"
    );
}

both_backends!(twitchs_callback_verification_is_answered_as_text_after_its_signature);
async fn twitchs_callback_verification_is_answered_as_text_after_its_signature(backend: Backend) {
    let config = presets_config();
    let app = spawn_app_with(backend, presets_config()).await;
    let body = r#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"type":"channel.follow"}}"#;
    let headers = [
        (
            "Twitch-Eventsub-Message-Id".to_string(),
            "e76c6bd4-55c9-4987-8304-da1588d8988b".to_string(),
        ),
        (
            "Twitch-Eventsub-Message-Type".to_string(),
            "webhook_callback_verification".to_string(),
        ),
    ];
    let signed = sign(&config, Preset::Twitch, CURRENT, &headers, body, now());
    let mut request = app.client.post(app.url("/hooks/twitch")).body(body);
    for (name, value) in &signed {
        request = request.header(name, value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(
        response.text().await.unwrap(),
        "pogchamp-kappa-360noscope-vohiyo"
    );
    let forged = post(&app, Preset::Twitch, &headers, body).await;
    assert_eq!(
        forged.status, 401,
        "answered only once its signature verifies"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0,
        "a handshake is no event"
    );
}
