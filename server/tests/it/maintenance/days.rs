//! PostgreSQL's archive laid out by day: a delivery lands in its day's table; a day every row of
//! which is past its source's retention is dropped whole, with what survives it (a restored row,
//! a forward delivery still pending or dead and its attempts, the body a later duplicate shares)
//! kept; a source kept longer keeps its day and a shorter one's rows go one batch at a time; a
//! day the cold archive has not written stays; a drop waits for the archive's users no longer
//! than its lock timeout; the rows from before the layout stay readable and purgeable; the days
//! ahead are made while deliveries hold the archive.

use super::*;
use app::maintenance::partitions::{self, day_number, first_id};
use app::maintenance::purge::{Cutoffs, Policy, purge_archive_by_day, purge_forwarded};
use chrono::NaiveDate;
use migration::{Migrator, MigratorTrait};
use sea_orm::TransactionTrait;
use std::collections::BTreeMap;

/// The table that holds the archive row `id`.
async fn table_of(db: &Db, table: &str, id: i64) -> Option<String> {
    texts(
        db,
        &format!("SELECT tableoid::regclass::text FROM {table} WHERE id = $1"),
        vec![id.into()],
    )
    .await
    .first()
    .and_then(|row| row[0].clone())
}

/// The date of `day` (days since 1970-01-01).
fn date(day: i64) -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch") + Duration::days(day)
}

/// An archive row of `source` with id `id`, received `at`, its body `body`.
async fn archive_row(db: &Db, id: i64, source: &str, at: DateTime<Utc>, body: &str) {
    execute(
        db,
        "INSERT INTO webhook_events (id, source, event_id, status, outcome, headers, body,
                                     received_at)
         VALUES ($1, $2, $3, 'processed', 'accepted', '{}', CAST($4 AS bytea), $5)",
        vec![
            id.into(),
            source.into(),
            format!("{source}-{id}").into(),
            body.into(),
            at.into(),
        ],
    )
    .await;
}

/// A forward delivery with id `id` in `status` and one attempt, of archive row `archive_id`.
async fn forward_row(db: &Db, id: i64, archive_id: i64, status: &str, at: DateTime<Utc>) {
    execute(
        db,
        "INSERT INTO forward_deliveries (id, destination, source, event_id, archive_id, status,
                                         attempts, next_attempt_at, created_at, received_at,
                                         payload)
         VALUES ($1, 'crm', 'shop', $2, $3, $4, 1, $5, $5, $5, '{}')",
        vec![
            id.into(),
            format!("e-{id}").into(),
            archive_id.into(),
            status.into(),
            at.into(),
        ],
    )
    .await;
    execute(
        db,
        "INSERT INTO forward_attempts (delivery_id, attempt, started_at, duration_ms)
         VALUES ($1, 1, $2, 5)",
        vec![id.into(), at.into()],
    )
    .await;
}

use crate::support::execute;

#[tokio::test]
async fn a_delivery_lands_in_the_table_of_its_day() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let recorded = deliver(db, &event("e-1", "o-1", 1, "{}"), Utc::now(), None).await;
    let today = day_number(Utc::now());
    assert_eq!(recorded.archive_id >> partitions::DAY_BITS, today);
    assert_eq!(
        table_of(db, "webhook_events", recorded.archive_id).await,
        Some(format!("webhook_events_d{}", date(today).format("%Y%m%d")))
    );
    // Yesterday's table to a week ahead's, in each table laid out by day.
    for table in ["webhook_events", "forward_deliveries", "forward_attempts"] {
        let days: Vec<NaiveDate> = partitions::day_tables(db.maintenance(), table)
            .await
            .expect("days")
            .into_iter()
            .map(|t| t.day)
            .collect();
        let expected: Vec<NaiveDate> = (today - 1..=today + partitions::AHEAD_DAYS)
            .map(date)
            .collect();
        assert_eq!(days, expected, "{table}");
    }
}

