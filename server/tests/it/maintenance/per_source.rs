//! Retention per source: each source's archive rows go at its own `retention_days`, the rows of
//! every other source (one no longer configured too) at the server's; what a purge would take
//! is counted the same way; the invariant check does not call a row the purge took missing; and
//! a feed reader of a source kept longer is not sent away by another source's purge.

use super::*;
use app::feed::{FeedError, Selection};
use app::maintenance::purge::{BySource, Policy, due, purge_archive_by_source};
use std::collections::BTreeMap;

/// `shop` keeps 400 days, `crm` 7, the rest (`gone`, configured no more) the server's 90.
fn policy() -> Policy {
    Policy {
        default_days: 90,
        own: BTreeMap::from([("shop".to_string(), 400), ("crm".to_string(), 7)]),
        bodies: Default::default(),
    }
}

/// Two rows of each source, one of them past its retention but for `shop`'s:
/// shop 100 and 300 days old, crm 5 and 10, gone 50 and 100.
async fn two_rows_each(db: &Db) {
    for (source, days) in [
        ("shop", 300),
        ("crm", 10),
        ("gone", 100),
        ("shop", 100),
        ("gone", 50),
        ("crm", 5),
    ] {
        let id = format!("{source}-{days}");
        let at = Utc::now() - Duration::days(days);
        deliver_to(db, source, &event(&id, &id, 1, "{}"), at, None).await;
    }
}

async fn kept(db: &Db) -> Vec<Vec<Option<String>>> {
    texts(
        db,
        "SELECT source, event_id FROM webhook_events ORDER BY source, event_id",
        vec![],
    )
    .await
}

both_backends!(each_source_keeps_its_rows_its_own_days_and_the_rest_the_servers);
async fn each_source_keeps_its_rows_its_own_days_and_the_rest_the_servers(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    two_rows_each(db).await;
    let cutoffs = policy().at(Utc::now());
    let expected: BySource = BTreeMap::from([("crm".to_string(), 1), ("gone".to_string(), 1)]);

    // Counted first, and nothing deleted by counting.
    let counted = due(db, &cutoffs, Utc::now()).await.expect("count");
    assert_eq!(counted.archive, expected, "{backend:?}");
    assert_eq!(kept(db).await.len(), 6);

    // A batch of one row at a time: the loop goes on across sources.
    let purged = purge_archive_by_source(db, &cutoffs, 1)
        .await
        .expect("purge");

    assert_eq!(purged, expected, "{backend:?}");
    let row = |s: &str, e: &str| vec![Some(s.to_string()), Some(e.to_string())];
    assert_eq!(
        kept(db).await,
        vec![
            row("crm", "crm-5"),
            row("gone", "gone-50"),
            row("shop", "shop-100"),
            row("shop", "shop-300"),
        ],
        "{backend:?}: shop's 300-day-old row is within its 400 days"
    );
    // The inbox keeps every event; the check knows which of them the purge was allowed to take.
    let report = app::maintenance::verify::verify(db, cutoffs, false)
        .await
        .expect("verify");
    assert!(report.drifts.is_empty(), "{backend:?}: {:?}", report.drifts);
    // Judged by one retention for every source, crm's row of 10 days would be missing.
    let uniform = app::maintenance::verify::verify(db, retention_cutoff(Utc::now(), 90), false)
        .await
        .expect("verify");
    assert_eq!(
        uniform
            .drifts
            .iter()
            .map(ToString::to_string)
            .filter(|d| d.contains("crm-10"))
            .count(),
        1,
        "{backend:?}: {:?}",
        uniform.drifts
    );
}

