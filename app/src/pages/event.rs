//! `/events/{id}`: one delivery in full, the other deliveries of the same event, its object, and
//! (operators) a guarded replay: a dry run first, then confirmation.

mod body;

use body::{BodySection, ExpiredBody, HeadersTable};

use crate::components::forward::{ForwardList, ResendAction, RetryAction};
use crate::components::forward_actions::{resend_forward, retry_forward};
use crate::components::{ErrorNote, Loaded, LocalTime, StatusBadge, TopBar};
use crate::error::DashboardError;
use crate::model::{EventDetail, REPLAY_ANYWAY, ReplayResult};
use crate::url::urlencode;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

/// Headers a resend leaves to curl (or must not repeat).
#[cfg(feature = "ssr")]
const NOT_RESENT: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "accept-encoding",
    "expect",
    "keep-alive",
    "te",
    "upgrade",
];

/// `text` as one shell word.
#[cfg(feature = "ssr")]
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A command that posts `body` with `headers` to `/hooks/{source}` of the hookbox at `base`:
/// the body exact (through base64 when it is not text), redacted headers left out (and any
/// header `app::headers` does not let the user resend: pass only what they may see).
#[cfg(feature = "ssr")]
pub fn curl_command(base: &str, source: &str, headers: &[(String, String)], body: &[u8]) -> String {
    let url = format!("{base}/hooks/{}", crate::url::urlencode(source));
    let mut command = match std::str::from_utf8(body) {
        Ok(text) if !text.contains('\0') => format!("printf '%s' {} | ", shell_quote(text)),
        _ => {
            use base64::Engine;
            format!(
                "printf '%s' {} | base64 -d | ",
                shell_quote(&base64::engine::general_purpose::STANDARD.encode(body))
            )
        }
    };
    command.push_str(&format!("curl -sS -X POST {}", shell_quote(&url)));
    for (name, value) in headers {
        let skip = NOT_RESENT.iter().any(|h| h.eq_ignore_ascii_case(name))
            || crate::headers::is_redacted(value);
        if !skip {
            command.push_str(&format!(" -H {}", shell_quote(&format!("{name}: {value}"))));
        }
    }
    command.push_str(" --data-binary @-");
    command
}

/// This hookbox as the browser reached it (its `Host`), for commands that talk to it.
#[cfg(feature = "ssr")]
fn base_url() -> String {
    let host = leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|p| {
            p.headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        })
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    format!("http://{host}")
}

/// Header (name, value) pairs.
#[cfg(feature = "ssr")]
type Headers = Vec<(String, String)>;

/// What the event page shows of a body's text, computed on a blocking thread (a body-sized
/// computation never runs on an async worker): whether it is JSON, its searchable fields (at
/// most 40), and the text laid out (pretty when JSON, as it is otherwise).
#[cfg(feature = "ssr")]
async fn read_body_off_worker(text: String) -> (bool, Vec<(String, String)>, String) {
    let read = move || {
        if crate::json::parse(&text).is_err() {
            return (false, Vec::new(), text);
        }
        let searchable = serde_json::from_str(&text)
            .map(|body| crate::db::contains::searchable_fields(&body, 40))
            .unwrap_or_default();
        (true, searchable, crate::present::pretty(&text))
    };
    crate::blocking::run(read)
        .await
        .unwrap_or_else(|| (false, Vec::new(), String::new()))
}

/// The headers of a stored delivery `user` may see, and the ones a re-send repeats; classified
/// now, whatever the archive kept: a row written before the classification may hold a
/// credential.
#[cfg(feature = "ssr")]
fn headers_of(
    stored: &crate::db::events::StoredDelivery,
    user: &crate::auth::User,
) -> Result<(Headers, Headers), DashboardError> {
    let config = crate::guard::config()?;
    let shown = crate::headers::shown_headers(
        &stored.headers_json,
        config.source(&stored.row.source),
        user.role,
    );
    let resent = shown
        .iter()
        .filter(|(_, _, resend)| *resend)
        .map(|(name, value, _)| (name.clone(), value.clone()))
        .collect();
    let headers = shown
        .into_iter()
        .map(|(name, value, _)| (name, value))
        .collect();
    Ok((headers, resent))
}

