//! Error pages answer with their status and hydrate like every page: an unknown path is 404 with
//! its scripts under the policy's nonce, a delivery id that is no number is 400, an object hookbox
//! holds nothing about is 404.

use super::*;

/// Every `<script …>` tag of `html` carries `nonce="{nonce}"`.
fn scripts_carry(html: &str, nonce: &str) -> bool {
    let scripts: Vec<&str> = html
        .match_indices("<script")
        .filter_map(|(start, _)| {
            let end = html[start..].find('>')?;
            Some(&html[start..=start + end])
        })
        .collect();
    !scripts.is_empty()
        && scripts
            .iter()
            .all(|tag| tag.contains(&format!("nonce=\"{nonce}\"")))
}

#[tokio::test]
async fn the_not_found_page_is_404_and_its_scripts_carry_the_policys_nonce() {
    let app = spawn_app(Backend::Sqlite).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.expect("signed in");

    let response = no_redirects()
        .get(app.url("/no/such/page"))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let policy = response
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let html = response.text().await.expect("html");
    assert!(html.contains("Not found"), "{html}");
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("no nonce in the 404 page's policy: {policy}"));
    assert!(
        scripts_carry(&html, nonce),
        "a script of the 404 page lacks the nonce {nonce}: {html}"
    );
}

both_backends!(a_delivery_id_that_is_no_number_is_400_naming_it);
async fn a_delivery_id_that_is_no_number_is_400_naming_it(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.expect("signed in");

    let (status, html) = page(&app, Some(&cookie), "/events/not-a-number").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("is not a delivery id"), "{html}");
    let (status, _) = page(&app, Some(&cookie), "/events/99999999999999999999999").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = page(&app, Some(&cookie), "/events/424242").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a number that is no delivery"
    );
}

both_backends!(an_object_hookbox_holds_nothing_about_is_404_and_a_known_one_200);
async fn an_object_hookbox_holds_nothing_about_is_404_and_a_known_one_200(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.expect("signed in");
    let answer = app
        .send("shop", &event("e1", "order-1", 1, r#"{"status":"paid"}"#))
        .await;
    assert_eq!(answer.status, 200);

    let (status, html) = page(&app, Some(&cookie), "/objects/shop/order-404").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("holds nothing about the object"), "{html}");
    let (status, html) = page(&app, Some(&cookie), "/objects/shop/order-1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Current revision"), "{html}");
}
