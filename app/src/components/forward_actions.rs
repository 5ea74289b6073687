//! The actions on one forward delivery, shared by the destination page and the event page: a
//! dead one retried, a delivered one re-sent (operators, a configured destination, audited).

use crate::error::DashboardError;
use leptos::prelude::*;

/// A configured destination's name, or 404: only those are paused or retried.
#[cfg(feature = "ssr")]
pub(crate) fn configured_name(name: &str) -> Result<(), DashboardError> {
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

#[cfg(feature = "ssr")]
pub(crate) fn actor_of(user: &crate::auth::User) -> (String, String) {
    (user.name.clone(), crate::guard::client_address())
}

#[cfg(feature = "ssr")]
pub(crate) fn retry_failed(error: crate::db::destinations::RetryError) -> DashboardError {
    use crate::db::destinations::RetryError;
    match error {
        RetryError::Refused(reason) => crate::guard::bad_request(reason),
        RetryError::Query(e) => crate::guard::query_failed(e),
    }
}

/// Makes one dead delivery due now, its retry schedule started again.
#[server(endpoint = "retry_forward")]
pub async fn retry_forward(name: String, id: i64) -> Result<(), DashboardError> {
    use crate::db::destinations::{Actor, retry_one};
    use crate::guard;
    let user = guard::require(crate::model::Role::Operator).await?;
    configured_name(&name)?;
    let (actor, address) = actor_of(&user);
    retry_one(
        &guard::db()?,
        &name,
        id,
        &Actor {
            name: &actor,
            address: &address,
        },
    )
    .await
    .map_err(retry_failed)?;
    crate::guard::wake_forwarder();
    tracing::info!(user = %actor, destination = %name, delivery = id, "dead forward delivery retried");
    Ok(())
}

/// Sends one delivered delivery again, as a new forward delivery; answers its id.
#[server(endpoint = "resend_forward")]
pub async fn resend_forward(name: String, id: i64) -> Result<i64, DashboardError> {
    use crate::db::destinations::{Actor, resend::resend_one};
    use crate::guard;
    let user = guard::require(crate::model::Role::Operator).await?;
    configured_name(&name)?;
    let (actor, address) = actor_of(&user);
    let created = resend_one(
        &guard::db()?,
        &name,
        id,
        &Actor {
            name: &actor,
            address: &address,
        },
    )
    .await
    .map_err(retry_failed)?;
    crate::guard::wake_forwarder();
    tracing::info!(user = %actor, destination = %name, delivery = id, created, "forward delivery re-sent");
    Ok(created)
}
