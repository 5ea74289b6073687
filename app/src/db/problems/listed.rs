//! Problems as programs read them (`GET /api/v1/problems`): the causes `/problems` shows, each
//! with its id (its `problems` row, made for a cause that has none yet), state and counts; and
//! a cause by its id, to set its state.

use super::{SHOWN_AT_MOST, Which, both};
use crate::db::{Db, statement};
use crate::model::{Cause, ProblemFilter, ProblemGroup, ProblemInfo, ProblemState, Stage};
use sea_orm::{ConnectionTrait, DbErr};

/// The word of a listed group's state: a resolved cause that failed again is open.
fn state_word(group: &ProblemGroup) -> &'static str {
    match group.state {
        Some(ProblemState::Acknowledged) => "acknowledged",
        Some(ProblemState::Ignored) => "ignored",
        _ => "open",
    }
}

/// The ids of `causes`, made for those without a `problems` row (`marks::mark`, one cause at a
/// time, at most [`SHOWN_AT_MOST`]).
async fn ids_of(db: &Db, causes: &[&Cause]) -> Result<Vec<i64>, DbErr> {
    let mut ids = Vec::with_capacity(causes.len());
    for cause in causes {
        let class = cause.class.clone().unwrap_or_default();
        ids.push(
            super::marks::mark(&db.writer, cause, &class, false)
                .await?
                .id,
        );
    }
    Ok(ids)
}

/// The problems of `filter`, of `source` when given and of the sources of `scope` (a token's;
/// `None`: every source, destinations' problems too), at most [`SHOWN_AT_MOST`], the most
/// recently failing first (resolved ones: the most recently changed first).
pub async fn listed(
    db: &Db,
    filter: ProblemFilter,
    source: Option<&str>,
    scope: Option<&[String]>,
) -> Result<Vec<ProblemInfo>, DbErr> {
    let visible = |cause: &Cause| {
        source.is_none_or(|s| cause.source == s)
            && scope.is_none_or(|sources| {
                cause.outcome != Stage::Forward && sources.contains(&cause.source)
            })
    };
    let mut groups: Vec<ProblemGroup> = Vec::new();
    if filter != ProblemFilter::Resolved {
        if filter != ProblemFilter::Ignored {
            groups.extend(both(db, Which::Open, SHOWN_AT_MOST).await?.0);
        }
        if matches!(filter, ProblemFilter::Ignored | ProblemFilter::All) {
            groups.extend(both(db, Which::Ignored, SHOWN_AT_MOST).await?.0);
        }
    }
    groups.retain(|g| {
        visible(&g.cause)
            && match filter {
                ProblemFilter::Acknowledged => g.state == Some(ProblemState::Acknowledged),
                _ => true,
            }
    });
    let causes: Vec<&Cause> = groups.iter().map(|g| &g.cause).collect();
    let ids = ids_of(db, &causes).await?;
    let mut listed: Vec<ProblemInfo> = groups
        .iter()
        .zip(ids)
        .map(|(g, id)| ProblemInfo {
            id,
            source: g.cause.source.clone(),
            outcome: g.cause.outcome,
            class: g.cause.class.clone().unwrap_or_default(),
            state: state_word(g).into(),
            open_failures: g.count,
            first_seen: Some(g.first_seen.clone()),
            last_seen: Some(g.last_seen.clone()),
            example_event_id: Some(g.example),
        })
        .collect();
    if matches!(filter, ProblemFilter::Resolved | ProblemFilter::All) {
        let shown: Vec<Cause> = groups.into_iter().map(|g| g.cause).collect();
        for (id, cause) in resolved(db).await? {
            if visible(&cause) && !shown.contains(&cause) && listed.len() < SHOWN_AT_MOST {
                listed.push(ProblemInfo {
                    id,
                    source: cause.source.clone(),
                    outcome: cause.outcome,
                    class: cause.class.clone().unwrap_or_default(),
                    state: "resolved".into(),
                    open_failures: 0,
                    first_seen: None,
                    last_seen: None,
                    example_event_id: None,
                });
            }
        }
    }
    Ok(listed)
}

/// Causes with a `problems` row and no open failure, the most recently changed first: those
/// whose failures were all replayed, or that an operator resolved (ignored ones aside).
async fn resolved(db: &Db) -> Result<Vec<(i64, Cause)>, DbErr> {
    let open: Vec<Cause> = both(db, Which::Open, SHOWN_AT_MOST)
        .await?
        .0
        .into_iter()
        .map(|g| g.cause)
        .collect();
    let rows = db
        .dashboard
        .query_all_raw(statement(
            db.backend(),
            format!(
                "SELECT p.id, p.source, p.outcome, p.error_class FROM problems p
                 WHERE NOT EXISTS (SELECT 1 FROM problem_states ps
                     WHERE ps.source = p.source AND ps.outcome = p.outcome
                       AND ps.error_class = p.error_class AND ps.state = '{ignored}')
                 ORDER BY p.changed_at DESC, p.id DESC LIMIT {limit}",
                ignored = ProblemState::Ignored.as_str(),
                limit = SHOWN_AT_MOST * 2,
            ),
            vec![],
        ))
        .await?;
    let mut resolved = Vec::new();
    for row in &rows {
        let cause = super::cause_of(row)?;
        if !open.contains(&cause) {
            resolved.push((row.try_get("", "id")?, cause));
        }
    }
    Ok(resolved)
}

/// The cause of problem `id`, if it has a `problems` row.
pub async fn cause_by_id(db: &Db, id: i64) -> Result<Option<Cause>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(statement(
            db.backend(),
            "SELECT source, outcome, error_class FROM problems WHERE id = $1",
            vec![id.into()],
        ))
        .await?;
    row.map(|r| super::cause_of(&r)).transpose()
}
