//! `/`: deliveries by status and source over the last 24 hours and the last 7 days (the chart's
//! calendar days, UTC, today included), a chart of those days, the newest failures, the last
//! invariant check, and the search box.

use crate::components::{Loaded, LocalTime, StatusBadge, TopBar};
use crate::error::DashboardError;
use crate::model::{CountRow, DestinationSummary, Overview, RejectedCount, VerifyRun};
use leptos::prelude::*;

#[server(endpoint = "overview")]
pub async fn get_overview() -> Result<Overview, DashboardError> {
    use crate::{guard, model::Role};
    guard::require(Role::Viewer).await?;
    let sources = guard::config()?.sources.len();
    let db = guard::db()?;
    let mut overview = crate::db::overview::overview(&db, sources)
        .await
        .map_err(|e| guard::unavailable(&e))?;
    overview.destinations_in_trouble =
        crate::db::destinations::summaries(&db, &crate::guard::configured_destinations()?)
            .await
            .map_err(|e| guard::unavailable(&e))?
            .into_iter()
            .filter(|d| d.needs_attention())
            .collect();
    Ok(overview)
}

/// Stacked bars per day, drawn on the server as SVG.
#[component]
fn DayChart(days: Vec<CountRow>) -> impl IntoView {
    let (width, height, gap) = (560.0_f64, 140.0_f64, 8.0_f64);
    let max = days
        .iter()
        .map(|d| d.processed + d.skipped + d.failed)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let bar = (width - gap * (days.len() as f64 + 1.0)) / days.len().max(1) as f64;
    let description = days
        .iter()
        .map(|d| {
            format!(
                "{}: {} processed, {} skipped, {} failed",
                d.label, d.processed, d.skipped, d.failed
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let bars = days
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let x = gap + i as f64 * (bar + gap);
            let scale = |n: i64| n as f64 / max * (height - 20.0);
            let (p, s, f) = (scale(d.processed), scale(d.skipped), scale(d.failed));
            let base = height - 16.0;
            let label = d.label.get(5..).unwrap_or(&d.label).to_string();
            view! {
                <g>
                    <rect class="bar-processed" x=x y=base - p width=bar height=p/>
                    <rect class="bar-skipped" x=x y=base - p - s width=bar height=s/>
                    <rect class="bar-failed" x=x y=base - p - s - f width=bar height=f/>
                    <text x=x + bar / 2.0 y=height - 2.0 text-anchor="middle">{label}</text>
                </g>
            }
        })
        .collect_view();
    view! {
        <svg class="chart" viewBox=format!("0 0 {width} {height}") role="img" aria-label=format!("Deliveries per day. {description}")>
            {bars}
        </svg>
        <p class="legend">
            <span class="swatch processed"></span>"processed "
            <span class="swatch skipped"></span>"skipped "
            <span class="swatch failed"></span>"failed"
        </p>
    }
}

#[component]
fn CountTable(caption: &'static str, rows: Vec<CountRow>) -> impl IntoView {
    let empty = rows.is_empty();
    view! {
        <table class="data compact">
            <caption>{caption}</caption>
            <thead><tr><th scope="col">"Source"</th><th scope="col">"Processed"</th><th scope="col">"Skipped"</th><th scope="col">"Failed"</th></tr></thead>
            <tbody>
                {rows.into_iter().map(|r| {
                    let failed_link = format!("/events?status=failed&source={}", r.label);
                    view! {
                        <tr>
                            <th scope="row"><a href=format!("/events?source={}", r.label)>{r.label.clone()}</a></th>
                            <td>{r.processed}</td>
                            <td>{r.skipped}</td>
                            <td><a href=failed_link>{r.failed}</a></td>
                        </tr>
                    }
                }).collect_view()}
                {empty.then(|| view! { <tr><td colspan="4" class="muted">"No deliveries in this period."</td></tr> })}
            </tbody>
        </table>
    }
}

#[component]
pub fn OverviewPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| get_overview());
    view! {
        <TopBar/>
        <main>
            <Loaded resource=data show=|o| view! { <OverviewBody o/> }/>
        </main>
    }
}

