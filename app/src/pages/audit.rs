//! `/audit`: sign-ins, replays, exports and forwarding's pauses and retries (who, when, what,
//! with what outcome), and failed sign-ins as counts per client, name and minute.

use crate::components::{Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{AuditAction, AuditRow};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

#[server(endpoint = "audit")]
pub async fn audit_entries(
    action: Option<String>,
    actor: Option<String>,
) -> Result<Vec<AuditRow>, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    crate::db::audit::audit_entries(&guard::db()?, action.as_deref(), actor.as_deref())
        .await
        .map_err(DashboardError::from)
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let query = use_query_map();
    let filter = move || {
        let q = query.read();
        (
            q.get("action").filter(|v| !v.is_empty()),
            q.get("actor").filter(|v| !v.is_empty()),
        )
    };
    let entries = Resource::new(filter, |(action, actor)| audit_entries(action, actor));
    let selected =
        move |option: &'static str| move || query.read().get("action").as_deref() == Some(option);
    view! {
        <TopBar/>
        <main>
            <h1>"Audit"</h1>
            <form class="filters" method="GET" action="/audit" aria-label="Filter the audit log">
                <label>"Action"
                    <select name="action">
                        <option value="">"any"</option>
                        {AuditAction::ALL.iter().map(|a| a.as_str()).map(|a| view! { <option value=a selected=selected(a)>{a}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Who" <input name="actor" type="text" prop:value=move || query.read().get("actor").unwrap_or_default()/></label>
                <button type="submit">"Apply"</button>
            </form>
            <Loaded resource=entries show=|rows| view! { <AuditTable rows/> }/>
        </main>
    }
}

#[component]
fn AuditTable(rows: Vec<AuditRow>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="muted">"Nothing recorded yet."</p> }.into_any();
    }
    view! {

                            <table class="data" data-testid="audit-table">
                                <thead><tr><th scope="col">"When"</th><th scope="col">"Who"</th><th scope="col">"Action"</th><th scope="col">"Target"</th><th scope="col">"Outcome"</th><th scope="col">"Detail"</th></tr></thead>
                                <tbody>
                                    {rows.into_iter().map(|r| view! {
                                        <tr data-testid="audit-row">
                                            <td data-label="When"><LocalTime utc=r.at/></td>
                                            <td data-label="Who">{r.actor}</td>
                                            <td data-label="Action">{r.action.as_str()}</td>
                                            <td data-label="Target">{match (r.action.as_str(), r.target.clone()) {
                                                ("replay", Some(id)) => view! { <a href=format!("/events/{id}")>"delivery " {id.clone()}</a> }.into_any(),
                                                (_, target) => view! { <span>{target.unwrap_or_default()}</span> }.into_any(),
                                            }}</td>
                                            <td data-label="Outcome">{r.outcome}</td>
                                            <td data-label="Detail" class="muted">{r.detail.unwrap_or_default()}</td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
    }
    .into_any()
}
