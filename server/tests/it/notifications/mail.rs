//! The `email` kind through a real SMTP server (`aiosmtpd`, which the test command starts: its
//! address in `HOOKBOX_TEST_SMTP`, the mails it took in the maildir `HOOKBOX_TEST_MAILDIR`): a
//! plain text mail with the event in its subject, to every recipient, with no body or secret.

use super::*;

/// The mails of the test maildir addressed to `to`, as their raw text.
fn mails_to(to: &str) -> Vec<String> {
    let dir = std::env::var("HOOKBOX_TEST_MAILDIR")
        .expect("HOOKBOX_TEST_MAILDIR: the test command starts aiosmtpd (.ci/test)");
    let mut mails = Vec::new();
    for sub in ["new", "cur"] {
        let Ok(entries) = std::fs::read_dir(Path::new(&dir).join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if text.contains(to) {
                mails.push(text);
            }
        }
    }
    mails
}

both_backends!(an_email_channel_mails_each_recipient_the_problem_in_plain_text);
async fn an_email_channel_mails_each_recipient_the_problem_in_plain_text(backend: Backend) {
    let smtp = std::env::var("HOOKBOX_TEST_SMTP")
        .expect("HOOKBOX_TEST_SMTP: the test command starts aiosmtpd (.ci/test)");
    let tag = format!("{backend:?}-{:x}", rand::random::<u32>()).to_lowercase();
    let (first, second) = (
        format!("oncall-{tag}@example.com"),
        format!("lead-{tag}@example.com"),
    );
    let channel = format!(
        "
[[notifications]]
name = \"mail\"
kind = \"email\"
smtp_url_env = \"SMTP_URL\"
from = \"hookbox@example.com\"
to = [\"{first}\", \"{second}\"]
min_interval_secs = 0
"
    );
    let url = format!("smtp://{smtp}");
    let env = [("SMTP_URL", url.as_str())];
    let app = spawn_app_with(backend, config(false, &channel, &env)).await;

    failures(&app, "m", 2).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while mails_to(&first).is_empty() {
        assert!(Instant::now() < deadline, "no mail came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settled(&app.db).await;

    let mails = mails_to(&first);
    assert_eq!(mails.len(), 1, "{backend:?}: one mail for one change");
    let mail = &mails[0];
    assert!(mail.contains(&second), "both recipients: {mail}");
    assert!(
        mail.contains("Subject: hookbox: problem opened in crm"),
        "{mail}"
    );
    assert!(mail.contains("text/plain"), "{mail}");
    assert!(mail.contains("Source: crm"), "{mail}");
    assert!(mail.contains(MISSING), "{mail}");
    for secret in [SHOP_SECRET, "\"n\":", "payload"] {
        assert!(!mail.contains(secret), "{secret} in {mail}");
    }
    assert_eq!(sends(&app.db).await, vec![("sent".into(), 1)]);
}
