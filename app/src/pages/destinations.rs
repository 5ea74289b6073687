//! `/destinations`: each destination's backlog, success rate and last error, paused and resumed
//! by operators; `/destinations/{name}`: its success rate and latency by hour, its deliveries by
//! status with their attempts, a dead one retried or every dead one of the filter, a delivered
//! one re-sent or every one delivered since a time (each bulk action a count first, then a typed
//! confirmation). Both pages update themselves every few seconds while shown.

use crate::components::chart::AttemptCharts;
use crate::components::confirm::{BulkAction, ConfirmPanel, Said};
use crate::components::forward::{ForwardList, ResendAction, ResendSincePanel, RetryAction, age};
#[cfg(feature = "ssr")]
use crate::components::forward_actions::Operating;
use crate::components::forward_actions::{resend_forward, retry_forward};
use crate::components::live::live_tick;
use crate::components::{ErrorNote, Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{
    DestinationPage, DestinationSeries, DestinationSummary, ForwardFilter, ForwardStatus,
    ResendResult, RetryResult,
};
use crate::url::urlencode;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

#[server(endpoint = "destinations")]
pub async fn list_destinations() -> Result<(Vec<DestinationSummary>, bool), DashboardError> {
    use crate::guard;
    let user = guard::require(crate::model::Role::Viewer).await?;
    let list = crate::db::destinations::summaries(
        &guard::db()?,
        &crate::guard::configured_destinations()?,
    )
    .await?;
    Ok((list, user.role == crate::model::Role::Operator))
}

/// A destination's summary, or 404 when it is neither configured nor has deliveries.
#[cfg(feature = "ssr")]
async fn summary_of(db: &crate::db::Db, name: &str) -> Result<DestinationSummary, DashboardError> {
    use crate::guard;
    crate::db::destinations::summaries(db, &crate::guard::configured_destinations()?)
        .await?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            guard::fail(DashboardError::NotFound(format!(
                "there is no destination {name:?}"
            )))
        })
}

#[server(endpoint = "destination")]
pub async fn get_destination(
    name: String,
    /// On the wire as the page's query: `status=…&source=…&q=…`.
    #[server(flatten)]
    filter: ForwardFilter,
    cursor: Option<String>,
) -> Result<DestinationPage, DashboardError> {
    use crate::guard;
    let user = guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let summary = summary_of(&db, &name).await?;
    let (rows, next_cursor) = crate::db::destinations::deliveries(
        &db,
        &name,
        &filter,
        cursor.as_deref(),
        crate::db::destinations::PAGE_SIZE,
    )
    .await?;
    Ok(DestinationPage {
        summary,
        rows,
        next_cursor,
        can_act: user.role == crate::model::Role::Operator,
    })
}

/// Pauses (`paused = true`) or resumes a destination; answers whether it changed.
#[server(endpoint = "pause_destination")]
pub async fn pause_destination(name: String, paused: bool) -> Result<bool, DashboardError> {
    let acting = Operating::on(&name).await?;
    let changed =
        crate::db::destinations::set_paused(&acting.db, &name, paused, &acting.actor()).await?;
    if !paused {
        crate::guard::wake_forwarder();
    }
    tracing::info!(user = %acting.user, destination = %name, paused, changed, "destination paused or resumed");
    Ok(changed)
}

/// Counts the dead deliveries of the filter; with the typed confirmation (`retry N`), retries
/// them.
#[server(endpoint = "retry_dead_forwards")]
pub async fn retry_dead_forwards(
    name: String,
    /// On the wire as the page's query; its status is ignored: a retry takes the dead.
    #[server(flatten)]
    filter: ForwardFilter,
    confirmation: Option<String>,
) -> Result<RetryResult, DashboardError> {
    use crate::db::destinations::{retry_dead, retry_scope};
    let acting = Operating::on(&name).await?;
    let done = retry_dead(
        &acting.db,
        &name,
        &filter,
        confirmation.as_deref(),
        &acting.actor(),
    )
    .await?;
    if done.retried {
        crate::guard::wake_forwarder();
        tracing::info!(user = %acting.user, destination = %name, retried = done.matched, "dead forward deliveries retried");
    }
    Ok(RetryResult {
        matched: done.matched,
        retried: done.retried,
        confirmation: format!("retry {}", done.matched),
        scope: retry_scope(&name, &filter),
        by_answer: done.by_answer,
    })
}

