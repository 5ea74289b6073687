//! /search: what support types (an order number, an event id, an email), found by id or in the
//! bodies, grouped by object: each with its current revision (or, for a dedup source, how many
//! deliveries were accepted) and its newest delivery.

use crate::components::query::param;
use crate::components::{Loaded, LocalTime, StatusBadge, TopBar};
use crate::error::DashboardError;
use crate::model::{EventRow, FindResult, FoundEvent, FoundObject, Match};
use crate::url::urlencode;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// Searches for `q` (`None`: nothing to search for once trimmed). A body search: at most one per
/// user at once and a few per process (429), cancelled at its deadline (408).
#[server(endpoint = "find")]
pub async fn find(q: String) -> Result<Option<FindResult>, DashboardError> {
    use crate::db::search_bounds::{self, SearchError};
    use crate::db::support_search::{Limits, parse_query};
    use crate::guard;
    let user = guard::require(crate::model::Role::Viewer).await?;
    let Some(q) = parse_query(&q)? else {
        return Ok(None);
    };
    let db = guard::db()?;
    let request_timeout = guard::config()?.server.request_timeout_secs;
    let deadline = search_bounds::search_deadline(std::time::Duration::from_secs(request_timeout));
    let found = match search_bounds::begin_search_as(&user.name, "q") {
        Ok(_permit) => crate::db::support_search::find(&db, &q, &Limits::default(), deadline).await,
        Err(busy) => Err(busy),
    };
    found.map(Some).map_err(|e| match e {
        SearchError::Query(e) => guard::query_failed(e),
        SearchError::Busy(why) => guard::fail(DashboardError::Throttled(why)),
        SearchError::TimedOut(after) => {
            tracing::warn!(user = %user.name, q = %q, "search stopped at its deadline");
            guard::fail(DashboardError::TimedOut(format!(
                "q: the search ran past its deadline of {} ms and was stopped; type more of the id, or a whole value",
                after.as_millis()
            )))
        }
    })
}

#[component]
pub fn SearchPage() -> impl IntoView {
    let query = use_query_map();
    let q = Memo::new(move |_| param(&query.read(), "q").unwrap_or_default());
    let result = Resource::new(move || q.get(), find);
    view! {
        <TopBar/>
        <main>
            <h1>"Search"</h1>
            <Loaded resource=result show=|r| match r {
                None => view! {
                    <p data-testid="search-prompt">"Type in the search box above: an order number or any object id, an event id (whole, its start or its end, in any case; a leading # is ignored for ids), or a value from a delivery's body such as a customer's email, an order name like #1041, or part of a name or a city (three characters or more, in any case)."</p>
                }.into_any(),
                Some(r) => view! { <Results r/> }.into_any(),
            }/>
        </main>
    }
}

#[component]
fn Results(r: FindResult) -> impl IntoView {
    if r.objects.is_empty() && r.events.is_empty() {
        return view! {
            <p data-testid="search-empty">{r.nothing_found()}</p>
            <p class="muted">"An id is found whole or by its start or end; a body value whole (an email, an order number, with or without its #) anywhere, or as part of a text (three characters or more, in any case) in the newest deliveries."</p>
        }
        .into_any();
    }
    let objects_note = r.more_objects.then(|| {
        format!(
            "Showing the first {} objects; more match. Type more of the id to narrow it.",
            r.objects.len()
        )
    });
    let events_note = r.more_events.then(|| {
        format!(
            "Showing the first {} events; more match. Type more of the id to narrow it.",
            r.events.len()
        )
    });
    let body_note = r.body_more.then(|| {
        format!(
            "More deliveries hold \u{201c}{}\u{201d} in their bodies than the search reads: these are from the newest {}.",
            r.q,
            r.body_limit
        )
    });
    view! {
        <p class="muted" data-testid="search-scope">"Results for " <strong>"\u{201c}" {r.q.clone()} "\u{201d}"</strong> "; searched " {r.searched.clone()} "."</p>
        {(!r.objects.is_empty()).then(|| view! {
            <section class="panel">
                <h2>"Objects"</h2>
                <table class="data" data-testid="found-objects">
                    <thead><tr><th scope="col">"Object"</th><th scope="col">"Source"</th><th scope="col">"Now"</th><th scope="col">"Newest delivery"</th><th scope="col">"Found by"</th></tr></thead>
                    <tbody>{r.objects.into_iter().map(|o| view! { <ObjectRow o/> }).collect_view()}</tbody>
                </table>
                {objects_note.map(|n| view! { <p class="muted" data-testid="objects-more">{n}</p> })}
            </section>
        })}
        {(!r.events.is_empty()).then(|| view! {
            <section class="panel">
                <h2>"Events without an object"</h2>
                <table class="data" data-testid="found-events">
                    <thead><tr><th scope="col">"Event"</th><th scope="col">"Source"</th><th scope="col">"Newest delivery"</th><th scope="col">"Found by"</th></tr></thead>
                    <tbody>{r.events.into_iter().map(|e| view! { <EventRowView e/> }).collect_view()}</tbody>
                </table>
                {events_note.map(|n| view! { <p class="muted" data-testid="events-more">{n}</p> })}
            </section>
        })}
        {body_note.map(|n| view! { <p class="muted" data-testid="body-more">{n}</p> })}
    }
    .into_any()
}