both_backends!(a_feed_reader_of_a_source_kept_longer_is_not_sent_away_by_anothers_purge);
async fn a_feed_reader_of_a_source_kept_longer_is_not_sent_away_by_anothers_purge(
    backend: Backend,
) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    two_rows_each(db).await;
    purge_archive_by_source(db, &policy().at(Utc::now()), 100)
        .await
        .expect("purge");
    let of = |sources: Option<&[&str]>| Selection {
        sources: sources.map(|s| s.iter().map(|s| s.to_string()).collect()),
        ..Selection::default()
    };
    let start = Some(app::feed::Cursor::START);
    crate::feed::settled(db).await;

    // shop lost nothing: its reader reads its two rows from the start.
    let page = app::feed::read(db, start, &of(Some(&["shop"])), 10)
        .await
        .expect("shop's rows are all there");
    let ids: Vec<&str> = page.items.iter().map(|i| i.event_id.as_str()).collect();
    assert_eq!(ids, ["shop-300", "shop-100"], "{backend:?}");

    // crm lost its oldest row: from the start is 410, and so is a reader of every source.
    let crm = app::feed::read(db, start, &of(Some(&["crm"])), 10).await;
    let Err(FeedError::Gone { oldest: crm_oldest }) = crm else {
        panic!("{backend:?}: crm from the start: {crm:?}");
    };
    let every = app::feed::read(db, start, &of(None), 10).await;
    let Err(FeedError::Gone { oldest }) = every else {
        panic!("{backend:?}: every source from the start: {every:?}");
    };
    assert!(oldest >= crm_oldest, "{backend:?}: {oldest} {crm_oldest}");
    // From crm's oldest served place on, its remaining row is read.
    let page = app::feed::read(db, Some(crm_oldest), &of(Some(&["crm"])), 10)
        .await
        .expect("after the purged place");
    let ids: Vec<&str> = page.items.iter().map(|i| i.event_id.as_str()).collect();
    assert_eq!(ids, ["crm-5"], "{backend:?}");
}

both_backends!(a_duplicate_keeps_the_body_it_shares_when_its_original_is_purged);
async fn a_duplicate_keeps_the_body_it_shares_when_its_original_is_purged(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let body = event("e-shared", "O-1", 1, r#"{"total":12}"#);
    let original = deliver(db, &body, Utc::now() - Duration::days(100), None).await;
    // The sender's retry of the same body, 95 days later: archived as a reference to it.
    let retry = deliver(db, &body, Utc::now() - Duration::days(5), None).await;
    let stored = |id: i64| {
        texts(
            db,
            "SELECT CAST(length(body) AS TEXT), CAST(body_of AS TEXT) FROM webhook_events
             WHERE id = $1",
            vec![id.into()],
        )
    };
    assert_eq!(
        stored(retry.archive_id).await,
        vec![vec![
            Some("0".to_string()),
            Some(original.archive_id.to_string())
        ]],
        "{backend:?}: the retry refers to the original's body"
    );

    let purged = purge_archive_by_source(db, &cutoff().into(), 10)
        .await
        .expect("purge");

    assert_eq!(
        purged,
        BTreeMap::from([("shop".to_string(), 1)]),
        "{backend:?}"
    );
    assert_eq!(
        stored(retry.archive_id).await,
        vec![vec![Some(body.len().to_string()), None]],
        "{backend:?}: the retry holds the body itself now"
    );
    let stored = app::db::events::stored_delivery(db, retry.archive_id)
        .await
        .expect("read")
        .expect("the retry's row");
    assert!(stored.body_kept, "{backend:?}");
    assert_eq!(stored.body, body.as_bytes(), "{backend:?}");
}

both_backends!(the_overview_says_how_big_the_archive_is_and_its_oldest_day);
async fn the_overview_says_how_big_the_archive_is_and_its_oldest_day(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let empty = app::db::overview::kept(db).await.expect("kept");
    assert_eq!(empty.oldest, None, "{backend:?}");
    assert!(
        empty.bytes > 0,
        "{backend:?}: a table has a size: {empty:?}"
    );
    two_rows_each(db).await;

    let kept = app::db::overview::overview(db, 3, app::db::overview::Tz::UTC)
        .await
        .expect("overview")
        .kept;

    let oldest = scalar_text(
        db,
        "SELECT CAST(min(received_at) AS TEXT) FROM webhook_events",
    )
    .await;
    let shown = DateTime::parse_from_rfc3339(kept.oldest.as_deref().expect("an oldest row"))
        .expect("RFC 3339")
        .with_timezone(&Utc);
    assert_eq!(
        (Utc::now() - shown).num_days(),
        300,
        "{backend:?}: shop's row of 300 days is the oldest ({oldest})"
    );
    assert_eq!(kept.whole_database, backend == Backend::Sqlite);
    assert!(kept.bytes >= empty.bytes, "{backend:?}: {kept:?} {empty:?}");
}

async fn scalar_text(db: &Db, sql: &str) -> String {
    texts(db, sql, vec![]).await[0][0]
        .clone()
        .unwrap_or_default()
}
