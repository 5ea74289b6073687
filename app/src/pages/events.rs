//! `/events`: the archive, newest first, filtered through the URL, 50 rows a page by cursor, new
//! deliveries appearing while "live" is on. Operators can bulk-replay the failed ones matching.

use crate::components::confirm::{BulkAction, ConfirmPanel, Said};
use crate::components::query::{param, query_pairs};
use crate::components::{Loaded, LocalTime, StatusBadge, TopBar};
use crate::error::DashboardError;
use crate::model::{BulkReplayResult, EventFilter, EventPage, Me, OutcomeKind, Role, Status};
use crate::url::urlencode;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// The URL parameters of the archive's filter (`EventFilter`), which links carry on.
const FILTER_KEYS: [&str; 10] = [
    "status", "outcome", "source", "from", "to", "q", "match", "tz", "open", "class",
];

pub use crate::model::BULK_REPLAY_LIMIT;

#[server(endpoint = "events")]
pub async fn list_events(
    /// On the wire as the page's query: `status=…&source=…`.
    #[server(flatten)]
    filter: EventFilter,
    cursor: Option<String>,
) -> Result<EventPage, DashboardError> {
    use crate::db::search_bounds::SearchError;
    use crate::guard;
    let user = guard::require(Role::Viewer).await?;
    let db = guard::db()?;
    let request_timeout = guard::config()?.server.request_timeout_secs;
    crate::db::events::find_events(
        &db,
        &filter,
        cursor.as_deref(),
        crate::db::events::PAGE_SIZE,
        &user.name,
        std::time::Duration::from_secs(request_timeout),
    )
    .await
    .map_err(|e| match e {
        SearchError::Query(e) => guard::query_failed(e),
        SearchError::Busy(why) => guard::fail(DashboardError::Throttled(why)),
        timed_out @ SearchError::TimedOut(_) => {
            tracing::warn!(user = %user.name, error = %timed_out, "payload search stopped");
            guard::fail(DashboardError::TimedOut(timed_out.to_string()))
        }
    })
}

/// The configured sources' names, in the configuration's order: the Source filter's choices.
#[server(endpoint = "event_sources")]
pub async fn event_sources() -> Result<Vec<String>, DashboardError> {
    use crate::guard;
    guard::require(Role::Viewer).await?;
    Ok(guard::config()?
        .sources
        .iter()
        .map(|s| s.name.clone())
        .collect())
}

/// Dry-runs the replay of the failed deliveries matching the filter; with the typed
/// confirmation (`replay N`), replays them.
#[server(endpoint = "bulk_replay")]
pub async fn bulk_replay(
    /// On the wire as the page's query; its status is ignored: bulk replay takes the failed.
    #[server(flatten)]
    filter: EventFilter,
    confirmation: Option<String>,
) -> Result<BulkReplayResult, DashboardError> {
    use crate::guard;
    use crate::ingest::replay::{Bulk, FilterReplayError, ReplayError, replay_filter};
    let user = guard::require(Role::Operator).await?;
    let filter = EventFilter {
        status: None,
        ..filter
    };
    let db = guard::db()?;
    let config = guard::config()?;
    // The count the dry run answered, as typed: `replay 26`.
    let mode = match confirmation.as_deref().map(str::trim) {
        None | Some("") => Bulk::DryRun,
        Some(typed) => match typed
            .strip_prefix("replay ")
            .and_then(|n| n.trim().parse::<usize>().ok())
        {
            Some(expected) if expected > 0 => Bulk::Confirmed { expected },
            _ => {
                return Err(guard::bad_request(
                    "confirmation: type \"replay N\", N the count the dry run answered",
                ));
            }
        },
    };
    let (matched, done) = replay_filter(&db, &config, &filter, &user.name, mode)
        .await
        .map_err(|e| match e {
            FilterReplayError::Query(e) => guard::query_failed(e),
            FilterReplayError::TooMany => guard::bad_request(format!(
                "more than {BULK_REPLAY_LIMIT} failed deliveries match; narrow the filter"
            )),
            FilterReplayError::Replay(ReplayError::CountChanged { now, .. }) => {
                guard::bad_request(format!(
                    "what matches changed since the dry run: {now} deliveries would be replayed now; \
                     type \"replay {now}\" to confirm"
                ))
            }
            FilterReplayError::Replay(e) => guard::replay_failed(e),
        })?;
    let confirmed = mode != Bulk::DryRun;
    if confirmed {
        crate::guard::wake_forwarder();
    }
    Ok(BulkReplayResult {
        matched,
        breakdown: done
            .breakdown()
            .into_iter()
            .map(|(name, n)| (name.to_string(), n))
            .collect(),
        replayed: confirmed,
        // Nothing to confirm when every failure matched is left out.
        confirmation: match done.outcomes.len() {
            0 => String::new(),
            n => format!("replay {n}"),
        },
        scope: bulk_scope(&filter),
        skipped: done.skipped,
    })
}

