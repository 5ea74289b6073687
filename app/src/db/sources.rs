//! The sources page's reads: each configured source's newest delivery, its count over the last
//! 24 hours, and the silent-source rule of `deploy/prometheus/alerts.yml` (`HookboxSourceSilent`)
//! applied to the archive, so the page and the alert call a source silent in the same terms.
//!
//! Only what the sender made counts: replays (`replay_of`) are an operator's, and the silence
//! metric the alert reads is set by the endpoint alone. The newest delivery and the windows are
//! seeks of `ix_webhook_events_source_received` (migration m20261203_000016), whatever the
//! archive's size; the 24 hours' count is the overview's ([`super::overview::volume`]), from its
//! rollup, so both pages give the same number.

use super::Db;
use crate::config::{Config, Source};
use crate::model::{RECENT_DELIVERIES, Silence, SourceHealth, SourceSummary, Status};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, Value};

/// The numbers of `HookboxSourceSilent`; `tests::the_rule_is_the_shipped_alert` reads the rule
/// in `deploy/prometheus/alerts.yml` and fails when the two differ.
pub mod rule {
    use chrono::Duration;

    /// A source is silent after this many times its usual gap ...
    pub const FACTOR: i64 = 3;
    /// ... but never sooner than 15 minutes ...
    pub const MIN_THRESHOLD_SECS: i64 = 900;
    /// ... nor later than 23 hours (so it fires before a silence reaches yesterday's window).
    pub const MAX_THRESHOLD_SECS: i64 = 82_800;
    /// Without history (no delivery before either window): silent after an hour.
    pub const NO_HISTORY_THRESHOLD_SECS: i64 = 3_600;
    /// The usual gap is the longest silence in the two hours ending this long ago: around this
    /// time yesterday (23 h, keeping today's silence out) and a week ago (167 h).
    pub const WINDOW_HOURS: i64 = 2;
    pub const OFFSET_HOURS: [i64; 2] = [23, 167];
    /// The page looks at each window every 5 minutes, from its end back to its start, and
    /// measures the silence around each look from the delivery before it to the one after (or
    /// the window's end): every silence of 5 minutes or more in a window holds a look, and is
    /// measured whole, as Prometheus sees it; a shorter one is under the 15-minute floor anyway.
    pub const SAMPLE_STEP: Duration = Duration::minutes(5);

    /// How long a source may be silent, given its usual gap.
    pub fn threshold_secs(usual_gap_secs: Option<i64>) -> i64 {
        match usual_gap_secs {
            Some(gap) => gap
                .saturating_mul(FACTOR)
                .clamp(MIN_THRESHOLD_SECS, MAX_THRESHOLD_SECS),
            None => NO_HISTORY_THRESHOLD_SECS,
        }
    }
}

/// One look at a window: the deliveries on either side of `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub at: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    /// The newest delivery at or before `at`; `None`: there is no history yet.
    pub before: Option<DateTime<Utc>>,
    /// The oldest delivery after `at`, if any.
    pub after: Option<DateTime<Utc>>,
}

impl Sample {
    /// The silence `at` is in, as far as the window sees it.
    fn silence_secs(&self) -> Option<i64> {
        let end = self
            .after
            .map_or(self.window_end, |a| a.min(self.window_end));
        self.before.map(|before| (end - before).num_seconds())
    }
}

/// The times the usual gap is looked at, with their window's end, newest first: each
/// window's end and every [`rule::SAMPLE_STEP`] back to its start.
fn sample_times(now: DateTime<Utc>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let per_window = (Duration::hours(rule::WINDOW_HOURS).num_seconds()
        / rule::SAMPLE_STEP.num_seconds()) as i32;
    rule::OFFSET_HOURS
        .iter()
        .flat_map(|hours| {
            let end = now - Duration::hours(*hours);
            (0..=per_window).map(move |k| (end - rule::SAMPLE_STEP * k, end))
        })
        .collect()
}

/// The rule at `now`, from the newest delivery and the looks at the windows.
pub fn silence(now: DateTime<Utc>, last: Option<DateTime<Utc>>, samples: &[Sample]) -> Silence {
    let usual_gap_secs = samples.iter().filter_map(Sample::silence_secs).max();
    let threshold_secs = rule::threshold_secs(usual_gap_secs);
    let silent_secs = last.map(|last| (now - last).num_seconds().max(0));
    Silence {
        silent_secs,
        usual_gap_secs,
        threshold_secs,
        // PromQL's `>`: a silence of exactly the threshold is not yet silent. Never is silent.
        silent: silent_secs.is_none_or(|s| s > threshold_secs),
    }
}

/// What the archive says of one source at `now`: its newest delivery and the silent-source
/// rule.
pub struct Activity {
    pub last: Option<DateTime<Utc>>,
    pub silence: Silence,
}

/// The sender's deliveries of `source`: what the index holds.
const SENT_BY: &str = "source = $1 AND replay_of IS NULL";

/// A source's newest delivery: one seek of the index (its tests `EXPLAIN` this statement).
pub const NEWEST: &str =
    "SELECT max(received_at) AS last FROM webhook_events WHERE source = $1 AND replay_of IS NULL";

