//! What a replay resolves: the statement of the write path that marks failures resolved
//! (`write::Statements::resolve`), and its parameters.

use crate::db::dialect::{Binds, Param};
use crate::model::Status;

/// How far up a chain of replays of replays a replay resolves (a bound on the walk).
const RESOLVE_DEPTH: usize = 100;

/// The replay `:replay` resolves the failure it replays (`:replayed`), the failures up its
/// chain of `replay_of` (the original of a replay of a replay) and the failed replays of any of
/// them; a row already resolved keeps its first resolution.
pub(super) fn statement() -> String {
    let chain = format!(
        "WITH RECURSIVE chain (id, up, depth) AS (
             SELECT id, replay_of, 0 FROM webhook_events WHERE id = :replayed
             UNION ALL
             SELECT e.id, e.replay_of, chain.depth + 1
             FROM webhook_events e JOIN chain ON e.id = chain.up
             WHERE chain.depth < {RESOLVE_DEPTH}
         )
         SELECT id FROM chain"
    );
    format!(
        "UPDATE webhook_events SET resolved_by = :replay
         WHERE (id IN ({chain}) OR replay_of IN ({chain}))
           AND status = '{failed}' AND resolved_by IS NULL",
        failed = Status::Failed.as_str()
    )
}

/// The parameters of [`statement`].
pub(super) struct Resolution {
    pub replayed: i64,
    pub replay: i64,
}

impl Binds for Resolution {
    fn param(&self, name: &str) -> Option<Param<'_>> {
        Some(match name {
            "replayed" => self.replayed.into(),
            "replay" => self.replay.into(),
            _ => return None,
        })
    }
}
