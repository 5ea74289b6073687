//! Failures grouped by cause (problems), their states, and what resolves a failure.

use serde::{Deserialize, Serialize};

/// What an operator types to replay a delivery whose dry run fails as the original did.
pub const REPLAY_ANYWAY: &str = "replay anyway";

super::vocabulary! {
    /// What an operator said of a cause (`problem_states.state`, the server function's
    /// argument). No state is an open cause.
    ProblemState {
        /// Someone is on it: still open, still counted.
        Acknowledged = "acknowledged",
        /// Fixed: its failures until then leave the open views; a failure after it reopens it.
        Resolved = "resolved",
        /// Expected: its failures, new ones too, stay out of the counts and alerts.
        Ignored = "ignored",
    }
}

super::vocabulary! {
    /// What an operator sets a cause to (the server function's argument): one of the states,
    /// or open again (no state).
    StateChoice {
        Open = "open",
        Acknowledged = "acknowledged",
        Resolved = "resolved",
        Ignored = "ignored",
    }
}

impl StateChoice {
    /// The state it stores; none: open.
    pub fn state(self) -> Option<ProblemState> {
        match self {
            StateChoice::Open => None,
            StateChoice::Acknowledged => Some(ProblemState::Acknowledged),
            StateChoice::Resolved => Some(ProblemState::Resolved),
            StateChoice::Ignored => Some(ProblemState::Ignored),
        }
    }

    /// Setting `state` (none: open).
    pub fn of(state: Option<ProblemState>) -> StateChoice {
        match state {
            None => StateChoice::Open,
            Some(ProblemState::Acknowledged) => StateChoice::Acknowledged,
            Some(ProblemState::Resolved) => StateChoice::Resolved,
            Some(ProblemState::Ignored) => StateChoice::Ignored,
        }
    }

    /// The verb of the button that sets it.
    pub fn verb(self) -> &'static str {
        self.state().map_or("Reopen", ProblemState::verb)
    }

    /// Whether the operator confirms what it covers first (resolving, ignoring).
    pub fn asks_first(self) -> bool {
        matches!(self, StateChoice::Resolved | StateChoice::Ignored)
    }
}

impl ProblemState {
    /// The verb of the button that sets it.
    pub fn verb(self) -> &'static str {
        match self {
            ProblemState::Acknowledged => "Acknowledge",
            ProblemState::Resolved => "Resolve",
            ProblemState::Ignored => "Ignore",
        }
    }
}

/// Where a cause's failures are: deliveries a source received that failed (their outcome), or
/// forward deliveries a destination never took (dead). Spelled as the outcome, or `forward`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    Ingest(super::OutcomeKind),
    Forward,
}

impl Stage {
    /// The spelling of a forwarding cause's stage.
    pub const FORWARD: &'static str = "forward";

    /// The spelling in `problem_states.outcome`, the server function's argument and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Ingest(outcome) => outcome.as_str(),
            Stage::Forward => Stage::FORWARD,
        }
    }

    pub fn parse(text: &str) -> Option<Stage> {
        if text == Stage::FORWARD {
            return Some(Stage::Forward);
        }
        super::OutcomeKind::parse(text).map(Stage::Ingest)
    }

    /// Every spelling, for messages.
    pub fn spellings() -> String {
        format!("{}, {}", super::OutcomeKind::spellings(), Stage::FORWARD)
    }
}

impl Serialize for Stage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Stage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Stage, D::Error> {
        let text = String::deserialize(d)?;
        Stage::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not one of {}", Stage::spellings()))
        })
    }
}

/// Compared with its spelling, as a test has it.
impl PartialEq<&str> for Stage {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A cause: the failures of one source with one outcome and one error class; or the dead
/// forward deliveries of one destination (`source` holds its name, `outcome` is
/// [`Stage::Forward`]) with one answer class (`4xx`, `5xx`, `timeout`, `connection refused`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cause {
    pub source: String,
    pub outcome: Stage,
    /// `None` for failures archived before classes, not yet classified.
    pub class: Option<String>,
}

impl Cause {
    /// `crm invalid snapshot (/data) is missing`, `orders-app forward 5xx`: the audit's target.
    pub fn in_words(&self) -> String {
        format!(
            "{} {} {}",
            self.source,
            self.outcome.as_str(),
            self.class.as_deref().unwrap_or("(unclassified)")
        )
    }

