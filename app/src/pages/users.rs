//! `/users` (operators): who may sign in, with what role, how (a password, or single sign-on
//! through which provider), and when they last did.

use crate::components::{Loaded, LocalTime, TopBar};
use crate::error::DashboardError;
use crate::model::UserRow;
use leptos::prelude::*;

/// Users the page lists, at most (by name; `hookbox user list` prints every one).
pub const USERS_SHOWN: usize = 1000;

#[server(endpoint = "users")]
pub async fn list_users() -> Result<Vec<UserRow>, DashboardError> {
    use crate::guard;
    guard::require(crate::model::Role::Operator).await?;
    crate::db::users::list_users(&guard::db()?, Some(USERS_SHOWN as u64))
        .await
        .map_err(DashboardError::from)
}

#[component]
pub fn UsersPage() -> impl IntoView {
    let users = Resource::new(|| (), |_| list_users());
    view! {
        <TopBar/>
        <main>
            <h1>"Users"</h1>
            <p class="muted">"Users of single sign-on are created at their first sign-in and get the role their groups map to at every sign-in. Local users are managed with "<code>"hookbox user add"</code>"."</p>
            <Loaded resource=users show=|rows| view! { <UsersTable rows/> }/>
        </main>
    }
}

#[component]
fn UsersTable(rows: Vec<UserRow>) -> impl IntoView {
    let cut = rows.len() >= USERS_SHOWN;
    view! {
        {cut.then(|| view! { <p class="muted">"The first 1,000 users by name; " <code>"hookbox user list"</code> " prints every one."</p> })}
        <table class="data" data-testid="users-table">
            <thead><tr><th scope="col">"Name"</th><th scope="col">"Role"</th><th scope="col">"Signs in with"</th><th scope="col">"Last signed in"</th><th scope="col">"Created"</th></tr></thead>
            <tbody>
                {rows.into_iter().map(|user| {
                    let kind = user.sign_in_kind();
                    let provider = user.issuer.clone().unwrap_or_default();
                    view! {
                        <tr data-testid="user-row">
                            <td data-label="Name">{user.name}</td>
                            <td data-label="Role">{user.role.as_str()}</td>
                            <td data-label="Signs in with" title=provider>{kind}</td>
                            <td data-label="Last signed in">{match user.last_sign_in_at {
                                Some(at) => view! { <LocalTime utc=at/> }.into_any(),
                                None => view! { <span class="muted">"never"</span> }.into_any(),
                            }}</td>
                            <td data-label="Created"><LocalTime utc=user.created_at/></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
