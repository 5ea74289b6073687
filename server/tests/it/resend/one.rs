//! One delivered delivery sent again: the application receives it again as a new delivery (its
//! own `webhook-id`, the same body), the original keeps its history, one audit entry; a viewer
//! is refused, and so is a re-send that would take an object back or double one that waits.

use super::*;
use crate::forwarder::header;

both_backends!(one_delivered_delivery_is_sent_again_as_a_new_delivery_and_audited);
async fn one_delivered_delivery_is_sent_again_as_a_new_delivery_and_audited(backend: Backend) {
    let (app, receiver, operator, viewer) = forwarding_app(backend, "[30]").await;
    delivered(&app, "e1", "order-1", 1, 1).await;
    let id = row_of(&app, "e1").await;
    let id_text = id.to_string();
    let args = [("name", "orders-app"), ("id", id_text.as_str())];

    // A viewer may not.
    let (status, _) = call(&app, &viewer, "resend_forward", &args).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_deliveries").await,
        1
    );
    assert!(audited(&app).await.is_empty());

    // An operator does: a new row, delivered, with the same body and its own webhook-id.
    let (status, body) = call(&app, &operator, "resend_forward", &args).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let created: i64 = body.trim().parse().expect("the new delivery's id");
    assert_ne!(created, id);
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        2,
    )
    .await;
    let got = receiver.wait_for(2).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].body, got[0].body, "the same event, as first sent");
    assert_eq!(header(&got[0], "webhook-id"), format!("fwd_{id}"));
    assert_eq!(header(&got[1], "webhook-id"), format!("fwd_{created}"));
    let rows = texts(
        &app.db,
        "SELECT CAST(id AS TEXT), status, CAST(attempts AS TEXT), CAST(resend_of AS TEXT),
                (SELECT CAST(count(*) AS TEXT) FROM forward_attempts a WHERE a.delivery_id = f.id)
         FROM forward_deliveries f ORDER BY id",
        vec![],
    )
    .await;
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        rows,
        [
            vec![s(&id_text), s("delivered"), s("1"), None, s("1")],
            vec![
                s(&created.to_string()),
                s("delivered"),
                s("1"),
                s(&id_text),
                s("1")
            ],
        ],
        "the original keeps its history; the copy names it"
    );
    assert_eq!(
        audited(&app).await,
        [vec![
            s("olga"),
            Some(format!("orders-app/{id}")),
            s("done"),
            Some(format!("as forward delivery {created}")),
        ]]
    );
    // The page lists the copy with what it re-sends.
    let (_, page) = call(&app, &operator, "destination", &[("name", "orders-app")]).await;
    let page = json(&page);
    assert_eq!(page["rows"][0]["id"], created);
    assert_eq!(page["rows"][0]["resend_of"], id);

    // Revision 2 forwarded since: re-sending revision 1 would take the object back.
    delivered(&app, "e2", "order-1", 2, 3).await;
    let (status, body) = call(&app, &operator, "resend_forward", &args).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("revision 2 of order-1 was forwarded"),
        "{body}"
    );

    // An event that already waits at the destination is not doubled.
    *receiver.down.lock().unwrap() = true;
    let newest = row_of(&app, "e2").await.to_string();
    let again = [("name", "orders-app"), ("id", newest.as_str())];
    let (status, body) = call(&app, &operator, "resend_forward", &again).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call(&app, &operator, "resend_forward", &again).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("already waits"), "{body}");

    // Only a delivered row of a configured destination.
    let waiting = scalar(
        &app.db,
        "SELECT id FROM forward_deliveries WHERE status = 'pending'",
        vec![],
    )
    .await
    .unwrap()
    .to_string();
    let (status, body) = call(
        &app,
        &operator,
        "resend_forward",
        &[("name", "orders-app"), ("id", waiting.as_str())],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("is pending, not delivered"), "{body}");
    let (status, _) = call(
        &app,
        &operator,
        "resend_forward",
        &[("name", "nowhere"), ("id", id_text.as_str())],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(
        &app,
        &operator,
        "resend_forward",
        &[("name", "orders-app"), ("id", "999999")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(audited(&app).await.len(), 2, "one entry per re-send done");
}
