//! `/feed`: the pull feed's named consumers (programs that read accepted deliveries from
//! `/api/v1/feed`): what each reads, where it has committed, and how far behind it is, in items
//! and in the age of the oldest item it has not committed. The same lag `/metrics` exports.

use crate::components::{Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::FeedConsumerRow;
use leptos::prelude::*;

#[server(endpoint = "feed_consumers")]
pub async fn feed_consumers() -> Result<Vec<FeedConsumerRow>, DashboardError> {
    use crate::feed::consumers;
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let list = consumers::list(&db).await?;
    let now = chrono::Utc::now();
    let time = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339();
    // Every consumer's lag in one bounded statement.
    let lags = consumers::lags(&db, &list).await?;
    let mut rows = Vec::with_capacity(list.len());
    for (consumer, lag) in list.into_iter().zip(lags) {
        rows.push(FeedConsumerRow {
            lease_until: consumer.leased_to(now).and(consumer.lease_until).map(time),
            committed: consumer.committed.to_string(),
            committed_at: consumer.committed_at.map(time),
            lag_items: lag.items,
            lag_capped: lag.capped,
            lag_seconds: lag.seconds,
            name: consumer.name,
            sources: consumer.sources,
            types: consumer.types,
            created_by: consumer.created_by,
        });
    }
    Ok(rows)
}

#[component]
pub fn FeedPage() -> impl IntoView {
    let consumers = Resource::new(|| (), |()| feed_consumers());
    view! {
        <TopBar/>
        <main>
            <h1>"Feed"</h1>
            <p class="muted">
                "Programs that cannot take a push read accepted deliveries in commit order from "
                <code>"GET /api/v1/feed"</code>
                ". A named consumer keeps its place here: it reads after its committed cursor and commits as it goes."
            </p>
            <Loaded resource=consumers show=|rows| view! { <ConsumerTable rows/> }/>
        </main>
    }
}

/// Seconds as the largest whole unit: `45 s`, `12 min`, `3 h`, `2 d`.
fn age(seconds: i64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

#[component]
fn ConsumerTable(rows: Vec<FeedConsumerRow>) -> impl IntoView {
    if rows.is_empty() {
        return view! {
            <p class="muted" data-testid="feed-empty">
                "No consumer yet. A program creates one with "
                <code>"PUT /api/v1/feed/consumers/{name}"</code>
                " and an API token (operators make tokens on the Tokens page)."
            </p>
        }
        .into_any();
    }
    let names = |names: Option<Vec<String>>, every: &'static str| {
        names.map_or_else(|| every.to_string(), |n| n.join(", "))
    };
    view! {
        <table class="data" data-testid="feed-consumers">
            <thead><tr>
                <th scope="col">"Consumer"</th><th scope="col">"Reads"</th><th scope="col">"Behind"</th>
                <th scope="col">"Oldest waiting"</th><th scope="col">"Committed"</th><th scope="col">"Lease"</th>
                <th scope="col">"Created by"</th>
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|r| {
                    let behind = if r.lag_capped {
                        format!("{}+ items", r.lag_items)
                    } else if r.lag_items == 1 {
                        "1 item".to_string()
                    } else {
                        format!("{} items", r.lag_items)
                    };
                    let waiting = if r.lag_items == 0 { "—".to_string() } else { age(r.lag_seconds) };
                    let reads = format!("{}; {}", names(r.sources, "every source"), names(r.types, "every type"));
                    view! {
                        <tr data-testid="feed-consumer">
                            <th scope="row" data-label="Consumer">{r.name}</th>
                            <td data-label="Reads">{reads}</td>
                            <td data-label="Behind" data-testid="feed-behind">{behind}</td>
                            <td data-label="Oldest waiting">{waiting}</td>
                            <td data-label="Committed">
                                {match r.committed_at {
                                    Some(at) => view! { <LocalTime utc=at/> }.into_any(),
                                    None => view! { <span class="muted">"never"</span> }.into_any(),
                                }}
                                <br/><code class="muted">{r.committed}</code>
                            </td>
                            <td data-label="Lease">
                                {match r.lease_until {
                                    Some(until) => view! { <span>"held until " <LocalTime utc=until/></span> }.into_any(),
                                    None => view! { <span class="muted">"free"</span> }.into_any(),
                                }}
                            </td>
                            <td data-label="Created by">{r.created_by}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
