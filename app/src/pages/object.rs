//! `/objects/{source}/{object_id}`: the current revision and snapshot, and every accepted revision
//! (current and stale ones marked) with the field-level changes from the one before; for a dedup
//! source's object, which has no revisions, its accepted deliveries, newest first.

use crate::components::cut::ShownCut;
use crate::components::{Loaded, LocalTime, StatusBadge, TopBar};
use crate::error::DashboardError;
use crate::model::{ObjectDeliveries, ObjectHistory};
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

/// The object's projection and accepted revisions; its current snapshot cut for the page unless
/// `whole_snapshot` (`?snapshot=all`), which is bounded by what ingest admits (a body's limit).
#[server(endpoint = "object")]
pub async fn get_object(
    source: String,
    object_id: String,
    #[server(default)] whole_snapshot: bool,
) -> Result<ObjectHistory, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let history =
        crate::db::objects::object_history(&db, &source, &object_id, whole_snapshot).await?;
    if history.current_revision.is_none()
        && history.revisions.is_empty()
        && !crate::db::objects::has_deliveries(&db, &source, &object_id).await?
    {
        return Err(guard::fail(DashboardError::NotFound(format!(
            "hookbox holds nothing about the object {object_id:?} of the source {source:?}: no revision and no delivery"
        ))));
    }
    Ok(history)
}

/// The accepted deliveries of an object of a dedup source (by its configured mode, or for a
/// source no longer configured, by events accepted without a revision); `dedup: false` and no
/// rows for a snapshot source's object, whose page lists revisions instead.
#[server(endpoint = "object_deliveries")]
pub async fn get_object_deliveries(
    source: String,
    object_id: String,
) -> Result<ObjectDeliveries, DashboardError> {
    use crate::db::objects;
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let dedup = match guard::config()?.source(&source) {
        Some(configured) => configured.mapping.mode == crate::envelope::Mode::Dedup,
        None => objects::has_unrevisioned(&db, &source, &object_id).await?,
    };
    if !dedup {
        return Ok(ObjectDeliveries {
            dedup: false,
            rows: Vec::new(),
            limit: 0,
            accepted: 0,
            accepted_more: false,
        });
    }
    objects::accepted_deliveries(&db, &source, &object_id, objects::DELIVERIES_LIMIT)
        .await
        .map_err(DashboardError::from)
}

/// Where the object's newest deliveries were forwarded and with what result, greatest revision
/// first (the forward deliveries each produced, as its event page lists them); `true` when some
/// were left out (older deliveries than the newest 50, more than 200 forward deliveries).
#[server(endpoint = "object_forwarded")]
pub async fn get_object_forwarded(
    source: String,
    object_id: String,
) -> Result<(Vec<crate::model::ForwardRow>, bool), DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let (rows, older) = crate::db::objects::forwarded(&guard::db()?, &source, &object_id).await?;
    let left_out = older || rows.len() >= crate::db::destinations::PRODUCED_LIMIT;
    Ok((rows, left_out))
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
    // `?snapshot=all`: the current snapshot whole, not cut.
    let query = use_query_map();
    let whole_snapshot = move || query.read().get("snapshot").as_deref() == Some("all");
    let both = Resource::new(
        move || (key(), whole_snapshot()),
        |((source, object_id), whole_snapshot)| async move {
            let history = get_object(source.clone(), object_id.clone(), whole_snapshot).await?;
            let deliveries = get_object_deliveries(source.clone(), object_id.clone()).await?;
            let forwarded = get_object_forwarded(source, object_id).await?;
            Ok::<_, DashboardError>((history, deliveries, forwarded))
        },
    );
    view! {
        <TopBar/>
        <main>
            <Loaded resource=both show=|(h, d, f)| view! { <ObjectBody h d/> <Forwarded rows=f.0 older=f.1/> }/>
        </main>
    }
}

