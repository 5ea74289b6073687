//! `/objects/{source}/{object_id}`: the current revision and snapshot, and every accepted revision
//! (current and stale ones marked) with the field-level changes from the one before.

use crate::components::{Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::ObjectHistory;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[server(endpoint = "object")]
pub async fn get_object(
    source: String,
    object_id: String,
) -> Result<ObjectHistory, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let history = crate::db::objects::object_history(&db, &source, &object_id)
        .await
        .map_err(|e| guard::unavailable(&e))?;
    if history.current_revision.is_none()
        && history.revisions.is_empty()
        && !crate::db::objects::has_deliveries(&db, &source, &object_id)
            .await
            .map_err(|e| guard::unavailable(&e))?
    {
        return Err(guard::fail(DashboardError::NotFound(format!(
            "hookbox holds nothing about the object {object_id:?} of the source {source:?}: no revision and no delivery"
        ))));
    }
    Ok(history)
}

#[component]
pub fn ObjectPage() -> impl IntoView {
    let params = use_params_map();
    let key = move || {
        let p = params.read();
        (
            p.get("source").unwrap_or_default(),
            p.get("object_id").unwrap_or_default(),
        )
    };
    let history = Resource::new(key, |(source, object_id)| get_object(source, object_id));
    view! {
        <TopBar/>
        <main>
            <Loaded resource=history show=|h| view! { <ObjectBody h/> }/>
        </main>
    }
}

#[component]
fn ObjectBody(h: ObjectHistory) -> impl IntoView {
    let events_link = format!("/events?q={}", crate::url::urlencode(&h.object_id));
    view! {
        <h1>"Object " <span class="mono">{h.object_id.clone()}</span> <span class="muted">" in " {h.source.clone()}</span></h1>
        <section class="panel">
            {match (h.current_revision, h.current_snapshot.clone(), h.updated_at.clone()) {
                (Some(revision), Some(snapshot), Some(updated_at)) => view! {
                    <p data-testid="current-revision">"Current revision " <strong>{revision}</strong> ", updated " <LocalTime utc=updated_at/></p>
                    <pre class="body"><code>{snapshot}</code></pre>
                }.into_any(),
                _ => view! { <p class="muted">"No projection for this object: hookbox never applied a revision of it."</p> }.into_any(),
            }}
            <p><a href=events_link>"Every delivery about this object"</a></p>
        </section>
        <section class="panel">
            <h2>"Accepted revisions"</h2>
            {if h.revisions.is_empty() {
                view! { <p class="muted">"No revision of this object is in the inbox."</p> }.into_any()
            } else {
                view! {
                    <table class="data" data-testid="revisions">
                        <thead><tr><th scope="col">"Revision"</th><th scope="col">"Event"</th><th scope="col">"Arrived"</th><th scope="col">"Changes from the previous revision"</th></tr></thead>
                        <tbody>
                            {h.revisions.into_iter().map(|r| {
                                let marks = view! {
                                    {r.current.then(|| view! { <span class="badge badge-processed" data-testid="current-mark">"current"</span> })}
                                    {r.stale.then(|| view! { <span class="badge badge-skipped" data-testid="stale-mark" title="arrived after a greater revision was already current">"stale"</span> })}
                                };
                                view! {
                                    <tr data-testid="revision-row" data-revision=r.revision>
                                        <td>{r.revision} " " {marks}</td>
                                        <td class="mono"><a href=format!("/events?q={}", crate::url::urlencode(&r.event_id))>{r.event_id.clone()}</a></td>
                                        <td><LocalTime utc=r.received_at.clone()/></td>
                                        <td>
                                            <ul class="diff">
                                                {r.changes.into_iter().map(|c| view! {
                                                    <li><span class="mono">{c.path}</span> ": "
                                                        {c.before.map(|b| view! { <del>{b}</del> " " })}
                                                        {c.after.map(|a| view! { <ins>{a}</ins> })}
                                                    </li>
                                                }).collect_view()}
                                            </ul>
                                            {r.changes_note.map(|note| view! { <p class="muted" data-testid="changes-note">{note}</p> })}
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
    }
}
