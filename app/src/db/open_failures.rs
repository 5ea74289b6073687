//! The one definition of an **open failure**, which every view reads (the problems page, the
//! failed list's "open only", the overview, the alert metrics): a failed archive row that is not
//! itself a replay, that no replay resolved, and whose cause is neither ignored nor resolved
//! after it arrived (`problem_states`).

use crate::model::{ProblemState, Status};

/// The archive rows a problem can hold, as far as the row itself tells: failed, not a replay,
/// not resolved by one. The predicate of the partial index that serves every query here.
pub(crate) fn unresolved(row: &str) -> String {
    format!(
        "{row}.status = '{failed}' AND {row}.replayed_by IS NULL AND {row}.resolved_by IS NULL",
        failed = Status::Failed.as_str()
    )
}

/// Whether the operator's state `ps` (a `problem_states` row, or nulls) leaves the failure
/// `row` open: no state, acknowledged, or resolved before the failure arrived.
pub(crate) fn left_open(ps: &str, row: &str) -> String {
    format!(
        "({ps}.state IS NULL OR {ps}.state = '{acknowledged}'
          OR ({ps}.state = '{resolved}' AND {row}.received_at > {ps}.changed_at))",
        acknowledged = ProblemState::Acknowledged.as_str(),
        resolved = ProblemState::Resolved.as_str(),
    )
}

/// The condition "the archive row `row` (a table name or alias) is an open failure", for any
/// `SELECT … FROM webhook_events`: the one definition of an open failure.
pub fn open_failure(row: &str) -> String {
    format!(
        "{unresolved} AND NOT EXISTS (SELECT 1 FROM problem_states ps
            WHERE ps.source = {row}.source AND ps.outcome = {row}.outcome
              AND ps.error_class = {row}.error_class AND NOT {open})",
        unresolved = unresolved(row),
        open = left_open("ps", row),
    )
}
