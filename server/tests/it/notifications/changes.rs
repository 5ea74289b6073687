//! A problem's changes told through a `webhook` channel: opened once however many failures,
//! resolved once by the replays that fix it; folded within the interval; retried.

use super::*;
use app::model::Role;

both_backends!(failures_open_a_problem_once_and_the_replays_that_fix_it_resolve_it_once);
async fn failures_open_a_problem_once_and_the_replays_that_fix_it_resolve_it_once(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(vec![]).await;
    let app = broken(backend, &url, 0).await;

    let ids = failures(&app, "n", 3).await;
    let opened = receiver.wait_for(1).await;
    let fixed = fixed(&app, &url, 0).await;
    let token = token(&fixed, "fixer", Role::Operator, &[]).await;
    for id in &ids {
        let (status, answer) =
            post(&fixed, &token, &format!("/api/v1/events/{id}/replay"), "{}").await;
        assert_eq!(status, 200, "{backend:?}: {answer}");
    }
    let got = receiver.wait_for(2).await;
    settled(&app.db).await;

    assert_eq!(receiver.got().len(), 2, "{backend:?}: one message a change");
    let opened = verified(&opened[0]);
    assert_eq!(opened["type"], "problem.opened", "{opened}");
    assert_eq!(opened["problem"]["source"], "crm");
    assert_eq!(opened["problem"]["outcome"], "invalid");
    assert_eq!(opened["problem"]["class"], MISSING);
    assert_eq!(opened["problem"]["state"], "open");
    assert!(
        opened["problem"]["open_failures"].as_i64().unwrap() >= 1,
        "{opened}"
    );
    assert_eq!(opened["changes"], 1);
    let resolved = verified(&got[1]);
    assert_eq!(resolved["type"], "problem.resolved", "{resolved}");
    assert_eq!(resolved["problem"]["open_failures"], 0);
    assert_eq!(resolved["problem"]["state"], "resolved");
    assert_eq!(resolved["problem"]["id"], opened["problem"]["id"]);
    // Never a body, a header or a secret: the deliveries' snapshots were {"n": …}.
    for message in receiver.got() {
        for secret in [SHOP_SECRET, CHANNEL_SECRET, "\"n\":", "x-hookbox-signature"] {
            assert!(
                !message.body.contains(secret),
                "{secret} in {}",
                message.body
            );
        }
    }
    assert_eq!(
        sends(&app.db).await,
        vec![("sent".into(), 1), ("sent".into(), 1)]
    );
    assert_eq!(
        scalar(
            &app.db,
            "SELECT changes FROM problems WHERE source = 'crm'",
            vec![]
        )
        .await,
        Some(2)
    );
}

both_backends!(changes_within_the_interval_are_folded_into_one_later_message_that_counts_them);
async fn changes_within_the_interval_are_folded_into_one_later_message_that_counts_them(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(vec![]).await;
    let app = broken(backend, &url, 3600).await;
    failures(&app, "f", 1).await;
    receiver.wait_for(1).await;
    let token = token(&app, "ops", Role::Operator, &[]).await;
    let id = scalar(
        &app.db,
        "SELECT id FROM problems WHERE source = 'crm'",
        vec![],
    )
    .await
    .unwrap();

    // Resolved by an operator, then failing again: two changes within the hour.
    let (status, answer) = post(
        &app,
        &token,
        &format!("/api/v1/problems/{id}/state"),
        r#"{"state": "resolved", "reason": "the mapping is fixed"}"#,
    )
    .await;
    assert_eq!(status, 200, "{backend:?}: {answer}");
    assert_eq!(answer["changed"], true);
    crm_failures(&app, "f-again", 1).await;
    assert_problem_open(&app).await;
    settled(&app.db).await;
    // Both changes wait for the interval (one copy, or one each when the first was handed to
    // the channel before the second came).
    let put_off = scalar(
        &app.db,
        "SELECT CAST(sum(changes) AS BIGINT) FROM notification_sends WHERE status = 'pending'",
        vec![],
    )
    .await;
    assert_eq!(put_off, Some(2), "{backend:?}: both wait for the interval");
    assert_eq!(receiver.got().len(), 1, "nothing more within the hour");

    app::clock::advance(Duration::from_secs(3601));
    let got = receiver.wait_for(2).await;
    settled(&app.db).await;

    let folded = verified(&got[1]);
    assert_eq!(folded["type"], "problem.reopened", "{folded}");
    assert_eq!(folded["changes"], 2, "{folded}");
    assert_eq!(receiver.got().len(), 2);
    let sends = sends(&app.db).await;
    assert_eq!(sends[0], ("sent".into(), 1), "{sends:?}");
    let later: Vec<&str> = sends[1..].iter().map(|(s, _)| s.as_str()).collect();
    assert!(
        later == ["sent"] || later == ["folded", "sent"],
        "{backend:?}: {sends:?}"
    );
    assert_eq!(sends[1..].iter().map(|(_, n)| n).sum::<i64>(), 2);
}