#[component]
fn OverviewBody(o: Overview) -> impl IntoView {
    let empty_state = if o.sources_configured == 0 {
        Some(view! {
            <section class="panel empty" data-testid="empty-state">
                <h2>"No sources configured"</h2>
                <p>"Declare a source in " <code>"hookbox.toml"</code> " (or the file in " <code>"HOOKBOX_CONFIG"</code> ") and restart hookbox."</p>
            </section>
        }.into_any())
    } else if !o.has_events {
        Some(view! {
            <section class="panel empty" data-testid="empty-state">
                <h2>"No deliveries yet"</h2>
                <p>"Send a signed test delivery to check the setup:"</p>
                <pre><code>"echo '{\"event_id\":\"e1\",\"object_id\":\"order-1\",\"revision\":1,\"snapshot\":{}}' | hookbox send SOURCE"</code></pre>
            </section>
        }.into_any())
    } else {
        None
    };
    view! {
        {empty_state}
        <section class="panel">
            <h1>"Last 7 days"</h1>
            <DayChart days=o.by_day/>
        </section>
        <div class="grid2">
            <section class="panel"><CountTable caption="Last 24 hours" rows=o.by_source_24h/></section>
            <section class="panel"><CountTable caption="Last 7 days (UTC days, today included)" rows=o.by_source_7d/></section>
        </div>
        <section class="panel">
            <h2>"Newest failures"</h2>
            {if o.newest_failures.is_empty() {
                view! { <p class="muted">"No failed deliveries."</p> }.into_any()
            } else {
                view! {
                    <ul class="failures">
                        {o.newest_failures.into_iter().map(|e| view! {
                            <li>
                                <StatusBadge status=e.status outcome=e.outcome/>
                                " "
                                <a href=format!("/events/{}", e.id)>{e.event_id.clone().unwrap_or_else(|| format!("delivery {}", e.id))}</a>
                                " · " {e.source.clone()} " · " <LocalTime utc=e.received_at.clone()/>
                                <span class="muted">" " {e.error_message.clone().unwrap_or_default()}</span>
                            </li>
                        }).collect_view()}
                    </ul>
                    <p><a href="/events?status=failed">"All failed deliveries"</a></p>
                }.into_any()
            }}
        </section>
        <Forwarding trouble=o.destinations_in_trouble/>
        <Refused counts=o.refused_24h/>
        <InvariantCheck run=o.last_verify/>
    }
}

/// Destinations with a backlog or dead deliveries; nothing when all are drained.
#[component]
fn Forwarding(trouble: Vec<DestinationSummary>) -> impl IntoView {
    (!trouble.is_empty()).then(|| view! {
        <section class="panel" data-testid="forwarding-trouble">
            <h2>"Forwarding"</h2>
            <ul>
                {trouble.into_iter().map(|d| {
                    let href = format!("/destinations/{}", crate::url::urlencode(&d.name));
                    let oldest = d.oldest_pending_secs.map(|s| format!(", the oldest for {}", crate::components::forward::age(s)));
                    view! {
                        <li data-testid="destination-trouble">
                            <a href=href.clone()>{d.name.clone()}</a> ": "
                            <a href=format!("{href}?status=pending")>{d.pending} " pending"</a> {oldest} ", "
                            <a href=format!("{href}?status=dead")>{d.dead} " dead"</a>
                            {d.paused_at.is_some().then_some(" (paused)")}
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    })
}

/// Requests refused before ingest in the last 24 hours, by source and reason.
#[component]
fn Refused(counts: Vec<RejectedCount>) -> impl IntoView {
    let empty = counts.is_empty();
    view! {
        <section class="panel" data-testid="refused-24h">
            <h2>"Refused in the last 24 hours"</h2>
            {if empty {
                view! { <p class="muted">"No request was refused."</p> }.into_any()
            } else {
                view! {
                    <table class="data compact">
                        <thead><tr><th scope="col">"Source"</th><th scope="col">"Reason"</th><th scope="col">"Requests"</th></tr></thead>
                        <tbody>
                            {counts.into_iter().map(|c| {
                                let href = format!("/rejected?source={}&reason={}", crate::url::urlencode(&c.source), crate::url::urlencode(c.reason.as_str()));
                                view! {
                                    <tr data-testid="refused-count">
                                        <th scope="row">{c.source}</th>
                                        <td><code>{c.reason.as_str()}</code></td>
                                        <td><a href=href>{c.n}</a></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                    <p><a href="/rejected">"All refused requests"</a></p>
                }.into_any()
            }}
        </section>
    }
}

/// When `hookbox verify` last ran and what it found.
#[component]
fn InvariantCheck(run: Option<VerifyRun>) -> impl IntoView {
    let body = match run {
        None => view! {
            <p>"Last invariant check: never run: " <code>"hookbox verify"</code></p>
        }
        .into_any(),
        Some(run) => {
            let plural =
                |n: i64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
            let found = plural(run.drift_count, "drift");
            let repaired = (run.repaired > 0).then(|| format!(", {} repaired", run.repaired));
            view! {
                <p>"Last invariant check: " <LocalTime utc=run.ran_at/> ", " {found} {repaired}</p>
                <p class="muted">{run.summary}</p>
            }
            .into_any()
        }
    };
    view! {
        <section class="panel" data-testid="invariant-check">
            <h2>"Invariants"</h2>
            {body}
        </section>
    }
}