/// The destination's attempts by hour over the last 24 hours, in the viewer's zone.
#[server(endpoint = "destination_series")]
pub async fn get_destination_series(name: String) -> Result<DestinationSeries, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    summary_of(&db, &name).await?;
    crate::db::destinations::series::attempts_by_hour(
        &db,
        &name,
        guard::viewer_zone(),
        chrono::Utc::now(),
    )
    .await
    .map_err(DashboardError::from)
}

/// Counts the deliveries of the destination delivered since `since` (a time in the viewer's
/// zone, or RFC 3339) that a re-send takes; with the typed confirmation (`resend N`), re-sends
/// them.
#[server(endpoint = "resend_since")]
pub async fn resend_since(
    name: String,
    since: String,
    confirmation: Option<String>,
) -> Result<ResendResult, DashboardError> {
    use crate::db::destinations::resend::{self, RESEND_LIMIT};
    use crate::guard;
    let acting = Operating::on(&name).await?;
    let zone = guard::viewer_zone();
    let from = resend::parse_since(&since, zone).map_err(guard::bad_request)?;
    let scope = resend::resend_scope(&name, from, zone);
    let done = resend::resend_since(
        &acting.db,
        &name,
        from,
        &scope,
        confirmation.as_deref(),
        &acting.actor(),
    )
    .await?;
    if done.resent {
        crate::guard::wake_forwarder();
        tracing::info!(user = %acting.user, destination = %name, resent = done.matched, "forward deliveries re-sent");
    }
    Ok(ResendResult {
        matched: done.matched,
        more: done.more,
        limit: RESEND_LIMIT,
        resent: done.resent,
        confirmation: resend::confirmation_of(done.matched),
        scope,
    })
}

fn success(summary: &DestinationSummary) -> String {
    match summary.success_percent() {
        None => "no attempts".to_string(),
        Some(p) => format!(
            "{p:.1} % of {} attempt{}",
            summary.attempts_last_hour,
            if summary.attempts_last_hour == 1 {
                ""
            } else {
                "s"
            }
        ),
    }
}

fn last_error(summary: &DestinationSummary) -> impl IntoView + use<> {
    match (summary.last_error.clone(), summary.last_error_at.clone()) {
        (Some(error), Some(at)) => view! {
            <span data-testid="last-error">{error}</span> <span class="muted">" at " <LocalTime utc=at/></span>
        }
        .into_any(),
        _ => view! { <span class="muted">"none"</span> }.into_any(),
    }
}

/// Pause or resume, then `done` is bumped so the page reloads what it shows.
#[component]
fn PauseButton(name: String, paused: bool, done: RwSignal<u32>) -> impl IntoView {
    let toggle = Action::new(move |(name, pause): &(String, bool)| {
        let (name, pause) = (name.clone(), *pause);
        async move {
            let result = pause_destination(name, pause).await;
            if result.is_ok() {
                done.update(|n| *n += 1);
            }
            result
        }
    });
    let label = if paused { "Resume" } else { "Pause" };
    view! {
        <button type="button" class="small" data-testid=if paused { "resume" } else { "pause" }
            on:click=move |_| { toggle.dispatch((name.clone(), !paused)); }>{label}</button>
        {move || toggle.value().get().and_then(|r| r.err()).map(|e| view! { <ErrorNote error=e/> })}
    }
}

#[component]
pub fn DestinationsPage() -> impl IntoView {
    let done = RwSignal::new(0u32);
    let tick = live_tick(|| true);
    let list = Resource::new(move || (done.get(), tick.get()), |_| list_destinations());
    view! {
        <TopBar/>
        <main>
            <h1>"Destinations"</h1>
            <Loaded resource=list show=move |(list, can_act)| view! { <DestinationTable list can_act done/> }/>
        </main>
    }
}

