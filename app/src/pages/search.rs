//! /search: what support types (an order number, an event id, an email), found by id or in the bodies, grouped by object.

use crate::components::TopBar;
use leptos::prelude::*;

#[component]
pub fn SearchPage() -> impl IntoView {
    view! {
        <TopBar/>
        <main>
            <p class="muted">"Being built."</p>
        </main>
    }
}