both_backends!(a_channel_that_fails_is_tried_again_after_a_wait_and_then_served_once);
async fn a_channel_that_fails_is_tried_again_after_a_wait_and_then_served_once(backend: Backend) {
    let (receiver, url) = Receiver::start(vec![(500, None)]).await;
    let app = broken(backend, &url, 0).await;

    failures(&app, "r", 1).await;
    receiver.wait_for(1).await;
    settled(&app.db).await;
    let waiting = texts(
        &app.db,
        "SELECT status, last_error, CAST(attempts AS TEXT) FROM notification_sends",
        vec![],
    )
    .await;
    let cookie = signed_in(&app, "olga", Role::Viewer).await;
    let (status, overview) = call(&app, &cookie, "overview", &[]).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{overview}");
    let overview: Json = serde_json::from_str(&overview).unwrap();
    assert_eq!(
        overview["failing_channels"][0]["name"], "ops",
        "{backend:?}: {overview}"
    );
    assert_eq!(overview["failing_channels"][0]["waiting"], 1);
    assert_eq!(
        overview["failing_channels"][0]["last_error"],
        "answered 500"
    );
    app::clock::advance(Duration::from_secs(11));
    let got = receiver.wait_for(2).await;
    settled(&app.db).await;

    assert_eq!(
        waiting,
        vec![vec![
            Some("pending".into()),
            Some("answered 500".into()),
            Some("1".into())
        ]],
        "{backend:?}"
    );
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0].headers.get("webhook-id"),
        got[1].headers.get("webhook-id"),
        "the same message both times"
    );
    assert_eq!(verified(&got[1])["type"], "problem.opened");
    let done = texts(
        &app.db,
        "SELECT status, CAST(attempts AS TEXT) FROM notification_sends",
        vec![],
    )
    .await;
    assert_eq!(done, vec![vec![Some("sent".into()), Some("2".into())]]);
    let (_, overview) = call(&app, &cookie, "overview", &[]).await;
    let overview: Json = serde_json::from_str(&overview).unwrap();
    assert_eq!(
        overview["failing_channels"],
        serde_json::json!([]),
        "served: {overview}"
    );
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        r#"hookbox_notifications_total{notification="ops",outcome="failed"} 1"#,
        r#"hookbox_notifications_total{notification="ops",outcome="sent"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in the metrics");
    }
}

both_backends!(a_channel_configured_a_day_after_a_change_is_not_told_of_it);
async fn a_channel_configured_a_day_after_a_change_is_not_told_of_it(backend: Backend) {
    let app = spawn_app_with(backend, config(false, "", &[])).await;
    failures(&app, "before", 1).await;
    app::clock::advance(Duration::from_secs(25 * 3600));
    let (receiver, url) = Receiver::start(vec![]).await;
    let later = fixed(&app, &url, 0).await;
    let token = token(&later, "fixer", Role::Operator, &[]).await;
    let id = scalar(&app.db, "SELECT min(id) FROM webhook_events", vec![])
        .await
        .unwrap();

    let (status, answer) = post(&later, &token, &format!("/api/v1/events/{id}/replay"), "{}").await;
    let got = receiver.wait_for(1).await;
    settled(&app.db).await;

    assert_eq!(status, 200, "{backend:?}: {answer}");
    assert_eq!(
        receiver.got().len(),
        1,
        "the opening a day before is not told"
    );
    assert_eq!(verified(&got[0])["type"], "problem.resolved");
    // One copy sent: the resolution alone, or with the day-old opening it was recorded beside
    // before any process handed that on (then it counts 2 changes).
    let sends = sends(&app.db).await;
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(sends[0].0, "sent");
}
