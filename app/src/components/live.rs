//! Pages that update themselves: a counter that goes up every few seconds while the page is
//! shown, which a page's resources depend on to refetch. A refetch keeps what is shown until the
//! new answer arrives ([`super::Loaded`]), so nothing flashes.

use leptos::prelude::*;

/// How often a live page refetches: the events list's pace.
pub const LIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// A counter that goes up every [`LIVE_EVERY`] while `live()` holds and the tab is visible (a
/// hidden tab asks the server for nothing), from hydration until the component that made it
/// is gone. On the server it stays at 0.
pub fn live_tick(live: impl Fn() -> bool + Send + Sync + 'static) -> RwSignal<u64> {
    let tick = RwSignal::new(0u64);
    #[cfg(feature = "hydrate")]
    {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                if live() && !tab_hidden() {
                    tick.update(|t| *t += 1);
                }
            },
            LIVE_EVERY,
        ) {
            on_cleanup(move || handle.clear());
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = live;
    tick
}

/// Whether the page's tab is hidden (`document.hidden`).
#[cfg(feature = "hydrate")]
fn tab_hidden() -> bool {
    use wasm_bindgen::JsValue;
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("document"))
        .and_then(|document| js_sys::Reflect::get(&document, &JsValue::from_str("hidden")))
        .map(|hidden| hidden.as_bool() == Some(true))
        .unwrap_or(false)
}
