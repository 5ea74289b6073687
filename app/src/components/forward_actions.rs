//! The actions on one forward delivery, shared by the destination page and the event page: a
//! dead one retried, a delivered one re-sent (operators, a configured destination, audited).

use crate::error::DashboardError;
use leptos::prelude::*;

/// A configured destination's name, or 404: only those are paused or retried.
#[cfg(feature = "ssr")]
fn configured_name(name: &str) -> Result<(), DashboardError> {
    if crate::guard::configured_destinations()?
        .iter()
        .any(|(n, _)| n == name)
    {
        Ok(())
    } else {
        Err(crate::guard::fail(DashboardError::NotFound(format!(
            "there is no configured destination {name:?}"
        ))))
    }
}

/// An operator acting on a configured destination: the database, who, and from where.
#[cfg(feature = "ssr")]
pub(crate) struct Operating {
    pub db: crate::db::Db,
    pub user: String,
    address: String,
}

#[cfg(feature = "ssr")]
impl Operating {
    /// The signed-in operator acting on destination `name`: 403 for a viewer, 404 for a name
    /// that is not configured.
    pub async fn on(name: &str) -> Result<Operating, DashboardError> {
        let user = crate::guard::require(crate::model::Role::Operator).await?;
        configured_name(name)?;
        Ok(Operating {
            db: crate::guard::db()?,
            user: user.name,
            address: crate::guard::client_address(),
        })
    }

    /// Who acts, as the audit log records it.
    pub fn actor(&self) -> crate::db::destinations::Actor<'_> {
        crate::db::destinations::Actor {
            name: &self.user,
            address: &self.address,
        }
    }
}

/// Makes one dead delivery due now, its retry schedule started again.
#[server(endpoint = "retry_forward")]
pub async fn retry_forward(name: String, id: i64) -> Result<(), DashboardError> {
    let acting = Operating::on(&name).await?;
    crate::db::destinations::retry_one(&acting.db, &name, id, &acting.actor()).await?;
    crate::guard::wake_forwarder();
    tracing::info!(user = %acting.user, destination = %name, delivery = id, "dead forward delivery retried");
    Ok(())
}

/// Sends one delivered delivery again, as a new forward delivery; answers its id.
#[server(endpoint = "resend_forward")]
pub async fn resend_forward(name: String, id: i64) -> Result<i64, DashboardError> {
    let acting = Operating::on(&name).await?;
    let created =
        crate::db::destinations::resend::resend_one(&acting.db, &name, id, &acting.actor()).await?;
    crate::guard::wake_forwarder();
    tracing::info!(user = %acting.user, destination = %name, delivery = id, created, "forward delivery re-sent");
    Ok(created)
}