/// The deliveries a bulk replay takes, in words: the filter's fields as given, then "status
/// failed" (whatever status the filter names). `source crm, status failed`.
#[cfg(feature = "ssr")]
pub fn bulk_scope(filter: &EventFilter) -> String {
    crate::db::filter::in_words(filter, Some(Status::Failed.as_str()))
}

#[component]
pub fn EventsPage() -> impl IntoView {
    let query = use_query_map();
    let filter = Memo::new(move |_| filter_of(&query.read()));
    let live = RwSignal::new(true);
    // The first page refreshes while Live is on and the tab is visible, as every live page.
    let tick = crate::components::live::live_tick(move || {
        live.get_untracked() && filter.with_untracked(|(_, cursor)| cursor.is_none())
    });
    let page = Resource::new(
        move || (filter.get(), tick.get()),
        |((f, cursor), _)| list_events(f, cursor),
    );
    let me = Resource::new(|| (), |_| crate::session::current_user());
    let sources = Resource::new(|| (), |_| event_sources());
    // The filter the list shows, for the bulk-replay panel.
    let on_screen = Memo::new(move |_| filter.read().0.clone());
    // Each field shows the URL's filter: as an attribute (in the server's HTML) and as a
    // property (after a client-side navigation, Clear or the browser's Back button, where the
    // attribute no longer decides what a field the user has touched shows, and after hydration,
    // over the choices the browser restores into a page it reloads on Back).
    let restored = restored_from_cache();
    let value = move |key: &'static str| {
        move || {
            restored.track();
            query.read().get(key).unwrap_or_default()
        }
    };
    // The zone whose days From and To are.
    let days_in = move || filter.read().0.tz.clone().unwrap_or_default();
    let selected = move |key: &'static str, option: &'static str| {
        move || query.read().get(key).as_deref() == Some(option)
    };

    view! {
        <TopBar/>
        <main>
            <h1>"Events"</h1>
            <form class="filters" method="GET" action="/events" aria-label="Filter events">
                <label>"Status"
                    <select name="status" prop:value=value("status")>
                        <option value="">"any"</option>
                        {Status::ALL.iter().map(|s| s.as_str()).map(|s| view! { <option value=s selected=selected("status", s)>{s}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Outcome"
                    <select name="outcome" prop:value=value("outcome")>
                        <option value="">"any"</option>
                        {OutcomeKind::ALL.iter().map(|o| o.as_str())
                            .map(|s| view! { <option value=s selected=selected("outcome", s)>{s}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Source"
                    <select name="source" data-testid="source-filter" prop:value=value("source")>
                        <option value="">"any"</option>
                        <SourceChoices sources query/>
                    </select>
                </label>
                <label>"From" <span class="muted">{move || format!(" (day in {})", days_in())}</span> <input name="from" type="date" value=value("from") prop:value=value("from")/></label>
                <label>"To" <span class="muted">{move || format!(" (day in {})", days_in())}</span> <input name="to" type="date" value=value("to") prop:value=value("to")/></label>
                <label>"Event or object id" <input name="q" type="search" value=value("q") prop:value=value("q")/></label>
                <label>"Body contains (JSON)" <input name="match" type="search" size="24" placeholder="{\"customer\":\"cus_123\"}"
                    value=value("match") prop:value=value("match")/></label>
                <label><input name="open" type="checkbox" value="1" checked=move || param(&query.read(), "open").is_some_and(|o| o != "0")
                    prop:checked=move || { restored.track(); param(&query.read(), "open").is_some_and(|o| o != "0") }/>" Open failures only"</label>
                {move || param(&query.read(), "class").map(|class| view! {
                    <input type="hidden" name="class" value=class.clone()/>
                    <span class="cause" data-testid="cause-filter">"Cause: " <q>{class}</q></span>
                })}
                <input type="hidden" name="tz" value=days_in prop:value=days_in/>
                <button type="submit">"Apply"</button>
                <a href="/events">"Clear"</a>
            </form>
            <crate::components::zone::FilterRange range=Signal::derive(move || {
                let f = &filter.read().0;
                (f.from.clone(), f.to.clone(), f.tz.clone())
            })/>
            <p class="export" data-testid="export">
                "Download the deliveries of this filter (newest first, at most 100,000; bodies, no headers): "
                <a href=move || export_href(&query.read(), "ndjson", &days_in()) data-testid="export-ndjson" download>"NDJSON"</a>
                " · "
                <a href=move || export_href(&query.read(), "csv", &days_in()) data-testid="export-csv" download>"CSV"</a>
            </p>
            <p class="live">
                <label>
                    <input type="checkbox" prop:checked=move || live.get() on:change=move |ev| live.set(event_target_checked(&ev))/>
                    " Live: show new deliveries as they arrive"
                </label>
            </p>
            <Loaded resource=page show=move |page| view! { <EventTable page query=query.get_untracked()/> }/>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    let operator = matches!(me.await, Ok(Some(Me { role: Role::Operator, .. })));
                    operator.then(|| view! { <BulkReplayPanel filter=on_screen/> })
                })}
            </Suspense>
        </main>
    }
}

/// The filter and the cursor the URL names.
fn filter_of(q: &leptos_router::params::ParamsMap) -> (EventFilter, Option<String>) {
    (
        EventFilter {
            status: param(q, "status"),
            outcome: param(q, "outcome"),
            source: param(q, "source"),
            from: param(q, "from"),
            to: param(q, "to"),
            // Days in the URL's zone, else in the viewer's (the zone the page shows).
            tz: param(q, "tz").or_else(|| Some(crate::components::zone::viewer_zone_name())),
            q: param(q, "q"),
            r#match: param(q, "match"),
            open: param(q, "open"),
            class: param(q, "class"),
            event_type: param(q, "type"),
            event_id: param(q, "event_id"),
            object_id: param(q, "object_id"),
            visible_sources: None,
        },
        param(q, "cursor"),
    )
}

/// Counts the times the page is shown again from the browser's back-forward cache: a page
/// restored so shows what its fields held when it was left (often a choice then applied, which
/// its URL does not name), and the fields that track this set themselves again.
fn restored_from_cache() -> RwSignal<u32> {
    let restored = RwSignal::new(0u32);
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::pageshow, move |ev| {
            if ev.persisted() {
                restored.update(|n| *n += 1);
            }
        });
        on_cleanup(move || handle.remove());
    }
    restored
}