pub async fn activity(db: &Db, source: &str, now: DateTime<Utc>) -> Result<Activity, DbErr> {
    let last = newest(db, source).await?;
    let samples = match last {
        Some(_) => look(db, source, &sample_times(now)).await?,
        None => Vec::new(),
    };
    Ok(Activity {
        last,
        silence: silence(now, last, &samples),
    })
}

async fn newest(db: &Db, source: &str) -> Result<Option<DateTime<Utc>>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            NEWEST,
            vec![source.into()],
        ))
        .await?;
    match row {
        Some(row) => row.try_get("", "last"),
        None => Ok(None),
    }
}

/// For each time, the deliveries on either side: one statement, two seeks per time.
async fn look(
    db: &Db,
    source: &str,
    times: &[(DateTime<Utc>, DateTime<Utc>)],
) -> Result<Vec<Sample>, DbErr> {
    let mut values: Vec<Value> = vec![source.into()];
    let mut rows = Vec::with_capacity(times.len());
    for (k, (at, _)) in times.iter().enumerate() {
        values.push((*at).into());
        rows.push(format!("({k}, ${})", values.len()));
    }
    let found = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "WITH t(k, at) AS (VALUES {})
                 SELECT t.k AS k,
                        (SELECT max(received_at) FROM webhook_events
                          WHERE {SENT_BY} AND received_at <= t.at) AS before,
                        (SELECT min(received_at) FROM webhook_events
                          WHERE {SENT_BY} AND received_at > t.at) AS after
                 FROM t ORDER BY t.k",
                rows.join(", ")
            ),
            values,
        ))
        .await?;
    let mut samples = Vec::with_capacity(times.len());
    for row in &found {
        let k: i32 = row.try_get("", "k")?;
        let (at, window_end) = usize::try_from(k)
            .ok()
            .and_then(|k| times.get(k))
            .ok_or_else(|| DbErr::Type(format!("no sample {k}")))?;
        samples.push(Sample {
            at: *at,
            window_end: *window_end,
            before: row.try_get("", "before")?,
            after: row.try_get("", "after")?,
        });
    }
    Ok(samples)
}

/// Every configured source, in the configuration's order, with its activity at `now`; the 24
/// hours are the overview's, to the hour in `zone`.
pub async fn summaries(
    db: &Db,
    config: &Config,
    now: DateTime<Utc>,
    zone: chrono_tz::Tz,
) -> Result<Vec<SourceSummary>, DbErr> {
    let (by_source_24h, _, _) = super::overview::volume(db, zone, now).await?;
    let mut list = Vec::with_capacity(config.sources.len());
    for source in &config.sources {
        let received_24h = by_source_24h
            .iter()
            .find(|row| row.label == source.name)
            .map_or(0, |row| row.processed + row.skipped + row.failed);
        let activity = activity(db, &source.name, now).await?;
        let recent = recent_failures(db, &source.name, now).await?;
        let mut summary = summary(source, activity, received_24h, recent);
        summary.retention_days = source
            .retention_days
            .unwrap_or(config.server.retention_days);
        summary.body_retention_days = source
            .body_retention_days
            .or(config.server.body_retention_days);
        list.push(summary);
    }
    Ok(list)
}

/// Of `source`'s newest deliveries in the 24 hours before `now` (at most
/// [`RECENT_DELIVERIES`], replays not counted): how many failed, and of how many. One range of
/// `ix_webhook_events_source_received`.
pub async fn recent_failures(
    db: &Db,
    source: &str,
    now: DateTime<Utc>,
) -> Result<(u32, u32), DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT count(*) AS n,
                        CAST(COALESCE(sum(CASE WHEN status = '{failed}' THEN 1 ELSE 0 END), 0) AS BIGINT) AS failed
                 FROM (SELECT status FROM webhook_events
                       WHERE {SENT_BY} AND received_at > $2
                       ORDER BY received_at DESC LIMIT {RECENT_DELIVERIES}) AS r",
                failed = Status::Failed.as_str()
            ),
            vec![source.into(), (now - Duration::hours(24)).into()],
        ))
        .await?;
    let Some(row) = row else { return Ok((0, 0)) };
    let n: i64 = row.try_get("", "n")?;
    let failed: i64 = row.try_get("", "failed")?;
    Ok((
        u32::try_from(failed).unwrap_or(0),
        u32::try_from(n).unwrap_or(0),
    ))
}

