//! The typed confirmation of a bulk action (replay the failed deliveries of a filter, retry the
//! dead forward deliveries of one): a first run counts what the filter on screen matches, and
//! the action runs only once the operator types the confirmation the count answered
//! (`replay 12`). One panel for every bulk action, so each says and guards the same way.

use crate::components::ErrorNote;
use crate::error::DashboardError;
use leptos::prelude::*;

/// What a bulk action's answer says, in the panel's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// Whether the action ran (else this was the count).
    pub done: bool,
    pub matched: i64,
    /// The text to type to confirm.
    pub expected: String,
    /// The deliveries taken, in words.
    pub scope: String,
    /// After the action: the whole sentence.
    pub done_text: String,
    /// What matched: `failed deliveries`.
    pub noun: String,
    /// Said after the scope in the count: `. Would be: applied: 3`.
    pub after_scope: String,
    /// What typing the confirmation does: `to retry them`.
    pub confirm_label: String,
    /// The action's button.
    pub button: String,
}

/// A bulk action's run: (the filter, the typed confirmation if any) → the filter and the answer.
pub type BulkAction<F, R> = Action<(F, Option<String>), (F, Result<R, DashboardError>)>;

/// The panel of a bulk action over the filter on screen: count, typed confirmation, action. Each
/// run takes the filter when it is dispatched, and an answer is shown only while that filter is
/// still the one on screen. Element ids and test ids start with `prefix` (`{prefix}-title`,
/// `{prefix}-{count_id}`, `{prefix}-{count_id}-result`, `{prefix}-scope`, `{prefix}-confirm`,
/// `{prefix}-result`).
#[component]
pub fn ConfirmPanel<F, R>(
    prefix: &'static str,
    title: &'static str,
    /// The counting button's label and id: "Dry run", `dry-run`.
    count_label: &'static str,
    count_id: &'static str,
    filter: Memo<F>,
    run: BulkAction<F, R>,
    say: fn(&R) -> Said,
) -> impl IntoView
where
    F: Clone + PartialEq + Send + Sync + 'static,
    R: Clone + Send + Sync + 'static,
{
    let confirmation = RwSignal::new(String::new());
    let shown = move || {
        run.value()
            .get()
            .filter(|(f, _)| filter.with(|current| current == f))
    };
    view! {
        <section class="panel" aria-labelledby=format!("{prefix}-title")>
            <h2 id=format!("{prefix}-title")>{title}</h2>
            <button type="button" data-testid=format!("{prefix}-{count_id}") on:click=move |_| {
                confirmation.set(String::new());
                run.dispatch((filter.get_untracked(), None));
            }>{count_label}</button>
            {move || shown().map(|(f, result)| match result {
                Err(e) => view! { <ErrorNote error=e/> }.into_any(),
                Ok(r) => {
                    let said = say(&r);
                    if said.done {
                        return view! {
                            <p class="ok" role="status" data-testid=format!("{prefix}-result")>{said.done_text}</p>
                        }.into_any();
                    }
                    let expected = said.expected.clone();
                    let input_id = format!("{prefix}-confirm");
                    view! {
                        <p role="status" data-testid=format!("{prefix}-{count_id}-result")>{said.matched} " " {said.noun} " match ("
                            <span data-testid=format!("{prefix}-scope")>{said.scope}</span> ")" {said.after_scope}</p>
                        // Nothing to confirm when everything matched is left out (an empty `expected`).
                        {(said.matched > 0 && !expected.is_empty()).then(|| view! {
                            <label for=input_id.clone()>"Type " <code>{expected.clone()}</code> " " {said.confirm_label}</label>
                            <input id=input_id.clone() type="text" autocomplete="off" prop:value=move || confirmation.get()
                                on:input=move |ev| confirmation.set(event_target_value(&ev))/>
                            <button type="button" class="danger" data-testid=input_id.clone()
                                disabled=move || confirmation.get().trim() != expected
                                on:click=move |_| { run.dispatch((f.clone(), Some(confirmation.get_untracked()))); }>
                                {said.button}
                            </button>
                        })}
                    }.into_any()
                }
            })}
        </section>
    }
}