/// Delivery `id`; its body cut for the page unless `whole_body` (`?body=all`), which is bounded
/// by the archive's own limit on a body. With `shown_only` (the page's call) the body as
/// received and the curl command are left out, so the page carries the body once: its copy
/// buttons fetch them when used ([`get_event_source`]).
#[server(endpoint = "event")]
pub async fn get_event(
    id: i64,
    #[server(default)] whole_body: bool,
    #[server(default)] shown_only: bool,
) -> Result<EventDetail, DashboardError> {
    use crate::guard;
    let user = guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let stored = guard::stored_delivery(&db, id).await?;
    let (headers, resent) = headers_of(&stored, &user)?;
    let (raw_body, curl) = if shown_only {
        (None, None)
    } else {
        (
            Some(String::from_utf8_lossy(&stored.body).into_owned()),
            Some(curl_command(
                &base_url(),
                &stored.row.source,
                &resent,
                &stored.body,
            )),
        )
    };
    // A form body is shown, and searched from, as the JSON object of its fields, read once when
    // it arrived (never parsed again here).
    let body_is_form = stored.body_fields.is_some();
    let text = stored
        .body_fields
        .clone()
        .unwrap_or_else(|| String::from_utf8_lossy(&stored.body).into_owned());
    let (body_is_json, searchable, shown) = read_body_off_worker(text).await;
    let (body, body_cut) = match crate::present::cut(&shown) {
        (part, true) if !whole_body => (part.to_string(), true),
        _ => (shown, false),
    };
    let related = match stored.row.event_id.as_deref() {
        Some(event_id) => {
            crate::db::events::deliveries_of(&db, &stored.row.source, event_id).await?
        }
        None => Vec::new(),
    };
    let forwarded = crate::db::destinations::produced_by(&db, &[id]).await?;
    let config = guard::config()?;
    let destinations = match config.source(&stored.row.source) {
        Some(source) if stored.expired.is_none() => {
            let sent_to: Vec<String> = forwarded.iter().map(|f| f.destination.clone()).collect();
            crate::db::routes::verdicts(
                config.plan(source),
                stored.row.outcome,
                &crate::routing::Delivery {
                    event_type: stored.row.event_type.as_deref(),
                    body_fields: stored.body_fields.as_deref(),
                    body: &stored.body,
                },
                &sent_to,
            )
        }
        _ => Vec::new(),
    };
    let revision_holder = match (&stored.row.object_id, stored.row.revision) {
        (Some(object_id), Some(revision))
            if stored.row.outcome == crate::model::OutcomeKind::ReusedRevision =>
        {
            crate::db::events::revision_holder(&db, &stored.row.source, object_id, revision).await?
        }
        _ => None,
    };
    Ok(EventDetail {
        destinations,
        revision_holder,
        forwarded,
        searchable,
        curl,
        has_object: stored.row.object_id.is_some(),
        event: stored.row,
        headers,
        body,
        body_is_json,
        body_is_form,
        body_cut,
        body_bytes: stored.body.len() as u64,
        raw_body,
        body_of: stored.body_of,
        body_kept: stored.body_kept,
        body_expired: stored.expired.map(|x| crate::model::BodyExpired {
            at: x.at.to_rfc3339(),
            sha256: x.sha256,
            bytes: x.bytes,
        }),
        related,
        can_replay: user.role == crate::model::Role::Operator,
    })
}

/// Delivery `id`'s body exactly as received (lossy for non-UTF-8 bytes) and the curl command
/// that sends it again: what the event page's copy buttons fetch when used.
#[server(endpoint = "event_source")]
pub async fn get_event_source(id: i64) -> Result<crate::model::EventSource, DashboardError> {
    use crate::guard;
    let user = guard::require(crate::model::Role::Viewer).await?;
    let db = guard::db()?;
    let stored = guard::stored_delivery(&db, id).await?;
    let (_, resent) = headers_of(&stored, &user)?;
    Ok(crate::model::EventSource {
        raw_body: String::from_utf8_lossy(&stored.body).into_owned(),
        curl: curl_command(&base_url(), &stored.row.source, &resent, &stored.body),
    })
}

