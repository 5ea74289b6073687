//! The notifier's sweep: the causes whose mark disagrees with their failures, decided again
//! (`crate::db::problems::marks::notice`).

use crate::db::problems::marks::notice;
use crate::db::statement;
use crate::model::{Cause, Stage};
use sea_orm::{ConnectionTrait, DbErr};

/// Causes a sweep looks at, at most.
const SWEPT_AT_MOST: usize = 1000;

/// Decides every cause whose mark disagrees with its failures, each in a transaction of its
/// own: causes marked open with no open failure left (their failures purged), and open causes
/// marked closed (failures restored from the cold archive, or stored by a version before the
/// marks). Answers the changes it recorded.
pub async fn sweep(db: &crate::db::Db) -> Result<usize, DbErr> {
    use sea_orm::TransactionTrait;
    let open = crate::db::problems::open_causes(&db.dashboard, SWEPT_AT_MOST).await?;
    let marked = db
        .dashboard
        .query_all_raw(statement(
            db.backend(),
            format!(
                "SELECT source, outcome, error_class FROM problems
                 WHERE open AND outcome <> '{}' LIMIT {SWEPT_AT_MOST}",
                Stage::FORWARD
            ),
            vec![],
        ))
        .await?
        .iter()
        .map(crate::db::problems::cause_of)
        .collect::<Result<Vec<Cause>, DbErr>>()?;
    let mut disagreeing: Vec<&Cause> = marked.iter().filter(|c| !open.contains(c)).collect();
    for cause in &open {
        if !marked.contains(cause) {
            disagreeing.push(cause);
        }
    }
    let mut changes = 0;
    for cause in disagreeing {
        let txn = db.writer.begin().await?;
        if notice(&txn, cause).await?.is_some() {
            changes += 1;
        }
        txn.commit().await?;
    }
    Ok(changes)
}
