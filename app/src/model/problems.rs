//! Failures grouped by cause (problems), their states, and what resolves a failure.

use serde::{Deserialize, Serialize};

/// What an operator types to replay a delivery whose dry run fails as the original did.
pub const REPLAY_ANYWAY: &str = "replay anyway";

/// What an operator said of a cause. No state is an open cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProblemState {
    /// Someone is on it: still open, still counted.
    #[serde(rename = "acknowledged")]
    Acknowledged,
    /// Fixed: its failures until then leave the open views; a failure after it reopens it.
    #[serde(rename = "resolved")]
    Resolved,
    /// Expected: its failures, new ones too, stay out of the counts and alerts.
    #[serde(rename = "ignored")]
    Ignored,
}

impl ProblemState {
    pub const ALL: &'static [ProblemState] = &[
        ProblemState::Acknowledged,
        ProblemState::Resolved,
        ProblemState::Ignored,
    ];

    /// The spelling in `problem_states.state` and in the server function's argument.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProblemState::Acknowledged => "acknowledged",
            ProblemState::Resolved => "resolved",
            ProblemState::Ignored => "ignored",
        }
    }

    pub fn parse(text: &str) -> Option<ProblemState> {
        ProblemState::ALL
            .iter()
            .copied()
            .find(|s| s.as_str() == text)
    }

    /// The verb of the button that sets it.
    pub fn verb(self) -> &'static str {
        match self {
            ProblemState::Acknowledged => "Acknowledge",
            ProblemState::Resolved => "Resolve",
            ProblemState::Ignored => "Ignore",
        }
    }
}

impl std::fmt::Display for ProblemState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cause: the failures of one source with one outcome and one error class.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cause {
    pub source: String,
    pub outcome: super::OutcomeKind,
    /// `None` for failures archived before classes, not yet classified.
    pub class: Option<String>,
}

/// One problem: the open failures of a cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemGroup {
    pub cause: Cause,
    /// Open failures of the cause.
    pub count: i64,
    /// RFC 3339, UTC: the oldest and the newest of them.
    pub first_seen: String,
    pub last_seen: String,
    /// The newest of them (an archive id), with its message.
    pub example: i64,
    pub example_message: Option<String>,
    /// What an operator said of it, when and who; a resolved cause shown here failed again after.
    pub state: Option<ProblemState>,
    pub changed_at: Option<String>,
    pub changed_by: Option<String>,
}

/// The `/problems` page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemsPage {
    /// Open problems, the most recently failing first, at most `shown_at_most`.
    pub open: Vec<ProblemGroup>,
    /// Open problems in all (more than `open` holds when the list is cut).
    pub open_total: i64,
    /// Open failures in all.
    pub open_failures: i64,
    /// Ignored causes that failed since (collapsed on the page), at most `shown_at_most`.
    pub ignored: Vec<ProblemGroup>,
    pub ignored_total: i64,
    pub shown_at_most: usize,
    /// Whether the viewer may change states (operators).
    pub can_act: bool,
}

/// The overview's and the alerts' counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenProblems {
    pub problems: i64,
    pub failures: i64,
}

/// Why a bulk replay left failures out, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// A replay of it already resolved it.
    pub resolved: usize,
    /// It is itself a replay (its original is what a replay resolves).
    pub replays: usize,
    /// Its replay would fail as it did (same outcome class): the cause is not fixed yet.
    pub same_failure: usize,
    /// Its source is no longer configured.
    pub unknown_source: usize,
}

impl Skipped {
    pub fn total(&self) -> usize {
        self.resolved + self.replays + self.same_failure + self.unknown_source
    }

    /// `already resolved 5, would fail the same way 3` (only the reasons that count).
    pub fn in_words(&self) -> String {
        [
            ("already resolved", self.resolved),
            ("replays themselves", self.replays),
            ("would fail the same way", self.same_failure),
            ("source no longer configured", self.unknown_source),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(why, n)| format!("{why} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
    }
}
