//! Series the dashboard's charts draw: volume and errors over time, a destination's success rate and latency.

use serde::{Deserialize, Serialize};

/// The deliveries senders made in one period (a bar of the overview's chart), by status;
/// replays are not counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeBar {
    /// RFC 3339 with the viewer's offset: when the period began.
    pub start: String,
    /// The period's name on the axis, in the viewer's zone: `14:00` (an hour), `Mon 30 Nov` (a day).
    pub label: String,
    pub processed: i64,
    pub skipped: i64,
    pub failed: i64,
}

impl VolumeBar {
    pub fn total(&self) -> i64 {
        self.processed + self.skipped + self.failed
    }
}

/// The overview's chart: sender deliveries by hour and by day, cut in the viewer's zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Volume {
    /// The zone the periods are cut in and labelled with: `UTC`, `Europe/Berlin`.
    pub zone: String,
    /// The current hour and the 23 before it, oldest first (the last one ends now).
    pub hours: Vec<VolumeBar>,
    /// Today and the 6 days before it, oldest first (today ends now).
    pub days: Vec<VolumeBar>,
}

/// A destination's attempts in one hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptBar {
    /// RFC 3339 with the viewer's offset: when the hour began.
    pub start: String,
    /// `14:00`, in the viewer's zone.
    pub label: String,
    pub attempts: i64,
    /// Attempts answered 2xx.
    pub succeeded: i64,
    /// The median and the 95th percentile of the attempts' durations in milliseconds (nearest
    /// rank); none without attempts.
    pub p50_ms: Option<i64>,
    pub p95_ms: Option<i64>,
}

impl AttemptBar {
    /// The share of attempts answered 2xx, in percent; none without attempts.
    pub fn success_percent(&self) -> Option<f64> {
        (self.attempts > 0).then(|| 100.0 * self.succeeded as f64 / self.attempts as f64)
    }
}

/// A destination's attempts by hour over the last 24 hours.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DestinationSeries {
    /// The zone the hours are cut in and labelled with.
    pub zone: String,
    /// The current hour and the 23 before it, oldest first.
    pub hours: Vec<AttemptBar>,
    /// When more attempts were made than one reading takes, the start (RFC 3339) of the newest
    /// ones it took: the hours before it are not counted.
    pub partial_since: Option<String>,
}
