//! The dashboard pages' security headers, and a content security policy carrying the nonce of
//! their scripts.

use super::*;

#[tokio::test]
async fn dashboard_pages_carry_security_headers_and_a_policy_with_their_scripts_nonce() {
    let app = spawn_app(Backend::Sqlite).await;
    let response = app
        .client
        .get(app.url("/login"))
        .send()
        .await
        .expect("the login page");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let policy = header("content-security-policy");
    let (frame, sniff, referrer) = (
        header("x-frame-options"),
        header("x-content-type-options"),
        header("referrer-policy"),
    );
    let html = response.text().await.expect("html");

    assert_eq!(frame, "DENY");
    assert_eq!(sniff, "nosniff");
    assert_eq!(referrer, "same-origin");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(policy.contains("object-src 'none'"), "{policy}");
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a nonce in the policy");
    assert!(
        html.contains(&format!("nonce=\"{nonce}\"")),
        "the page's scripts carry the policy's nonce"
    );
    // Another page view, another nonce.
    let again = app
        .client
        .get(app.url("/login"))
        .send()
        .await
        .expect("again");
    let second = again
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(!second.contains(nonce));
}
