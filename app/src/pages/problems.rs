//! /problems: open failures grouped by cause, with their states.

use crate::components::TopBar;
use leptos::prelude::*;

#[component]
pub fn ProblemsPage() -> impl IntoView {
    view! {
        <TopBar/>
        <main>
            <p class="muted">"Being built."</p>
        </main>
    }
}