/// Replays a stored delivery; `confirm = false` is the dry run (rolled back, nothing written).
/// A replay that fails as the original did is a 409, unless `anyway` is [`REPLAY_ANYWAY`].
#[server(endpoint = "replay")]
pub async fn replay_event(
    id: i64,
    confirm: bool,
    #[server(default)] anyway: Option<String>,
) -> Result<ReplayResult, DashboardError> {
    use crate::guard;
    use crate::ingest::replay::{Repeat, ReplayError, fails_the_same_way, replay_checked};
    let user = guard::require(crate::model::Role::Operator).await?;
    let repeat = match anyway.as_deref().map(str::trim) {
        None | Some("") => Repeat::Refused,
        Some(typed) if typed == REPLAY_ANYWAY => Repeat::Allowed,
        Some(_) => {
            return Err(guard::bad_request(format!(
                "anyway: type \"{REPLAY_ANYWAY}\" to replay a delivery that would fail again"
            )));
        }
    };
    let db = guard::db()?;
    let config = guard::config()?;
    let stored = guard::stored_delivery(&db, id).await?;
    let recorded = replay_checked(&db, &config, &stored, &user.name, !confirm, repeat)
        .await
        .map_err(|e| match e {
            ReplayError::SameFailure { class } => guard::fail(DashboardError::Conflict(format!(
                "nothing was replayed: the replay would fail as the original did ({class}). \
                 Fix the cause first, or type \"{REPLAY_ANYWAY}\" to replay it regardless."
            ))),
            e => guard::replay_failed(e),
        })?;
    if confirm {
        crate::guard::wake_forwarder();
        tracing::info!(user = %user.name, replay_of = id, outcome = recorded.outcome.name(), "replayed");
    }
    Ok(ReplayResult {
        outcome: recorded.outcome.kind(),
        status: recorded.outcome.status(),
        message: recorded.outcome.error_message(),
        archive_id: confirm.then_some(recorded.archive_id),
        same_failure: fails_the_same_way(&stored.row, &recorded.outcome),
    })
}

#[component]
pub fn EventPage() -> impl IntoView {
    let params = use_params_map();
    // The id as typed, and the number it is (when it is one).
    let id = move || {
        let raw = params.read().get("id").unwrap_or_default();
        let id = raw.parse::<i64>().ok();
        (raw, id)
    };
    // The page owns the replay, so a confirmed one refreshes what it changed (this event's
    // deliveries) and its result survives the refresh.
    let replay = Action::new(|(id, confirm, anyway): &(i64, bool, Option<String>)| {
        let (id, confirm, anyway) = (*id, *confirm, anyway.clone());
        async move {
            replay_event(id, confirm, anyway)
                .await
                .map(|r| (confirm, r))
        }
    });
    // A forward delivery retried or re-sent from this page: its list is read again.
    let acted = RwSignal::new(0u32);
    let retry: RetryAction = Action::new(move |(name, id): &(String, i64)| {
        let (name, id) = (name.clone(), *id);
        async move {
            let result = retry_forward(name, id).await;
            if result.is_ok() {
                acted.update(|n| *n += 1);
            }
            result
        }
    });
    let resend: ResendAction = Action::new(move |(name, id): &(String, i64)| {
        let (name, id) = (name.clone(), *id);
        async move {
            let result = resend_forward(name, id).await;
            if result.is_ok() {
                acted.update(|n| *n += 1);
            }
            result
        }
    });
    let replayed = Memo::new(move |_| {
        replay.value().with(|v| match v {
            Some(Ok((true, r))) => r.archive_id,
            _ => None,
        })
    });
    // `?body=all`: the body whole, not cut.
    let query = leptos_router::hooks::use_query_map();
    let whole_body = move || query.read().get("body").as_deref() == Some("all");
    let detail = Resource::new(
        move || (id(), replayed.get(), whole_body(), acted.get()),
        |((raw, id), _, whole_body, _)| async move {
            match id {
                Some(id) => get_event(id, whole_body, true).await,
                None => Err(not_an_id(&raw)),
            }
        },
    );
    view! {
        <TopBar/>
        <main>
            {move || retry.value().get().and_then(|r| r.err()).map(|e| view! { <ErrorNote error=e/> })}
            {move || resend.value().get().map(|r| match r {
                Ok(id) => view! { <p class="ok" role="status" data-testid="resend-one-result">"Re-sent as forward delivery " {id} "."</p> }.into_any(),
                Err(e) => view! { <ErrorNote error=e/> }.into_any(),
            })}
            <Loaded resource=detail show=move |d| view! { <EventBody d replay retry resend/> }/>
        </main>
    }
}

/// 400 for an `/events/{id}` whose id is not a delivery id (a whole number).
fn not_an_id(raw: &str) -> DashboardError {
    let error = DashboardError::BadRequest(format!(
        "{:?} is not a delivery id: ids are whole numbers, like /events/42",
        raw.chars().take(64).collect::<String>()
    ));
    #[cfg(feature = "ssr")]
    let error = crate::guard::fail(error);
    error
}

/// A replay of a delivery: (id, confirmed?, the typed override) → the result and whether it
/// was confirmed.
type Replay = Action<(i64, bool, Option<String>), Result<(bool, ReplayResult), DashboardError>>;

