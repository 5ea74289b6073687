//! `/`: deliveries senders made (replays not counted) by status, by hour over 24 hours or by
//! day over 7 days in the viewer's zone (`?chart=days`), per source over both; the newest open
//! failures, the last invariant check. Updates itself every few seconds while shown.

use crate::components::chart::VolumeChart;
use crate::components::live::live_tick;
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
    let mut overview = crate::db::overview::overview(&db, sources, guard::viewer_zone()).await?;
    overview.destinations_in_trouble =
        crate::db::destinations::summaries(&db, &crate::guard::configured_destinations()?)
            .await?
            .into_iter()
            .filter(|d| d.needs_attention())
            .collect();
    overview.problems = crate::db::problems::open_counts(&db).await?;
    if guard::config()?.archive.is_some() {
        overview.kept.cold = Some(crate::maintenance::cold::state::read(&db).await?);
    }
    overview.failing_channels =
        crate::notify::outbox::failing(&db, &guard::config()?.notifications).await?;
    Ok(overview)
}

/// Open problems and open failures (`/problems`), the overview's "needs attention" counts.
#[component]
fn OpenProblemsPanel(counts: crate::model::OpenProblems) -> impl IntoView {
    let quiet = counts.problems == 0;
    view! {
        <section class="panel" class:attention=!quiet data-testid="open-problems">
            <h2>"Open problems"</h2>
            {if quiet {
                view! { <p class="muted">"No open problems: every failure is resolved, or its cause ignored."</p> }.into_any()
            } else {
                view! {
                    <p>
                        <a href="/problems" data-testid="open-problem-count">{counts.problems} {if counts.problems == 1 { " open problem" } else { " open problems" }}</a>
                        ", "
                        <a href="/events?status=failed&open=1" data-testid="open-failure-count">{counts.failures} {if counts.failures == 1 { " open failure" } else { " open failures" }}</a>
                    </p>
                }.into_any()
            }}
        </section>
    }
}

/// The chart of the overview: by hour over 24 hours, or by day over 7 days (`?chart=days`),
/// switched by links (they work before the page has hydrated too).
#[component]
fn DayChart(volume: crate::model::Volume) -> AnyView {
    let query = leptos_router::hooks::use_query_map();
    let days = move || query.read().get("chart").as_deref() == Some("days");
    let switch = move |to_days: bool, text: &'static str| {
        let href = if to_days { "/?chart=days" } else { "/" };
        view! {
            <a href=href class="switch" data-testid=if to_days { "chart-days" } else { "chart-hours" }
                aria-current=move || (days() == to_days).then_some("true")>{text}</a>
        }
    };
    let zone = volume.zone.clone();
    view! {
        <div class="chart-head">
            <h1>{move || if days() { "Last 7 days" } else { "Last 24 hours" }}</h1>
            <nav class="chart-switch" aria-label="Chart period">{switch(false, "24 hours")} {switch(true, "7 days")}</nav>
        </div>
        {move || view! { <VolumeChart volume=volume.clone() days=days()/> }}
        <p class="muted">"Deliveries from senders, times in " {zone} "; replays are not counted."</p>
    }
    .into_any()
}

#[component]
fn CountTable(caption: &'static str, rows: Vec<CountRow>) -> AnyView {
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
                            <th data-label="Source" scope="row"><a href=format!("/events?source={}", r.label)>{r.label.clone()}</a></th>
                            <td data-label="Processed">{r.processed}</td>
                            <td data-label="Skipped">{r.skipped}</td>
                            <td data-label="Failed"><a href=failed_link>{r.failed}</a></td>
                        </tr>
                    }
                }).collect_view()}
                {empty.then(|| view! { <tr><td colspan="4" class="muted">"No deliveries in this period."</td></tr> })}
            </tbody>
        </table>
    }
    .into_any()
}

