//! `/problems`: open failures grouped by cause (source, outcome, error class), each with its
//! count, first and last seen, an example and the failed list of that cause; operators
//! acknowledge, resolve or ignore a cause (audited). Ignored causes are listed apart, collapsed.

use crate::components::{ErrorNote, Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{Cause, ProblemGroup, ProblemState, ProblemsPage};
use crate::url::urlencode;
use leptos::prelude::*;

#[server(endpoint = "problems")]
pub async fn list_problems() -> Result<ProblemsPage, DashboardError> {
    use crate::guard;
    let user = guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let mut page = crate::db::problems::problems_page(&db)
        .await
        .map_err(|e| guard::unavailable(&e))?;
    page.can_act = user.role == crate::model::Role::Operator;
    Ok(page)
}

/// Sets what the operator says of a cause: `acknowledged`, `resolved`, `ignored`, or `open`
/// (the state removed). Audited; 404 when no open or ignored failure has the cause.
#[server(endpoint = "problem_state")]
pub async fn set_problem_state(
    source: String,
    outcome: String,
    class: String,
    state: String,
) -> Result<(), DashboardError> {
    use crate::db::problems::{StateError, set_state};
    use crate::guard;
    use crate::model::OutcomeKind;
    let user = guard::require(crate::model::Role::Operator).await?;
    let max = crate::ingest::problem::MAX_CLASS_BYTES;
    if class.len() > max || source.len() > crate::db::filter::MAX_FILTER_BYTES {
        return Err(guard::bad_request(format!(
            "class: at most {max} bytes; source: at most {} bytes",
            crate::db::filter::MAX_FILTER_BYTES
        )));
    }
    let Some(outcome) = OutcomeKind::parse(&outcome) else {
        return Err(guard::bad_request(format!(
            "outcome: not one of {}",
            OutcomeKind::spellings()
        )));
    };
    let state = match state.as_str() {
        "open" => None,
        other => Some(ProblemState::parse(other).ok_or_else(|| {
            guard::bad_request("state: one of acknowledged, resolved, ignored, open")
        })?),
    };
    let cause = Cause {
        source,
        outcome,
        class: Some(class),
    };
    let db = guard::db()?;
    match set_state(&db, &cause, state, &user.name).await {
        Ok(_) => {
            tracing::info!(user = %user.name, source = %cause.source, state = state.map_or("open", ProblemState::as_str), "problem state set");
            Ok(())
        }
        Err(StateError::NoSuchCause(what)) => Err(guard::fail(DashboardError::NotFound(format!(
            "no open or ignored failure has this cause: {what}"
        )))),
        Err(StateError::Db(e)) => Err(guard::unavailable(&e)),
    }
}

/// A state change: (the cause, the state's spelling or `open`).
type Change = Action<(Cause, &'static str), Result<(), DashboardError>>;

#[component]
pub fn ProblemsPage() -> impl IntoView {
    let change: Change = Action::new(|(cause, state): &(Cause, &'static str)| {
        let (cause, state) = (cause.clone(), *state);
        async move {
            set_problem_state(
                cause.source,
                cause.outcome.as_str().to_string(),
                cause.class.unwrap_or_default(),
                state.to_string(),
            )
            .await
        }
    });
    let changed = Memo::new(move |_| change.version().get());
    let page = Resource::new(move || changed.get(), |_| list_problems());
    view! {
        <TopBar/>
        <main>
            <h1>"Problems"</h1>
            <p class="muted">"Open failures grouped by cause: the source, the outcome and the error without its ids and numbers. A replay that applies (or is accepted, stale or a duplicate) resolves a failure; a resolved cause that fails again is open again; an ignored cause stays out of the counts and alerts."</p>
            {move || change.value().get().and_then(Result::err).map(|e| view! { <ErrorNote error=e/> })}
            <Loaded resource=page show=move |p| view! { <Problems p change/> }/>
        </main>
    }
}

#[component]
fn Problems(p: ProblemsPage, change: Change) -> impl IntoView {
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
            view! { <GroupTable groups=p.open can_act change/> }.into_any()
        }}
        {(more > 0).then(|| view! {
            <p class="muted" data-testid="problems-more">{format!("{more} more open problems are not shown (the {} most recently failing are).", p.shown_at_most)}</p>
        })}
        {(p.ignored_total > 0).then(|| view! {
            <details class="panel" data-testid="ignored-problems">
                <summary>{format!("Ignored causes ({})", p.ignored_total)}</summary>
                <GroupTable groups=p.ignored can_act change/>
                {(ignored_more > 0).then(|| view! { <p class="muted">{format!("{ignored_more} more not shown.")}</p> })}
            </details>
        })}
    }
    .into_any()
}

fn plural(n: i64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// The failed list of one cause, open failures only.
fn failures_of(cause: &Cause) -> String {
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

#[component]
fn GroupTable(groups: Vec<ProblemGroup>, can_act: bool, change: Change) -> impl IntoView {
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
                    {groups.into_iter().map(|g| view! { <GroupRow g can_act change/> }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    // Erased: the page's view type is otherwise too deep for the compiler's limits.
    .into_any()
}

#[component]
fn GroupRow(g: ProblemGroup, can_act: bool, change: Change) -> impl IntoView {
    let cause = g.cause.clone();
    let state = match (g.state, &g.changed_by) {
        (None, _) => "open".to_string(),
        (Some(ProblemState::Resolved), Some(by)) => format!("failed again after {by} resolved it"),
        (Some(state), Some(by)) => format!("{state} by {by}"),
        (Some(state), None) => state.to_string(),
    };
    // The states an operator can move this cause to, and "open" when it has one.
    let moves: Vec<(&'static str, &'static str)> = ProblemState::ALL
        .iter()
        .filter(|s| Some(**s) != g.state || **s == ProblemState::Resolved)
        .map(|s| (s.as_str(), s.verb()))
        .chain(g.state.map(|_| ("open", "Reopen")))
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
            <td data-label="Example"><a href=format!("/events/{}", g.example) title=g.example_message.clone().unwrap_or_default() data-testid="problem-example">{format!("#{}", g.example)}</a></td>
            <td data-label="State" data-testid="problem-state">{state}
                {g.changed_at.clone().map(|at| view! { <span class="muted">" · " <LocalTime utc=at/></span> })}
            </td>
            {can_act.then(|| view! {
                <td data-label="Actions" class="actions">
                    {classified.then(|| moves.into_iter().map(|(state, verb)| {
                        let cause = cause.clone();
                        view! {
                            <button type="button" class="small" data-testid=format!("problem-{state}")
                                on:click=move |_| { change.dispatch((cause.clone(), state)); }>{verb}</button>
                        }
                    }).collect_view())}
                </td>
            })}
        </tr>
    }
    .into_any()
}