    /// What its failures are, counted: "9 deliveries were never applied".
    pub fn covers_words(&self, n: i64) -> String {
        let deliveries = if n == 1 {
            "delivery was"
        } else {
            "deliveries were"
        };
        match self.outcome {
            Stage::Ingest(_) => format!("{n} {deliveries} never applied"),
            Stage::Forward => format!("{n} {deliveries} never delivered to {}", self.source),
        }
    }
}

/// The longest reason an operator gives for resolving or ignoring a cause, in bytes.
pub const MAX_REASON_BYTES: usize = 500;

/// What setting a state answered: the failures it covers (open ones; an ignored cause's since),
/// and whether it was set. Resolving or ignoring is set only when the caller confirms that count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateChange {
    pub covers: i64,
    /// [`Cause::covers_words`] of `covers`.
    pub covers_words: String,
    pub changed: bool,
}

/// A resolved or ignored cause as the list of them shows it: who, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettledCause {
    pub cause: Cause,
    pub state: ProblemState,
    /// RFC 3339, UTC.
    pub changed_at: String,
    pub changed_by: String,
    pub reason: Option<String>,
}

/// One page of the resolved and ignored causes, the newest change first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettledPage {
    pub rows: Vec<SettledCause>,
    /// Resolved and ignored causes in all.
    pub total: i64,
    /// This page (0 the first) and the rows a page holds.
    pub page: u32,
    pub page_size: u32,
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
    /// Why, as the operator said when resolving or ignoring it.
    pub reason: Option<String>,
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
    /// Its body expired (`body_retention_days`): there is nothing to replay.
    #[serde(default)]
    pub body_expired: usize,
}

impl Skipped {
    pub fn total(&self) -> usize {
        self.resolved + self.replays + self.same_failure + self.unknown_source + self.body_expired
    }

    /// `already resolved 5, would fail the same way 3` (only the reasons that count).
    pub fn in_words(&self) -> String {
        [
            ("already resolved", self.resolved),
            ("replays themselves", self.replays),
            ("would fail the same way", self.same_failure),
            ("source no longer configured", self.unknown_source),
            ("body expired", self.body_expired),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(why, n)| format!("{why} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// What the forwarder records of an attempt that got no answer in time (`no answer within 10 s`)
/// and of one whose connection failed: the answer classes `timeout` and `connection refused`
/// read them (`db::problems`).
pub const NO_ANSWER_WITHIN: &str = "no answer within";
pub const CONNECTION_FAILED: &str = "the connection was refused or failed";

/// The answer classes of dead forward deliveries, the classes of a forwarding cause: by the last
/// attempt's status (`4xx`, `5xx`, `other status`), else by why no status came.
pub const ANSWER_CLASSES: &[&str] = &[
    "4xx",
    "5xx",
    "other status",
    "timeout",
    "connection refused",
    "request failed",
];

super::vocabulary! {
    /// Which problems the API lists (`GET /api/v1/problems?state=`): open ones (acknowledged
    /// ones too), one state's, or all.
    ProblemFilter {
        Open = "open",
        Acknowledged = "acknowledged",
        Resolved = "resolved",
        Ignored = "ignored",
        All = "all",
    }
}

/// A problem as programs read it (`GET /api/v1/problems`) and a `webhook` channel is told it: a
/// cause, its state and its counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ssr", schema(example = json!({
    "id": 17,
    "source": "shop",
    "outcome": "invalid",
    "class": "snapshot (/data) is missing",
    "state": "open",
    "open_failures": 34,
    "first_seen": "2026-12-06T08:12:03.117+00:00",
    "last_seen": "2026-12-06T09:40:55.902+00:00",
    "example_event_id": 48120
})))]
pub struct ProblemInfo {
    /// The cause's id: the same for the cause whatever happens to its failures.
    pub id: i64,
    /// The source (or, for `outcome` `forward`, the destination).
    pub source: String,
    /// The failures' outcome, or `forward`: forward deliveries the destination never took.
    #[cfg_attr(feature = "ssr", schema(value_type = String))]
    pub outcome: Stage,
    /// The cause without what varies between deliveries (ids, numbers, quoted values).
    pub class: String,
    /// `open`, `acknowledged`, `resolved` or `ignored`.
    pub state: String,
    /// Its failures no replay or retry resolved and no state set aside.
    pub open_failures: i64,
    /// Its first and last failure counted (RFC 3339); none once none is left.
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    /// An archive id of one of its failures (`GET /api/v1/events/{id}`).
    pub example_event_id: Option<i64>,
}
