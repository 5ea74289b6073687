//! `/rejected`: the requests `/hooks/{source}` refused before ingest (unknown source, failed
//! authentication, rate limited, too large, unreadable, too slow), newest first, filtered by
//! source and reason through the URL, 100 rows a page. Each shows the precise cause, the client,
//! the headers (credentials and signatures redacted) and the body's size and SHA-256.

use crate::components::query::{param, query_pairs};
use crate::components::{Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{RefusalReason, RejectedFilter, RejectedPage, RejectedRow};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// The bucket every source name that is not configured counts in.
pub const UNKNOWN: &str = "(unknown)";

#[server(endpoint = "rejected")]
pub async fn rejected_requests(
    #[server(flatten)] filter: RejectedFilter,
) -> Result<(RejectedPage, Vec<String>), DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let page =
        crate::db::rejected::list(&guard::db()?, &filter, crate::db::rejected::PAGE_SIZE).await?;
    let mut sources: Vec<String> = guard::config()?
        .sources
        .iter()
        .map(|s| s.name.clone())
        .collect();
    sources.sort();
    Ok((page, sources))
}

#[component]
pub fn RejectedPage() -> impl IntoView {
    let query = use_query_map();
    let filter = Memo::new(move |_| {
        let q = query.read();
        RejectedFilter {
            source: param(&q, "source"),
            reason: param(&q, "reason"),
            before: param(&q, "before"),
        }
    });
    let data = Resource::new(move || filter.get(), rejected_requests);
    let selected = move |key: &'static str, option: String| {
        move || query.read().get(key).as_deref() == Some(option.as_str())
    };
    view! {
        <TopBar/>
        <main>
            <h1>"Refused requests"</h1>
            <p class="muted">
                "Requests to " <code>"/hooks/{source}"</code> " refused before ingest. Kept 7 days (" <code>"server.rejected_retention_days"</code>
                ") and at most 10,000 per source, the newest (" <code>"server.rejected_rows_per_source"</code>
                "); a flood beyond what the log writes is counted in " <code>"hookbox_rejected_log_dropped_total"</code> "."
            </p>
            <Loaded resource=data show=move |(page, sources)| {
                let source_options = sources.into_iter().chain([UNKNOWN.to_string()]).map(|s| {
                    let label = if s == UNKNOWN { "any unknown source".to_string() } else { s.clone() };
                    view! { <option value=s.clone() selected=selected("source", s)>{label}</option> }
                }).collect_view();
                view! {
                    <form class="filters" method="GET" action="/rejected" aria-label="Filter refused requests">
                        <label>"Source"
                            <select name="source">
                                <option value="">"any"</option>
                                {source_options}
                            </select>
                        </label>
                        <label>"Reason"
                            <select name="reason">
                                <option value="">"any"</option>
                                {RefusalReason::ALL.iter().map(|r| r.as_str()).map(|r| view! { <option value=r selected=selected("reason", r.to_string())>{r}</option> }).collect_view()}
                            </select>
                        </label>
                        <button type="submit">"Apply"</button>
                        <a href="/rejected">"Clear"</a>
                    </form>
                    <RejectedTable page query=query.get_untracked()/>
                }
            }/>
        </main>
    }
}

#[component]
fn RejectedTable(page: RejectedPage, query: leptos_router::params::ParamsMap) -> impl IntoView {
    if page.rows.is_empty() {
        return view! { <p class="muted" data-testid="rejected-empty">"No refused requests match."</p> }
            .into_any();
    }
    let next = page.next_before.map(|before| {
        let mut parts = query_pairs(&query, &["source", "reason"]);
        parts.push(format!("before={before}"));
        format!("/rejected?{}", parts.join("&"))
    });
    view! {
        <table class="data" data-testid="rejected-table">
            <thead><tr>
                <th scope="col">"When"</th><th scope="col">"Source"</th><th scope="col">"Reason"</th>
                <th scope="col">"Cause"</th><th scope="col">"Client"</th><th scope="col">"Body"</th><th scope="col">"Request"</th>
            </tr></thead>
            <tbody>
                {page.rows.into_iter().map(|r| view! { <RejectedLine r/> }).collect_view()}
            </tbody>
        </table>
        {next.map(|href| view! { <p><a href=href data-testid="rejected-older">"Older"</a></p> })}
    }
    .into_any()
}

#[component]
fn RejectedLine(r: RejectedRow) -> impl IntoView {
    let source = if r.source == r.bucket {
        r.source.clone()
    } else {
        format!("{} (not configured)", r.source)
    };
    let body = match (r.body_bytes, r.body_sha256.clone()) {
        (Some(n), Some(sha)) => format!("{n} bytes, SHA-256 {sha}"),
        (Some(n), None) => format!("{n} bytes (not read in full)"),
        (None, _) => "not read".to_string(),
    };
    let headers = r.headers.clone();
    view! {
        <tr data-testid="rejected-row">
            <td data-label="When"><LocalTime utc=r.received_at/></td>
            <td data-label="Source">{source}</td>
            <td data-label="Reason"><code>{r.reason.as_str()}</code></td>
            <td data-label="Cause" data-testid="rejected-cause">{r.cause}</td>
            <td data-label="Client">{r.client_address}</td>
            <td data-label="Body" class="wrap">{body}</td>
            <td data-label="Request">
                <details>
                    <summary>{format!("{} headers", headers.len())}</summary>
                    <dl class="fields">
                        {headers.into_iter().map(|(name, value)| view! { <dt>{name}</dt><dd>{value}</dd> }).collect_view()}
                    </dl>
                    {r.request_id.map(|id| view! { <p class="muted">"request id " <code>{id}</code></p> })}
                </details>
            </td>
        </tr>
    }
}
