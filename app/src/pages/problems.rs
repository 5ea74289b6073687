//! `/problems`: open failures grouped by cause (source, outcome, error class), and each
//! destination's dead forward deliveries by answer class, each with its count, first and last
//! seen, an example and the list of that cause; operators acknowledge, resolve or ignore a cause
//! (resolving or ignoring after a confirmation that says how many deliveries it covers, ignoring
//! with a reason; audited). Ignored causes are listed apart, collapsed; the resolved and ignored
//! causes, who, when and why, a page at a time. Updates itself as the overview does.

use crate::components::live::live_tick;
use crate::components::{ErrorNote, Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{
    Cause, ProblemGroup, ProblemState, ProblemsPage, SettledPage, Stage, StateChange, StateChoice,
};
use crate::url::urlencode;
use leptos::prelude::*;

#[server(endpoint = "problems")]
pub async fn list_problems() -> Result<ProblemsPage, DashboardError> {
    use crate::guard;
    let user = guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let mut page = crate::db::problems::problems_page(&db).await?;
    page.can_act = user.role == crate::model::Role::Operator;
    Ok(page)
}

/// Sets what the operator says of a cause: `acknowledged`, `resolved`, `ignored`, or `open`
/// (the state removed); `outcome` is the failures' outcome, or `forward` for a destination's
/// dead deliveries (`source` the destination). Resolving or ignoring answers how many failures
/// it covers and changes nothing until `confirm` is that count; ignoring takes a `reason`.
/// Audited; 404 when no open or ignored failure has the cause, 409 when the count changed.
#[server(endpoint = "problem_state")]
pub async fn set_problem_state(
    source: String,
    outcome: Stage,
    class: String,
    state: StateChoice,
    #[server(default)] reason: Option<String>,
    #[server(default)] confirm: Option<i64>,
) -> Result<StateChange, DashboardError> {
    use crate::db::problems::{StateError, set_state};
    use crate::guard;
    let user = guard::require(crate::model::Role::Operator).await?;
    let max = crate::ingest::problem::MAX_CLASS_BYTES;
    if class.len() > max || source.len() > crate::db::filter::MAX_FILTER_BYTES {
        return Err(guard::bad_request(format!(
            "class: at most {max} bytes; source: at most {} bytes",
            crate::db::filter::MAX_FILTER_BYTES
        )));
    }
    let state = state.state();
    let cause = Cause {
        source,
        outcome,
        class: Some(class),
    };
    let db = guard::db()?;
    match set_state(&db, &cause, state, reason.as_deref(), confirm, &user.name).await {
        Ok(change) => {
            if change.changed {
                tracing::info!(user = %user.name, source = %cause.source, state = state.map_or("open", ProblemState::as_str), covers = change.covers, "problem state set");
            }
            Ok(change)
        }
        Err(StateError::NoSuchCause(what)) => Err(guard::fail(DashboardError::NotFound(format!(
            "no open or ignored failure has this cause: {what}"
        )))),
        Err(e @ StateError::CountChanged { .. }) => {
            Err(guard::fail(DashboardError::Conflict(e.to_string())))
        }
        Err(e @ (StateError::ReasonRequired | StateError::ReasonTooLong)) => {
            Err(guard::bad_request(e.to_string()))
        }
        Err(StateError::Db(e)) => Err(guard::unavailable(&e)),
    }
}

/// A page of the resolved and ignored causes (0 the first), the newest change first: who, when
/// and why. 400 past the last page read.
#[server(endpoint = "problems_settled")]
pub async fn settled_problems(
    #[server(default)] page: Option<u32>,
) -> Result<SettledPage, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let page = page.unwrap_or(0);
    let max = crate::db::problems::MAX_SETTLED_PAGE;
    if page > max {
        return Err(guard::bad_request(format!("page: at most {max}")));
    }
    crate::db::problems::settled(&guard::db()?, page)
        .await
        .map_err(DashboardError::from)
}

/// A state change asked for: the cause, the state, the reason, the confirmed count (none: ask
/// what it covers first).
type Ask = (Cause, StateChoice, Option<String>, Option<i64>);
type Change = Action<Ask, Result<StateChange, DashboardError>>;

