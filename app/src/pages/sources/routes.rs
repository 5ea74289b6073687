//! The routes panel of `/sources` (contract section 16): each route, and what it would match
//! among its source's last 1,000 deliveries that applied or were accepted, with examples of
//! each side. Read once when the page opens (not with the page's live refresh): previews read
//! bodies, bounded as a payload search is.

use crate::components::Loaded;
use crate::error::DashboardError;
use crate::model::{RouteInfo, RoutePreview, RoutesPanel};
use leptos::prelude::*;

#[server(endpoint = "route_previews")]
pub async fn route_previews() -> Result<RoutesPanel, DashboardError> {
    use crate::db::search_bounds::{SearchError, search_deadline};
    use crate::guard;
    use crate::model::{PANEL_PREVIEW, PANEL_PREVIEWS};
    let user = guard::require(crate::model::Role::Viewer).await?;
    let config = guard::config()?;
    let routes = &config.routes;
    let previewed: Vec<(&str, &crate::routing::Conditions)> = routes
        .iter()
        .take(PANEL_PREVIEWS)
        .map(|r| (r.source.as_str(), &r.conditions))
        .collect();
    let deadline = search_deadline(std::time::Duration::from_secs(
        config.server.request_timeout_secs,
    ));
    let (previews, mut note) = if previewed.is_empty() {
        (Vec::new(), None)
    } else {
        match crate::db::routes::preview(
            &guard::db()?,
            &user.name,
            &previewed,
            PANEL_PREVIEW,
            deadline,
        )
        .await
        {
            Ok(previews) => (previews, None),
            Err(SearchError::Query(e)) => return Err(guard::query_failed(e)),
            Err(other) => (Vec::new(), Some(format!("No preview now: {other}"))),
        }
    };
    if routes.len() > PANEL_PREVIEWS && note.is_none() {
        note = Some(format!(
            "The first {PANEL_PREVIEWS} routes are previewed here; preview any route with POST /api/v1/routes/preview."
        ));
    }
    let mut previews = previews.into_iter();
    Ok(RoutesPanel {
        routes: routes
            .iter()
            .map(|r| (crate::db::routes::info(r), previews.next()))
            .collect(),
        note,
    })
}

#[component]
pub fn RoutesSection() -> impl IntoView {
    let data = Resource::new(|| (), |_| route_previews());
    view! {
        <Loaded resource=data show=move |panel: RoutesPanel| {
            if panel.routes.is_empty() {
                return view! { <span></span> }.into_any();
            }
            view! {
                <section class="panel" data-testid="routes">
                    <h2>"Routes"</h2>
                    <p class="muted">
                        "Besides what a source's " <code>"forward"</code> " sends everywhere, each route sends a destination the "
                        "deliveries that match it. The preview counts what each would match among its source's last "
                        "1,000 deliveries that applied or were accepted."
                    </p>
                    {panel.note.map(|note| view! { <p class="muted" data-testid="routes-note">{note}</p> })}
                    <table class="data">
                        <thead><tr><th>"Route"</th><th>"Source → destination"</th><th>"Conditions"</th><th>"Would match"</th></tr></thead>
                        <tbody>
                            {panel.routes.into_iter().map(|(route, preview)| view! { <RouteRow route preview/> }).collect_view()}
                        </tbody>
                    </table>
                </section>
            }.into_any()
        }/>
    }
}

#[component]
fn RouteRow(route: RouteInfo, preview: Option<RoutePreview>) -> impl IntoView {
    let types = route
        .event_types
        .as_ref()
        .map_or("every event type".to_string(), |t| {
            format!("event types {}", t.join(", "))
        });
    let matches = route
        .matches
        .as_ref()
        .map(|m| format!("; match {m}"))
        .unwrap_or_default();
    view! {
        <tr data-testid="route" data-route=route.name.clone()>
            <td>{route.name.clone()}</td>
            <td>{format!("{} → {}", route.source, route.destination)}</td>
            <td><code>{types}{matches}</code></td>
            <td data-testid="route-preview">{match preview {
                None => view! { <span class="muted">"—"</span> }.into_any(),
                Some(p) => view! { <PreviewWords p/> }.into_any(),
            }}</td>
        </tr>
    }
}

#[component]
fn PreviewWords(p: RoutePreview) -> impl IntoView {
    let link = |id: i64| view! { <a href=format!("/events/{id}")>{format!("#{id}")}</a> " " };
    let expired = (p.body_expired > 0)
        .then(|| format!("; {} with an expired body, not counted", p.body_expired));
    view! {
        <span data-matched=p.matched.to_string() data-considered=p.considered.to_string()>
            {format!("{} of the last {}", p.matched, p.considered)}{expired}
        </span>
        {(!p.matched_ids.is_empty()).then(|| view! {
            <div class="muted">"matched: " {p.matched_ids.iter().take(5).map(|id| link(*id)).collect_view()}</div>
        })}
        {(!p.unmatched_examples.is_empty()).then(|| view! {
            <div class="muted">"not matched: " {p.unmatched_examples.iter().take(3).map(|u| view! {
                <a href=format!("/events/{}", u.id) title=u.why.clone()>{format!("#{}", u.id)}</a> " (" {u.why.clone()} ") "
            }).collect_view()}</div>
        })}
    }
}
