//! `GET /api/v1/rejected` and `GET /api/v1/audit`: operators' tokens of every source only.

use super::*;

both_backends!(operators_read_the_refused_requests_and_the_audit_log);
async fn operators_read_the_refused_requests_and_the_audit_log(backend: Backend) {
    let app = spawn_app(backend).await;
    let forged = app
        .post(
            "shop",
            &[("X-Hookbox-Signature".into(), "t=1,v1=forged".into())],
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(forged.status, 401);
    let operator = token(&app, "ops", Role::Operator, &[]).await;
    let viewer = token(&app, "viewer", Role::Viewer, &[]).await;
    let limited = token(&app, "limited-ops", Role::Operator, &["shop"]).await;
    // The refused-requests log is written off the request's path.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let rejected = loop {
        let (status, _, page) = get(&app, Some(&operator), "/api/v1/rejected?source=shop").await;
        assert_eq!(status, 200, "{page}");
        if !page["data"].as_array().unwrap().is_empty() || std::time::Instant::now() > deadline {
            break page;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(rejected["data"][0]["source"], "shop");
    for (who, status) in [(&viewer, 403), (&limited, 403)] {
        let (got, _, _) = get(&app, Some(who), "/api/v1/rejected").await;
        assert_eq!(got, status);
    }
    let (status, _, audit) = get(&app, Some(&operator), "/api/v1/audit?action=add_token").await;
    assert_eq!(status, 200, "{audit}");
    let targets: Vec<&str> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["limited-ops", "viewer", "ops"]);
}

both_backends!(audit_pages_return_every_entry_once_counted_sign_ins_included);
async fn audit_pages_return_every_entry_once_counted_sign_ins_included(backend: Backend) {
    let app = spawn_app(backend).await;
    let operator = token(&app, "ops", Role::Operator, &[]).await;
    for n in 0..6 {
        token(&app, &format!("script-{n}"), Role::Viewer, &[]).await;
    }
    // Failed sign-ins: five counted rows in one minute, two in the one before.
    let minute = app::db::audit::minute_of(chrono::Utc::now()) - chrono::Duration::minutes(3);
    for (client, name, at) in [
        ("10.0.0.1", "olga", minute),
        ("10.0.0.2", "olga", minute),
        ("10.0.0.3", "olga", minute),
        ("10.0.0.1", "ivan", minute),
        ("10.0.0.2", "ivan", minute),
        ("10.0.0.1", "olga", minute - chrono::Duration::minutes(1)),
        ("10.0.0.9", "root", minute - chrono::Duration::minutes(1)),
    ] {
        app::db::audit::record_sign_in_failure(&app.db, client, name, at)
            .await
            .unwrap();
    }
    let (status, _, whole) = get(&app, Some(&operator), "/api/v1/audit?limit=500").await;
    assert_eq!(status, 200, "{whole}");
    let whole = whole["data"].as_array().unwrap().clone();
    assert_eq!(whole.len(), 7 + 7, "{whole:?}");
    assert_eq!(
        whole.iter().filter(|e| e["action"] == "sign_in").count(),
        7,
        "{whole:?}"
    );

    // Two at a time: the same entries, in the same order, each once.
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let path = match &cursor {
            Some(c) => format!("/api/v1/audit?limit=2&cursor={c}"),
            None => "/api/v1/audit?limit=2".to_string(),
        };
        let (status, _, page) = get(&app, Some(&operator), &path).await;
        assert_eq!(status, 200, "{path}: {page}");
        walked.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    // A count's id (below 0) numbers it within its page only.
    let unnumbered = |entries: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        entries
            .into_iter()
            .map(|mut e| {
                if e["id"].as_i64().unwrap() < 0 {
                    e["id"] = serde_json::Value::Null;
                }
                e
            })
            .collect()
    };
    assert_eq!(unnumbered(walked), unnumbered(whole));

    let (status, _, problem) = get(&app, Some(&operator), "/api/v1/audit?cursor=zzz").await;
    assert_eq!(status, 400, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("cursor"),
        "{problem}"
    );
}