/// What the page's buttons drive: `change` sets a state; `preview` asks what resolving or
/// ignoring `asking` covers, for the operator to confirm.
#[derive(Clone, Copy)]
struct Acts {
    change: Change,
    preview: Change,
    asking: RwSignal<Option<(Cause, StateChoice)>>,
}

fn state_action() -> Change {
    Action::new(|(cause, state, reason, confirm): &Ask| {
        let (cause, state, reason, confirm) = (cause.clone(), *state, reason.clone(), *confirm);
        async move {
            set_problem_state(
                cause.source,
                cause.outcome,
                cause.class.unwrap_or_default(),
                state,
                reason,
                confirm,
            )
            .await
        }
    })
}

#[component]
pub fn ProblemsPage() -> impl IntoView {
    let acts = Acts {
        change: state_action(),
        preview: state_action(),
        asking: RwSignal::new(None),
    };
    // Live, as the overview is: refetched every few seconds while the tab is visible, and at
    // once after a change.
    let tick = live_tick(|| true);
    let changed = Memo::new(move |_| acts.change.version().get());
    let page = Resource::new(move || (changed.get(), tick.get()), |_| list_problems());
    let settled_at = RwSignal::new(0u32);
    let settled = Resource::new(
        move || (settled_at.get(), changed.get(), tick.get()),
        |(at, _, _)| settled_problems(Some(at)),
    );
    let error = move || {
        [acts.change, acts.preview]
            .into_iter()
            .find_map(|a| a.value().get().and_then(Result::err))
    };
    view! {
        <TopBar/>
        <main>
            <h1>"Problems"</h1>
            <p class="muted">"Open failures grouped by cause: the source, the outcome and the error without its ids and numbers; and each destination's dead forward deliveries by answer class (4xx, 5xx, timeout, connection refused). A replay that applies (or is accepted, stale or a duplicate) resolves a failure, a retry that delivers resolves a dead delivery; a resolved cause that fails again is open again; an ignored cause stays out of the counts and alerts. Resolving or ignoring asks first how many deliveries it covers."</p>
            {move || error().map(|e| view! { <ErrorNote error=e/> })}
            {move || confirming(acts)}
            <Loaded resource=page show=move |p| view! { <Problems p acts/> }/>
            <Loaded resource=settled show=move |s| view! { <Settled s at=settled_at/> }/>
        </main>
    }
}

/// The confirmation of a resolve or ignore, once the server answered what it covers: the
/// count, the reason (required to ignore), confirm or cancel.
fn confirming(acts: Acts) -> Option<AnyView> {
    let (cause, state) = acts.asking.get()?;
    if acts.preview.pending().get() {
        return None;
    }
    let answer = acts.preview.value().get()?.ok()?;
    let verb = state.verb();
    let needs_reason = state == StateChoice::Ignored;
    let covers = answer.covers;
    let consequence = if needs_reason {
        format!(
            "{}: they, and any new ones, stay out of the counts and alerts.",
            answer.covers_words
        )
    } else {
        format!(
            "{}: they leave the open views (a failure after now opens the cause again).",
            answer.covers_words
        )
    };
    let reason = RwSignal::new(String::new());
    let confirm = move |_| {
        let why = Some(reason.get_untracked()).filter(|r| !r.trim().is_empty());
        acts.change
            .dispatch((cause.clone(), state, why, Some(covers)));
        acts.asking.set(None);
    };
    Some(view! {
        <section class="panel attention" data-testid="problem-confirm">
            <p><strong>{format!("{verb} {}?", answer_target(&acts))}</strong></p>
            <p data-testid="problem-covers">{consequence}</p>
            <p><label>{if needs_reason { "Why (required): " } else { "Why (optional): " }}
                <input type="text" maxlength=crate::model::MAX_REASON_BYTES.to_string() data-testid="problem-reason"
                    prop:value=move || reason.get() on:input=move |ev| reason.set(event_target_value(&ev))/>
            </label></p>
            <button type="button" class="danger" data-testid="problem-confirm-yes"
                disabled=move || needs_reason && reason.with(|r| r.trim().is_empty())
                on:click=confirm>{format!("{verb} ({covers})")}</button>
            " "
            <button type="button" data-testid="problem-confirm-no"
                on:click=move |_| acts.asking.set(None)>"Cancel"</button>
        </section>
    }.into_any())
}

