//! The viewer's time zone on both halves: the server reads it from the zone cookie
//! ([`crate::model::ZONE_COOKIE`], through `guard::viewer_zone`) and writes its name into the
//! page's `<meta name="hookbox-zone">` ([`ZoneMeta`]); the browser reads it back from there, so
//! both write every time the same way (`present::zone` on the server, `Intl` in the browser).
//! The top bar names the zone and switches between UTC and the browser's zone ([`ZoneSwitch`]).

use crate::error::DashboardError;
use leptos::prelude::*;

/// The `name` of the `<meta>` that carries the zone to the browser.
pub const ZONE_META: &str = "hookbox-zone";

/// The cookie's lifetime once the viewer picks a zone: a year.
pub const ZONE_COOKIE_MAX_AGE_SECS: u32 = 365 * 24 * 3600;

/// The name of the zone this page's times are in: `UTC`, `Europe/Berlin`.
pub fn viewer_zone_name() -> String {
    #[cfg(feature = "ssr")]
    {
        crate::guard::viewer_zone().name().to_string()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        browser::page_zone()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        "UTC".to_string()
    }
}

/// `rfc3339` as a page shows it (`2026-11-30 00:02:50`, in the viewer's zone) and in UTC
/// (`2026-11-29 23:02:50 UTC`); a text that is not a time, as it is.
pub fn shown_time(rfc3339: &str) -> (String, String) {
    #[cfg(feature = "ssr")]
    {
        use crate::present::zone::local_text;
        (
            local_text(rfc3339, crate::guard::viewer_zone()),
            format!("{} UTC", local_text(rfc3339, chrono_tz::UTC)),
        )
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        browser::shown_time(rfc3339)
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        (rfc3339.to_string(), rfc3339.to_string())
    }
}

/// The zone's `<meta>`, in the document's head (the shell, rendered on the server only).
#[component]
pub fn ZoneMeta() -> impl IntoView {
    view! { <meta name=ZONE_META content=viewer_zone_name()/> }
}

/// "Times in Europe/Berlin", and a button switching to UTC (or, from UTC, to the browser's own
/// zone): it sets the zone cookie for a year and reloads the page.
#[component]
pub fn ZoneSwitch() -> impl IntoView {
    let zone = viewer_zone_name();
    let in_utc = zone == "UTC";
    let switch = move |_| {
        #[cfg(feature = "hydrate")]
        browser::switch_zone(!in_utc);
    };
    view! {
        <span class="zone" data-testid="zone">"Times in " <strong>{zone}</strong></span>
        <button type="button" class="link" data-testid="zone-switch" on:click=switch>
            {if in_utc { "Show local time" } else { "Show UTC" }}
        </button>
    }
}

/// The received times an `/events` filter's `from` and `to` select, in UTC (RFC 3339), when it
/// names either: what a day in the filter's zone means.
#[server(endpoint = "filter_range")]
pub async fn filter_range(
    from: Option<String>,
    to: Option<String>,
    tz: Option<String>,
) -> Result<(Option<String>, Option<String>), DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Viewer).await?;
    let filter = crate::model::EventFilter {
        from,
        to,
        tz,
        ..Default::default()
    };
    crate::db::filter::check_lengths(&filter)?;
    let (from, to) = crate::db::filter::received_range(&filter)?;
    Ok((from.map(|t| t.to_rfc3339()), to.map(|t| t.to_rfc3339())))
}

/// What a filter's `from` and `to` select, said in UTC: "Received from 2026-11-30 08:00:00 UTC
/// up to 2026-12-01 08:00:00 UTC". Nothing when neither is given or they are wrong (the list
/// says what is wrong).
#[component]
pub fn FilterRange(
    /// `(from, to, tz)` as the filter has them.
    range: Signal<(Option<String>, Option<String>, Option<String>)>,
) -> impl IntoView {
    let bounds = Resource::new(
        move || range.get(),
        |(from, to, tz)| async move {
            if from.is_none() && to.is_none() {
                return Ok((None, None));
            }
            filter_range(from, to, tz).await
        },
    );
    let utc = |t: &str| shown_time(t).1;
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match bounds.await {
                    Ok((None, None)) | Err(_) => None,
                    Ok((from, to)) => Some(view! {
                        <p class="muted range" data-testid="filter-range">
                            "Received "
                            {from.map(|t| format!("from {} ", utc(&t)))}
                            {to.map(|t| format!("up to {}", utc(&t)))}
                        </p>
                    }),
                }
            })}
        </Suspense>
    }
}