#[component]
fn EventBody(
    d: EventDetail,
    replay: Replay,
    retry: RetryAction,
    resend: ResendAction,
) -> impl IntoView {
    let e = d.event.clone();
    let object_link = e
        .object_id
        .clone()
        .filter(|_| d.has_object)
        .map(|o| format!("/objects/{}/{}", urlencode(&e.source), urlencode(&o)));
    view! {
        <h1>"Delivery " {e.id} " " <StatusBadge status=e.status outcome=e.outcome/></h1>
        <Fields e=e.clone() object_link revision_holder=d.revision_holder.clone()/>
        {(d.can_replay && d.body_expired.is_none()).then(|| view! { <ReplayPanel id=e.id run=replay/> })}
        {match d.body_expired.clone() {
            Some(expired) => view! { <ExpiredBody expired/> }.into_any(),
            None => view! { <BodySection d=d.clone()/> }.into_any(),
        }}
        {(!d.searchable.is_empty()).then(|| view! { <Searchable source=e.source.clone() searchable=d.searchable.clone()/> })}
        {d.body_expired.is_none().then(|| view! { <HeadersTable headers=d.headers.clone()/> })}
        {(!d.forwarded.is_empty()).then(|| view! {
            <section class="panel" data-testid="forwarded">
                <h2>"Forwarded"</h2>
                <ForwardList rows=d.forwarded.clone() can_act=d.can_replay retry=d.can_replay.then_some(retry) resend/>
            </section>
        })}
        {(!d.destinations.is_empty()).then(|| view! { <Destinations verdicts=d.destinations.clone()/> })}
        <Related related=d.related/>
    }
}

