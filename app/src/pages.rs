//! Dashboard pages. For now one page that says what hookbox is doing; the operator dashboard
//! (sign-in, archive, objects, replay) is built on the same data next.

use leptos::prelude::*;

#[component]
pub fn Home() -> impl IntoView {
    // Set only in the browser, once the wasm bundle has hydrated the page.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <header class="topbar">
            <span class="brand">"hookbox"</span>
        </header>
        <section class="panel" data-testid="home" data-hydrated=move || hydrated.get().to_string()>
            <h1>"hookbox is receiving webhooks"</h1>
            <p>
                "Every authenticated delivery to " <code>"POST /hooks/{source}"</code>
                " is recorded in one transaction: the inbox, the object projection and the archive."
            </p>
            <p>"Send a signed test delivery:"</p>
            <pre><code>"hookbox send demo < order.json"</code></pre>
            <p>
                "Until the operator dashboard lands, read the tables directly: "
                <code>"webhook_events"</code> ", " <code>"webhook_inbox"</code> ", "
                <code>"object_state"</code> "."
            </p>
        </section>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <section class="panel">
            <h1>"Not found"</h1>
            <p><a href="/">"Back to the overview"</a></p>
        </section>
    }
}
