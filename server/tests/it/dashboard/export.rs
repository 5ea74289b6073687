//! Export and resend: the deliveries of a filter as NDJSON or CSV (rows equal to the filter,
//! bodies exact, no headers, at most 100,000, audited), and "copy as curl", whose command run
//! against the server gives a duplicate of the original.
#![allow(clippy::unwrap_used)]

use super::*;
use sea_orm::ConnectionTrait;

/// An export as a signed-in user downloads it: (status, content type, body).
async fn export(app: &TestApp, cookie: &str, query: &str) -> (StatusCode, String, String) {
    let response = no_redirects()
        .get(app.url(&format!("/export/events?{query}")))
        .header("Cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, kind, response.text().await.unwrap())
}

both_backends!(an_export_holds_the_rows_of_its_filter_with_their_bodies_exact_and_is_audited);
async fn an_export_holds_the_rows_of_its_filter_with_their_bodies_exact_and_is_audited(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.send_bytes("shop", b"not json, \"quoted\",\nand a =formula", &[])
        .await;
    for n in 1..=3 {
        let snapshot = format!(r#"{{"total": 1234567890123456789{n}, "note": "a,b \"c\""}}"#);
        app.send(
            "shop",
            &event(&format!("e{n}"), &format!("order-{n}"), 1, &snapshot),
        )
        .await;
    }

    let (status, kind, ndjson) = export(&app, &cookie, "format=ndjson&status=processed").await;

    assert_eq!(status, StatusCode::OK, "{ndjson}");
    assert!(kind.starts_with("application/x-ndjson"), "{kind}");
    let lines: Vec<serde_json::Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["e3", "e2", "e1"],
        "{backend:?}: newest first, the filter's rows only"
    );
    let sent = event(
        "e2",
        "order-2",
        1,
        r#"{"total": 12345678901234567892, "note": "a,b \"c\""}"#,
    );
    assert_eq!(lines[1]["body"], sent.as_str(), "the body as received");
    assert!(lines[1].get("headers").is_none(), "no headers are exported");
    assert_eq!(lines[1]["outcome"], "applied");

    // CSV: a header, one quoted line per row, a formula defused; a body with a line break stays one field.
    let (status, kind, csv) = export(&app, &cookie, "format=csv&status=failed").await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("text/csv"), "{kind}");
    assert!(csv.starts_with("id,received_at,source,event_id,"), "{csv}");
    assert!(
        csv.contains("\"not json, \"\"quoted\"\",\nand a =formula\""),
        "{csv}"
    );
    assert_eq!(csv.matches("\"shop\"").count(), 1);
    // match narrows it like the list.
    let (_, _, one) = export(
        &app,
        &cookie,
        &format!(
            "format=ndjson&match={}",
            app::url::urlencode(r#"{"event_id":"e1"}"#)
        ),
    )
    .await;
    assert_eq!(one.lines().count(), 1, "{one}");

    let audited = texts(
        &app.db,
        "SELECT actor, target, outcome, detail FROM audit_log WHERE action = 'export' ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(audited.len(), 3);
    assert_eq!(
        audited[0],
        [
            Some("vera".to_string()),
            Some("ndjson".to_string()),
            Some("started".to_string()),
            Some("ndjson of every source, status processed (at most 100000 rows)".to_string())
        ]
    );

    // Refusals name what is wrong, and nothing is audited for them.
    let (status, _, body) = export(&app, &cookie, "format=xml").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("format: \"xml\""), "{body}");
    let (status, _, body) = export(&app, &cookie, "format=csv&status=lost").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("status: \"lost\""), "{body}");
    let anonymous = no_redirects()
        .get(app.url("/export/events?format=csv"))
        .send()
        .await
        .unwrap();
    assert!(
        anonymous.status().is_redirection(),
        "{}",
        anonymous.status()
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'export'"
        )
        .await,
        3
    );
}

#[tokio::test]
async fn an_export_stops_at_its_cap_of_100000_rows_the_newest() {
    let app = spawn_app(Backend::Postgres).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.db
        .writer
        .execute_unprepared(
            "INSERT INTO webhook_events (source, event_id, status, outcome, headers, body, received_at)
             SELECT 'shop', 'bulk-' || g, 'processed', 'applied', '{}', convert_to('{}', 'UTF8'),
                    now() - g * interval '1 millisecond'
             FROM generate_series(1, 100005) AS g",
        )
        .await
        .unwrap();

    let (status, _, csv) = export(&app, &cookie, "format=csv").await;

    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 100_000);
    assert!(
        lines[1].contains("\"bulk-1\""),
        "the newest first: {}",
        lines[1]
    );
    assert!(
        lines[100_000].contains("\"bulk-100000\""),
        "{}",
        lines[100_000]
    );
}

both_backends!(the_copied_curl_command_sends_the_delivery_again_as_a_duplicate);
async fn the_copied_curl_command_sends_the_delivery_again_as_a_duplicate(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.unwrap();
    let body = event(
        "e1",
        "order-1",
        1,
        r#"{"note":"it's \"quoted\" $HOME `x` \\n"}"#,
    );
    assert_eq!(app.send("shop", &body).await.outcome(), "applied");
    let id = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .unwrap()
        .to_string();

    let (status, detail) = call(&app, Some(&cookie), "event", &[("id", &id)]).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    let detail: serde_json::Value = serde_json::from_str(&detail).unwrap();
    let command = detail["curl"].as_str().unwrap();
    assert!(
        command.contains(&format!("http://{}/hooks/shop", app.addr)),
        "{command}"
    );
    // Run beside the server (the test's runtime has one thread): tokio's process, not std's.
    let output = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(command)
        .output()
        .await
        .unwrap();

    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["status"], "duplicate", "{answer}");
    assert_eq!(answer["event_id"], "e1");
    // The resend was archived with the original's bytes.
    let bodies = texts(
        &app.db,
        "SELECT outcome FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(
        bodies,
        [vec![Some("applied".into())], vec![Some("duplicate".into())]]
    );
    let same = count(&app.db, "SELECT count(DISTINCT body) FROM webhook_events").await;
    assert_eq!(same, 1, "the body was sent exactly");
}
