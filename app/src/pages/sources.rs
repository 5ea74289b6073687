//! /sources: each configured source, its endpoint URL, its scheme in words, and when it last received a delivery.
//!
//! A source is flagged silent by the rule of the shipped alert `HookboxSourceSilent`
//! (`db::sources::rule`), read from the archive. The endpoint's URL is on `[server] public_url`
//! when it is set; otherwise on the origin this browser reached hookbox at, and the page says so.

use crate::components::forward::age;
use crate::components::{Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{Silence, SourceSummary, SourcesPage as Sources};
use leptos::prelude::*;

#[server(endpoint = "sources")]
pub async fn list_sources() -> Result<Sources, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let config = guard::config()?;
    let now = chrono::Utc::now();
    let sources = crate::db::sources::summaries(&guard::db()?, &config, now, guard::viewer_zone())
        .await
        .map_err(|e| guard::unavailable(&e))?;
    Ok(Sources {
        sources,
        retention_days: config.server.retention_days,
        public_url: config.server.public_url.clone(),
        now: now.to_rfc3339(),
    })
}

/// The origin the browser reached hookbox at (`https://hookbox.example.com`).
#[cfg(feature = "hydrate")]
fn browser_origin() -> Option<String> {
    let location = js_sys::Reflect::get(&js_sys::global(), &"location".into()).ok()?;
    js_sys::Reflect::get(&location, &"origin".into())
        .ok()?
        .as_string()
}

#[component]
pub fn SourcesPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| list_sources());
    // Known in the browser only: the server cannot tell which address its viewers use.
    let origin = RwSignal::new(None::<String>);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| origin.set(browser_origin()));
    view! {
        <TopBar/>
        <main>
            <h1>"Sources"</h1>
            <p class="muted">
                "Each configured source, where its sender posts, and whether it has gone quiet. A source is "
                <strong>"silent"</strong>
                " when it has had no delivery for longer than 3 times its usual gap at this time of day (the longest "
                "silence in the two hours around this time yesterday and a week ago), at least 15 minutes and at most "
                "23 hours; 1 hour while it has no such history. This is the rule of the shipped alert "
                <code>"HookboxSourceSilent"</code> ". Replays are not deliveries from the sender and do not count."
            </p>
            <Loaded resource=data show=move |page: Sources| {
                if page.sources.is_empty() {
                    return view! {
                        <p class="empty">"No source is configured: add a " <code>"[[sources]]"</code> " table to hookbox.toml."</p>
                    }.into_any();
                }
                let retention = page.retention_days;
                // The configured public origin, else the browser's (said so).
                let public = page.public_url.clone();
                let note = match &page.public_url {
                    Some(_) => None,
                    None => Some(view! {
                        <p class="muted source-origin-note">
                            "No public_url is set in [server]: each endpoint is shown on the address this browser reached "
                            "hookbox at. Senders on the internet post to the same path on your load balancer's public address."
                        </p>
                    }),
                };
                view! {
                    {note}
                    <div class="source-list">
                        {page.sources.into_iter().map(|s| view! { <SourceCard source=s origin=public.clone().map_or(origin, |p| RwSignal::new(Some(p))) retention/> }).collect_view()}
                    </div>
                }.into_any()
            }/>
        </main>
    }
}

#[component]
fn SourceCard(
    source: SourceSummary,
    origin: RwSignal<Option<String>>,
    retention: u32,
) -> impl IntoView {
    let path = source.path.clone();
    let url = move || match origin.get() {
        Some(origin) => format!("{origin}{path}"),
        None => path.clone(),
    };
    let silent = source.silence.silent;
    let class = if silent {
        "source-card silent"
    } else {
        "source-card"
    };
    let forward = if source.forward.is_empty() {
        "nowhere (no forward = [...])".to_string()
    } else {
        source.forward.join(", ")
    };
    let mode = match source.mode.as_str() {
        "dedup" => "dedup: each event recorded once; nothing is projected".to_string(),
        "snapshot" => "snapshot: the newest revision of each object is kept".to_string(),
        other => other.to_string(),
    };
    let scheme = match &source.preset {
        Some(preset) => format!("{} (preset {preset})", source.scheme),
        None => source.scheme.clone(),
    };
    let rate = source
        .rate_limit_per_sec
        .map_or("unlimited".to_string(), |n| format!("{n} a second"));
    let events = format!("/events?source={}", crate::url::urlencode(&source.name));
    view! {
        <article class=class data-source=source.name.clone() data-silent=silent.to_string()>
            <h2>
                <a href=events>{source.name.clone()}</a>
                {silent.then(|| view! { <span class="badge badge-failed" data-testid="silent">"silent"</span> })}
            </h2>
            <dl class="fields">
                <dt>"Endpoint"</dt>
                <dd><code class="endpoint" data-testid="endpoint">"POST " {url}</code></dd>
                <dt>"Scheme"</dt>
                <dd><code>{scheme}</code> " — " {source.scheme_words.clone()}</dd>
                <dt>"Mode"</dt>
                <dd>{mode}</dd>
                <dt>"Forwards to"</dt>
                <dd>{forward}</dd>
                <dt>"Rate limit"</dt>
                <dd>{rate}</dd>
                <dt>"Last delivery"</dt>
                <dd data-testid="last-received">
                    {match source.last_received.clone() {
                        Some(t) => view! { <LocalTime utc=t/> }.into_any(),
                        None => view! { <span>"none in the archive (it keeps " {retention} " days)"</span> }.into_any(),
                    }}
                </dd>
                <dt>"Last 24 hours"</dt>
                <dd data-testid="received-24h">{deliveries(source.received_24h)}</dd>
                <dt>"Silence"</dt>
                <dd class="silence" data-testid="silence">{silence_words(&source.silence, retention)}</dd>
            </dl>
        </article>
    }
}

/// `1` → "1 delivery", `2` → "2 deliveries".
fn deliveries(n: u64) -> String {
    format!("{n} {}", if n == 1 { "delivery" } else { "deliveries" })
}

/// The rule's verdict in words, in the alert's terms.
fn silence_words(s: &Silence, retention: u32) -> String {
    let limit = match s.usual_gap_secs {
        Some(gap) => format!(
            "its limit is {} (3 × its usual gap of {} at this time of day, within 15 min to 23 h)",
            age(s.threshold_secs),
            age(gap)
        ),
        None => format!(
            "its limit is {}, as it has no history at this time of day yet",
            age(s.threshold_secs)
        ),
    };
    match (s.silent_secs, s.silent) {
        (None, _) => format!("Silent: no delivery from it in the archive (kept {retention} days)."),
        (Some(secs), true) => format!(
            "Silent: no delivery for {}, longer than usual at this time of day; {limit}.",
            age(secs)
        ),
        (Some(secs), false) => format!("Receiving: last delivery {} ago; {limit}.", age(secs)),
    }
}