/// Each destination of the delivery's source: sent or not, and why (the route that matched, or
/// the condition each route failed).
#[component]
fn Destinations(verdicts: Vec<crate::model::DestinationVerdict>) -> impl IntoView {
    view! {
        <section class="panel" data-testid="destinations">
            <h2>"Destinations"</h2>
            <table class="data">
                <thead><tr><th>"Destination"</th><th>"Sent"</th><th>"Why"</th></tr></thead>
                <tbody>
                    {verdicts.into_iter().map(|v| view! {
                        <tr data-testid="destination-verdict" data-destination=v.destination.clone() data-sent=v.sent.to_string()>
                            <td><a href=format!("/destinations/{}", urlencode(&v.destination))>{v.destination.clone()}</a></td>
                            <td>{if v.sent { "sent" } else { "not sent" }}</td>
                            <td>{v.why}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

/// What the archive says of a delivery: its ids, outcome, error, and what it replays or was
/// resolved by.
#[component]
fn Fields(
    e: crate::model::EventRow,
    object_link: Option<String>,
    revision_holder: Option<(String, Option<i64>)>,
) -> impl IntoView {
    view! {
        <section class="panel">
            <dl class="fields">
                <dt>"Source"</dt><dd>{e.source.clone()}</dd>
                <dt>"Event id"</dt><dd class="mono">{e.event_id.clone().unwrap_or_else(|| "—".into())}</dd>
                <dt>"Object"</dt><dd class="mono">{match object_link {
                    Some(href) => view! { <a href=href data-testid="object-link">{e.object_id.clone()}</a> }.into_any(),
                    None => view! { <span>{e.object_id.clone().unwrap_or_else(|| "—".into())}</span> }.into_any(),
                }}</dd>
                <dt>"Revision"</dt><dd>{e.revision.map(|r| r.to_string()).unwrap_or_else(|| "—".into())}</dd>
                <dt>"Type"</dt><dd>{e.event_type.clone().unwrap_or_else(|| "—".into())}</dd>
                <dt>"Status"</dt><dd>{e.status.as_str()}</dd>
                <dt>"Outcome"</dt><dd>{e.outcome.as_str()}</dd>
                <dt>"Error"</dt><dd data-testid="error-message">{e.error_message.clone().unwrap_or_else(|| "—".into())}</dd>
                {revision_holder.map(|(holder, archive)| {
                    let href = match archive {
                        Some(archive) => format!("/events/{archive}"),
                        None => format!("/events?source={}&event_id={}", urlencode(&e.source), urlencode(&holder)),
                    };
                    view! { <dt>"Revision held by"</dt><dd><a href=href class="mono" data-testid="revision-holder">{holder}</a></dd> }
                })}
                <dt>"Received"</dt><dd><LocalTime utc=e.received_at.clone()/></dd>
                {e.replay_of.map(|original| view! {
                    <dt>"Replay of"</dt><dd><a href=format!("/events/{original}")>"delivery " {original}</a> " by " {e.replayed_by.clone()}</dd>
                })}
                {e.resolved_by.map(|replay| view! {
                    <dt>"Resolved"</dt><dd data-testid="resolved-by">"Resolved by replay " <a href=format!("/events/{replay}")>{format!("#{replay}")}</a></dd>
                })}
            </dl>
        </section>
    }
}

/// Links to the deliveries whose body holds one of this body's values (`(pointer, match)`).
#[component]
fn Searchable(source: String, searchable: Vec<(String, String)>) -> impl IntoView {
    view! {
        <section class="panel">
            <details data-testid="searchable">
                <summary>"Find deliveries with a value of this body"</summary>
                <ul class="searchable">
                    {searchable.into_iter().map(|(pointer, matcher)| {
                        let href = format!("/events?source={}&match={}", urlencode(&source), urlencode(&matcher));
                        view! { <li><a href=href data-testid="find-by-field" class="mono">{pointer}</a> <span class="muted mono">{matcher.clone()}</span></li> }
                    }).collect_view()}
                </ul>
            </details>
        </section>
    }
}

/// The deliveries of the same event: the original, its retries and its replays.
#[component]
fn Related(related: Vec<crate::model::EventRow>) -> impl IntoView {
    view! {
        <section class="panel">
            <h2>"Deliveries of this event"</h2>
            <ol class="related" data-testid="related">
                {related.into_iter().map(|r| view! {
                    <li>
                        <a href=format!("/events/{}", r.id)>"delivery " {r.id}</a> " "
                        <StatusBadge status=r.status outcome=r.outcome/> " "
                        <LocalTime utc=r.received_at.clone()/>
                        {r.replayed_by.clone().map(|by| view! { <span class="muted">" replayed by " {by}</span> })}
                    </li>
                }).collect_view()}
            </ol>
        </section>
    }
}

#[component]
fn ReplayPanel(id: i64, run: Replay) -> impl IntoView {
    view! {
        <section class="panel" aria-labelledby="replay-title">
            <h2 id="replay-title">"Replay"</h2>
            <p class="muted">"A replay runs this delivery through ingest again as a new archive row. A dry run shows what it would be and writes nothing."</p>
            <button type="button" data-testid="dry-run" on:click=move |_| { run.dispatch((id, false, None)); }>"Dry run"</button>
            {move || run.value().get().map(|result| match result {
                Err(e) => view! { <ErrorNote error=e/> }.into_any(),
                Ok((false, r)) => view! {
                    <p role="status" data-testid="dry-run-result">"Would be: " <strong>{r.outcome.as_str()}</strong>
                        {r.message.clone().map(|m| format!(" ({m})"))}</p>
                    {if r.same_failure {
                        view! { <ReplayAnyway id run/> }.into_any()
                    } else {
                        view! {
                            <button type="button" class="danger" data-testid="confirm-replay" on:click=move |_| { run.dispatch((id, true, None)); }>"Replay now"</button>
                        }.into_any()
                    }}
                }.into_any(),
                Ok((true, r)) => view! {
                    <p role="status" class="ok" data-testid="replay-result">"Replayed: " <strong>{r.outcome.as_str()}</strong> " "
                        {r.archive_id.map(|new_id| view! { <a href=format!("/events/{new_id}")>"new delivery " {new_id}</a> })}</p>
                }.into_any(),
            })}
        </section>
    }
}

/// After a dry run that fails as the original did: no "Replay now", only a typed override.
#[component]
fn ReplayAnyway(id: i64, run: Replay) -> impl IntoView {
    let typed = RwSignal::new(String::new());
    view! {
        <p class="warning" data-testid="same-failure">"The replay would fail the same way as the original: fix its cause first (the source's configuration, the sender, the data), then dry-run again."</p>
        <label for="replay-anyway">"To replay it regardless, type " <code>{REPLAY_ANYWAY}</code></label>
        <input id="replay-anyway" type="text" autocomplete="off" prop:value=move || typed.get()
            on:input=move |ev| typed.set(event_target_value(&ev))/>
        <button type="button" class="danger" data-testid="replay-anyway"
            disabled=move || typed.get().trim() != REPLAY_ANYWAY
            on:click=move |_| { run.dispatch((id, true, Some(typed.get_untracked()))); }>
            "Replay anyway"
        </button>
    }
}
