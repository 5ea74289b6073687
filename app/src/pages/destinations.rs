//! `/destinations`: each destination's backlog, success rate and last error, paused and resumed
//! by operators; `/destinations/{name}`: its deliveries by status with their attempts, a dead
//! one retried, or every dead one of the filter (a count first, then a typed confirmation).

use crate::components::confirm::{BulkAction, ConfirmPanel, Said};
use crate::components::forward::{ForwardList, age};
use crate::components::{ErrorNote, Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{
    DestinationPage, DestinationSummary, ForwardFilter, ForwardRow, ForwardStatus, RetryResult,
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
    .await
    .map_err(|e| guard::unavailable(&e))?;
    Ok((list, user.role == crate::model::Role::Operator))
}

/// A destination's summary, or 404 when it is neither configured nor has deliveries.
#[cfg(feature = "ssr")]
async fn summary_of(db: &crate::db::Db, name: &str) -> Result<DestinationSummary, DashboardError> {
    use crate::guard;
    crate::db::destinations::summaries(db, &crate::guard::configured_destinations()?)
        .await
        .map_err(|e| guard::unavailable(&e))?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            guard::fail(DashboardError::NotFound(format!(
                "there is no destination {name:?}"
            )))
        })
}

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
    let (rows, next_cursor) =
        crate::db::destinations::deliveries(&db, &name, &filter, cursor.as_deref())
            .await
            .map_err(guard::query_failed)?;
    Ok(DestinationPage {
        summary,
        rows,
        next_cursor,
        can_act: user.role == crate::model::Role::Operator,
    })
}

#[cfg(feature = "ssr")]
fn actor_of(user: &crate::auth::User) -> (String, String) {
    (user.name.clone(), crate::guard::client_address())
}

/// Pauses (`paused = true`) or resumes a destination; answers whether it changed.
#[server(endpoint = "pause_destination")]
pub async fn pause_destination(name: String, paused: bool) -> Result<bool, DashboardError> {
    use crate::db::destinations::{Actor, set_paused};
    use crate::guard;
    let user = guard::require(crate::model::Role::Operator).await?;
    configured_name(&name)?;
    let (actor, address) = actor_of(&user);
    let changed = set_paused(
        &guard::db()?,
        &name,
        paused,
        &Actor {
            name: &actor,
            address: &address,
        },
    )
    .await
    .map_err(|e| guard::unavailable(&e))?;
    if !paused {
        crate::guard::wake_forwarder();
    }
    tracing::info!(user = %actor, destination = %name, paused, changed, "destination paused or resumed");
    Ok(changed)
}