#[component]
fn DestinationTable(
    list: Vec<DestinationSummary>,
    can_act: bool,
    done: RwSignal<u32>,
) -> impl IntoView {
    if list.is_empty() {
        return view! {
            <section class="panel empty" data-testid="no-destinations">
                <p>"No destinations. Declare one with " <code>"[[destinations]]"</code> " in " <code>"hookbox.toml"</code>
                   " and name it in a source's " <code>"forward"</code> "."</p>
            </section>
        }
        .into_any();
    }
    view! {
        <div class="table-wrap">
            <table class="data" data-testid="destinations-table">
                <thead><tr>
                    <th scope="col">"Destination"</th>
                    <th scope="col">"State"</th>
                    <th scope="col">"Pending"</th>
                    <th scope="col">"Oldest pending"</th>
                    <th scope="col">"Dead"</th>
                    <th scope="col">"Success, last hour"</th>
                    <th scope="col">"Last error"</th>
                    {can_act.then(|| view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> })}
                </tr></thead>
                <tbody>
                    {list.into_iter().map(|d| {
                        let href = format!("/destinations/{}", urlencode(&d.name));
                        let dead_href = format!("{href}?status=dead");
                        let paused = d.paused_at.is_some();
                        let state = match (&d.url, &d.paused_by) {
                            (None, _) => "not configured".to_string(),
                            (_, Some(by)) => format!("paused by {by}"),
                            (_, None) if paused => "paused".to_string(),
                            _ => "active".to_string(),
                        };
                        view! {
                            <tr data-testid="destination-row">
                                <th data-label="Destination" scope="row"><a href=href.clone()>{d.name.clone()}</a>
                                    <div class="muted mono">{d.url.clone().unwrap_or_default()}</div></th>
                                <td data-label="State" data-testid="state">{state}</td>
                                <td data-label="Pending" data-testid="pending"><a href=format!("{href}?status=pending")>{d.pending}</a></td>
                                <td data-label="Oldest pending">{d.oldest_pending_secs.map(age).unwrap_or_else(|| "—".into())}</td>
                                <td data-label="Dead" data-testid="dead"><a href=dead_href>{d.dead}</a></td>
                                <td data-label="Success, last hour">{success(&d)}</td>
                                <td data-label="Last error">{last_error(&d)}</td>
                                {(can_act && d.url.is_some()).then(|| view! { <td data-label="Actions"><PauseButton name=d.name.clone() paused done/></td> })}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// The list's filter and cursor, as the query string has them.
fn filter_of(q: &leptos_router::params::ParamsMap) -> (ForwardFilter, Option<String>) {
    use crate::components::query::param;
    (
        ForwardFilter {
            status: param(q, "status"),
            source: param(q, "source"),
            q: param(q, "q"),
        },
        param(q, "cursor"),
    )
}

/// The filter of a destination's deliveries, filled from the query string.
#[component]
fn FilterForm(name: Memo<String>) -> impl IntoView {
    let query = use_query_map();
    let value = move |key: &'static str| move || query.read().get(key).unwrap_or_default();
    let selected =
        move |option: &'static str| move || query.read().get("status").as_deref() == Some(option);
    view! {
        <form class="filters" method="GET" action=move || format!("/destinations/{}", urlencode(&name.get())) aria-label="Filter deliveries">
            <label>"Status"
                <select name="status" prop:value=value("status")>
                    <option value="">"any"</option>
                    {ForwardStatus::ALL.iter().map(|s| s.as_str()).map(|s| view! { <option value=s selected=selected(s)>{s}</option> }).collect_view()}
                </select>
            </label>
            <label>"Source" <input name="source" type="text" size="10" value=value("source") prop:value=value("source")/></label>
            <label>"Event or object id" <input name="q" type="search" value=value("q") prop:value=value("q")/></label>
            <button type="submit">"Apply"</button>
            <a href=move || format!("/destinations/{}", urlencode(&name.get()))>"Clear"</a>
        </form>
    }
}

#[component]
pub fn DestinationDetailPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let name = Memo::new(move |_| params.read().get("name").unwrap_or_default());
    let filter = Memo::new(move |_| filter_of(&query.read()));
    let done = RwSignal::new(0u32);
    // Live while the newest page is shown (an older page stays as it is).
    let tick = live_tick(move || filter.with_untracked(|(_, cursor)| cursor.is_none()));
    let page = Resource::new(
        move || (name.get(), filter.get(), done.get(), tick.get()),
        |(name, (f, cursor), _, _)| get_destination(name, f, cursor),
    );
    let series = Resource::new(
        move || (name.get(), done.get(), tick.get()),
        |(name, _, _)| get_destination_series(name),
    );
    let on_screen = Memo::new(move |_| filter.read().0.clone());
    // The page owns its actions and the attempts opened, so they outlive each refetch of the
    // list they are shown in.
    let after = move |ok: bool| {
        if ok {
            done.update(|n| *n += 1);
        }
    };
    let bulk: BulkRetry = Action::new(move |(f, confirm): &(ForwardFilter, Option<String>)| {
        let (name, f, confirm) = (name.get_untracked(), f.clone(), confirm.clone());
        async move {
            let result = retry_dead_forwards(name, f.clone(), confirm).await;
            after(matches!(&result, Ok(r) if r.retried));
            (f, result)
        }
    });
    let since = RwSignal::new(String::new());
    let resend_all: BulkAction<String, ResendResult> =
        Action::new(move |(since, confirm): &(String, Option<String>)| {
            let (name, since, confirm) = (name.get_untracked(), since.clone(), confirm.clone());
            async move {
                let result = resend_since(name, since.clone(), confirm).await;
                after(matches!(&result, Ok(r) if r.resent));
                (since, result)
            }
        });
    let retry: RetryAction = Action::new(move |(name, id): &(String, i64)| {
        let (name, id) = (name.clone(), *id);
        async move {
            let result = retry_forward(name, id).await;
            after(result.is_ok());
            result
        }
    });
    let resend: ResendAction = Action::new(move |(name, id): &(String, i64)| {
        let (name, id) = (name.clone(), *id);
        async move {
            let result = resend_forward(name, id).await;
            after(result.is_ok());
            result
        }
    });
    let opened = RwSignal::new(Vec::<i64>::new());
    // Whether the bulk actions are offered: an operator, on a configured destination. Set once
    // known and changed only when that changes, so a refetch never resets a typed confirmation.
    let can_act = RwSignal::new(false);
    Effect::new(move |_| {
        if let Some(Ok(p)) = page.get() {
            let now = p.can_act && p.summary.url.is_some();
            if can_act.get_untracked() != now {
                can_act.set(now);
            }
        }
    });
    view! {
        <TopBar/>
        <main>
            <p><a href="/destinations">"← Destinations"</a></p>
            <h1>"Destination " <span class="mono">{move || name.get()}</span></h1>
            <Loaded resource=series show=move |series| view! { <section class="panel"><AttemptCharts series/></section> }/>
            <FilterForm name/>
            {move || retry.value().get().and_then(|r| r.err()).map(|e| view! { <ErrorNote error=e/> })}
            {move || resend.value().get().map(|r| match r {
                Ok(id) => view! { <p class="ok" role="status" data-testid="resend-one-result">"Re-sent as forward delivery " {id} "."</p> }.into_any(),
                Err(e) => view! { <ErrorNote error=e/> }.into_any(),
            })}
            <Loaded resource=page show=move |p| view! { <DestinationBody p done retry resend opened query=query.get_untracked()/> }/>
            <Show when=move || can_act.get()>
                <ConfirmPanel prefix="retry" title="Retry the dead deliveries matching this filter"
                    count_label="Count them" count_id="count" filter=on_screen run=bulk say=said_of_retry/>
                <ResendSincePanel since run=resend_all
                    zone=Signal::derive(move || series.get().and_then(Result::ok).map(|s| s.zone))/>
            </Show>
        </main>
    }
}

#[component]
fn DestinationBody(
    p: DestinationPage,
    done: RwSignal<u32>,
    retry: RetryAction,
    resend: ResendAction,
    opened: RwSignal<Vec<i64>>,
    query: leptos_router::params::ParamsMap,
) -> impl IntoView {
    let s = p.summary.clone();
    let name = s.name.clone();
    let paused = s.paused_at.is_some();
    let next = p.next_cursor.clone().map(|cursor| {
        let mut parts = crate::components::query::query_pairs(&query, &["status", "source", "q"]);
        parts.push(format!("cursor={}", urlencode(&cursor)));
        format!("/destinations/{}?{}", urlencode(&name), parts.join("&"))
    });
    let rows = if p.rows.is_empty() {
        view! { <section class="panel empty" data-testid="no-forward-deliveries"><p>"No deliveries match."</p></section> }.into_any()
    } else {
        let acting = p.can_act && s.url.is_some();
        view! {
            <ForwardList rows=p.rows.clone() can_act=acting retry=acting.then_some(retry)
                resend opened/>
        }
        .into_any()
    };
    view! {
        <section class="panel">
            <dl class="fields" data-testid="destination-summary">
                <dt>"URL"</dt><dd class="mono">{s.url.clone().unwrap_or_else(|| "not configured".into())}</dd>
                <dt>"State"</dt><dd data-testid="state">{match (&s.paused_at, &s.paused_by) {
                    (Some(at), by) => view! { <span>"paused" {by.clone().map(|b| format!(" by {b}"))} " since " <LocalTime utc=at.clone()/> " (its queue is kept)"</span> }.into_any(),
                    (None, _) => view! { <span>"active"</span> }.into_any(),
                }}</dd>
                <dt>"Pending"</dt><dd data-testid="pending">{s.pending}
                    {s.oldest_pending_secs.map(|secs| format!(", the oldest for {}", age(secs)))}</dd>
                <dt>"Dead"</dt><dd data-testid="dead">{s.dead}</dd>
                <dt>"Success, last hour"</dt><dd>{success(&s)}</dd>
                <dt>"Last error"</dt><dd>{last_error(&s)}</dd>
            </dl>
            {(p.can_act && s.url.is_some()).then(|| view! { <PauseButton name=name.clone() paused done/> })}
        </section>
        {rows}
        {next.map(|href| view! { <p><a href=href rel="next">"Older deliveries →"</a></p> })}
    }
}

/// A bulk retry of the page's destination: (filter, typed confirmation) → the filter and the
/// result.
type BulkRetry = BulkAction<ForwardFilter, RetryResult>;

/// A bulk retry's answer in the confirmation panel's words: the count broken down by last
/// answer, refusals (which a retry most likely meets again) named first.
fn said_of_retry(r: &RetryResult) -> Said {
    let breakdown: Vec<String> = r
        .by_answer
        .iter()
        .map(|a| format!("{} {}", a.count, a.class.words()))
        .collect();
    let refused = r
        .by_answer
        .iter()
        .find(|a| a.class == crate::model::AnswerClass::Refused)
        .map(|a| {
            format!(
                " The {} refused ones will most likely be refused again: read their answers first.",
                a.count
            )
        })
        .unwrap_or_default();
    let after_scope = if breakdown.is_empty() {
        ".".to_string()
    } else {
        format!(". By last answer: {}.{refused}", breakdown.join(", "))
    };
    Said {
        done: r.retried,
        matched: r.matched,
        expected: r.confirmation.clone(),
        scope: r.scope.clone(),
        done_text: format!("Retried {} dead deliveries of {}.", r.matched, r.scope),
        noun: "dead deliveries".into(),
        after_scope,
        confirm_label: "to retry them".into(),
        button: format!("Retry {} dead deliveries", r.matched),
    }
}