/// The source filter's choices: the configured sources, and one the URL names that is no longer
/// configured.
#[component]
fn SourceChoices(
    sources: Resource<Result<Vec<String>, DashboardError>>,
    query: Memo<leptos_router::params::ParamsMap>,
) -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || sources.get().map(|names| {
                let mut names = names.unwrap_or_default();
                if let Some(given) = param(&query.read(), "source").filter(|s| !names.contains(s)) {
                    names.push(given);
                }
                names.into_iter().map(|s| {
                    let (chosen, value, label) = (s.clone(), s.clone(), s);
                    view! { <option value=value selected=move || query.read().get("source").as_deref() == Some(chosen.as_str())>{label}</option> }
                }).collect_view()
            })}
        </Suspense>
    }
}

/// The export of the filter in the URL, its dates days in `tz` when the URL names no zone.
fn export_href(query: &leptos_router::params::ParamsMap, format: &str, tz: &str) -> String {
    let mut parts = vec![format!("format={format}")];
    parts.extend(query_pairs(query, &FILTER_KEYS));
    if param(query, "tz").is_none() {
        parts.push(format!("tz={}", urlencode(tz)));
    }
    format!("/export/events?{}", parts.join("&"))
}

#[component]
fn EventTable(page: EventPage, query: leptos_router::params::ParamsMap) -> impl IntoView {
    let next = page.next_cursor.map(|cursor| {
        let mut parts = query_pairs(&query, &FILTER_KEYS);
        parts.push(format!("cursor={}", urlencode(&cursor)));
        format!("/events?{}", parts.join("&"))
    });
    // A list that holds failures shows their errors, and where they are grouped by cause.
    let failures = page.rows.iter().any(|e| e.status == Status::Failed);
    if page.rows.is_empty() {
        return view! {
            <section class="panel empty" data-testid="no-events">
                <p>"No deliveries match. Change the filter, or send one with "<code>"hookbox send SOURCE FILE"</code>"."</p>
            </section>
        }
        .into_any();
    }
    view! {
        <div class="table-wrap">
            <table class="data" data-testid="events-table">
                <thead>
                    <tr>
                        <th scope="col">"Received"</th>
                        <th scope="col">"Outcome"</th>
                        <th scope="col">"Source"</th>
                        <th scope="col">"Event"</th>
                        <th scope="col">"Object"</th>
                        <th scope="col">"Rev."</th>
                        <th scope="col">"Type"</th>
                        {failures.then(|| view! { <th scope="col">"Error"</th> })}
                    </tr>
                </thead>
                <tbody>
                    {page.rows.into_iter().map(|e| view! {
                        <tr data-testid="event-row">
                            <td data-label="Received"><a href=format!("/events/{}", e.id)><LocalTime utc=e.received_at.clone()/></a></td>
                            <td data-label="Outcome"><StatusBadge status=e.status outcome=e.outcome/></td>
                            <td data-label="Source">{e.source.clone()}</td>
                            <td data-label="Event" class="mono"><a href=format!("/events/{}", e.id)>{e.event_id.clone().unwrap_or_else(|| "—".into())}</a></td>
                            <td data-label="Object" class="mono">{e.object_id.clone().map(|o| view! { <a href=format!("/objects/{}/{}", urlencode(&e.source), urlencode(&o))>{o.clone()}</a> })}</td>
                            <td data-label="Rev.">{e.revision}</td>
                            <td data-label="Type">{e.event_type.clone()}</td>
                            {failures.then(|| view! { <td data-label="Error" class="error-cell" data-testid="event-error"><FailureNote e=e.clone()/></td> })}
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        {failures.then(|| view! {
            <p data-testid="group-by-cause"><a href="/problems">"Group the open failures by cause"</a></p>
        })}
        {next.map(|href| view! { <p><a href=href rel="next">"Older deliveries →"</a></p> })}
    }
    .into_any()
}

/// Bulk replay of the failed deliveries matching the filter on screen: dry run, typed
/// confirmation, replay.
#[component]
fn BulkReplayPanel(filter: Memo<EventFilter>) -> impl IntoView {
    let run: BulkAction<EventFilter, BulkReplayResult> =
        Action::new(move |(f, confirm): &(EventFilter, Option<String>)| {
            let (f, confirm) = (f.clone(), confirm.clone());
            async move {
                let result = bulk_replay(f.clone(), confirm).await;
                (f, result)
            }
        });
    view! {
        <ConfirmPanel prefix="bulk" title="Replay failed deliveries matching this filter"
            count_label="Dry run" count_id="dry-run" filter run say=said_of_replay/>
    }
}

/// A bulk replay's answer in the confirmation panel's words.
fn said_of_replay(r: &BulkReplayResult) -> Said {
    let to_replay: usize = r.breakdown.iter().map(|(_, n)| n).sum();
    let what = if r.skipped.total() > 0 {
        format!(
            "{to_replay} of the {} failed deliveries of {}",
            r.matched, r.scope
        )
    } else {
        format!("{} failed deliveries of {}", r.matched, r.scope)
    };
    // `skipped 8: already resolved 5, would fail the same way 3`
    let skipped = match r.skipped.total() {
        0 => None,
        n => Some(format!("skipped {n}: {}", r.skipped.in_words())),
    };
    let after = |separator: &str| {
        skipped
            .as_ref()
            .map(|s| format!("{separator}{s}"))
            .unwrap_or_default()
    };
    Said {
        done: r.replayed,
        matched: r.matched as i64,
        expected: r.confirmation.clone(),
        scope: r.scope.clone(),
        done_text: format!(
            "Replayed {to_replay}{}. Outcomes: {}",
            after(", "),
            breakdown(r)
        ),
        noun: "failed deliveries".into(),
        after_scope: format!(". Would be: {}{}", breakdown(r), after("; ")),
        confirm_label: format!("to replay {what}"),
        button: format!("Replay {what}"),
    }
}

fn breakdown(r: &BulkReplayResult) -> String {
    if r.breakdown.is_empty() {
        return "nothing".into();
    }
    r.breakdown
        .iter()
        .map(|(name, n)| format!("{name}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Longest error message a list row shows (the event page shows it whole).
const ERROR_IN_LIST: usize = 120;

/// A failure's error, cut to a line, and the replay that resolved it.
#[component]
fn FailureNote(e: crate::model::EventRow) -> impl IntoView {
    let message = e.error_message.clone().unwrap_or_default();
    let shown = match message.char_indices().nth(ERROR_IN_LIST) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.clone(),
    };
    view! {
        <span class="error-line" title=message>{shown}</span>
        {e.resolved_by.map(|replay| view! {
            " " <a class="resolved" data-testid="resolved-by" href=format!("/events/{replay}")>{format!("resolved by #{replay}")}</a>
        })}
    }
}
