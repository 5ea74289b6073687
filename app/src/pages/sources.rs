//! /sources: each configured source, its endpoint URL, its scheme in words, and when it last received a delivery.
//!
//! A source is flagged silent by the rule of the shipped alert `HookboxSourceSilent`
//! (`db::sources::rule`), read from the archive. The endpoint's URL is on `[server] public_url`
//! when it is set; otherwise on the origin this browser reached hookbox at, and the page says so.

use crate::components::forward::age;
use crate::components::live::live_tick;
use crate::components::{Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::{Silence, SourceHealth, SourceSummary, SourcesPage as Sources};
use leptos::prelude::*;

mod routes;

#[server(endpoint = "sources")]
pub async fn list_sources() -> Result<Sources, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let config = guard::config()?;
    let now = chrono::Utc::now();
    let sources =
        crate::db::sources::summaries(&guard::db()?, &config, now, guard::viewer_zone()).await?;
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
    // Live, as the overview is: refetched every few seconds while the tab is visible.
    let tick = live_tick(|| true);
    let data = Resource::new(move || tick.get(), |_| list_sources());
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
                <code>"HookboxSourceSilent"</code> ". Replays are not deliveries from the sender and do not count. A source is "
                <strong>"failing"</strong> " when at least half of its newest deliveries (up to 20, of the last 24 hours) failed, "
                "and " <strong>"no deliveries yet"</strong> " while the archive holds none from it."
            </p>
            <Loaded resource=data show=move |page: Sources| {
                if page.sources.is_empty() {
                    return view! {
                        <p class="empty">"No source is configured: add a " <code>"[[sources]]"</code> " table to hookbox.toml."</p>
                    }.into_any();
                }
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
                        {page.sources.into_iter().map(|s| view! { <SourceCard source=s origin=public.clone().map_or(origin, |p| RwSignal::new(Some(p)))/> }).collect_view()}
                    </div>
                }.into_any()
            }/>
            <routes::RoutesSection/>
        </main>
    }
}

/// How long a source's archive rows are kept, and its bodies: `30 days (its own
/// retention_days)`.
fn kept_words(source: &SourceSummary) -> (String, String) {
    let days = |n: u32| format!("{n} day{}", if n == 1 { "" } else { "s" });
    let whose = |own: bool, key: &str| {
        if own {
            format!("its own {key}")
        } else {
            format!("the server's {key}")
        }
    };
    let kept = format!(
        "{} ({})",
        days(source.retention_days),
        whose(source.own_retention, "retention_days")
    );
    let bodies = match source.body_retention_days {
        Some(n) => format!(
            "{} ({}), then the ids, outcome and the body's SHA-256 only",
            days(n),
            whose(source.own_body_retention, "body_retention_days")
        ),
        None => "as long as the archive rows".to_string(),
    };
    (kept, bodies)
}

#[component]
fn SourceCard(source: SourceSummary, origin: RwSignal<Option<String>>) -> impl IntoView {
    let retention = source.retention_days;
    let (kept, bodies_kept) = kept_words(&source);
    let path = source.path.clone();
    let url = move || match origin.get() {
        Some(origin) => format!("{origin}{path}"),
        None => path.clone(),
    };
    let silent = source.silence.silent;
    let health = source.health;
    let class = match health {
        SourceHealth::Failing | SourceHealth::Silent => "source-card silent",
        SourceHealth::NoDeliveriesYet | SourceHealth::Receiving => "source-card",
    };
    let badge = match health {
        SourceHealth::Failing | SourceHealth::Silent => "badge badge-failed",
        SourceHealth::NoDeliveriesYet => "badge",
        SourceHealth::Receiving => "badge badge-processed",
    };
    let recent = (source.recent_of > 0).then(|| {
        format!(
            "{} of its last {} failed",
            source.recent_failed,
            deliveries(u64::from(source.recent_of))
        )
    });
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
        <article class=class data-source=source.name.clone() data-silent=silent.to_string() data-health=health.words()>
            <h2>
                <a href=events.clone()>{source.name.clone()}</a>
                " " <span class=badge data-testid="health">{health.words()}</span>
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
                <dt>"Archive kept"</dt>
                <dd data-testid="retention">{kept}</dd>
                <dt>"Bodies kept"</dt>
                <dd data-testid="body-retention">{bodies_kept}</dd>
                <dt>"Last delivery"</dt>
                <dd data-testid="last-received">
                    {match source.last_received.clone() {
                        Some(t) => view! { <LocalTime utc=t/> }.into_any(),
                        None => view! { <span>"none in the archive (it keeps " {retention} " days)"</span> }.into_any(),
                    }}
                </dd>
                <dt>"Last 24 hours"</dt>
                <dd data-testid="received-24h">{deliveries(source.received_24h)}</dd>
                <dt>"Recent failures"</dt>
                <dd data-testid="recent-failures">{match recent {
                    Some(words) => view! { <a href=format!("{events}&status=failed")>{words}</a> }.into_any(),
                    None => view! { <span>"no delivery in the last 24 hours"</span> }.into_any(),
                }}</dd>
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
        (None, _) => {
            format!("No deliveries yet: none from it in the archive (kept {retention} days).")
        }
        (Some(secs), true) => format!(
            "Silent: no delivery for {}, longer than usual at this time of day; {limit}.",
            age(secs)
        ),
        (Some(secs), false) => format!("Receiving: last delivery {} ago; {limit}.", age(secs)),
    }
}