/// The browser's half: the zone from the page, times written with `Intl.DateTimeFormat`.
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod browser {
    use js_sys::{Array, Date, Intl::DateTimeFormat, Object, Reflect};
    use wasm_bindgen::{JsCast, JsValue};

    /// The page's zone and its formats (made once: `Intl` formats are slow to make).
    struct Formats {
        zone: String,
        local: Option<DateTimeFormat>,
        utc: Option<DateTimeFormat>,
    }

    thread_local! {
        static FORMATS: Formats = {
            let zone = meta_zone().unwrap_or_else(|| "UTC".into());
            Formats { local: format_in(&zone), utc: format_in("UTC"), zone }
        };
    }

    fn meta_zone() -> Option<String> {
        web_sys::window()?
            .document()?
            .query_selector(&format!("meta[name=\"{}\"]", super::ZONE_META))
            .ok()??
            .get_attribute("content")
            .filter(|z| !z.is_empty())
    }

    pub fn page_zone() -> String {
        FORMATS.with(|f| f.zone.clone())
    }

    /// `Intl.DateTimeFormat` writing `YYYY MM DD HH MM SS` in `zone`; `None` when the browser
    /// does not know the zone (the constructor throws).
    fn format_in(zone: &str) -> Option<DateTimeFormat> {
        let options = Object::new();
        for (key, value) in [
            ("timeZone", zone),
            ("hourCycle", "h23"),
            ("year", "numeric"),
            ("month", "2-digit"),
            ("day", "2-digit"),
            ("hour", "2-digit"),
            ("minute", "2-digit"),
            ("second", "2-digit"),
        ] {
            Reflect::set(&options, &key.into(), &value.into()).ok()?;
        }
        let intl = Reflect::get(&js_sys::global(), &"Intl".into()).ok()?;
        let constructor: js_sys::Function = Reflect::get(&intl, &"DateTimeFormat".into())
            .ok()?
            .dyn_into()
            .ok()?;
        let arguments = Array::of2(&"en-US".into(), &options);
        Reflect::construct(&constructor, &arguments)
            .ok()
            .map(JsCast::unchecked_into)
    }

    /// `date` as `2026-11-30 00:02:50` through `format`.
    fn write(format: &DateTimeFormat, date: &Date) -> Option<String> {
        let (mut year, mut month, mut day) = (String::new(), String::new(), String::new());
        let (mut hour, mut minute, mut second) = (String::new(), String::new(), String::new());
        for part in format.format_to_parts(date).iter() {
            let kind = Reflect::get(&part, &"type".into()).ok()?.as_string()?;
            let value = Reflect::get(&part, &"value".into()).ok()?.as_string()?;
            match kind.as_str() {
                "year" => year = value,
                "month" => month = value,
                "day" => day = value,
                "hour" => hour = value,
                "minute" => minute = value,
                "second" => second = value,
                _ => {}
            }
        }
        Some(format!("{year:0>4}-{month}-{day} {hour}:{minute}:{second}"))
    }

    /// JavaScript reads at most milliseconds: `…:50.123456+00:00` → `…:50.123+00:00`.
    fn js_time(text: &str) -> String {
        if let Some(dot) = text.find('.') {
            let digits = text[dot + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            if digits > 3 {
                return format!("{}{}", &text[..dot + 4], &text[dot + 1 + digits..]);
            }
        }
        text.to_string()
    }

    pub fn shown_time(rfc3339: &str) -> (String, String) {
        let date = Date::new(&JsValue::from_str(&js_time(rfc3339)));
        if date.get_time().is_nan() {
            return (rfc3339.to_string(), rfc3339.to_string());
        }
        FORMATS.with(|f| {
            let local = f.local.as_ref().and_then(|l| write(l, &date));
            let utc = f.utc.as_ref().and_then(|u| write(u, &date));
            let utc = utc.map(|u| format!("{u} UTC"));
            match (local, utc) {
                (Some(local), Some(utc)) => (local, utc),
                (None, Some(utc)) => (utc.clone(), utc),
                _ => (rfc3339.to_string(), rfc3339.to_string()),
            }
        })
    }

    /// The zone the browser is in, as `Intl` says it (`America/Los_Angeles`).
    fn browser_zone() -> Option<String> {
        let options = DateTimeFormat::new(&Array::new(), &Object::new()).resolved_options();
        Reflect::get(&options, &"timeZone".into()).ok()?.as_string()
    }

    /// Sets the zone cookie to UTC or to the browser's zone, then reloads the page.
    pub fn switch_zone(to_utc: bool) {
        let zone = if to_utc {
            "UTC".to_string()
        } else {
            browser_zone().unwrap_or_else(|| "UTC".into())
        };
        let Some(window) = web_sys::window() else {
            return;
        };
        let secure = window.location().protocol().is_ok_and(|p| p == "https:");
        let cookie = format!(
            "{}={zone}; Path=/; Max-Age={}; SameSite=Lax{}",
            crate::model::ZONE_COOKIE,
            super::ZONE_COOKIE_MAX_AGE_SECS,
            if secure { "; Secure" } else { "" }
        );
        if let Some(document) = window
            .document()
            .and_then(|d| d.dyn_into::<web_sys::HtmlDocument>().ok())
        {
            let _ = document.set_cookie(&cookie);
        }
        let _ = window.location().reload();
    }
}
