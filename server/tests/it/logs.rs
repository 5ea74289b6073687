//! The built binary's text log against hostile strings: a value a request controls is written
//! with its control characters escaped, so it can never end a log line and forge the next.

use crate::support::*;

const CONFIG: &str = r#"
[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
"#;

#[tokio::test]
async fn an_export_filter_with_line_breaks_is_logged_on_one_escaped_line() {
    let (_db, url) = fresh_postgres(&cluster_url()).await;
    let process = Binary::start(&url, CONFIG, &[("RUST_LOG", "info")]).await;
    let client = reqwest::Client::new();
    let signed_in = client
        .post(format!("http://{}/api/login", process.addr))
        .header("Accept", "application/json")
        .form(&[
            ("name", "admin"),
            ("password", "a test password"),
            ("next", "/"),
        ])
        .send()
        .await
        .expect("sign-in answers");
    let cookie = crate::support::session_cookie(signed_in.headers()).expect("a session");

    // `q` = "x\nFORGED  INFO signed in user=root\r\u{1b}[2J", as a URL sends it.
    let export = client
        .get(format!(
            "http://{}/export/events?q=x%0AFORGED%20%20INFO%20signed%20in%20user%3Droot%0D%1B%5B2J",
            process.addr
        ))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("export answers");
    assert_eq!(export.status(), 200);
    let _ = export.text().await;

    let log = process.log();
    let line = log
        .lines()
        .find(|line| line.contains("export started"))
        .unwrap_or_else(|| panic!("no export line in {log}"));
    assert!(
        line.contains(r"x\nFORGED  INFO signed in user=root\r\u{1b}[2J"),
        "{line}"
    );
    assert!(
        !log.lines().any(|l| l.starts_with("FORGED")),
        "a forged line: {log}"
    );
    assert!(!log.contains('\u{1b}') && !log.contains('\r'), "{log}");
}