#[cfg(feature = "ssr")]
fn retry_failed(error: crate::db::destinations::RetryError) -> DashboardError {
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
    use crate::db::destinations::{Actor, retry_dead, retry_scope};
    use crate::guard;
    let user = guard::require(crate::model::Role::Operator).await?;
    configured_name(&name)?;
    let (actor, address) = actor_of(&user);
    let (matched, retried) = retry_dead(
        &guard::db()?,
        &name,
        &filter,
        confirmation.as_deref(),
        &Actor {
            name: &actor,
            address: &address,
        },
    )
    .await
    .map_err(retry_failed)?;
    if retried {
        crate::guard::wake_forwarder();
        tracing::info!(user = %actor, destination = %name, retried = matched, "dead forward deliveries retried");
    }
    Ok(RetryResult {
        matched,
        retried,
        confirmation: format!("retry {matched}"),
        scope: retry_scope(&name, &filter),
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
    let list = Resource::new(move || done.get(), |_| list_destinations());
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
                                <th scope="row"><a href=href.clone()>{d.name.clone()}</a>
                                    <div class="muted mono">{d.url.clone().unwrap_or_default()}</div></th>
                                <td data-testid="state">{state}</td>
                                <td data-testid="pending"><a href=format!("{href}?status=pending")>{d.pending}</a></td>
                                <td>{d.oldest_pending_secs.map(age).unwrap_or_else(|| "—".into())}</td>
                                <td data-testid="dead"><a href=dead_href>{d.dead}</a></td>
                                <td>{success(&d)}</td>
                                <td>{last_error(&d)}</td>
                                {(can_act && d.url.is_some()).then(|| view! { <td><PauseButton name=d.name.clone() paused done/></td> })}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
pub fn DestinationDetailPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let name = Memo::new(move |_| params.read().get("name").unwrap_or_default());
    let filter = Memo::new(move |_| {
        let q = query.read();
        (
            ForwardFilter {
                status: crate::components::query::param(&q, "status"),
                source: crate::components::query::param(&q, "source"),
                q: crate::components::query::param(&q, "q"),
            },
            crate::components::query::param(&q, "cursor"),
        )
    });
    let done = RwSignal::new(0u32);
    let page = Resource::new(
        move || (name.get(), filter.get(), done.get()),
        |(name, (f, cursor), _)| get_destination(name, f, cursor),
    );
    let on_screen = Memo::new(move |_| filter.read().0.clone());
    // The page owns the bulk retry, so its result survives the reload of the list it causes.
    let bulk: BulkRetry = Action::new(move |(f, confirm): &(ForwardFilter, Option<String>)| {
        let (name, f, confirm) = (name.get_untracked(), f.clone(), confirm.clone());
        async move {
            let result = retry_dead_forwards(name, f.clone(), confirm).await;
            if matches!(&result, Ok(r) if r.retried) {
                done.update(|n| *n += 1);
            }
            (f, result)
        }
    });
    let value = move |key: &'static str| move || query.read().get(key).unwrap_or_default();
    let selected =
        move |option: &'static str| move || query.read().get("status").as_deref() == Some(option);
    view! {
        <TopBar/>
        <main>
            <p><a href="/destinations">"← Destinations"</a></p>
            <h1>"Destination " <span class="mono">{move || name.get()}</span></h1>
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
            <Loaded resource=page show=move |p| view! { <DestinationBody p done filter=on_screen bulk query=query.get_untracked()/> }/>
        </main>
    }
}

#[component]
fn DestinationBody(
    p: DestinationPage,
    done: RwSignal<u32>,
    filter: Memo<ForwardFilter>,
    bulk: BulkRetry,
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
        <DeliveryTable rows=p.rows.clone() name=name.clone() can_act=p.can_act done/>
        {next.map(|href| view! { <p><a href=href rel="next">"Older deliveries →"</a></p> })}
        {(p.can_act && s.url.is_some()).then(|| view! {
            <ConfirmPanel prefix="retry" title="Retry the dead deliveries matching this filter"
                count_label="Count them" count_id="count" filter run=bulk say=said_of_retry/>
        })}
    }
}

#[component]
fn DeliveryTable(
    rows: Vec<ForwardRow>,
    name: String,
    can_act: bool,
    done: RwSignal<u32>,
) -> impl IntoView {
    if rows.is_empty() {
        return view! { <section class="panel empty" data-testid="no-forward-deliveries"><p>"No deliveries match."</p></section> }.into_any();
    }
    let retry = Action::new(move |(name, id): &(String, i64)| {
        let (name, id) = (name.clone(), *id);
        async move {
            let result = retry_forward(name, id).await;
            if result.is_ok() {
                done.update(|n| *n += 1);
            }
            result
        }
    });
    view! {
        {move || retry.value().get().and_then(|r| r.err()).map(|e| view! { <ErrorNote error=e/> })}
        <ForwardList rows can_act retry=Some((name, retry))/>
    }
    .into_any()
}

/// A bulk retry of the page's destination: (filter, typed confirmation) → the filter and the
/// result.
type BulkRetry = BulkAction<ForwardFilter, RetryResult>;

/// A bulk retry's answer in the confirmation panel's words.
fn said_of_retry(r: &RetryResult) -> Said {
    Said {
        done: r.retried,
        matched: r.matched,
        expected: r.confirmation.clone(),
        scope: r.scope.clone(),
        done_text: format!("Retried {} dead deliveries of {}.", r.matched, r.scope),
        noun: "dead deliveries".into(),
        after_scope: ".".into(),
        confirm_label: "to retry them".into(),
        button: format!("Retry {} dead deliveries", r.matched),
    }
}
