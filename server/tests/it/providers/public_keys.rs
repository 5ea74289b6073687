//! Public-key signatures over HTTP, on both backends, signed here with test keys as the
//! providers sign: Discord's PING is answered and not archived and an interaction is accepted,
//! SendGrid's batch is accepted, a Standard Webhooks header with a `v1` and a `v1a` entry
//! verifies by either; one changed byte, a stale timestamp and another key are 401, and the
//! second configured key verifies.
#![allow(clippy::unwrap_used)]

use super::*;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::json;

fn ed25519(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn p256_key(seed: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_bytes(&[seed; 32].into()).unwrap()
}

/// The DER SubjectPublicKeyInfo of `key`'s public key, as SendGrid shows it (base64): the
/// fixed prefix of an uncompressed P-256 key, then the point.
fn spki_der(key: &p256::ecdsa::SigningKey) -> Vec<u8> {
    let mut der = hex::decode("3059301306072a8648ce3d020106082a8648ce3d030107034200").unwrap();
    der.extend_from_slice(key.verifying_key().to_encoded_point(false).as_bytes());
    der
}

const CONFIG: &str = r#"
[[sources]]
name = "discord"
preset = "discord"
public_keys_env = ["DISCORD_KEY", "DISCORD_KEY_NEXT"]

[[sources]]
name = "sendgrid"
preset = "sendgrid"
public_keys_env = ["SENDGRID_KEY"]

[[sources]]
name = "stdwh"
scheme = "standard-webhooks"
mode = "dedup"
event_id = "header:webhook-id"
secrets_env = ["STDWH_SECRET"]
public_keys_env = ["STDWH_KEY"]
"#;

/// `whsec_` + base64 of "standard-webhooks-secret".
const STDWH_SECRET: &str = "whsec_c3RhbmRhcmQtd2ViaG9va3Mtc2VjcmV0";

fn config() -> Config {
    let env = |name: &str| match name {
        "DISCORD_KEY" => Some(hex::encode(ed25519(1).verifying_key().as_bytes())),
        "DISCORD_KEY_NEXT" => Some(hex::encode(ed25519(2).verifying_key().as_bytes())),
        "SENDGRID_KEY" => Some(STANDARD.encode(spki_der(&p256_key(3)))),
        "STDWH_SECRET" => Some(STDWH_SECRET.to_string()),
        "STDWH_KEY" => Some(format!(
            "whpk_{}",
            STANDARD.encode(ed25519(4).verifying_key().as_bytes())
        )),
        _ => None,
    };
    Config::parse(CONFIG, Path::new("keys.toml"), &env).expect("the keys are valid")
}

fn pairs(list: &[(&str, String)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect()
}

/// Discord's headers for `body` signed by `key` at `at`.
fn discord(key: &SigningKey, body: &str, at: i64) -> Vec<(String, String)> {
    let stamp = at.to_string();
    let signature = key.sign(format!("{stamp}{body}").as_bytes());
    pairs(&[
        ("X-Signature-Ed25519", hex::encode(signature.to_bytes())),
        ("X-Signature-Timestamp", stamp),
    ])
}

both_backends!(public_key_signatures_are_verified_with_the_configured_keys);
async fn public_key_signatures_are_verified_with_the_configured_keys(backend: Backend) {
    let app = spawn_app_with(backend, config()).await;

    // Discord: the PING is answered and not archived; an interaction is an event.
    let ping = r#"{"id":"ping-1","type":1}"#;
    let pong = app
        .post("discord", &discord(&ed25519(1), ping, now()), ping.into())
        .await;
    assert_eq!((pong.status, pong.body), (200, json!({"type": 1})));
    let command = r#"{"id":"1200000000000000001","type":2,"data":{"id":"cmd-7","name":"hello"}}"#;
    let accepted = app
        .post(
            "discord",
            &discord(&ed25519(1), command, now()),
            command.into(),
        )
        .await;
    assert_eq!(
        accepted.body,
        json!({"status": "accepted", "event_id": "1200000000000000001"})
    );
    let rotated = app
        .post(
            "discord",
            &discord(&ed25519(2), command, now()),
            command.into(),
        )
        .await;
    assert_eq!(rotated.outcome(), "duplicate", "the second key verifies");
    let changed = command.replace("hello", "hellp");
    let forged = app
        .post(
            "discord",
            &discord(&ed25519(1), command, now()),
            changed.into(),
        )
        .await;
    assert_eq!(forged.status, 401);
    let stale = app
        .post(
            "discord",
            &discord(&ed25519(1), command, now() - 301),
            command.into(),
        )
        .await;
    assert_eq!(stale.status, 401);
    let stranger = app
        .post(
            "discord",
            &discord(&ed25519(9), command, now()),
            command.into(),
        )
        .await;
    assert_eq!(stranger.status, 401);
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE source = 'discord'"
        )
        .await,
        2,
        "the interaction and its duplicate; never the PING"
    );

    // SendGrid: a batch signed with ECDSA P-256.
    let batch = "[{\"email\":\"a@example.com\",\"event\":\"delivered\",\"sg_event_id\":\"sg-ev-1\",\"sg_message_id\":\"sg-msg-1\"}]\r\n";
    let sendgrid = |body: &str, at: i64| {
        let stamp = at.to_string();
        let signature: p256::ecdsa::Signature =
            p256_key(3).sign(format!("{stamp}{body}").as_bytes());
        pairs(&[
            (
                "X-Twilio-Email-Event-Webhook-Signature",
                STANDARD.encode(signature.to_der().as_bytes()),
            ),
            ("X-Twilio-Email-Event-Webhook-Timestamp", stamp),
        ])
    };
    let accepted = app
        .post("sendgrid", &sendgrid(batch, now()), batch.into())
        .await;
    assert_eq!(
        accepted.body,
        json!({"status": "accepted", "event_id": "sg-ev-1"})
    );
    let forged = app
        .post(
            "sendgrid",
            &sendgrid(batch, now()),
            batch.replace("a@", "b@").into(),
        )
        .await;
    assert_eq!(forged.status, 401);

    // Standard Webhooks: `v1` (HMAC) and `v1a` (Ed25519) entries in one header.
    let body = r#"{"type":"invoice.paid"}"#;
    let stdwh = |id: &str, v1: bool, v1a: &SigningKey, at: i64| {
        let stamp = at.to_string();
        let signed = format!("{id}.{stamp}.{body}");
        let mut entries = Vec::new();
        if v1 {
            let key = app::schemes::Scheme::StandardWebhooks
                .parse_secret(STDWH_SECRET)
                .unwrap();
            let headers =
                app::schemes::Scheme::StandardWebhooks.sign(&key, id, body.as_bytes(), at);
            let v1 = headers
                .into_iter()
                .find(|(n, _)| n == "webhook-signature")
                .unwrap()
                .1;
            entries.push(v1);
        }
        entries.push(format!(
            "v1a,{}",
            STANDARD.encode(v1a.sign(signed.as_bytes()).to_bytes())
        ));
        pairs(&[
            ("webhook-id", id.to_string()),
            ("webhook-timestamp", stamp),
            ("webhook-signature", entries.join(" ")),
        ])
    };
    let both = app
        .post(
            "stdwh",
            &stdwh("msg_1", true, &ed25519(4), now()),
            body.into(),
        )
        .await;
    assert_eq!(both.outcome(), "accepted", "{:?}", both.body);
    let key_only = app
        .post(
            "stdwh",
            &stdwh("msg_2", false, &ed25519(4), now()),
            body.into(),
        )
        .await;
    assert_eq!(key_only.outcome(), "accepted", "v1a alone verifies");
    let secret_only = app
        .post(
            "stdwh",
            &stdwh("msg_3", true, &ed25519(9), now()),
            body.into(),
        )
        .await;
    assert_eq!(secret_only.outcome(), "accepted", "v1 alone verifies");
    let neither = app
        .post(
            "stdwh",
            &stdwh("msg_4", false, &ed25519(9), now()),
            body.into(),
        )
        .await;
    assert_eq!(neither.status, 401, "a v1a entry signed with another key");
}