#[component]
pub fn OverviewPage() -> impl IntoView {
    // Live, as the events list is: refetched every few seconds while the tab is visible.
    let tick = live_tick(|| true);
    let data = Resource::new(move || tick.get(), |_| get_overview());
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
        <OpenProblemsPanel counts=o.problems.clone()/>
        <section class="panel">
            <DayChart volume=o.volume/>
        </section>
        <div class="grid2">
            <section class="panel"><CountTable caption="Last 24 hours (the chart's hours)" rows=o.by_source_24h/></section>
            <section class="panel"><CountTable caption="Last 7 days (the chart's days, today included)" rows=o.by_source_7d/></section>
        </div>
        <section class="panel">
            <h2>"Newest open failures"</h2>
            {if o.newest_failures.is_empty() {
                view! { <p class="muted" data-testid="no-open-failures">"No open failures: every failure is resolved, or its cause resolved or ignored."</p> }.into_any()
            } else {
                view! {
                    <ul class="failures" data-testid="newest-failures">
                        {o.newest_failures.into_iter().map(|e| view! {
                            <li data-testid="newest-failure" data-id=e.id.to_string()>
                                <StatusBadge status=e.status outcome=e.outcome/>
                                " "
                                <a href=format!("/events/{}", e.id)>{e.event_id.clone().unwrap_or_else(|| format!("delivery {}", e.id))}</a>
                                " · " {e.source.clone()} " · " <LocalTime utc=e.received_at.clone()/>
                                <span class="muted">" " {e.error_message.clone().unwrap_or_default()}</span>
                            </li>
                        }).collect_view()}
                    </ul>
                    <p><a href="/events?status=failed&open=1">"All open failures"</a> " · " <a href="/events?status=failed">"All failed deliveries, resolved ones too"</a></p>
                }.into_any()
            }}
        </section>
        <Forwarding trouble=o.destinations_in_trouble/>
        <Refused counts=o.refused_24h/>
        <InvariantCheck run=o.last_verify/>
        <ArchiveKept kept=o.kept/>
        <FailingChannels channels=o.failing_channels/>
    }
}

/// Notification channels whose messages wait after a failed attempt: nobody is told through
/// them until they take messages again.
#[component]
fn FailingChannels(channels: Vec<crate::model::FailingChannel>) -> impl IntoView {
    (!channels.is_empty()).then(|| view! {
        <section class="panel attention" data-testid="failing-channels">
            <h2>"Notifications failing"</h2>
            <ul>
                {channels.into_iter().map(|c| view! {
                    <li data-testid="failing-channel" data-name=c.name.clone()>
                        <strong>{c.name.clone()}</strong> ": " {c.waiting} {if c.waiting == 1 { " message waits" } else { " messages wait" }}
                        " since " <LocalTime utc=c.since/> "; last attempt: "
                        <span class="mono">{c.last_error.unwrap_or_default()}</span>
                        ". Try " <span class="mono">{format!("hookbox notify test {}", c.name)}</span> "."
                    </li>
                }).collect_view()}
            </ul>
        </section>
    })
}

/// What the archive keeps: its size on disk and its oldest delivery.
#[component]
fn ArchiveKept(kept: crate::model::Kept) -> impl IntoView {
    let what = if kept.whole_database {
        "The database file"
    } else {
        "The archive, with its indexes,"
    };
    view! {
        <section class="panel" data-testid="archive-kept">
            <h2>"Kept"</h2>
            <p>{what} " takes " <span data-testid="archive-size">{size_words(kept.bytes)}</span> "; "
                {match kept.oldest {
                    Some(at) => view! { <span data-testid="archive-oldest">"its oldest delivery was received " <LocalTime utc=at/></span> }.into_any(),
                    None => view! { <span data-testid="archive-oldest">"it holds no delivery"</span> }.into_any(),
                }}
                ". Each source's retention is on " <a href="/sources">"Sources"</a> "."
            </p>
            {kept.cold.map(|cold| view! { <ColdArchiveState cold/> })}
        </section>
    }
}

/// Whether the cold archive is written: failing (since when, why: nothing is purged meanwhile),
/// or the last run that wrote it and how far it reaches.
#[component]
fn ColdArchiveState(cold: crate::model::ColdState) -> impl IntoView {
    match (cold.failing_since, cold.last_written_at) {
        (Some(since), _) => view! {
            <p class="attention" data-testid="cold-archive">"The cold archive cannot be written since " <LocalTime utc=since/>
                ": nothing is purged and no body expires until it can. Last error: "
                <span class="mono wrap">{cold.last_error.unwrap_or_default()}</span></p>
        }.into_any(),
        (None, Some(at)) => view! {
            <p class="muted" data-testid="cold-archive">"The cold archive was last written " <LocalTime utc=at/>
                {cold.through.map(|through| view! { "; it holds every row received before " <LocalTime utc=through/> })} "."</p>
        }.into_any(),
        (None, None) => view! { <p class="muted" data-testid="cold-archive">"The cold archive has not been written yet: the first retention run writes it."</p> }.into_any(),
    }
}

/// `812 kB`, `3.4 MB`, `1.2 GB` (powers of 1000, as disks are sold).
fn size_words(bytes: i64) -> String {
    let b = bytes.max(0) as f64;
    match b {
        b if b < 1e3 => format!("{b} bytes"),
        b if b < 1e6 => format!("{:.0} kB", b / 1e3),
        b if b < 1e9 => format!("{:.1} MB", b / 1e6),
        b => format!("{:.1} GB", b / 1e9),
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
                                        <th data-label="Source" scope="row">{c.source}</th>
                                        <td data-label="Reason"><code>{c.reason.as_str()}</code></td>
                                        <td data-label="Requests"><a href=href>{c.n}</a></td>
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
