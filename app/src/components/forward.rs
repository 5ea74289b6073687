//! Forward deliveries as the destination and event pages list them, and how long ago; the
//! re-send of a destination's deliveries since a time.

use crate::components::LocalTime;
use crate::components::confirm::{BulkAction, ConfirmPanel, Said};
use crate::error::DashboardError;
use crate::model::{ForwardRow, ForwardStatus, ResendResult};
use leptos::prelude::*;

/// A dead forward delivery's retry: (destination, delivery id).
pub type RetryAction = Action<(String, i64), Result<(), DashboardError>>;

/// A delivered forward delivery's re-send: (destination, delivery id) → the new delivery's id.
pub type ResendAction = Action<(String, i64), Result<i64, DashboardError>>;

/// Forward deliveries with their attempts; with a retry action, dead ones get a button, and
/// with a re-send action delivered ones get one (behind a second click); each acts on the row's
/// own destination. `opened` keeps which
/// attempt lists are open across reloads of a live page.
#[component]
pub fn ForwardList(
    rows: Vec<ForwardRow>,
    can_act: bool,
    retry: Option<RetryAction>,
    #[prop(optional)] resend: Option<ResendAction>,
    #[prop(optional)] opened: Option<RwSignal<Vec<i64>>>,
) -> impl IntoView {
    view! {
        <div class="table-wrap">
            <table class="data forward" data-testid="forward-table">
                <thead><tr>
                    <th scope="col">"Delivery"</th>
                    <th scope="col">"Status"</th>
                    <th scope="col">"Event"</th>
                    <th scope="col">"Object"</th>
                    <th scope="col">"Attempts"</th>
                    <th scope="col">"Last answer"</th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|r| {
                        let status_class = format!("badge badge-{}", r.status);
                        let event = match r.archive_id {
                            Some(archive) => view! { <a href=format!("/events/{archive}")>{r.event_id.clone()}</a> }.into_any(),
                            None => view! { <span>{r.event_id.clone()}</span> }.into_any(),
                        };
                        let when = match (r.status, &r.delivered_at) {
                            (_, Some(at)) => view! { <span>"delivered " <LocalTime utc=at.clone()/></span> }.into_any(),
                            (ForwardStatus::Pending, None) => view! { <span>"next " <LocalTime utc=r.next_attempt_at.clone()/></span> }.into_any(),
                            _ => view! { <span>"created " <LocalTime utc=r.created_at.clone()/></span> }.into_any(),
                        };
                        let retry_button = retry.filter(|_| can_act && r.status == ForwardStatus::Dead).map(|action| {
                            let (id, name) = (r.id, r.destination.clone());
                            view! { <button type="button" class="small" data-testid="retry" on:click=move |_| { action.dispatch((name.clone(), id)); }>"Retry"</button> }
                        });
                        let resend_button = resend.filter(|_| can_act && r.status == ForwardStatus::Delivered).map(|action| {
                            let (id, name) = (r.id, r.destination.clone());
                            view! {
                                <details class="resend" data-testid="resend">
                                    <summary>"Re-send"</summary>
                                    <button type="button" class="small" data-testid="resend-one" on:click=move |_| { action.dispatch((name.clone(), id)); }>
                                        "Send #" {id} " again"</button>
                                </details>
                            }
                        });
                        let attempts = r.attempt_log.clone();
                        let id = r.id;
                        let is_open = move || opened.is_some_and(|o| o.with(|ids| ids.contains(&id)));
                        let toggled = move |_ev: leptos::ev::Event| {
                            #[cfg(feature = "hydrate")]
                            if let Some(o) = opened {
                                let open = _ev.target().and_then(|t| js_sys::Reflect::get(&t, &"open".into()).ok()).and_then(|v| v.as_bool()).unwrap_or(false);
                                if open != o.with_untracked(|ids| ids.contains(&id)) {
                                    o.update(|ids| if open { ids.push(id) } else { ids.retain(|i| *i != id) });
                                }
                            }
                        };
                        view! {
                            <tr data-testid="forward-row" data-status=r.status.as_str()>
                                <td data-label="Delivery" class="mono">{r.destination.clone()} " #" {r.id}<div class="muted">{when}</div></td>
                                <td data-label="Status"><span class=status_class>{r.status.as_str()}</span> {retry_button} {resend_button}
                                    {r.resend_of.map(|of| view! { <div class="muted" data-testid="resend-of">"re-send of #" {of}</div> })}</td>
                                <td data-label="Event" class="mono">{r.source.clone()} " / " {event}</td>
                                <td data-label="Object" class="mono">{r.object_id.clone().unwrap_or_else(|| "—".into())}
                                    {r.revision.map(|rev| format!(" rev. {rev}"))}</td>
                                <td data-label="Attempts">
                                    <details prop:open=is_open on:toggle=toggled>
                                        <summary data-testid="attempt-count">{r.attempts}</summary>
                                        <ol class="attempts" data-testid="attempts">
                                            {attempts.into_iter().map(|a| view! {
                                                <li value=a.attempt.to_string()>
                                                    <LocalTime utc=a.started_at/> " · " {a.duration_ms} " ms · "
                                                    {a.status_code.map(|c| c.to_string()).unwrap_or_else(|| "no answer".into())}
                                                    {a.error.map(|e| view! { <span class="muted">" " {e}</span> })}
                                                    {a.response_excerpt.map(|x| view! { <pre class="excerpt" tabindex="0"><code>{x}</code></pre> })}
                                                </li>
                                            }).collect_view()}
                                        </ol>
                                    </details>
                                </td>
                                <td data-label="Last answer">{r.last_status_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}
                                    <div class="muted">{r.last_error.clone().unwrap_or_default()}</div>
                                    {last_answer(&r).map(|x| view! { <pre class="excerpt" data-testid="last-answer" tabindex="0"><code>{x}</code></pre> })}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// The most of the last attempt's answer a row shows (the attempts list has the whole excerpt,
/// itself at most 1 KiB).
const LAST_ANSWER_CHARS: usize = 300;

/// What the destination answered on the row's last attempt, cut to [`LAST_ANSWER_CHARS`]
/// (escaped as text, like every value on the page); `None` when it said nothing.
fn last_answer(r: &ForwardRow) -> Option<String> {
    let excerpt = r.attempt_log.last()?.response_excerpt.as_deref()?.trim();
    if excerpt.is_empty() {
        return None;
    }
    let mut cut: String = excerpt.chars().take(LAST_ANSWER_CHARS).collect();
    if cut.len() < excerpt.len() {
        cut.push('…');
    }
    Some(cut)
}

/// `75` → `1 min 15 s`; `90000` → `1 d 1 h`.
pub fn age(secs: i64) -> String {
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3_600,
        secs % 3_600 / 60,
        secs % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, _) => format!("{m} min {s} s"),
        (0, _, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h"),
    }
}

/// The re-send of every delivery of a destination delivered since a time: the time (read in the
/// viewer's `zone`, named when known), then the count and the typed confirmation.
#[component]
pub fn ResendSincePanel(
    since: RwSignal<String>,
    run: BulkAction<String, ResendResult>,
    zone: Signal<Option<String>>,
) -> impl IntoView {
    let filter = Memo::new(move |_| since.get());
    view! {
        <section class="panel resend-since">
            <label>"Re-send what was delivered since (" {move || zone.get().unwrap_or_else(|| "your time zone".into())} ")"
                <input type="datetime-local" step="1" data-testid="resend-since" prop:value=move || since.get()
                    on:input=move |ev| since.set(event_target_value(&ev))/>
            </label>
        </section>
        <ConfirmPanel prefix="resend" title="Re-send the deliveries delivered since that time"
            count_label="Count them" count_id="count" filter run say=said_of_resend/>
    }
}

/// A re-send's answer in the confirmation panel's words; past the bound, it says so.
fn said_of_resend(r: &ResendResult) -> Said {
    let more = if r.more {
        format!(
            ". More than {} match: this re-send takes the {} delivered first; run it again for the rest",
            r.limit, r.matched
        )
    } else {
        String::new()
    };
    Said {
        done: r.resent,
        matched: r.matched,
        expected: r.confirmation.clone(),
        scope: r.scope.clone(),
        done_text: format!(
            "Re-sent {} deliveries of {}{}.",
            r.matched,
            r.scope,
            if r.more {
                "; more remain: run it again for the rest"
            } else {
                ""
            }
        ),
        noun: "delivered deliveries".into(),
        after_scope: format!(
            "{more}. Each is sent again as a new delivery; pending and dead ones are left out."
        ),
        confirm_label: "to re-send them".into(),
        button: format!("Re-send {} deliveries", r.matched),
    }
}