fn summary(
    source: &Source,
    activity: Activity,
    received_24h: i64,
    (recent_failed, recent_of): (u32, u32),
) -> SourceSummary {
    SourceSummary {
        health: SourceHealth::of(recent_failed, recent_of, &activity.silence),
        recent_failed,
        recent_of,
        name: source.name.clone(),
        // A token taken from the query is shown as a placeholder, never as a secret.
        path: match source
            .token_query
            .as_deref()
            .filter(|_| source.token_header.is_none())
        {
            Some(name) => format!(
                "/hooks/{}?{name}=<a secret>",
                crate::url::urlencode(&source.name)
            ),
            None => format!("/hooks/{}", crate::url::urlencode(&source.name)),
        },
        preset: source.preset.map(|p| p.name().to_string()),
        scheme: source.scheme.name().to_string(),
        scheme_words: source.auth().describe(source.tolerance_secs),
        mode: source.mapping.mode.name().to_string(),
        forward: source.forward.clone(),
        rate_limit_per_sec: source.rate_limit_per_sec,
        retention_days: source.retention_days.unwrap_or_default(),
        own_retention: source.retention_days.is_some(),
        body_retention_days: source.body_retention_days,
        own_body_retention: source.body_retention_days.is_some(),
        last_received: activity.last.map(|t| t.to_rfc3339()),
        received_24h: u64::try_from(received_24h).unwrap_or(0),
        silence: activity.silence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).expect("a time")
    }

    #[test]
    fn the_rule_is_the_shipped_alert() {
        let rules = include_str!("../../../deploy/prometheus/alerts.yml");
        let alert = rules
            .split("- alert: HookboxSourceSilent")
            .nth(1)
            .and_then(|rest| rest.split("- alert:").next())
            .expect("alerts.yml has HookboxSourceSilent");
        for expected in [
            format!(
                "clamp({} * hookbox:source_usual_gap_seconds, {}, {})",
                rule::FACTOR,
                rule::MIN_THRESHOLD_SECS,
                rule::MAX_THRESHOLD_SECS
            ),
            format!(
                "hookbox:source_silence_seconds * 0 + {}",
                rule::NO_HISTORY_THRESHOLD_SECS
            ),
        ] {
            assert!(
                alert.contains(&expected),
                "HookboxSourceSilent lacks {expected:?}"
            );
        }
        for hours in rule::OFFSET_HOURS {
            let window = format!(
                "max_over_time(hookbox:source_silence_seconds[{}h] offset {hours}h)",
                rule::WINDOW_HOURS
            );
            assert!(rules.contains(&window), "the usual gap lacks {window:?}");
        }
    }

    #[test]
    fn thresholds_are_clamped_and_default_to_an_hour() {
        assert_eq!(rule::threshold_secs(None), 3_600);
        assert_eq!(rule::threshold_secs(Some(10)), 900);
        assert_eq!(rule::threshold_secs(Some(600)), 1_800);
        assert_eq!(rule::threshold_secs(Some(86_400)), 82_800);
        assert_eq!(rule::threshold_secs(Some(i64::MAX)), 82_800);
    }

    #[test]
    fn samples_cover_both_windows_every_five_minutes() {
        let now = at(0);
        let times = sample_times(now);
        assert_eq!(times.len(), 50);
        let yesterday = now - Duration::hours(23);
        assert_eq!(times[0], (yesterday, yesterday));
        assert_eq!(times[24], (now - Duration::hours(25), yesterday));
        let week = now - Duration::hours(167);
        assert_eq!(times[25], (week, week));
        assert_eq!(times[49], (now - Duration::hours(169), week));
    }

    #[test]
    fn silent_past_three_usual_gaps() {
        let now = at(0);
        // Yesterday at this time it went 20 minutes between deliveries (a look 5 minutes into
        // that silence measures it whole): silent after an hour.
        let look = |at_secs: i64, before: Option<i64>, after: Option<i64>| Sample {
            at: at(at_secs),
            window_end: at(-50),
            before: before.map(at),
            after: after.map(at),
        };
        let samples = [
            look(-1_000, Some(-1_300), Some(-100)),
            look(-2_000, None, Some(-1_300)),
        ];
        let quiet = silence(now, Some(now - Duration::seconds(3_600)), &samples);
        assert_eq!(quiet.usual_gap_secs, Some(1_200));
        assert_eq!(quiet.threshold_secs, 3_600);
        assert!(!quiet.silent, "exactly the threshold is not yet silent");
        let silent = silence(now, Some(now - Duration::seconds(3_601)), &samples);
        assert!(silent.silent);
        assert_eq!(silent.silent_secs, Some(3_601));
    }

    #[test]
    fn a_silence_counts_up_to_the_window_end() {
        let sample = Sample {
            at: at(-1_000),
            window_end: at(-900),
            before: Some(at(-4_000)),
            after: None,
        };
        assert_eq!(sample.silence_secs(), Some(3_100));
        let after_the_end = Sample {
            after: Some(at(-10)),
            ..sample
        };
        assert_eq!(after_the_end.silence_secs(), Some(3_100));
    }

    #[test]
    fn without_history_an_hour_and_never_is_silent() {
        let now = at(0);
        let new = silence(
            now,
            Some(now - Duration::minutes(59)),
            &[Sample {
                at: at(-100),
                window_end: at(-5),
                before: None,
                after: Some(at(-50)),
            }],
        );
        assert_eq!(
            (new.usual_gap_secs, new.threshold_secs, new.silent),
            (None, 3_600, false)
        );
        let never = silence(now, None, &[]);
        assert_eq!((never.silent_secs, never.silent), (None, true));
    }
}
