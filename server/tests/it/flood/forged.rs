//! The forged deliveries of the flood: one to each kind of verifier that is not `hmac-sha256`.

use crate::support::now;

/// The `n`th forged delivery to one of the sources whose verifier is not `hmac-sha256`: a
/// recipe (Lemon Squeezy), Twilio's sorted form of 2,000 fields, Mailgun's signature object in a
/// JSON body, eight forged Ed25519 `v1a` entries, and Asana's unsigned handshake with no one
/// waiting. Each body is about 16 KiB.
pub(super) fn forged_delivery(n: u64) -> (&'static str, Vec<(&'static str, String)>, String) {
    let filler = "f".repeat(16 * 1024);
    let json = ("Content-Type", "application/json".to_string());
    match n % 5 {
        0 => (
            "lemon",
            vec![json, ("X-Signature", "ab".repeat(32))],
            format!(r#"{{"meta":{{"event_name":"order_created"}},"pad":"{filler}"}}"#),
        ),
        1 => (
            "twilio",
            vec![
                ("Content-Type", "application/x-www-form-urlencoded".into()),
                ("X-Twilio-Signature", "Zm9yZ2VkLXNpZ25hdHVyZQ==".into()),
            ],
            (0..2000)
                .map(|f| format!("F{:04}=v{}", 1999 - f, f % 7))
                .collect::<Vec<_>>()
                .join("&"),
        ),
        2 => (
            "mailgun",
            vec![json],
            format!(
                r#"{{"signature":{{"timestamp":"{}","token":"t{n}","signature":"{}"}},"event-data":{{"id":"x","pad":"{filler}"}}}}"#,
                now(),
                "cd".repeat(32)
            ),
        ),
        3 => {
            let entry = format!("v1a,{}", "A".repeat(86) + "==");
            let entries = vec![entry; 8].join(" ");
            (
                "stdwh",
                vec![
                    json,
                    ("webhook-id", format!("msg_{n}")),
                    ("webhook-timestamp", now().to_string()),
                    ("webhook-signature", entries),
                ],
                format!(r#"{{"type":"x","pad":"{filler}"}}"#),
            )
        }
        _ => (
            "asana",
            vec![json, ("X-Hook-Secret", format!("forged-secret-{n}"))],
            String::new(),
        ),
    }
}