#[tokio::test]
async fn a_day_past_every_sources_retention_is_dropped_whole_and_what_survives_it_stays() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let old = day_number(Utc::now()) - 100;
    assert_eq!(
        partitions::make_days(db, old, old + 1).await.expect("days"),
        6
    );
    let at =
        |day: i64, second: i64| DateTime::from_timestamp(day * 86_400 + second, 0).expect("a time");
    // Day `old`: shop 3 rows and crm 2, one of shop's restored and kept a week longer.
    for n in 1..=3 {
        archive_row(db, first_id(old) + n, "shop", at(old, n), r#"{"a":1}"#).await;
    }
    for n in 4..=5 {
        archive_row(db, first_id(old) + n, "crm", at(old, n), "{}").await;
    }
    execute(
        db,
        "UPDATE webhook_events SET kept_until = now() + interval '7 days' WHERE id = $1",
        vec![(first_id(old) + 3).into()],
    )
    .await;
    // Today: a duplicate sharing the body of the first row, and a replay of the second.
    let duplicate = deliver(db, &event("dup", "o-9", 1, "{}"), Utc::now(), None).await;
    execute(
        db,
        "UPDATE webhook_events SET body = CAST('' AS bytea), body_of = $1 WHERE id = $2",
        vec![(first_id(old) + 1).into(), duplicate.archive_id.into()],
    )
    .await;
    let replay = deliver(db, &event("re", "o-8", 1, "{}"), Utc::now(), None).await;
    execute(
        db,
        "UPDATE webhook_events SET replay_of = $1 WHERE id = $2",
        vec![(first_id(old) + 2).into(), replay.archive_id.into()],
    )
    .await;
    // Day `old + 1`: a row of vault, kept 400 days, and one of shop.
    archive_row(db, first_id(old + 1) + 1, "vault", at(old + 1, 1), "{}").await;
    archive_row(db, first_id(old + 1) + 2, "shop", at(old + 1, 2), "{}").await;
    // Forward deliveries of day `old`: one delivered, one dead, one pending.
    for (n, status) in [(1, "delivered"), (2, "dead"), (3, "pending")] {
        forward_row(db, first_id(old) + n, first_id(old) + n, status, at(old, n)).await;
    }

    let policy = Policy {
        default_days: 90,
        own: BTreeMap::from([("vault".to_string(), 400)]),
        bodies: Default::default(),
    };
    let cutoffs = policy.at(Utc::now());
    // A cold archive that has written nothing yet keeps every day.
    let unwritten = cutoffs.within(&BTreeMap::new());
    let nothing = purge_archive_by_day(db, &unwritten, 100)
        .await
        .expect("purge");
    assert_eq!((nothing.rows.len(), nothing.days.len()), (0, 0));

    let purged = purge_archive_by_day(db, &cutoffs, 100)
        .await
        .expect("purge");
    assert_eq!(
        purged.days,
        vec![date(old)],
        "only the day without vault goes whole"
    );
    assert_eq!(
        purged.rows,
        BTreeMap::from([("crm".to_string(), 2), ("shop".to_string(), 3)]),
        "shop: 2 of the dropped day and 1 deleted from the next; the restored row stays"
    );
    let gone = format!("webhook_events_d{}", date(old).format("%Y%m%d"));
    assert_eq!(
        count(
            db,
            &format!("SELECT count(*) FROM pg_class WHERE relname = '{gone}'")
        )
        .await,
        0
    );
    assert_eq!(
        table_of(db, "webhook_events", first_id(old) + 3)
            .await
            .as_deref(),
        Some("webhook_events_default"),
        "the restored row moved to the default table"
    );
    assert_eq!(
        texts(
            db,
            "SELECT convert_from(body, 'UTF8'), CAST(body_of AS text) FROM webhook_events
             WHERE id = $1",
            vec![duplicate.archive_id.into()],
        )
        .await,
        vec![vec![Some(r#"{"a":1}"#.to_string()), None]],
        "the duplicate was given the body it shared"
    );
    assert_eq!(
        texts(
            db,
            "SELECT CAST(replay_of AS text) FROM webhook_events WHERE id = $1",
            vec![replay.archive_id.into()]
        )
        .await,
        vec![vec![None]],
        "the replay no longer names its original"
    );
    assert_eq!(
        texts(
            db,
            "SELECT source FROM webhook_events WHERE id < $1 AND id >= $2 ORDER BY id",
            vec![first_id(old + 2).into(), first_id(old + 1).into()],
        )
        .await,
        vec![vec![Some("vault".to_string())]],
        "vault's row keeps its day; shop's of that day went one batch at a time"
    );
    // The feed knows where each source's rows end.
    let shop = app::feed::purged_through(db.maintenance(), Some(&["shop".to_string()]))
        .await
        .expect("purged");
    assert!(shop.is_some_and(|c| c.id >= first_id(old) + 2), "{shop:?}");

    // Forward deliveries: a day goes once every source's retention is past it (vault's 400 days
    // keep it, its delivered row going alone)...
    let forwarded = purge_forwarded(db, cutoffs.clone(), 100)
        .await
        .expect("forward");
    assert_eq!(forwarded, 1);
    let days = partitions::day_tables(db.maintenance(), "forward_deliveries").await;
    assert_eq!(days.expect("days")[0].day, date(old));
    // ...and then whole: the dead and the pending stay, with their attempts.
    forward_row(
        db,
        first_id(old) + 4,
        first_id(old) + 4,
        "delivered",
        at(old, 4),
    )
    .await;
    let forwarded = purge_forwarded(db, retention_cutoff(Utc::now(), 90), 100)
        .await
        .expect("forward");
    assert_eq!(forwarded, 1);
    let days = partitions::day_tables(db.maintenance(), "forward_deliveries").await;
    // (The next day's table, empty, went too.)
    let yesterday = day_number(Utc::now()) - 1;
    assert_eq!(days.expect("days")[0].day, date(yesterday));
    assert_eq!(
        texts(
            db,
            "SELECT d.status, tableoid::regclass::text,
                    (SELECT count(*) FROM forward_attempts a WHERE a.delivery_id = d.id)::text
             FROM forward_deliveries d ORDER BY d.id",
            vec![],
        )
        .await,
        vec![
            vec![
                Some("dead".to_string()),
                Some("forward_deliveries_default".to_string()),
                Some("1".to_string())
            ],
            vec![
                Some("pending".to_string()),
                Some("forward_deliveries_default".to_string()),
                Some("1".to_string())
            ],
        ]
    );
    assert_eq!(count(db, "SELECT count(*) FROM forward_attempts").await, 2);
}

#[tokio::test]
async fn a_drop_waits_for_the_archives_users_no_longer_than_its_lock_timeout() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let old = day_number(Utc::now()) - 100;
    partitions::make_days(db, old, old).await.expect("days");
    let at = DateTime::from_timestamp(old * 86_400 + 1, 0).expect("a time");
    archive_row(db, first_id(old) + 1, "shop", at, "{}").await;
    // A reader holds the archive in a transaction left open.
    let reader = db.writer.begin().await.expect("begin");
    reader
        .execute_unprepared("SELECT count(*) FROM webhook_events")
        .await
        .expect("read");
    let holder = backend_pid(&reader).await;
    let cutoffs: Cutoffs = retention_cutoff(Utc::now(), 90).into();
    let drop = tokio::spawn({
        let db = db.clone();
        async move { partitions::drop_due(&db, &cutoffs).await }
    });
    wait_until_blocked_by(db, holder).await;
    let dropped = drop
        .await
        .expect("joined")
        .expect("no error: it waits for the next run");
    assert_eq!(dropped, partitions::Dropped::default());
    reader.rollback().await.expect("rollback");
    assert_eq!(count(db, "SELECT count(*) FROM webhook_events").await, 1);
    // Once the reader is gone, the day goes.
    let cutoffs: Cutoffs = retention_cutoff(Utc::now(), 90).into();
    let dropped = partitions::drop_due(db, &cutoffs).await.expect("drop");
    assert_eq!(dropped.days, vec![date(old)]);
    assert_eq!(count(db, "SELECT count(*) FROM webhook_events").await, 0);
}

#[tokio::test]
async fn the_rows_from_before_the_layout_stay_readable_and_purgeable() {
    let test_db = empty_db(Backend::Postgres).await;
    let db = &test_db.db;
    // Up to the migration before the layout by day, wherever it stands in the list.
    let before_layout = Migrator::migrations()
        .iter()
        .position(|m| m.name() == "m20261206_000027_day_partitions")
        .expect("the layout's migration") as u32;
    Migrator::up(&db.writer, Some(before_layout))
        .await
        .expect("up to the one before");
    // Rows as the schema before stored them: ids of its identity column.
    let mut before = Vec::new();
    for (event_id, at) in [
        ("old", Utc::now() - Duration::days(100)),
        ("recent", Utc::now()),
    ] {
        let id = scalar(
            db,
            "INSERT INTO webhook_events (source, event_id, status, outcome, headers, body,
                                         received_at)
             VALUES ('shop', $1, 'processed', 'accepted', '{}', CAST('{}' AS bytea), $2)
             RETURNING id",
            vec![event_id.into(), at.into()],
        )
        .await
        .expect("an id");
        before.push(id);
    }
    Migrator::up(&db.writer, None).await.expect("up");

    for id in before {
        assert!(id < 1 << partitions::DAY_BITS, "{id}");
        assert_eq!(
            table_of(db, "webhook_events", id).await.as_deref(),
            Some("webhook_events_legacy")
        );
    }
    let next = deliver(db, &event("next", "o-3", 1, "{}"), Utc::now(), None).await;
    assert_eq!(
        next.archive_id >> partitions::DAY_BITS,
        day_number(Utc::now())
    );
    let purged = purge_archive_by_day(db, &cutoff().into(), 100)
        .await
        .expect("purge");
    assert_eq!(purged.rows, BTreeMap::from([("shop".to_string(), 1)]));
    assert!(purged.days.is_empty());
    assert_eq!(
        texts(
            db,
            "SELECT event_id FROM webhook_events ORDER BY id",
            vec![]
        )
        .await,
        vec![
            vec![Some("recent".to_string())],
            vec![Some("next".to_string())]
        ]
    );
}

#[tokio::test]
async fn the_days_ahead_are_made_while_a_delivery_holds_the_archive() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    // A delivery's transaction, still open, holding today's table.
    let delivery = db.writer.begin().await.expect("begin");
    delivery
        .execute_unprepared(
            "INSERT INTO webhook_events (source, status, outcome, headers, body, received_at)
             VALUES ('shop', 'processed', 'accepted', '{}', CAST('{}' AS bytea), now())",
        )
        .await
        .expect("insert");
    let far = day_number(Utc::now()) + 30;
    let made = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        partitions::make_days(db, far, far),
    )
    .await
    .expect("made without waiting for the delivery")
    .expect("made");
    assert_eq!(made, 3, "a table of the day in each table laid out by day");
    delivery.commit().await.expect("commit");
    let days = partitions::day_tables(db.maintenance(), "webhook_events")
        .await
        .expect("days");
    assert_eq!(days.last().map(|t| t.day), Some(date(far)));
    // The made table has the archive's indexes.
    assert_eq!(
        count(
            db,
            &format!(
                "SELECT count(*) FROM pg_indexes WHERE tablename = 'webhook_events_d{}'",
                date(far).format("%Y%m%d")
            )
        )
        .await,
        count(
            db,
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'webhook_events_legacy'"
        )
        .await
    );
}