/// The cause being confirmed, in words.
fn answer_target(acts: &Acts) -> String {
    acts.asking
        .get_untracked()
        .map(|(cause, _)| cause.in_words())
        .unwrap_or_default()
}

/// The resolved and ignored causes: who, when and why, a page at a time.
#[component]
fn Settled(s: SettledPage, at: RwSignal<u32>) -> impl IntoView {
    let first = s.page as i64 * i64::from(s.page_size);
    let more = first + (s.rows.len() as i64) < s.total;
    let page = s.page;
    (s.total > 0).then(|| view! {
        <section class="panel" data-testid="settled-problems">
            <h2>{format!("Resolved and ignored causes ({})", s.total)}</h2>
            <div class="table-wrap">
                <table class="data compact">
                    <thead><tr>
                        <th scope="col">"Cause"</th><th scope="col">"State"</th><th scope="col">"By"</th>
                        <th scope="col">"When"</th><th scope="col">"Why"</th>
                    </tr></thead>
                    <tbody>
                        {s.rows.into_iter().map(|r| view! {
                            <tr data-testid="settled-row">
                                <td data-label="Cause" class="cause">{r.cause.in_words()}</td>
                                <td data-label="State">{r.state.as_str()}</td>
                                <td data-label="By">{r.changed_by}</td>
                                <td data-label="When"><LocalTime utc=r.changed_at/></td>
                                <td data-label="Why" data-testid="settled-reason">{r.reason.unwrap_or_else(|| "(no reason given)".into())}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            <p>
                {(page > 0).then(|| view! { <button type="button" class="small" on:click=move |_| at.set(page - 1)>"Newer"</button> })}
                " " <span class="muted">{format!("{}–{} of {}", first + 1, (first + i64::from(s.page_size)).min(s.total), s.total)}</span> " "
                {more.then(|| view! { <button type="button" class="small" on:click=move |_| at.set(page + 1)>"Older"</button> })}
            </p>
        </section>
    }.into_any())
}

#[component]
fn Problems(p: ProblemsPage, acts: Acts) -> impl IntoView {
    let more = p.open_total - p.open.len() as i64;
    let ignored_more = p.ignored_total - p.ignored.len() as i64;
    let can_act = p.can_act;
    view! {
        <p data-testid="problems-summary">
            <strong>{p.open_total}</strong> {plural(p.open_total, " open problem", " open problems")} ", "
            <a href="/events?status=failed&open=1">{p.open_failures} {plural(p.open_failures, " open failure", " open failures")}</a>
        </p>
        {if p.open.is_empty() {
            view! { <section class="panel empty" data-testid="no-problems"><p>"No open problems."</p></section> }.into_any()
        } else {
            view! { <GroupTable groups=p.open can_act acts/> }.into_any()
        }}
        {(more > 0).then(|| view! {
            <p class="muted" data-testid="problems-more">{format!("{more} more open problems are not shown (the {} most recently failing are).", p.shown_at_most)}</p>
        })}
        {(p.ignored_total > 0).then(|| view! {
            <details class="panel" data-testid="ignored-problems">
                <summary>{format!("Ignored causes ({})", p.ignored_total)}</summary>
                <GroupTable groups=p.ignored can_act acts/>
                {(ignored_more > 0).then(|| view! { <p class="muted">{format!("{ignored_more} more not shown.")}</p> })}
            </details>
        })}
    }
    .into_any()
}

fn plural(n: i64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// The failed list of one cause, open failures only; a destination's dead deliveries.
fn failures_of(cause: &Cause) -> String {
    if cause.outcome == Stage::Forward {
        return format!("/destinations/{}?status=dead", urlencode(&cause.source));
    }
    let mut href = format!(
        "/events?status=failed&open=1&source={}&outcome={}",
        urlencode(&cause.source),
        cause.outcome.as_str()
    );
    if let Some(class) = &cause.class {
        href.push_str(&format!("&class={}", urlencode(class)));
    }
    href
}

/// Where a group's example is: its archive row, or its destination's dead deliveries.
fn example_of(cause: &Cause, example: i64) -> String {
    match cause.outcome {
        Stage::Forward => failures_of(cause),
        Stage::Ingest(_) => format!("/events/{example}"),
    }
}

#[component]
fn GroupTable(groups: Vec<ProblemGroup>, can_act: bool, acts: Acts) -> impl IntoView {
    view! {
        <div class="table-wrap">
            <table class="data" data-testid="problems-table">
                <thead>
                    <tr>
                        <th scope="col">"Source"</th>
                        <th scope="col">"Outcome"</th>
                        <th scope="col">"Cause"</th>
                        <th scope="col">"Failures"</th>
                        <th scope="col">"First seen"</th>
                        <th scope="col">"Last seen"</th>
                        <th scope="col">"Example"</th>
                        <th scope="col">"State"</th>
                        {can_act.then(|| view! { <th scope="col">"Actions"</th> })}
                    </tr>
                </thead>
                <tbody>
                    {groups.into_iter().map(|g| view! { <GroupRow g can_act acts/> }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    // Erased: the page's view type is otherwise too deep for the compiler's limits.
    .into_any()
}

#[component]
fn GroupRow(g: ProblemGroup, can_act: bool, acts: Acts) -> impl IntoView {
    let cause = g.cause.clone();
    let state = match (g.state, &g.changed_by) {
        (None, _) => "open".to_string(),
        (Some(ProblemState::Resolved), Some(by)) => format!("failed again after {by} resolved it"),
        (Some(state), Some(by)) => format!("{state} by {by}"),
        (Some(state), None) => state.to_string(),
    };
    // The states an operator can move this cause to, and "open" when it has one.
    let moves: Vec<StateChoice> = ProblemState::ALL
        .iter()
        .filter(|s| Some(**s) != g.state || **s == ProblemState::Resolved)
        .map(|s| StateChoice::of(Some(*s)))
        .chain(g.state.map(|_| StateChoice::Open))
        .collect();
    let classified = cause.class.is_some();
    view! {
        <tr data-testid="problem-row" data-source=cause.source.clone()>
            <td data-label="Source">{cause.source.clone()}</td>
            <td data-label="Outcome"><code>{cause.outcome.as_str()}</code></td>
            <td data-label="Cause" class="cause" data-testid="problem-class">{cause.class.clone().unwrap_or_else(|| "(not classified yet)".into())}</td>
            <td data-label="Failures"><a href=failures_of(&cause) data-testid="problem-count">{g.count}</a></td>
            <td data-label="First seen"><LocalTime utc=g.first_seen.clone()/></td>
            <td data-label="Last seen"><LocalTime utc=g.last_seen.clone()/></td>
            <td data-label="Example"><a href=example_of(&cause, g.example) title=g.example_message.clone().unwrap_or_default() data-testid="problem-example">{format!("#{}", g.example)}</a></td>
            <td data-label="State" data-testid="problem-state">{state}
                {g.changed_at.clone().map(|at| view! { <span class="muted">" · " <LocalTime utc=at/></span> })}
                {g.reason.clone().map(|why| view! { <span class="muted" data-testid="problem-reason-shown">" · " {why}</span> })}
            </td>
            {can_act.then(|| view! {
                <td data-label="Actions" class="actions">
                    {classified.then(|| moves.into_iter().map(|state| {
                        let cause = cause.clone();
                        view! {
                            <button type="button" class="small" data-testid=format!("problem-{state}")
                                on:click=move |_| {
                                    if state.asks_first() {
                                        acts.asking.set(Some((cause.clone(), state)));
                                        acts.preview.dispatch((cause.clone(), state, None, None));
                                    } else {
                                        acts.change.dispatch((cause.clone(), state, None, None));
                                    }
                                }>{state.verb()}</button>
                        }
                    }).collect_view())}
                </td>
            })}
        </tr>
    }
    .into_any()
}