#[component]
fn ObjectRow(o: FoundObject) -> impl IntoView {
    let href = format!(
        "/objects/{}/{}",
        urlencode(&o.source),
        urlencode(&o.object_id)
    );
    let now = match (o.current_revision, o.updated_at.clone()) {
        (Some(revision), Some(at)) => view! {
            <span data-testid="found-revision">"revision " <strong>{revision}</strong></span> ", " <LocalTime utc=at/>
        }
        .into_any(),
        _ if o.accepted_more => view! {
            <span data-testid="found-accepted">"more than " {FoundObject::ACCEPTED_COUNTED} " accepted deliveries"</span>
        }
        .into_any(),
        _ if o.accepted > 0 => view! {
            <span data-testid="found-accepted">{o.accepted} {if o.accepted == 1 { " accepted delivery" } else { " accepted deliveries" }}</span>
        }
        .into_any(),
        _ => view! { <span class="muted">"nothing accepted"</span> }.into_any(),
    };
    view! {
        <tr data-testid="found-object" data-source=o.source.clone() data-object=o.object_id.clone()>
            <td class="mono" data-label="Object"><a href=href data-testid="found-object-link">{o.object_id.clone()}</a></td>
            <td data-label="Source">{o.source.clone()}</td>
            <td data-label="Now">{now}</td>
            <td data-label="Newest delivery"><Newest row=o.newest/></td>
            <td data-label="Found by"><Matched m=o.matched/></td>
        </tr>
    }
}

#[component]
fn EventRowView(e: FoundEvent) -> impl IntoView {
    let label = e
        .event_id
        .clone()
        .unwrap_or_else(|| "(no event id)".to_string());
    view! {
        <tr data-testid="found-event">
            <td class="mono" data-label="Event">{label}</td>
            <td data-label="Source">{e.source.clone()}</td>
            <td data-label="Newest delivery"><Newest row=e.newest/></td>
            <td data-label="Found by"><Matched m=e.matched/></td>
        </tr>
    }
}

/// A delivery in a result: its link, type, outcome and time.
#[component]
fn Newest(row: Option<EventRow>) -> impl IntoView {
    match row {
        None => view! { <span class="muted">"none kept (purged)"</span> }.into_any(),
        Some(r) => view! {
            <a href=format!("/events/{}", r.id) data-testid="found-delivery">"#" {r.id}</a>
            " " {r.event_type.clone().map(|t| view! { <span class="mono">{t}</span> " " })}
            <StatusBadge status=r.status outcome=r.outcome/> " " <LocalTime utc=r.received_at.clone()/>
        }
        .into_any(),
    }
}

#[component]
fn Matched(m: Vec<Match>) -> impl IntoView {
    let words: Vec<&str> = m.iter().map(|m| m.words()).collect();
    view! { <span class="found-by">{words.join("; ")}</span> }
}
