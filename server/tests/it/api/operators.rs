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
