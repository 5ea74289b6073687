//! /sources: each configured source, its endpoint URL, its scheme in words, and when it last received a delivery.

use crate::components::TopBar;
use leptos::prelude::*;

#[component]
pub fn SourcesPage() -> impl IntoView {
    view! {
        <TopBar/>
        <main>
            <p class="muted">"Being built."</p>
        </main>
    }
}
