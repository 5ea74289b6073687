//! The event page's body and headers, or what is left of them past the source's body retention.

use super::get_event_source;
use crate::components::cut::ShownCut;
use crate::components::{ErrorNote, LocalTime};
use crate::model::{BodyExpired, EventDetail};
use leptos::prelude::*;

/// The body as received (its shown layout, cut when long), its copy buttons and the curl
/// command that sends it again.
#[component]
pub(super) fn BodySection(d: EventDetail) -> impl IntoView {
    let copied = RwSignal::new(false);
    let curl_copied = RwSignal::new(false);
    // The bytes as received and the curl command: fetched when first used, so the page carries
    // the body once (the shown, possibly cut, layout); `true` copies the curl command.
    let id = d.event.id;
    let given = d
        .raw_body
        .clone()
        .zip(d.curl.clone())
        .map(|(raw_body, curl)| crate::model::EventSource { raw_body, curl });
    let source = Action::new(move |curl: &bool| {
        let (curl, given) = (*curl, given.clone());
        async move {
            let source = match given {
                Some(source) => Ok(source),
                None => get_event_source(id).await,
            };
            if let Ok(_s) = &source {
                #[cfg(feature = "hydrate")]
                if let Some(window) = web_sys::window() {
                    let text = if curl { &_s.curl } else { &_s.raw_body };
                    let _ = window.navigator().clipboard().write_text(text);
                }
                if curl {
                    curl_copied.set(true)
                } else {
                    copied.set(true)
                }
            }
            source
        }
    });
    // The bytes as received, not the decoded layout the page shows.
    let copy = move |_| {
        source.dispatch(false);
    };
    let copy_curl = move |_| {
        source.dispatch(true);
    };
    let curl_shown = move || source.value().get().and_then(Result::ok).map(|s| s.curl);
    view! {
        <section class="panel">
            <h2>"Body " <span class="muted">{if d.body_is_form { "(form, shown as its fields)" } else if d.body_is_json { "(JSON)" } else { "(raw)" }}</span></h2>
            <button type="button" class="small" on:click=copy>{move || if copied.get() { "Copied" } else { "Copy" }}</button>
            {d.body_of.map(|original| {
                let link = format!("/events/{original}");
                if d.body_kept {
                    view! { <p class="muted" data-testid="body-of">"The same bytes as delivery " <a href=link>{format!("#{original}")}</a> ", kept once."</p> }.into_any()
                } else {
                    view! { <p class="muted" data-testid="body-of">{format!("The same bytes as delivery #{original}, which was purged since: the body is no longer kept.")}</p> }.into_any()
                }
            })}
            <pre class="body" data-testid="body" tabindex="0"><code>{d.body.clone()}</code></pre>
            {d.body_cut.then(|| view! {
                <ShownCut what="body" href=format!("/events/{}?body=all", id) bytes=d.body_bytes testid="body-cut"/>
            })}
            <details>
                <summary>"Send it again from a shell"</summary>
                <p class="muted">"Posts this body, exactly, with the headers shown (redacted ones left out) to this hookbox: a duplicate of the original while its signature is valid."</p>
                <button type="button" class="small" data-testid="copy-curl" on:click=copy_curl>{move || if curl_copied.get() { "Copied" } else { "Copy as curl" }}</button>
                {move || curl_shown().map(|curl| view! { <pre class="body" data-testid="curl" tabindex="0"><code>{curl}</code></pre> })}
                {move || source.value().get().and_then(Result::err).map(|e| view! { <ErrorNote error=e/> })}
            </details>
        </section>
    }
}

/// The headers as received (redacted ones masked).
#[component]
pub(super) fn HeadersTable(headers: Vec<(String, String)>) -> impl IntoView {
    view! {
        <section class="panel">
            <h2>"Headers"</h2>
            <table class="data compact">
                <tbody>
                    {headers.into_iter().map(|(name, value)| view! { <tr><th scope="row" class="mono">{name}</th><td class="mono wrap">{value}</td></tr> }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

/// A body past its source's body retention: when it expired, and its size and SHA-256, which
/// still tell whether a body someone holds is the one received.
#[component]
pub(super) fn ExpiredBody(expired: BodyExpired) -> impl IntoView {
    view! {
        <section class="panel" data-testid="body-expired">
            <h2>"Body and headers"</h2>
            <p>"Expired " <LocalTime utc=expired.at.clone()/> " (the source's body retention): the ids, outcome and error of this delivery are kept, its body and headers are not, and it cannot be replayed."</p>
            <p class="muted">{format!("The body was {} bytes, SHA-256 ", expired.bytes)}<span class="mono wrap" data-testid="body-sha256">{expired.sha256.clone()}</span></p>
        </section>
    }
}
