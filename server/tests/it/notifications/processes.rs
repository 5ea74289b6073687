//! One message per change whatever the processes: three servers on one PostgreSQL taking the
//! failures of one cause at once, and a process killed (`kill -9`) after the change was
//! recorded and before its message was taken.

use super::*;
use crate::support::binary::{Binary, send_to};

#[tokio::test]
async fn three_processes_taking_failures_of_one_cause_at_once_send_one_message() {
    let (receiver, url) = Receiver::start(vec![]).await;
    let first = broken(Backend::Postgres, &url, 0).await;
    let env = [("OPS_URL", url.as_str()), ("OPS_SECRET", CHANNEL_SECRET)];
    let mut apps = vec![first];
    for _ in 0..2 {
        let config = config(false, &webhook_channel(0), &env);
        apps.push(spawn_app_on_with_state(apps[0].db.clone(), config, |_| {}).await);
    }

    let deliveries = apps.iter().enumerate().flat_map(|(n, app)| {
        (0..10).map(move |i| async move {
            app.send("crm", &crm_body(&format!("p{n}-{i}")))
                .await
                .status
        })
    });
    let statuses = futures::future::join_all(deliveries).await;
    assert!(statuses.iter().all(|s| *s == 422), "{statuses:?}");
    assert_problem_open(&apps[0]).await;
    receiver.wait_for(1).await;
    settled(&apps[0].db).await;
    // A moment for any second message the other processes could send.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    assert_eq!(receiver.got().len(), 1, "one message for one change");
    assert_eq!(verified(&receiver.got()[0])["type"], "problem.opened");
    assert_eq!(
        scalar(
            &apps[0].db,
            "SELECT changes FROM problems WHERE source = 'crm'",
            vec![]
        )
        .await,
        Some(1)
    );
    assert_eq!(super::sends(&apps[0].db).await, vec![("sent".into(), 1)]);
}

/// The configuration file of a process: `shop` (a delivery without a revision fails) and the
/// `ops` channel.
fn config_file() -> String {
    format!(
        "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"SHOP_SECRET\"]\n{}",
        webhook_channel(0)
    )
}

#[tokio::test]
async fn a_change_recorded_by_a_process_killed_before_its_message_was_taken_is_sent_once() {
    let (receiver, url) = Receiver::start(vec![]).await;
    *receiver.down.lock().unwrap() = true;
    let (db, database_url) = fresh_postgres(&cluster_url()).await;
    let env = [("OPS_URL", url.as_str()), ("OPS_SECRET", CHANNEL_SECRET)];
    let mut first = Binary::start(&database_url, &config_file(), &env).await;
    let client = reqwest::Client::new();

    let answer = send_to(
        &client,
        first.addr,
        r#"{"event_id":"k1","object_id":"o1","snapshot":{}}"#,
    )
    .await
    .expect("an answer");
    assert_eq!(answer.0, 422, "{answer:?}");
    // The change is recorded and its message was not taken (the channel answers 500, and the
    // refusal is recorded: a process killed while its attempt is in flight keeps the message
    // leased to it for a minute, longer than this test waits).
    receiver.wait_for(1).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while count(
        &db,
        "SELECT count(*) FROM notification_sends
         WHERE status = 'pending' AND attempts = 1 AND lease_until IS NULL",
    )
    .await
        != 1
    {
        assert!(Instant::now() < deadline, "the refusal never recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.child.kill().expect("kill -9");
    first.child.wait().expect("reaped");
    let tried = receiver.got().len();
    *receiver.down.lock().unwrap() = false;
    let _second = Binary::start(&database_url, &config_file(), &env).await;
    let got = receiver.wait_for(tried + 1).await;
    // Past the second attempt, nothing more is sent.
    let deadline = Instant::now() + Duration::from_secs(20);
    while count(
        &db,
        "SELECT count(*) FROM notification_sends WHERE status = 'sent'",
    )
    .await
        == 0
    {
        assert!(Instant::now() < deadline, "never recorded sent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let all = receiver.got();
    assert_eq!(
        all.len(),
        tried + 1,
        "one message taken, after {tried} refused"
    );
    let ids: Vec<_> = got
        .iter()
        .map(|m| m.headers.get("webhook-id").cloned())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] == w[1]),
        "the same message: {ids:?}"
    );
    assert_eq!(verified(&all[tried])["type"], "problem.opened");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM notification_sends WHERE status = 'sent'"
        )
        .await,
        1
    );
    assert_eq!(count(&db, "SELECT changes FROM problems").await, 1);
}
