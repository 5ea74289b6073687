//! Forward deliveries as the destination and event pages list them, and how long ago.

use crate::components::LocalTime;
use crate::error::DashboardError;
use crate::model::{ForwardRow, ForwardStatus};
use leptos::prelude::*;

/// A dead forward delivery's retry: (destination, delivery id).
pub type RetryAction = Action<(String, i64), Result<(), DashboardError>>;

/// Forward deliveries with their attempts; with a retry action, dead ones get a button.
#[component]
pub fn ForwardList(
    rows: Vec<ForwardRow>,
    can_act: bool,
    retry: Option<(String, RetryAction)>,
) -> impl IntoView {
    view! {
        <div class="table-wrap">
            <table class="data" data-testid="forward-table">
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
                        let retry_button = retry.clone().filter(|_| can_act && r.status == ForwardStatus::Dead).map(|(name, action)| {
                            let id = r.id;
                            view! { <button type="button" class="small" data-testid="retry" on:click=move |_| { action.dispatch((name.clone(), id)); }>"Retry"</button> }
                        });
                        let attempts = r.attempt_log.clone();
                        view! {
                            <tr data-testid="forward-row" data-status=r.status.as_str()>
                                <td class="mono">{r.destination.clone()} " #" {r.id}<div class="muted">{when}</div></td>
                                <td><span class=status_class>{r.status.as_str()}</span> {retry_button}</td>
                                <td class="mono">{r.source.clone()} " / " {event}</td>
                                <td class="mono">{r.object_id.clone().unwrap_or_else(|| "—".into())}
                                    {r.revision.map(|rev| format!(" rev. {rev}"))}</td>
                                <td>
                                    <details>
                                        <summary data-testid="attempt-count">{r.attempts}</summary>
                                        <ol class="attempts" data-testid="attempts">
                                            {attempts.into_iter().map(|a| view! {
                                                <li value=a.attempt.to_string()>
                                                    <LocalTime utc=a.started_at/> " · " {a.duration_ms} " ms · "
                                                    {a.status_code.map(|c| c.to_string()).unwrap_or_else(|| "no answer".into())}
                                                    {a.error.map(|e| view! { <span class="muted">" " {e}</span> })}
                                                    {a.response_excerpt.map(|x| view! { <pre class="excerpt"><code>{x}</code></pre> })}
                                                </li>
                                            }).collect_view()}
                                        </ol>
                                    </details>
                                </td>
                                <td>{r.last_status_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}
                                    <div class="muted">{r.last_error.clone().unwrap_or_default()}</div></td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
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