#[component]
fn ObjectBody(h: ObjectHistory, d: ObjectDeliveries) -> impl IntoView {
    let dedup = d.dedup;
    // A dedup object has no revisions: its deliveries stand in their place.
    let no_revisions = dedup && h.revisions.is_empty();
    let events_link = format!("/events?q={}", crate::url::urlencode(&h.object_id));
    let whole_link = format!(
        "/objects/{}/{}?snapshot=all",
        crate::url::urlencode(&h.source),
        crate::url::urlencode(&h.object_id)
    );
    view! {
        <h1>"Object " <span class="mono">{h.object_id.clone()}</span> <span class="muted">" in " {h.source.clone()}</span></h1>
        <section class="panel">
            {match (h.current_revision, h.current_snapshot.clone(), h.updated_at.clone()) {
                (Some(revision), Some(snapshot), Some(updated_at)) => view! {
                    <p data-testid="current-revision">"Current revision " <strong>{revision}</strong> ", updated " <LocalTime utc=updated_at/></p>
                    <pre class="body" data-testid="snapshot" tabindex="0"><code>{snapshot}</code></pre>
                    {h.snapshot_cut.then(|| view! {
                        <ShownCut what="snapshot" href=whole_link bytes=h.snapshot_bytes testid="snapshot-cut"/>
                    })}
                }.into_any(),
                _ if dedup => view! {
                    <p data-testid="dedup-note">"The source " <strong>{h.source.clone()}</strong> " deduplicates only: hookbox accepts each of its events once, by its id, and keeps no revisions or snapshot of its objects. " {accepted_words(&d)}</p>
                }.into_any(),
                _ => view! { <p class="muted" data-testid="never-applied">"No projection for this object: hookbox never applied a revision of it."</p> }.into_any(),
            }}
            <p><a href=events_link>"Every delivery about this object"</a></p>
        </section>
        {dedup.then(|| view! { <AcceptedDeliveries d=d.clone()/> })}
        <section class="panel" hidden=no_revisions>
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
                                        <td data-label="Revision">{r.revision} " " {marks}</td>
                                        <td data-label="Event" class="mono"><a href=format!("/events?q={}", crate::url::urlencode(&r.event_id))>{r.event_id.clone()}</a></td>
                                        <td data-label="Arrived"><LocalTime utc=r.received_at.clone()/></td>
                                        <td data-label="Changes">
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

/// Where the object's revisions and deliveries were forwarded, with every attempt and answer.
#[component]
fn Forwarded(rows: Vec<crate::model::ForwardRow>, older: bool) -> impl IntoView {
    (!rows.is_empty()).then(|| {
        view! {
            <section class="panel" data-testid="object-forwarded">
                <h2>"Forwarded"</h2>
                <p class="muted">"Where each revision (each delivery) was forwarded, and with what result, greatest revision first."</p>
                <crate::components::forward::ForwardList rows can_act=false retry=None/>
                {older.then(|| view! { <p class="muted" data-testid="forwarded-cut">"Showing what the newest 50 deliveries of this object produced (at most 200 forward deliveries); the destination pages list every one."</p> })}
            </section>
        }
    })
}

/// "It has 3 accepted deliveries." (or "more than 1,000").
fn accepted_words(d: &ObjectDeliveries) -> String {
    match (d.accepted, d.accepted_more) {
        (_, true) => format!(
            "It has more than {} accepted deliveries.",
            crate::model::FoundObject::ACCEPTED_COUNTED
        ),
        (0, _) => "None of its deliveries was accepted.".to_string(),
        (1, _) => "It has 1 accepted delivery.".to_string(),
        (n, _) => format!("It has {n} accepted deliveries."),
    }
}

/// A dedup object's accepted deliveries, newest first.
#[component]
fn AcceptedDeliveries(d: ObjectDeliveries) -> impl IntoView {
    let shown = d.rows.len();
    let cut = shown >= d.limit && (d.accepted_more || d.accepted as usize > shown);
    view! {
        <section class="panel">
            <h2>"Accepted deliveries"</h2>
            {if d.rows.is_empty() {
                view! { <p class="muted">"No accepted delivery of this object is in the archive (retention may have purged them)."</p> }.into_any()
            } else {
                view! {
                    <table class="data" data-testid="accepted-deliveries">
                        <thead><tr><th scope="col">"Delivery"</th><th scope="col">"Event"</th><th scope="col">"Type"</th><th scope="col">"Revision"</th><th scope="col">"Received"</th><th scope="col">"Outcome"</th></tr></thead>
                        <tbody>
                            {d.rows.into_iter().map(|r| view! {
                                <tr data-testid="accepted-row">
                                    <td data-label="Delivery"><a href=format!("/events/{}", r.id)>"#" {r.id}</a></td>
                                    <td class="mono" data-label="Event">{r.event_id.clone().unwrap_or_default()}</td>
                                    <td data-label="Type">{r.event_type.clone().unwrap_or_else(|| "—".into())}</td>
                                    <td data-label="Revision">{r.revision.map(|n| n.to_string()).unwrap_or_else(|| "—".into())}</td>
                                    <td data-label="Received"><LocalTime utc=r.received_at.clone()/></td>
                                    <td data-label="Outcome"><StatusBadge status=r.status outcome=r.outcome/></td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                    {cut.then(|| view! { <p class="muted" data-testid="deliveries-cut">"Showing the newest " {shown} "; every delivery is under the link above."</p> })}
                }.into_any()
            }}
        </section>
    }
}
